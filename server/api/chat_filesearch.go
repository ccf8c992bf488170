package api

import (
	"context"
	"strings"

	"github.com/google/uuid"

	parleyv1 "github.com/parleyhq/parley/gen/parley/v1"
	"github.com/parleyhq/parley/server/apierr"
	"github.com/parleyhq/parley/server/chat"
	"github.com/parleyhq/parley/server/store"
)

// fileSearch runs a request's file search (ChatService's file_search): it
// searches for the last user message's text and puts the call and the
// passages found after the messages, for the model to cite. It returns the
// passages (nil when the request has no file search).
func (h *ChatHandler) fileSearch(ctx context.Context, r *chat.Request, fs *parleyv1.FileSearch) ([]chat.Passage, error) {
	if fs == nil {
		return nil, nil
	}
	if h.Core.Retriever == nil {
		return nil, apierr.FailedPrecondition("file_search: vector stores are not available on this server")
	}
	var filter *store.AttributeFilter
	if fs.GetFilter() != nil {
		var err error
		if filter, err = filterOf(fs.GetFilter(), "file_search.filter"); err != nil {
			return nil, err
		}
	}
	query := ""
	for i := len(r.Messages) - 1; i >= 0 && query == ""; i-- {
		if r.Messages[i].Role != "user" {
			continue
		}
		var b strings.Builder
		for _, p := range r.Messages[i].Parts {
			b.WriteString(p.Text)
		}
		query = strings.TrimSpace(b.String())
	}
	if query == "" {
		return nil, apierr.InvalidArgument("file_search", "needs a user message with text to search for")
	}
	found, err := h.Core.Retriever.Retrieve(ctx, chat.Retrieval{StoreIDs: fs.GetVectorStoreIds(), Text: query,
		Limit: int(fs.GetMaxNumResults()), Filter: filter, MinScore: fs.GetScoreThreshold()})
	if err != nil {
		var fv parleyv1.FieldViolation
		if apierr.Detail(err, &fv) {
			field := strings.TrimPrefix(fv.GetField(), "ranking_options.")
			field = strings.Replace(field, "filters", "filter", 1)
			return nil, apierr.InvalidArgument("file_search."+field, fv.GetDescription())
		}
		return nil, err
	}
	r.Messages = append(r.Messages, chat.FileSearchMessages("fs_"+uuid.Must(uuid.NewV7()).String(), query, found)...)
	return found, nil
}

// citationParts are the citation parts of the passages text cites.
func citationParts(text string, found []chat.Passage) ([]*parleyv1.Part, []*parleyv1.Citation) {
	var parts []*parleyv1.Part
	var cites []*parleyv1.Citation
	for _, c := range chat.Citations(text, found) {
		pc := chat.CitationToProto(c)
		cites = append(cites, pc)
		parts = append(parts, &parleyv1.Part{Kind: &parleyv1.Part_Citation{Citation: pc}})
	}
	return parts, cites
}

// citingStream sends a stream's events, adding to its finished event the
// passages choice 0's text cites.
func citingStream(found []chat.Passage, send chat.Emit) chat.Emit {
	if found == nil {
		return send
	}
	var text strings.Builder
	return func(ev *parleyv1.GenerationEvent) error {
		if d := ev.GetDelta(); d != nil && d.GetChoice() == 0 {
			text.WriteString(d.GetText())
		}
		if fin := ev.GetFinished(); fin != nil {
			_, fin.Citations = citationParts(text.String(), found)
		}
		return send(ev)
	}
}
