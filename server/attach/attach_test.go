package attach

import (
	"bytes"
	"errors"
	"image"
	"runtime"
	"strings"
	"testing"

	"github.com/parleyhq/parley/server/attach/attachtest"
)

func mustType(t *testing.T, m string) Type {
	t.Helper()
	ty, ok := Lookup(m)
	if !ok {
		t.Fatalf("%s not accepted", m)
	}
	return ty
}

func detect(t *testing.T, data []byte, declared string) (Type, error) {
	t.Helper()
	return Detect(bytes.NewReader(data), int64(len(data)), mustType(t, declared), DefaultLimits())
}

func TestDetect(t *testing.T) {
	tests := []struct {
		name     string
		data     []byte
		declared string
		want     string // "" when refused
		reason   string
	}{
		{"png", attachtest.PNG(4, 4), "image/png", "image/png", ""},
		{"jpeg", attachtest.JPEG(4, 4), "image/jpg", "image/jpeg", ""},
		{"gif", attachtest.GIF(4, 4), "image/gif", "image/gif", ""},
		{"webp header", []byte("RIFF\x00\x00\x00\x00WEBPVP8 "), "image/webp", "image/webp", ""},
		{"pdf", attachtest.PDF("hi"), "application/pdf", "application/pdf", ""},
		{"docx", attachtest.DOCX("hi"), DOCX, DOCX, ""},
		{"pptx", attachtest.PPTX("a", "b", "c"), PPTX, PPTX, ""},
		{"markdown", []byte("# Title\n\nWords."), "text/markdown", "text/markdown", ""},
		{"csv with charset", []byte("a,b\n1,2\n"), "text/csv; charset=utf-8", "text/csv", ""},
		{"png declared jpeg", attachtest.PNG(4, 4), "image/jpeg", "", "the content is a PNG image (image/png), not a JPEG image (image/jpeg) as declared"},
		{"pdf declared text", attachtest.PDF("hi"), "text/plain", "", "not a plain text"},
		{"text declared png", []byte("hello"), "image/png", "", "the content is text, not a PNG image"},
		{"docx declared pptx", attachtest.DOCX("x"), PPTX, "", "DOCX document"},
		{"binary", []byte("\x7fELF\x02\x01\x01\x00\x00\x00"), "text/plain", "", "application/octet-stream, which is not accepted"},
		{"plain zip", zipOf(t, "a.txt"), DOCX, "", "zip archive that is not a DOCX or PPTX"},
		{"invalid utf-8", []byte("caf\xe9 au lait"), "text/plain", "", "not accepted"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := detect(t, tt.data, tt.declared)
			if tt.want != "" {
				if err != nil || got.MIME != tt.want {
					t.Fatalf("Detect = %v, %v; want %s", got, err, tt.want)
				}
				return
			}
			var r *Refusal
			if !errors.As(err, &r) || !strings.Contains(r.Reason, tt.reason) {
				t.Fatalf("Detect = %v, %v; want a refusal saying %q", got, err, tt.reason)
			}
		})
	}
}

func zipOf(t *testing.T, name string) []byte {
	t.Helper()
	data := attachtest.DOCX("x")
	return bytes.Replace(data, []byte("word/document.xml"), []byte("word/documenx.xml"), -1)
}

func TestLookupRefusesOtherTypes(t *testing.T) {
	for _, m := range []string{"application/zip", "image/svg+xml", "text/html", ""} {
		if _, ok := Lookup(m); ok {
			t.Errorf("Lookup(%q) accepted", m)
		}
	}
}

func TestImageIsFittedAndReencoded(t *testing.T) {
	c := NewChecker(Limits{})
	tests := []struct {
		name         string
		data         []byte
		mime         string
		w, h, fw, fh int
	}{
		{"wide png", attachtest.PNG(2000, 1000), "image/png", 2000, 1000, 1024, 512},
		{"tall jpeg", attachtest.JPEG(300, 1500), "image/jpeg", 300, 1500, 205, 1024},
		{"small png kept", attachtest.PNG(100, 30), "image/png", 100, 30, 100, 30},
		{"gif first frame", attachtest.GIF(64, 32), "image/gif", 64, 32, 64, 32},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			img, err := c.Image(tt.data, mustType(t, tt.mime))
			if err != nil {
				t.Fatal(err)
			}
			if img.Width != tt.w || img.Height != tt.h || img.FitWidth != tt.fw || img.FitHeight != tt.fh {
				t.Fatalf("got %d×%d fitted %d×%d", img.Width, img.Height, img.FitWidth, img.FitHeight)
			}
			cfg, format, err := image.DecodeConfig(bytes.NewReader(img.Data))
			if err != nil || cfg.Width != tt.fw || cfg.Height != tt.fh || "image/"+format != img.MIME {
				t.Fatalf("re-encoded %s %d×%d (%v), declared %s", format, cfg.Width, cfg.Height, err, img.MIME)
			}
		})
	}
}

func TestDocumentText(t *testing.T) {
	c := NewChecker(Limits{TextBytes: 64})
	tests := []struct {
		name, mime string
		data       []byte
		want       string
	}{
		{"docx", DOCX, attachtest.DOCX("First line", "Second &amp; last"), "First line\nSecond & last\n"},
		{"pptx in slide order", PPTX, attachtest.PPTX("one", "two", "ten"), "one\n\ntwo\n\nten\n\n"},
		{"pdf", "application/pdf", attachtest.PDF("Hello PDF"), "Hello PDF"},
		{"text cut with a marker", "text/plain", []byte(strings.Repeat("é", 40)), strings.Repeat("é", 32) + "\n[… the document's text was cut here, at 64 bytes]"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			text, err := c.Text(bytes.NewReader(tt.data), int64(len(tt.data)), mustType(t, tt.mime))
			if err != nil {
				t.Fatal(err)
			}
			if !strings.Contains(text, tt.want) {
				t.Fatalf("text %q, want %q", text, tt.want)
			}
		})
	}
}

// heapGrowth runs f and returns the bytes it allocated in all (a bound on
// how far the heap could have grown).
func heapGrowth(f func()) uint64 {
	runtime.GC()
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	f()
	runtime.ReadMemStats(&after)
	return after.TotalAlloc - before.TotalAlloc
}

// TestHostileFilesRefusedWithinMemory checks that each hostile file is
// refused with a clear reason and that refusing it allocates only a few
// megabytes in all, whatever it claims to expand to.
func TestHostileFilesRefusedWithinMemory(t *testing.T) {
	const bound = 8 << 20
	pdf := attachtest.PDF("Hello PDF")
	tests := []struct {
		name, mime string
		data       []byte
		reason     string
	}{
		{"png claiming 100,000×100,000", "image/png", attachtest.HugePNG(100_000, 100_000), "100000×100000 pixels, over the limit of 50000000"},
		{"docx zip bomb past the total", DOCX, attachtest.DOCXBomb(24 << 20), "over the limit of 100 times (a zip bomb?)"},
		{"docx zip bomb past the ratio", DOCX, attachtest.DOCXBomb(8 << 20), "), over the limit of 100 times (a zip bomb?)"},
		{"truncated pdf", "application/pdf", pdf[:len(pdf)/2], "the PDF is damaged or unreadable"},
		{"magic bytes contradict the type", "application/pdf", attachtest.PNG(8, 8), "the content is a PNG image (image/png), not a PDF document"},
	}
	c := NewChecker(Limits{InflateBytes: 16 << 20})
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			declared := mustType(t, tt.mime)
			var err error
			grew := heapGrowth(func() {
				var ty Type
				ty, err = Detect(bytes.NewReader(tt.data), int64(len(tt.data)), declared, c.Limits())
				if err != nil {
					return
				}
				if ty.Kind == KindImage {
					_, err = c.Image(tt.data, ty)
				} else {
					_, err = c.Text(bytes.NewReader(tt.data), int64(len(tt.data)), ty)
				}
			})
			var r *Refusal
			if !errors.As(err, &r) || !strings.Contains(r.Reason, tt.reason) {
				t.Fatalf("got %v, want a refusal saying %q", err, tt.reason)
			}
			if grew > bound {
				t.Fatalf("refusing it allocated %d bytes, over %d", grew, bound)
			}
			t.Logf("%s: %q, %d KiB allocated", tt.name, r.Reason, grew>>10)
		})
	}
}

func TestTextBudgetStopsDecompression(t *testing.T) {
	// With the ratio check off, a part is still expanded only as far as
	// the text budget needs.
	data := attachtest.DOCXBomb(4 << 20)
	c := NewChecker(Limits{UnzipRatio: 1 << 20})
	grew := heapGrowth(func() {
		text, err := c.Text(bytes.NewReader(data), int64(len(data)), mustType(t, DOCX))
		if err != nil || !strings.Contains(text, "was cut here") {
			t.Errorf("Text = %.40q…, %v", text, err)
		}
	})
	if grew > 32<<20 {
		t.Fatalf("allocated %d bytes", grew)
	}
}

func TestInline(t *testing.T) {
	c := NewChecker(Limits{})
	img, err := c.InlineImage("messages[0].parts[0].image", attachtest.PNG(1500, 750), "image/png")
	if err != nil {
		t.Fatal(err)
	}
	if img.Width != 1024 || img.Height != 512 {
		t.Fatalf("inline image fitted to %d×%d", img.Width, img.Height)
	}
	if _, err := c.InlineImage("p.image", attachtest.PNG(3, 3), "image/jpeg"); err == nil || !strings.Contains(err.Error(), "p.image.data") {
		t.Fatalf("mismatch: %v", err)
	}
	if _, err := c.InlineImage("p.image", []byte("x"), "application/pdf"); err == nil || !strings.Contains(err.Error(), "p.image.mime_type") {
		t.Fatalf("document as image: %v", err)
	}
	doc, err := c.InlineDocument("p.document", attachtest.DOCX("inline words"), DOCX, "a.docx")
	if err != nil || !strings.Contains(doc.Text, "inline words") {
		t.Fatalf("inline docx: %+v, %v", doc, err)
	}
}
