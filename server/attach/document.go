package attach

import (
	"archive/zip"
	"bytes"
	"encoding/binary"
	"encoding/xml"
	"errors"
	"fmt"
	"io"
	"sort"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/ledongthuc/pdf"
)

// maxZipEntries bounds the entries of a DOCX or PPTX archive, checked from
// its end record before the directory is read.
const maxZipEntries = 10_000

// maxPDFPages bounds the pages read from a PDF.
const maxPDFPages = 5_000

// Text reduces a document of type t to its text, cut to the TextBytes
// budget with a marker where it was cut.
func (c *Checker) Text(r io.ReaderAt, size int64, t Type) (string, error) {
	if size > c.limits.DocumentBytes {
		return "", refuse("the document is %d bytes, over the limit of %d", size, c.limits.DocumentBytes)
	}
	b := &budget{max: c.limits.TextBytes}
	var err error
	switch t.MIME {
	case "application/pdf":
		err = pdfText(r, size, b)
	case DOCX:
		err = c.officeText(r, size, b, func(name string) bool { return name == "word/document.xml" })
	case PPTX:
		err = c.officeText(r, size, b, isSlide)
	default:
		err = plainText(r, size, b)
	}
	if err != nil && !errors.Is(err, errFull) {
		return "", err
	}
	return b.text(), nil
}

// budget collects text up to max bytes and remembers whether more was cut.
type budget struct {
	max int
	buf strings.Builder
	cut bool
}

// errFull stops an extraction once the budget is spent.
var errFull = errors.New("attach: text budget spent")

func (b *budget) write(s string) error {
	if room := b.max - b.buf.Len(); len(s) > room {
		s = s[:room]
		for len(s) > 0 && !utf8.ValidString(s) {
			s = s[:len(s)-1]
		}
		b.buf.WriteString(s)
		b.cut = true
		return errFull
	}
	b.buf.WriteString(s)
	return nil
}

func (b *budget) text() string {
	if b.cut {
		return b.buf.String() + fmt.Sprintf("\n[… the document's text was cut here, at %d bytes]", b.max)
	}
	return b.buf.String()
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
	return b.write(string(data))
}

// pdfText extracts a PDF's text page by page until the budget is spent.
// The parser reports some damage by panicking; that is a refusal too.
func pdfText(r io.ReaderAt, size int64, b *budget) (err error) {
	defer func() {
		if p := recover(); p != nil {
			err = refuse("the PDF is damaged or unreadable")
		}
	}()
	pr, err := pdf.NewReader(r, size)
	if err != nil {
		if strings.Contains(err.Error(), "password") || strings.Contains(err.Error(), "encrypt") {
			return refuse("the PDF is encrypted")
		}
		return refuse("the PDF is damaged or unreadable: %v", strings.ReplaceAll(strings.TrimPrefix(err.Error(), "malformed PDF: "), "%%", "%"))
	}
	pages := pr.NumPage()
	if pages <= 0 {
		return refuse("the PDF has no pages")
	}
	fonts := map[string]*pdf.Font{}
	for i := 1; i <= min(pages, maxPDFPages); i++ {
		p := pr.Page(i)
		if p.V.IsNull() {
			continue
		}
		text, err := p.GetPlainText(fonts)
		if err != nil {
			return refuse("the PDF is damaged or unreadable: page %d: %v", i, err)
		}
		if err := b.write(text + "\n"); err != nil {
			return err
		}
	}
	return nil
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
// directory is of a sane size: a directory of millions of entries is refused
// before it is read.
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
	zr, err := zip.NewReader(r, size)
	if err != nil {
		return nil, refuse("the zip archive is damaged or truncated")
	}
	return zr, nil
}

// officeText reads the text of the parts of a DOCX or PPTX that want
// selects, in order, with bounded decompression: a part whose stated size
// is out of proportion to its compressed size, or that expands past its
// stated size or the total budget, is a zip bomb and is refused, never
// expanded.
func (c *Checker) officeText(r io.ReaderAt, size int64, b *budget, want func(string) bool) error {
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
	left := c.limits.UnzipBytes
	for _, f := range parts {
		stated := int64(f.UncompressedSize64)
		if f.UncompressedSize64 > uint64(left) {
			return refuse("%s expands to %d bytes, over the limit of %d (a zip bomb?)", f.Name, f.UncompressedSize64, c.limits.UnzipBytes)
		}
		if stated > c.limits.UnzipRatio*max(int64(f.CompressedSize64), 1) && stated > 1<<20 {
			return refuse("%s expands %d times (%d bytes from %d), over the limit of %d times (a zip bomb?)",
				f.Name, stated/max(int64(f.CompressedSize64), 1), stated, f.CompressedSize64, c.limits.UnzipRatio)
		}
		left -= stated
		rc, err := f.Open()
		if err != nil {
			return refuse("%s cannot be read: %v", f.Name, err)
		}
		err = xmlText(io.LimitReader(rc, stated+1), b)
		rc.Close()
		if err != nil {
			if errors.Is(err, errFull) {
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

// xmlText collects the text runs (<w:t>, <a:t>) of WordprocessingML or
// DrawingML, with a newline after each paragraph and tabs and breaks as
// they are.
func xmlText(r io.Reader, b *budget) error {
	d := xml.NewDecoder(r)
	inText := false
	for {
		tok, err := d.RawToken()
		if err == io.EOF {
			return b.write("\n")
		}
		if err != nil {
			return err
		}
		switch t := tok.(type) {
		case xml.StartElement:
			switch t.Name.Local {
			case "t":
				inText = true
			case "tab":
				err = b.write("\t")
			case "br", "cr":
				err = b.write("\n")
			}
		case xml.EndElement:
			switch t.Name.Local {
			case "t":
				inText = false
			case "p":
				err = b.write("\n")
			}
		case xml.CharData:
			if inText {
				err = b.write(string(t))
			}
		}
		if err != nil {
			return err
		}
	}
}
