// Package attachtest makes files for tests of attachments: real images,
// documents, and the hostile ones (a PNG claiming 100,000×100,000 pixels, a
// DOCX zip bomb, a truncated PDF).
package attachtest

import (
	"archive/zip"
	"bytes"
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
