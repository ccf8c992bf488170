package attach

import (
	"bytes"
	"runtime/metrics"
	"testing"
	"time"

	"github.com/parleyhq/parley/server/attach/attachtest"
)

// The extractor fuzz tests run as ordinary tests over their seeds (so CI
// runs them with go test), and search for more with, for example,
//
//	go test ./server/attach -run '^$' -fuzz FuzzPDF -fuzztime 5m
//
// Every input must be extracted or refused without a panic, within a
// memory bound (fuzzAllocBound of allocation in all, far under what a bomb
// would need) and a time bound, with the budgets of fuzzLimits.
var fuzzLimits = Limits{TextBytes: 64 << 10, InflateBytes: 4 << 20}

const (
	fuzzAllocBound = 48 << 20
	fuzzTimeBound  = 10 * time.Second
)

// allocated is the bytes allocated so far by the process (cheap to read:
// no stop of the world).
func allocated() uint64 {
	s := []metrics.Sample{{Name: "/gc/heap/allocs:bytes"}}
	metrics.Read(s)
	return s[0].Value.Uint64()
}

// extractWithin detects data as declared and extracts its text, failing
// the test past the memory or time bound.
func extractWithin(t *testing.T, c *Checker, data []byte, declared string) {
	t.Helper()
	pdfPanicOnBug = true
	defer func() { pdfPanicOnBug = false }()
	ty, _ := Lookup(declared)
	before, start := allocated(), time.Now()
	got, err := Detect(bytes.NewReader(data), int64(len(data)), ty, c.Limits())
	if err == nil && got.Kind == KindDocument {
		_, _ = c.Text(bytes.NewReader(data), int64(len(data)), got)
	}
	if grew := allocated() - before; grew > fuzzAllocBound {
		t.Fatalf("%s of %d bytes: allocated %d bytes, over %d", declared, len(data), grew, fuzzAllocBound)
	}
	if took := time.Since(start); took > fuzzTimeBound {
		t.Fatalf("%s of %d bytes: took %v", declared, len(data), took)
	}
}

func FuzzPDF(f *testing.F) {
	pdf := attachtest.PDF("Hello PDF")
	for _, seed := range [][]byte{
		pdf,
		pdf[:len(pdf)/2],
		attachtest.PDFObjStm("Hello streams"),
		attachtest.PDFDeflateBomb(16 << 20),
		attachtest.PDFTextBomb(16 << 20),
		attachtest.PDFRaw([][]byte{[]byte("BT (a) Tj ET BI /W 1 ID \x00 EI BT [(b) 3 (c)] TJ ET")}, "", false),
		attachtest.PDFRaw([][]byte{[]byte("48656c6c6f>"), []byte("<~87cURD]i,\"Ebo80~>")}, "ASCIIHexDecode", false),
		[]byte("%PDF-1.7\nxref\n0 1000000000\ntrailer\n<< /Size 1000000000 /Prev 0 >>\nstartxref\n9\n%%EOF"),
		[]byte("%PDF-1.7\n1 0 obj\n<< /Type /XRef /Size 2147483647 /W [8 8 8] /Length 0 >>\nstream\n\nendstream\nendobj\nstartxref\n9\n%%EOF"),
	} {
		f.Add(seed)
	}
	c := NewChecker(fuzzLimits)
	f.Fuzz(func(t *testing.T, data []byte) { extractWithin(t, c, data, "application/pdf") })
}

func FuzzDOCX(f *testing.F) {
	for _, seed := range [][]byte{
		attachtest.DOCX("First line", "Second &amp; last &#x263A; &unknown; <![CDATA[raw <text>]]>"),
		attachtest.DOCXBomb(2 << 20),
		attachtest.DOCXBomb(24 << 20),
	} {
		f.Add(seed)
	}
	c := NewChecker(fuzzLimits)
	f.Fuzz(func(t *testing.T, data []byte) { extractWithin(t, c, data, DOCX) })
}

func FuzzPPTX(f *testing.F) {
	for _, seed := range [][]byte{
		attachtest.PPTX("one", "two", "ten"),
		attachtest.PPTXBomb(2 << 20),
		attachtest.PPTXBomb(24 << 20),
	} {
		f.Add(seed)
	}
	c := NewChecker(fuzzLimits)
	f.Fuzz(func(t *testing.T, data []byte) { extractWithin(t, c, data, PPTX) })
}

// FuzzXMLText fuzzes the streaming XML scanner alone (no zip around it), so
// the fuzzer reaches its corners quickly.
func FuzzXMLText(f *testing.F) {
	for _, seed := range []string{
		`<w:document><w:body><w:p><w:r><w:t xml:space="preserve">a &amp; b</w:t><w:tab/><w:br/></w:r></w:p></w:body></w:document>`,
		`<?xml version="1.0"?><!DOCTYPE x [<!ENTITY a "aaaa">]><a:t>&a;&#65;&#x42;</a:t><!-- --->`,
		`<a:t><![CDATA[x]]]>y]]></a:t><a:t a='>'>z</a:t>`,
		`<a:t>&am`,
		`<a:t attr="` + string(bytes.Repeat([]byte("x"), 70<<10)) + `">`,
	} {
		f.Add([]byte(seed))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		b := &budget{max: 4 << 10}
		before := allocated()
		_ = xmlText(bytes.NewReader(data), b)
		_ = b.text()
		if grew := allocated() - before; grew > 1<<20+uint64(len(data)) {
			t.Fatalf("allocated %d bytes for %d of XML", grew, len(data))
		}
	})
}

func FuzzPlainText(f *testing.F) {
	for _, seed := range []string{"hello", "caf\xc3\xa9", "caf\xe9", "a\x00b"} {
		f.Add([]byte(seed))
	}
	c := NewChecker(fuzzLimits)
	f.Fuzz(func(t *testing.T, data []byte) { extractWithin(t, c, data, "text/plain") })
}

// FuzzPDFContent fuzzes the content-stream interpreter alone (what a
// page's decoded stream feeds it), where most of a PDF's bytes go.
func FuzzPDFContent(f *testing.F) {
	for _, seed := range []string{
		"BT /F1 24 Tf 72 720 Td (Hello \\(PDF\\) \\101\\n) Tj ET",
		"BT [(a) -20 (b) <4869>] TJ T* (c) ' 1 2 (d) \" ET",
		"q 1 0 0 1 0 0 cm BI /W 2 /H 2 /BPC 8 ID \x00\x01EI\x02 EI Q BT (after) Tj ET",
		"<< /MCID 0 >> BDC [[[[[(deep)]]]]] TJ EMC % a comment\r(unterminated",
		"<4", "(((", "[", "<<", "/Name#4", "BI ID",
	} {
		f.Add([]byte(seed))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		pdfPanicOnBug = true
		defer func() { pdfPanicOnBug = false }()
		b := &budget{max: 4 << 10}
		before := allocated()
		func() {
			defer func() {
				if p := recover(); p != nil {
					if _, ok := p.(pdfAbort); !ok {
						panic(p)
					}
				}
			}()
			contentText(bytes.NewReader(data), b)
		}()
		_ = b.text()
		if grew := allocated() - before; grew > 1<<20+2*uint64(len(data)) {
			t.Fatalf("allocated %d bytes for %d of content", grew, len(data))
		}
	})
}
