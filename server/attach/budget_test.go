package attach

import (
	"archive/zip"
	"bytes"
	"context"
	"errors"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/parleyhq/parley/server/attach/attachtest"
)

func TestPDFReader(t *testing.T) {
	c := NewChecker(Limits{})
	tests := []struct {
		name string
		data []byte
		want string
	}{
		{"xref table", attachtest.PDF("Hello PDF"), "Hello PDF"},
		{"object stream and xref stream", attachtest.PDFObjStm("Hello streams"), "Hello streams"},
		{"pages in order", attachtest.PDFRaw([][]byte{
			[]byte("BT (one) Tj ET"), []byte("BT [(t) -20 (wo)] TJ T* (and) ' ET"),
		}, "", false), "one\n\ntwo\nand\n"},
		{"escapes and hex", attachtest.PDFRaw([][]byte{[]byte(`BT (a\(b\)\101\nc) Tj <48 69> Tj ET`)}, "", false), "a(b)A\ncHi"},
		{"inline image skipped", attachtest.PDFRaw([][]byte{[]byte("BT (before) Tj ET BI /W 1 /H 1 ID \x00(EI)\xff EI BT (after) Tj ET")}, "", false), "before\nafter"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			text, err := c.Text(bytes.NewReader(tt.data), int64(len(tt.data)), mustType(t, "application/pdf"))
			if err != nil {
				t.Fatal(err)
			}
			if !strings.Contains(text, tt.want) {
				t.Fatalf("text %q, want %q in it", text, tt.want)
			}
		})
	}
}

// TestBombsStopAtTheInflationBudget checks that a document claiming
// gigabytes is read only as far as the inflation budget, in little memory
// and little time, and gives the text found so far with a marker.
func TestBombsStopAtTheInflationBudget(t *testing.T) {
	const inflateBudget = 8 << 20
	c := NewChecker(Limits{InflateBytes: inflateBudget, UnzipRatio: 1 << 30})
	tests := []struct {
		name, mime string
		data       []byte
		marker     string
	}{
		{"pdf deflate bomb (1 GiB of operators)", "application/pdf", attachtest.PDFDeflateBomb(1 << 30), "decompress more than 8388608 bytes"},
		{"pdf text bomb (1 GiB of text)", "application/pdf", attachtest.PDFTextBomb(1 << 30), "cut here, at 524288 bytes"},
		{"docx bomb past the budget", DOCX, attachtest.DOCXBomb(24 << 20), "cut here, at 524288 bytes"},
		{"pptx bomb past the budget", PPTX, attachtest.PPTXBomb(24 << 20), "cut here, at 524288 bytes"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var text string
			var err error
			start := time.Now()
			grew := heapGrowth(func() {
				text, err = c.Text(bytes.NewReader(tt.data), int64(len(tt.data)), mustType(t, tt.mime))
			})
			took := time.Since(start)
			if err != nil || !strings.Contains(text, tt.marker) {
				t.Fatalf("Text = %.60q…%q, %v; want the marker %q", text, text[max(0, len(text)-120):], err, tt.marker)
			}
			t.Logf("%d KiB file: %d KiB allocated, %v", len(tt.data)>>10, grew>>10, took.Round(time.Millisecond))
			if grew > 24<<20 {
				t.Errorf("allocated %d bytes, over 24 MiB", grew)
			}
		})
	}
	t.Run("zip bombs are refused by their ratio before a byte is inflated", func(t *testing.T) {
		c := NewChecker(Limits{})
		for _, data := range [][]byte{attachtest.DOCXBomb(16 << 20), attachtest.PPTXBomb(16 << 20)} {
			ty, err := Detect(bytes.NewReader(data), int64(len(data)), mustType(t, DOCX), c.Limits())
			if err != nil {
				ty = mustType(t, PPTX)
			}
			var r *Refusal
			_, err = c.Text(bytes.NewReader(data), int64(len(data)), ty)
			if !errors.As(err, &r) || !strings.Contains(r.Reason, "a zip bomb?") {
				t.Fatalf("%v", err)
			}
		}
	})
}

func TestZipEntriesNamedTwiceAreRefused(t *testing.T) {
	var b bytes.Buffer
	z := zip.NewWriter(&b)
	for _, name := range []string{"[Content_Types].xml", "word/document.xml", "WORD/document.xml"} {
		w, _ := z.Create(name)
		_, _ = w.Write([]byte(`<w:document><w:body><w:p><w:r><w:t>x</w:t></w:r></w:p></w:body></w:document>`))
	}
	_ = z.Close()
	data := b.Bytes()
	_, err := Detect(bytes.NewReader(data), int64(len(data)), mustType(t, DOCX), DefaultLimits())
	var r *Refusal
	if !errors.As(err, &r) || !strings.Contains(r.Reason, "twice") {
		t.Fatalf("Detect = %v; want a refusal of the duplicate", err)
	}
}

func TestPoolGivesEachUserTheirShare(t *testing.T) {
	p := NewPool(2, 1, 2)
	ctx := t.Context()
	relA, err := p.Acquire(ctx, "a")
	if err != nil {
		t.Fatal(err)
	}
	// a's second waits (its share is 1) while b gets the free slot at once.
	var got atomic.Bool
	var wg sync.WaitGroup
	wg.Go(func() {
		rel, err := p.Acquire(ctx, "a")
		if err == nil {
			got.Store(true)
			rel()
		}
	})
	relB, err := p.Acquire(ctx, "b")
	if err != nil {
		t.Fatal(err)
	}
	time.Sleep(20 * time.Millisecond)
	if got.Load() {
		t.Fatal("a got a second slot past its share")
	}
	// a's queue holds 2: the third waiter of a is refused at once.
	short, cancel := context.WithCancel(ctx)
	wg.Go(func() {
		rel, err := p.Acquire(short, "a")
		if err == nil {
			rel()
		}
	})
	time.Sleep(20 * time.Millisecond)
	if _, err := p.Acquire(ctx, "a"); !errors.Is(err, ErrBusy) {
		t.Fatalf("a's third waiter: %v, want ErrBusy", err)
	}
	cancel()
	relB()
	relA()
	wg.Wait()
	if !got.Load() {
		t.Fatal("a's waiter never ran")
	}
	if running, waiting := p.Stats(); running != 0 || waiting != 0 {
		t.Fatalf("left %d running, %d waiting", running, waiting)
	}
}
