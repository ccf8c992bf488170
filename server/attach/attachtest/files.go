// Package attachtest makes files for tests of attachments: real images,
// documents, and the hostile ones (a PNG claiming 100,000×100,000 pixels,
// DOCX and PPTX zip bombs, PDF deflate bombs, a truncated PDF).
package attachtest

import (
	"archive/zip"
	"bytes"
	"compress/flate"
	"compress/zlib"
	"encoding/binary"
	"fmt"
	"hash/crc32"
	"image"
	"image/color"
	"image/gif"
	"image/jpeg"
	"image/png"
	"strings"
)

func gradient(w, h int) *image.RGBA {
	img := image.NewRGBA(image.Rect(0, 0, w, h))
	for y := range h {
		for x := range w {
			img.Set(x, y, color.RGBA{uint8(x), uint8(y), uint8(x + y), 255})
		}
	}
	return img
}

// PNG is an opaque w×h PNG.
func PNG(w, h int) []byte {
	var b bytes.Buffer
	if err := png.Encode(&b, gradient(w, h)); err != nil {
		panic(err)
	}
	return b.Bytes()
}

// JPEG is a w×h JPEG.
func JPEG(w, h int) []byte {
	var b bytes.Buffer
	if err := jpeg.Encode(&b, gradient(w, h), nil); err != nil {
		panic(err)
	}
	return b.Bytes()
}

// GIF is a two-frame w×h GIF.
func GIF(w, h int) []byte {
	pal := color.Palette{color.Black, color.White}
	g := &gif.GIF{}
	for range 2 {
		g.Image = append(g.Image, image.NewPaletted(image.Rect(0, 0, w, h), pal))
		g.Delay = append(g.Delay, 10)
	}
	var b bytes.Buffer
	if err := gif.EncodeAll(&b, g); err != nil {
		panic(err)
	}
	return b.Bytes()
}

// HugePNG is a small, valid PNG header whose IHDR claims w×h pixels,
// followed by a tiny IDAT: decoding it would need w×h×4 bytes.
func HugePNG(w, h uint32) []byte {
	var b bytes.Buffer
	b.WriteString("\x89PNG\r\n\x1a\n")
	chunk := func(typ string, data []byte) {
		_ = binary.Write(&b, binary.BigEndian, uint32(len(data)))
		c := crc32.NewIEEE()
		c.Write([]byte(typ))
		c.Write(data)
		b.WriteString(typ)
		b.Write(data)
		_ = binary.Write(&b, binary.BigEndian, c.Sum32())
	}
	ihdr := make([]byte, 13)
	binary.BigEndian.PutUint32(ihdr[0:], w)
	binary.BigEndian.PutUint32(ihdr[4:], h)
	ihdr[8], ihdr[9] = 8, 6 // 8-bit RGBA
	chunk("IHDR", ihdr)
	chunk("IDAT", []byte{0x78, 0x9c, 0x03, 0x00, 0x00, 0x00, 0x00, 0x01})
	chunk("IEND", nil)
	return b.Bytes()
}

func office(files map[string]string) []byte {
	var b bytes.Buffer
	z := zip.NewWriter(&b)
	for _, name := range []string{"[Content_Types].xml", "word/document.xml", "ppt/presentation.xml", "ppt/slides/slide1.xml", "ppt/slides/slide2.xml", "ppt/slides/slide10.xml"} {
		body, ok := files[name]
		if !ok {
			continue
		}
		w, err := z.Create(name)
		if err != nil {
			panic(err)
		}
		_, _ = w.Write([]byte(body))
	}
	if err := z.Close(); err != nil {
		panic(err)
	}
	return b.Bytes()
}

const wordNS = `xmlns:w="http://schemas.openxmlformats.org/wordprocessingml/2006/main"`

// DOCX is a Word document with one paragraph per line of text.
func DOCX(lines ...string) []byte {
	var body strings.Builder
	for _, l := range lines {
		fmt.Fprintf(&body, `<w:p><w:r><w:t xml:space="preserve">%s</w:t></w:r></w:p>`, l)
	}
	return office(map[string]string{
		"[Content_Types].xml": `<?xml version="1.0"?><Types/>`,
		"word/document.xml":   `<?xml version="1.0"?><w:document ` + wordNS + `><w:body>` + body.String() + `</w:body></w:document>`,
	})
}

// PPTX is a presentation whose slides 1, 2 and 10 hold the given texts.
func PPTX(slide1, slide2, slide10 string) []byte {
	slide := func(s string) string {
		return `<p:sld xmlns:p="p" xmlns:a="a"><p:txBody><a:p><a:r><a:t>` + s + `</a:t></a:r></a:p></p:txBody></p:sld>`
	}
	return office(map[string]string{
		"[Content_Types].xml":    `<Types/>`,
		"ppt/presentation.xml":   `<p:presentation xmlns:p="p"/>`,
		"ppt/slides/slide1.xml":  slide(slide1),
		"ppt/slides/slide2.xml":  slide(slide2),
		"ppt/slides/slide10.xml": slide(slide10),
	})
}

// DOCXBomb is a small DOCX whose document.xml expands to n bytes.
func DOCXBomb(n int) []byte {
	var b bytes.Buffer
	z := zip.NewWriter(&b)
	w, err := z.Create("word/document.xml")
	if err != nil {
		panic(err)
	}
	_, _ = w.Write([]byte(`<w:document ` + wordNS + `><w:body><w:p><w:r><w:t>`))
	chunk := bytes.Repeat([]byte("a"), 1<<16)
	for left := n; left > 0; left -= len(chunk) {
		_, _ = w.Write(chunk[:min(left, len(chunk))])
	}
	_, _ = w.Write([]byte(`</w:t></w:r></w:p></w:body></w:document>`))
	if err := z.Close(); err != nil {
		panic(err)
	}
	return b.Bytes()
}

// PDF is a one-page PDF showing text (ASCII, without parentheses).
func PDF(text string) []byte {
	content := "BT /F1 24 Tf 72 720 Td (" + text + ") Tj ET"
	objs := []string{
		"<< /Type /Catalog /Pages 2 0 R >>",
		"<< /Type /Pages /Kids [3 0 R] /Count 1 >>",
		"<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792] /Contents 4 0 R /Resources << /Font << /F1 5 0 R >> >> >>",
		fmt.Sprintf("<< /Length %d >>\nstream\n%s\nendstream", len(content), content),
		"<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica >>",
	}
	var b bytes.Buffer
	b.WriteString("%PDF-1.4\n")
	offsets := make([]int, len(objs))
	for i, o := range objs {
		offsets[i] = b.Len()
		fmt.Fprintf(&b, "%d 0 obj\n%s\nendobj\n", i+1, o)
	}
	xref := b.Len()
	fmt.Fprintf(&b, "xref\n0 %d\n0000000000 65535 f \n", len(objs)+1)
	for _, off := range offsets {
		fmt.Fprintf(&b, "%010d 00000 n \n", off)
	}
	fmt.Fprintf(&b, "trailer\n<< /Size %d /Root 1 0 R >>\nstartxref\n%d\n%%%%EOF\n", len(objs)+1, xref)
	return b.Bytes()
}

// PPTXBomb is a small PPTX whose first slide expands to n bytes.
func PPTXBomb(n int) []byte {
	var b bytes.Buffer
	z := zip.NewWriter(&b)
	for _, name := range []string{"[Content_Types].xml", "ppt/presentation.xml"} {
		w, err := z.Create(name)
		if err != nil {
			panic(err)
		}
		_, _ = w.Write([]byte(`<Types/>`))
	}
	w, err := z.Create("ppt/slides/slide1.xml")
	if err != nil {
		panic(err)
	}
	_, _ = w.Write([]byte(`<p:sld xmlns:p="p" xmlns:a="a"><p:txBody><a:p><a:r><a:t>`))
	chunk := bytes.Repeat([]byte("a"), 1<<16)
	for left := n; left > 0; left -= len(chunk) {
		_, _ = w.Write(chunk[:min(left, len(chunk))])
	}
	_, _ = w.Write([]byte(`</a:t></a:r></a:p></p:txBody></p:sld>`))
	if err := z.Close(); err != nil {
		panic(err)
	}
	return b.Bytes()
}

// DeflateRepeat is a zlib stream that inflates to unit repeated to at
// least n bytes, made cheaply: one megabyte-block is compressed once and
// its deflate blocks repeated. Its checksum is not the data's: a bomb is
// never read to its end.
func DeflateRepeat(unit string, n int64) []byte {
	block := bytes.Repeat([]byte(unit), max(1, (1<<20)/len(unit)))
	var one bytes.Buffer
	fw, _ := flate.NewWriter(&one, flate.BestCompression)
	_, _ = fw.Write(block)
	_ = fw.Flush() // ends on a byte boundary, with no final block
	var out bytes.Buffer
	out.Write([]byte{0x78, 0xDA})
	for done := int64(0); done < n; done += int64(len(block)) {
		out.Write(one.Bytes())
	}
	out.Write([]byte{0x01, 0x00, 0x00, 0xFF, 0xFF}) // an empty final stored block
	out.Write([]byte{0, 0, 0, 1})                   // adler32 of nothing: wrong, never checked
	return out.Bytes()
}

// PDFRaw is a PDF of one page per content stream, each stored as given
// (already encoded) with filter (empty: none). With objStm the catalog,
// page tree and pages go in a compressed object stream indexed by a
// cross-reference stream (PDF 1.5); otherwise a classic xref table.
func PDFRaw(contents [][]byte, filter string, objStm bool) []byte {
	var b bytes.Buffer
	b.WriteString("%PDF-1.5\n%\xe2\xe3\xcf\xd3\n")
	n := len(contents)
	// Objects: 1 catalog, 2 pages, 3..2+n pages, 3+n..2+2n contents,
	// then (objStm) the object stream and the xref stream.
	dicts := map[int]string{
		1: "<< /Type /Catalog /Pages 2 0 R >>",
	}
	kids := ""
	for i := range n {
		kids += fmt.Sprintf("%d 0 R ", 3+i)
		dicts[3+i] = fmt.Sprintf("<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792] /Contents %d 0 R >>", 3+n+i)
	}
	dicts[2] = fmt.Sprintf("<< /Type /Pages /Kids [%s] /Count %d >>", kids, n)
	offsets := map[int]int{}
	filterEntry := ""
	if filter != "" {
		filterEntry = " /Filter /" + filter
	}
	for i, c := range contents {
		num := 3 + n + i
		offsets[num] = b.Len()
		fmt.Fprintf(&b, "%d 0 obj\n<< /Length %d%s >>\nstream\n", num, len(c), filterEntry)
		b.Write(c)
		b.WriteString("\nendstream\nendobj\n")
	}
	if !objStm {
		for num := 1; num <= 2+n; num++ {
			offsets[num] = b.Len()
			fmt.Fprintf(&b, "%d 0 obj\n%s\nendobj\n", num, dicts[num])
		}
		xref := b.Len()
		fmt.Fprintf(&b, "xref\n0 %d\n0000000000 65535 f \n", 3+2*n)
		for num := 1; num < 3+2*n; num++ {
			fmt.Fprintf(&b, "%010d 00000 n \n", offsets[num])
		}
		fmt.Fprintf(&b, "trailer\n<< /Size %d /Root 1 0 R >>\nstartxref\n%d\n%%%%EOF\n", 3+2*n, xref)
		return b.Bytes()
	}
	stmNum, xrefNum := 3+2*n, 4+2*n
	var head, body bytes.Buffer
	for num := 1; num <= 2+n; num++ {
		fmt.Fprintf(&head, "%d %d ", num, body.Len())
		body.WriteString(dicts[num] + "\n")
	}
	var z bytes.Buffer
	zw := zlib.NewWriter(&z)
	_, _ = zw.Write(head.Bytes())
	_, _ = zw.Write(body.Bytes())
	_ = zw.Close()
	offsets[stmNum] = b.Len()
	fmt.Fprintf(&b, "%d 0 obj\n<< /Type /ObjStm /N %d /First %d /Length %d /Filter /FlateDecode >>\nstream\n", stmNum, 2+n, head.Len(), z.Len())
	b.Write(z.Bytes())
	b.WriteString("\nendstream\nendobj\n")
	// The xref stream: W [1 4 2], PNG Up predictor as producers write it.
	var rows bytes.Buffer
	row := func(typ byte, a uint32, c uint16) {
		rows.WriteByte(typ)
		_ = binary.Write(&rows, binary.BigEndian, a)
		_ = binary.Write(&rows, binary.BigEndian, c)
	}
	row(0, 0, 0xFFFF)
	for num := 1; num <= 2+n; num++ {
		row(2, uint32(stmNum), uint16(num-1))
	}
	for i := range n {
		row(1, uint32(offsets[3+n+i]), 0)
	}
	row(1, uint32(offsets[stmNum]), 0)
	xrefOff := b.Len()
	row(1, uint32(xrefOff), 0)
	// PNG "Up" rows of 7 bytes.
	var pred bytes.Buffer
	prev := make([]byte, 7)
	raw := rows.Bytes()
	for i := 0; i < len(raw); i += 7 {
		pred.WriteByte(2)
		for j := range 7 {
			pred.WriteByte(raw[i+j] - prev[j])
		}
		copy(prev, raw[i:i+7])
	}
	z.Reset()
	zw = zlib.NewWriter(&z)
	_, _ = zw.Write(pred.Bytes())
	_ = zw.Close()
	fmt.Fprintf(&b, "%d 0 obj\n<< /Type /XRef /Size %d /W [1 4 2] /Root 1 0 R /Length %d /Filter /FlateDecode /DecodeParms << /Predictor 12 /Columns 7 >> >>\nstream\n",
		xrefNum, xrefNum+1, z.Len())
	b.Write(z.Bytes())
	fmt.Fprintf(&b, "\nendstream\nendobj\nstartxref\n%d\n%%%%EOF\n", xrefOff)
	return b.Bytes()
}

// Flate compresses data as a PDF FlateDecode stream.
func Flate(data []byte) []byte {
	var z bytes.Buffer
	zw := zlib.NewWriter(&z)
	_, _ = zw.Write(data)
	_ = zw.Close()
	return z.Bytes()
}

// PDFObjStm is a one-page PDF 1.5 showing text, its objects in a
// compressed object stream behind a cross-reference stream, its content
// compressed.
func PDFObjStm(text string) []byte {
	return PDFRaw([][]byte{Flate([]byte("BT /F1 24 Tf 72 720 Td (" + text + ") Tj ET"))}, "FlateDecode", true)
}

// PDFDeflateBomb is a one-page PDF whose content stream, a few kilobytes
// or megabytes, inflates to n bytes of drawing operators (no text).
func PDFDeflateBomb(n int64) []byte {
	return PDFRaw([][]byte{DeflateRepeat("1 0 0 1 0 0 cm\n", n)}, "FlateDecode", false)
}

// PDFTextBomb is a one-page PDF whose content stream inflates to n bytes
// of text operators.
func PDFTextBomb(n int64) []byte {
	return PDFRaw([][]byte{DeflateRepeat("(All work and no play) Tj\n", n)}, "FlateDecode", false)
}

// officeBomb is a DOCX or PPTX whose one text part states and inflates to
// about n bytes, made without compressing them: a megabyte of deflate
// blocks repeated (see DeflateRepeat). Its CRC is wrong; a bomb is never
// read to its end.
func officeBomb(part string, extra []string, n int64) []byte {
	z := DeflateRepeat("a", n)
	raw := z[2 : len(z)-4] // the deflate stream inside the zlib wrapper
	var b bytes.Buffer
	w := zip.NewWriter(&b)
	for _, name := range extra {
		f, _ := w.Create(name)
		_, _ = f.Write([]byte(`<Types/>`))
	}
	f, err := w.CreateRaw(&zip.FileHeader{Name: part, Method: zip.Deflate,
		CompressedSize64: uint64(len(raw)), UncompressedSize64: uint64(n)})
	if err != nil {
		panic(err)
	}
	_, _ = f.Write(raw)
	if err := w.Close(); err != nil {
		panic(err)
	}
	return b.Bytes()
}

// DOCXGigaBomb is a DOCX of a few megabytes whose document.xml states and
// inflates to n bytes (a gigabyte or more, made in milliseconds).
func DOCXGigaBomb(n int64) []byte {
	return officeBomb("word/document.xml", []string{"[Content_Types].xml"}, n)
}

// PPTXGigaBomb is DOCXGigaBomb's PPTX: its first slide inflates to n bytes.
func PPTXGigaBomb(n int64) []byte {
	return officeBomb("ppt/slides/slide1.xml", []string{"[Content_Types].xml", "ppt/presentation.xml"}, n)
}
