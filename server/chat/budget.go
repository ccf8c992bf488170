package chat

import (
	"context"
	"encoding/base64"
	"fmt"

	"github.com/parleyhq/parley/server/apierr"
	"github.com/parleyhq/parley/server/attach"
	"github.com/parleyhq/parley/server/auth"
	"github.com/parleyhq/parley/server/llm"
	"github.com/parleyhq/parley/server/models"
	"github.com/parleyhq/parley/server/store"
)

// Budgets bound what one request may ask of the gateway, checked by
// counting before any of it is done: parts and attachments are counted and
// their declared sizes summed before one is loaded, and the money (API) or
// the tier allowance (web) is taken before images are decoded, documents
// extracted or a large prompt tokenized. Zero fields take the defaults.
type Budgets struct {
	// PartsPerMessage bounds one message's parts (default 256).
	PartsPerMessage int
	// PartsPerRequest bounds all the parts of a request (default 4096).
	PartsPerRequest int
	// Attachments bounds the parts of a request that carry or name a file:
	// inline images and documents, and uploaded attachments (default 32).
	Attachments int
	// AttachmentBytes bounds the sum of their declared sizes: the bytes of
	// inline files and the prepared forms of uploaded ones (default 64 MiB).
	AttachmentBytes int64
	// ExactCountBytes is the prompt text, in bytes, up to which an API
	// request's prompt is tokenized before its hold; a longer one is held at
	// a token per byte (a bound: no token is shorter) and counted after
	// (default 64 KiB).
	ExactCountBytes int
}

// DefaultBudgets are the budgets of a gateway that sets none.
func DefaultBudgets() Budgets {
	return Budgets{PartsPerMessage: 256, PartsPerRequest: 4096, Attachments: 32, AttachmentBytes: 64 << 20, ExactCountBytes: 64 << 10}
}

func (b Budgets) withDefaults() Budgets {
	d := DefaultBudgets()
	if b.PartsPerMessage <= 0 {
		b.PartsPerMessage = d.PartsPerMessage
	}
	if b.PartsPerRequest <= 0 {
		b.PartsPerRequest = d.PartsPerRequest
	}
	if b.Attachments <= 0 {
		b.Attachments = d.Attachments
	}
	if b.AttachmentBytes <= 0 {
		b.AttachmentBytes = d.AttachmentBytes
	}
	if b.ExactCountBytes <= 0 {
		b.ExactCountBytes = d.ExactCountBytes
	}
	return b
}

// Deferred is a part of an API request whose preparation costs work — an
// inline image to decode, a document to extract, an uploaded attachment to
// load. A surface hands it over unprepared (Request.Defer); the core checks
// what it can from its declaration, takes the request's hold, and only then
// prepares it, in the owner's share of the preparation pool, putting the
// result in its place in Messages.
type Deferred struct {
	// Field is the part's path as the caller's surface names it, for errors
	// about its content (e.g. "messages[0].content[1].image_url").
	Field string
	// Kind is attach.KindImage or attach.KindDocument for an inline file.
	Kind attach.Kind
	// Data is an inline file's bytes, or DataURL its base64 form, decoded
	// only when it is prepared.
	Data    []byte
	DataURL string
	// DataField names the field that held DataURL, for an error about its
	// base64 (default Field + ".url", as in OpenAI's image_url.url).
	DataField string
	// MIME and Filename are the inline file's declared type and name.
	MIME, Filename string
	// AttachmentID names an uploaded attachment instead.
	AttachmentID string

	msg, part int
	ref       attach.Ref
}

// Defer records d as the part at Messages[msg].Parts[part] and returns the
// placeholder to put there.
func (r *Request) Defer(msg, part int, d Deferred) llm.Part {
	d.msg, d.part = msg, part
	r.Deferred = append(r.Deferred, d)
	return llm.Part{}
}

// size is the declared size of a deferred part: an inline file's bytes, or
// an uploaded attachment's prepared form.
func (d *Deferred) size() int64 {
	switch {
	case d.AttachmentID != "":
		return d.ref.PreparedBytes
	case d.DataURL != "":
		return int64(base64.StdEncoding.DecodedLen(len(d.DataURL)))
	}
	return int64(len(d.Data))
}

func (d *Deferred) kind() attach.Kind {
	if d.AttachmentID != "" {
		return d.ref.Kind
	}
	return d.Kind
}

func modalityOf(k attach.Kind) string {
	if k == attach.KindImage {
		return "image"
	}
	return "document"
}

// countParts checks a request's parts against the budgets.
func (b Budgets) countParts(msgs []llm.ChatMessage, deferred int) error {
	total := 0
	for i, m := range msgs {
		if len(m.Parts) > b.PartsPerMessage {
			return apierr.InvalidArgument(fmt.Sprintf("messages[%d].parts", i), fmt.Sprintf("%d parts, over the limit of %d per message", len(m.Parts), b.PartsPerMessage))
		}
		if total += len(m.Parts); total > b.PartsPerRequest {
			return apierr.InvalidArgument("messages", fmt.Sprintf("over %d parts in all, the limit of one request", b.PartsPerRequest))
		}
	}
	if deferred > b.Attachments {
		return apierr.InvalidArgument("messages", fmt.Sprintf("%d images, documents and attachments, over the limit of %d per request", deferred, b.Attachments))
	}
	return nil
}

// checkDeferred checks a request's deferred parts from what they declare —
// types, sizes, the model's modalities, the attachments' records — without
// reading, decoding or loading any, and sums their sizes against the
// budget.
func (c *Core) checkDeferred(ctx context.Context, userID string, m *models.Model, req *Request) error {
	b := c.Budgets.withDefaults()
	var sum int64
	for i := range req.Deferred {
		d := &req.Deferred[i]
		if d.AttachmentID != "" {
			ref, err := c.Attachments.Ref(ctx, userID, d.AttachmentID)
			if err != nil {
				return err
			}
			d.ref = ref
		} else if err := c.Attachments.Inline().CheckInline(d.Field, int(d.size()), d.MIME, d.Kind, d.Filename); err != nil {
			return err
		}
		if kind := modalityOf(d.kind()); !m.Accepts(kind) {
			return apierr.InvalidArgument(fmt.Sprintf("messages[%d].parts[%d]", d.msg, d.part), m.ID+" does not accept "+kind+"s")
		}
		if sum += d.size(); sum > b.AttachmentBytes {
			return apierr.InvalidArgument("messages", fmt.Sprintf("the images, documents and attachments are over %d bytes in all, the limit of one request", b.AttachmentBytes))
		}
	}
	return nil
}

// countsExactly says whether an API request's prompt is counted before
// its hold: when it has no deferred part and at most ExactCountBytes of
// text, so that counting is cheap.
func (c *Core) countsExactly(req *Request) bool {
	if len(req.Deferred) > 0 {
		return false
	}
	wreq := llm.Request{Tools: req.Tools, Messages: req.Messages}
	return llm.RequestPromptBound(&wreq, imageTokens) <= c.Budgets.withDefaults().ExactCountBytes
}

func imageTokens(img *llm.Image) int { return llm.ImageTokens(img.Width, img.Height) }

// promptBound is the API request's prompt tokens, counted exactly where
// countsExactly, else bounded from above without tokenizing: a token per
// byte of text, the most tokens an image of the fitted size counts, a token
// per byte of a document's largest text (for an uploaded attachment whose
// record checkDeferred read: its image's tokens, its text's bytes).
func (c *Core) promptBound(req *Request) (tokens int, exact bool) {
	wreq := llm.Request{Tools: req.Tools, Messages: req.Messages}
	if c.countsExactly(req) {
		return llm.RequestPromptTokens(c.Tokens, &wreq), true
	}
	bound := llm.RequestPromptBound(&wreq, imageTokens)
	lim := c.Attachments.Inline().Limits()
	for i := range req.Deferred {
		d := &req.Deferred[i]
		wrapper := len(`<document name=""></document>`) + 4 + len(d.Filename)
		switch {
		case d.ref.ID != "" && d.ref.Kind == attach.KindImage && d.ref.Width > 0 && d.ref.Height > 0:
			bound += llm.ImageTokens(attach.Fit(d.ref.Width, d.ref.Height, lim.FitSide))
		case d.ref.ID != "" && d.ref.Kind == attach.KindDocument:
			bound += len(`<document name=""></document>`) + 4 + len(d.ref.Filename) + int(d.ref.PreparedBytes)
		case d.Kind == attach.KindImage:
			bound += maxImageTokens(lim.FitSide)
		case d.AttachmentID != "":
			// An image or a document, not known until its record is read.
			bound += max(maxImageTokens(lim.FitSide), wrapper+255+c.Attachments.Inline().MaxTextBytes())
		default:
			bound += wrapper + c.Attachments.Inline().MaxTextBytes()
		}
	}
	return bound, false
}

// deferredAt is the set of message and part indexes that are deferred
// parts' placeholders.
func (r *Request) deferredAt() map[[2]int]bool {
	if len(r.Deferred) == 0 {
		return nil
	}
	at := make(map[[2]int]bool, len(r.Deferred))
	for _, d := range r.Deferred {
		at[[2]int{d.msg, d.part}] = true
	}
	return at
}

// maxImageTokens is the most tokens an image fitted to side×side can
// count (llm.ImageTokens: at most 2048 on its long side and 768 on its
// short side, in 512-pixel tiles).
func maxImageTokens(side int) int {
	long, short := min(side, 2048), min(side, 768)
	return 85 + 170*((long+511)/512)*((short+511)/512)
}

// prepare does the deferred parts' work — decode, extract, load — in the
// caller's share of the preparation pool, and puts each in its place.
func (c *Core) prepare(ctx context.Context, p auth.Principal, req *Request) error {
	inline := c.Attachments.Inline()
	for i := range req.Deferred {
		d := &req.Deferred[i]
		var part llm.Part
		switch {
		case d.AttachmentID != "":
			wp, err := c.Attachments.Part(ctx, p.UserID, d.AttachmentID)
			if err != nil {
				return err
			}
			part = wp
		default:
			data := d.Data
			if d.DataURL != "" {
				var err error
				if data, err = base64.StdEncoding.DecodeString(d.DataURL); err != nil {
					field := d.DataField
					if field == "" {
						field = d.Field + ".url"
					}
					return apierr.InvalidArgument(field, "is not valid base64")
				}
			}
			if d.Kind == attach.KindImage {
				img, err := inline.PrepareImage(ctx, p.UserID, d.Field, data, d.MIME)
				if err != nil {
					return err
				}
				part.Image = img
			} else {
				doc, err := inline.PrepareDocument(ctx, p.UserID, d.Field, data, d.MIME, d.Filename)
				if err != nil {
					return err
				}
				part.Document = doc
			}
		}
		req.Messages[d.msg].Parts[d.part] = part
		d.Data = nil // the prepared form replaces the original
	}
	return nil
}

// countAttachmentRefs checks a web message's parts against the budgets and
// its attachments from their records: ready, the caller's, of a modality
// the model takes, their prepared forms within the byte budget together.
func (c *Core) checkWebParts(ctx context.Context, userID string, m *models.Model, parts []store.Part) error {
	b := c.Budgets.withDefaults()
	if len(parts) > b.PartsPerMessage {
		return apierr.InvalidArgument("parts", fmt.Sprintf("%d parts, over the limit of %d per message", len(parts), b.PartsPerMessage))
	}
	refs := 0
	var sum int64
	for i, p := range parts {
		if p.AttachmentID == "" {
			continue
		}
		if refs++; refs > b.Attachments {
			return apierr.InvalidArgument("parts", fmt.Sprintf("over %d attachments, the limit of one message", b.Attachments))
		}
		ref, err := c.Attachments.Ref(ctx, userID, p.AttachmentID)
		if err != nil {
			return err
		}
		if kind := modalityOf(ref.Kind); !m.Accepts(kind) {
			return apierr.InvalidArgument(fmt.Sprintf("parts[%d].attachment_id", i), fmt.Sprintf("%s does not accept %ss", m.ID, kind))
		}
		if sum += ref.PreparedBytes; sum > b.AttachmentBytes {
			return apierr.InvalidArgument("parts", fmt.Sprintf("the attachments are over %d bytes in all, the limit of one message", b.AttachmentBytes))
		}
	}
	return nil
}
