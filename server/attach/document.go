package attach

import (
	"archive/zip"
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"sort"
	"strconv"
	"strings"
	"unicode/utf8"
)

// maxZipEntries bounds the entries of a DOCX or PPTX archive, checked from
// its end record before the directory is read.
const maxZipEntries = 10_000

// maxZipDirectory bounds the bytes of a zip archive's central directory,
// checked from its end record before the directory is read (10,000 entries
// with ordinary names take well under a megabyte).
const maxZipDirectory = 4 << 20

// maxPDFPages bounds the pages read from a PDF.
const maxPDFPages = 5_000

// Text reduces a document of type t to its text, cut to the TextBytes
// budget with a marker where it was cut. Extraction streams: it never holds
// more than the text it keeps plus a few buffers, and it stops inflating —
// zip parts, PDF streams — once InflateBytes have come out, keeping the text
// found so far. It runs in the shared preparation pool, as an anonymous user
// (see TextFor).
func (c *Checker) Text(r io.ReaderAt, size int64, t Type) (string, error) {
	return c.TextFor(context.Background(), "", r, size, t)
}

// TextFor is Text for user's request: it waits for a slot of the pool
// within user's share, or until ctx ends.
func (c *Checker) TextFor(ctx context.Context, user string, r io.ReaderAt, size int64, t Type) (string, error) {
	if size > c.limits.DocumentBytes {
		return "", refuse("the document is %d bytes, over the limit of %d", size, c.limits.DocumentBytes)
	}
	release, err := c.pool.Acquire(ctx, user)
	if err != nil {
		return "", err
	}
	defer release()
	return c.text(r, size, t)
}

func (c *Checker) text(r io.ReaderAt, size int64, t Type) (string, error) {
	b := &budget{max: c.limits.TextBytes}
	inf := &inflate{left: c.limits.InflateBytes}
	var err error
	switch t.MIME {
	case "application/pdf":
		err = pdfText(r, size, b, inf)
	case DOCX:
		err = c.officeText(r, size, b, inf, func(name string) bool { return name == "word/document.xml" })
	case PPTX:
		err = c.officeText(r, size, b, inf, isSlide)
	default:
		err = plainText(r, size, b)
	}
	switch {
	case errors.Is(err, errInflated):
		b.stopped = c.limits.InflateBytes
	case err != nil && !errors.Is(err, errFull):
		return "", err
	}
	return b.text(), nil
}

// budget collects text up to max bytes and remembers whether more was cut.
type budget struct {
	max int
	buf []byte
	cut bool
	// stopped is the inflation budget, when reading stopped there.
	stopped int64
}

// errFull stops an extraction once the budget is spent.
var errFull = errors.New("attach: text budget spent")

func (b *budget) write(p []byte) error {
	if room := b.max - len(b.buf); len(p) > room {
		b.buf = append(b.buf, p[:room]...)
		b.cut = true
		return errFull
	}
	b.buf = append(b.buf, p...)
	return nil
}

func (b *budget) writeString(s string) error {
	if room := b.max - len(b.buf); len(s) > room {
		b.buf = append(b.buf, s[:room]...)
		b.cut = true
		return errFull
	}
	b.buf = append(b.buf, s...)
	return nil
}

// room is how many more bytes fit.
func (b *budget) room() int { return b.max - len(b.buf) }

// text is the text kept, as valid UTF-8 (a rune cut at the end is dropped,
// other invalid bytes become U+FFFD), with a marker where it was cut.
func (b *budget) text() string {
	s := b.buf
	if b.cut || b.stopped > 0 {
		for k := 1; k <= utf8.UTFMax && k <= len(s); k++ {
			if utf8.RuneStart(s[len(s)-k]) {
				if !utf8.FullRune(s[len(s)-k:]) {
					s = s[:len(s)-k]
				}
				break
			}
		}
	}
	text := strings.ToValidUTF8(string(s), "\uFFFD")
	switch {
	case b.cut:
		return text + fmt.Sprintf("\n[… the document's text was cut here, at %d bytes]", b.max)
	case b.stopped > 0:
		return text + fmt.Sprintf("\n[… the document was cut here: reading further would decompress more than %d bytes]", b.stopped)
	}
	return text
}

// inflate is the budget of bytes an extraction may decompress and parse.
type inflate struct{ left int64 }

// errInflated stops an extraction once the inflation budget is spent.
var errInflated = errors.New("attach: inflation budget spent")

// reader counts what r yields against the budget; past it, reads fail with
// errInflated, so no decompressor runs further.
func (f *inflate) reader(r io.Reader) io.Reader { return &inflateReader{r: r, f: f} }

type inflateReader struct {
	r io.Reader
	f *inflate
}

func (r *inflateReader) Read(p []byte) (int, error) {
	if r.f.left <= 0 {
		return 0, errInflated
	}
	if int64(len(p)) > r.f.left {
		p = p[:r.f.left]
	}
	n, err := r.r.Read(p)
	r.f.left -= int64(n)
	return n, err
}

func plainText(r io.ReaderAt, size int64, b *budget) error {
	n := min(size, int64(b.max)+utf8.UTFMax)
	data := make([]byte, n)
	if _, err := r.ReadAt(data, 0); err != nil && err != io.EOF {
		return err
	}
	if !looksLikeText(data, size > n) || bytes.IndexByte(data, 0) >= 0 {
		return refuse("the text is not valid UTF-8")
	}
	return b.write(data)
}

func isSlide(name string) bool {
	n, ok := strings.CutPrefix(name, "ppt/slides/slide")
	n, ok2 := strings.CutSuffix(n, ".xml")
	_, err := strconv.Atoi(n)
	return ok && ok2 && err == nil
}

// officeType tells a DOCX from a PPTX by the parts its archive holds.
func officeType(r io.ReaderAt, size int64, limits Limits) (string, error) {
	zr, err := openZip(r, size)
	if err != nil {
		return "", err
	}
	for _, f := range zr.File {
		switch f.Name {
		case "word/document.xml":
			return DOCX, nil
		case "ppt/presentation.xml":
			return PPTX, nil
		}
	}
	return "", refuse("the content is a zip archive that is not a DOCX or PPTX document, which is not accepted")
}

// openZip opens an archive after checking, from its end record, that its
// directory is of a sane size — a directory of millions of entries, or of
// megabytes of names, is refused before it is read — and refuses an archive
// naming one part twice (which part a reader takes is then up to it: the
// checked one or the other).
func openZip(r io.ReaderAt, size int64) (*zip.Reader, error) {
	const eocdLen = 22
	tail := make([]byte, min(size, eocdLen+65535))
	if _, err := r.ReadAt(tail, size-int64(len(tail))); err != nil && err != io.EOF {
		return nil, err
	}
	i := bytes.LastIndex(tail, []byte("PK\x05\x06"))
	if i < 0 || len(tail)-i < eocdLen {
		return nil, refuse("the zip archive is damaged or truncated")
	}
	entries := binary.LittleEndian.Uint16(tail[i+10:])
	if entries == 0xFFFF || int(entries) > maxZipEntries {
		return nil, refuse("the archive has too many entries (over %d)", maxZipEntries)
	}
	if dir := binary.LittleEndian.Uint32(tail[i+12:]); dir > maxZipDirectory {
		return nil, refuse("the archive's directory is %d bytes, over the limit of %d", dir, maxZipDirectory)
	}
	zr, err := zip.NewReader(r, size)
	if err != nil {
		return nil, refuse("the zip archive is damaged or truncated")
	}
	seen := make(map[string]bool, len(zr.File))
	for _, f := range zr.File {
		// Office part names are case-insensitive.
		name := strings.ToLower(f.Name)
		if seen[name] {
			return nil, refuse("the archive holds %q twice, which is not a valid document", f.Name)
		}
		seen[name] = true
	}
	return zr, nil
}

// officeText reads the text of the parts of a DOCX or PPTX that want
// selects, in order, streaming: a part whose stated size is out of
// proportion to its compressed size is a zip bomb and is refused, never
// expanded; otherwise parts are inflated only until the text budget or the
// inflation budget is spent.
func (c *Checker) officeText(r io.ReaderAt, size int64, b *budget, inf *inflate, want func(string) bool) error {
	zr, err := openZip(r, size)
	if err != nil {
		return err
	}
	var parts []*zip.File
	for _, f := range zr.File {
		if want(f.Name) {
			parts = append(parts, f)
		}
	}
	sort.Slice(parts, func(i, j int) bool { return partOrder(parts[i].Name) < partOrder(parts[j].Name) })
	for _, f := range parts {
		stated := int64(min(f.UncompressedSize64, 1<<62))
		if stated > c.limits.UnzipRatio*max(int64(f.CompressedSize64), 1) && stated > 1<<20 {
			return refuse("%s expands %d times (%d bytes from %d), over the limit of %d times (a zip bomb?)",
				f.Name, stated/max(int64(f.CompressedSize64), 1), stated, f.CompressedSize64, c.limits.UnzipRatio)
		}
		rc, err := f.Open()
		if err != nil {
			return refuse("%s cannot be read: %v", f.Name, err)
		}
		err = xmlText(inf.reader(rc), b)
		rc.Close()
		if err != nil {
			if errors.Is(err, errFull) || errors.Is(err, errInflated) {
				return err
			}
			var rf *Refusal
			if errors.As(err, &rf) {
				return err
			}
			return refuse("%s is damaged: %v", f.Name, err)
		}
	}
	return nil
}

// partOrder sorts slides by number (slide2 before slide10).
func partOrder(name string) int {
	n := strings.TrimSuffix(strings.TrimPrefix(name, "ppt/slides/slide"), ".xml")
	i, _ := strconv.Atoi(n)
	return i
}
