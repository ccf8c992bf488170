package attach

import (
	"bufio"
	"bytes"
	"compress/zlib"
	"encoding/ascii85"
	"errors"
	"io"
	"runtime"
)

// pdfText extracts a PDF's text page by page — the strings its content
// streams show, as raw bytes — until the text budget or the inflation
// budget is spent. It is Parley's own reader, built for hostile files: the
// cross-reference, object streams and page tree are read within fixed
// bounds (pdfMax…), every decoded stream counts against inf, and streams
// are decoded as they are read, never whole (object streams excepted, up to
// pdfMaxObjStm). Damage is a refusal; a page whose content cannot be decoded
// gives no text.
func pdfText(r io.ReaderAt, size int64, b *budget, inf *inflate) (err error) {
	defer func() {
		if p := recover(); p != nil {
			if a, ok := p.(pdfAbort); ok {
				err = pdfError(a.err)
				return
			}
			if _, bug := p.(runtime.Error); bug && pdfPanicOnBug {
				panic(p)
			}
			err = refuse("the PDF is damaged or unreadable")
		}
	}()
	f := &pdfFile{r: r, size: size, inf: inf, objstms: map[int64]*pdfObjStm{}}
	f.open()
	pages := 0
	f.pages(func(page pdfDict) {
		pages++
		f.pageText(page, b)
		if err := b.writeString("\n"); err != nil {
			pdfFail(err)
		}
	})
	if pages == 0 {
		return refuse("the PDF has no pages")
	}
	return nil
}

// pdfError makes any error of the reader that is not a budget's a refusal.
func pdfError(err error) error {
	var r *Refusal
	if err == nil || errors.Is(err, errFull) || errors.Is(err, errInflated) || errors.As(err, &r) {
		return err
	}
	return refuse("the PDF is damaged or unreadable: %v", err)
}

// pdfPanicOnBug lets tests see a parser bug (a runtime error) rather than
// a refusal.
var pdfPanicOnBug = false

type pdfXref struct {
	kind     uint8 // 0 none or free, 1 at off in the file, 2 in object stream stm at index idx
	off      int64
	stm, idx int32
}

type pdfObjStm struct {
	data  []byte
	first int64
	nums  []int64
	offs  []int64
}

type pdfFile struct {
	r        io.ReaderAt
	size     int64
	inf      *inflate
	xref     []pdfXref
	set      []bool
	trailer  pdfDict
	objstms  map[int64]*pdfObjStm
	objBytes int
	elements int
	resolves int
	read     int64
	depth    int
}

// countingReader counts the file bytes the parser reads against
// pdfMaxRead.
type countingReader struct {
	r io.Reader
	f *pdfFile
}

func (c *countingReader) Read(p []byte) (int, error) {
	n, err := c.r.Read(p)
	if c.f.read += int64(n); c.f.read > pdfMaxRead {
		pdfFail(refuse("the PDF is too costly to read (over %d bytes of structure)", pdfMaxRead))
	}
	return n, err
}

// lexerAt reads objects from the file at off.
func (f *pdfFile) lexerAt(off int64) *pdfLexer {
	if off < 0 || off >= f.size {
		pdfDamaged("an object offset is outside the file")
	}
	sr := io.NewSectionReader(f.r, off, f.size-off)
	l := newPDFLexer(&countingReader{sr, f}, 512, off)
	l.refs, l.counted = true, &f.elements
	return l
}

// open reads the cross-reference sections, newest first, and the trailer.
func (f *pdfFile) open() {
	tail := make([]byte, min(f.size, 2048))
	if _, err := f.r.ReadAt(tail, f.size-int64(len(tail))); err != nil && err != io.EOF {
		pdfFail(err)
	}
	i := bytes.LastIndex(tail, []byte("startxref"))
	if i < 0 {
		pdfDamaged("missing startxref (truncated?)")
	}
	l := newPDFLexer(bytes.NewReader(tail[i+len("startxref"):]), 64, 0)
	off, ok := l.token().(int64)
	if !ok {
		pdfDamaged("startxref is not followed by an offset")
	}
	seen := map[int64]bool{}
	for range pdfMaxSections {
		if seen[off] {
			break
		}
		seen[off] = true
		trailer := f.section(off)
		if f.trailer == nil {
			f.trailer = trailer
		} else {
			for _, k := range []pdfName{"Root", "Encrypt"} {
				if _, ok := f.trailer[k]; !ok && trailer[k] != nil {
					f.trailer[k] = trailer[k]
				}
			}
		}
		if stm, ok := trailer["XRefStm"].(int64); ok && !seen[stm] {
			seen[stm] = true
			f.section(stm)
		}
		prev, ok := trailer["Prev"].(int64)
		if !ok {
			break
		}
		off = prev
	}
	if f.trailer["Encrypt"] != nil {
		pdfFail(refuse("the PDF is encrypted"))
	}
}

// entry records object num's place, unless a newer section already did.
func (f *pdfFile) entry(num int64, e pdfXref) {
	if num < 0 || num >= pdfMaxObjects {
		pdfFail(refuse("the PDF has too many objects (over %d)", pdfMaxObjects))
	}
	if int(num) >= len(f.xref) {
		n := max(int(num)+1, 2*len(f.xref))
		n = min(n, pdfMaxObjects)
		f.xref = append(f.xref, make([]pdfXref, n-len(f.xref))...)
		f.set = append(f.set, make([]bool, n-len(f.set))...)
	}
	if !f.set[num] {
		f.set[num] = true
		f.xref[num] = e
	}
}

// section reads one cross-reference section (a table or a stream) at off
// and returns its trailer dictionary.
func (f *pdfFile) section(off int64) pdfDict {
	l := f.lexerAt(off)
	tok := l.token()
	if tok == pdfKeyword("xref") {
		for {
			tok := l.token()
			if tok == pdfKeyword("trailer") {
				d, ok := l.object(0).(pdfDict)
				if !ok {
					pdfDamaged("the trailer is not a dictionary")
				}
				return d
			}
			start, ok1 := tok.(int64)
			count, ok2 := l.token().(int64)
			if !ok1 || !ok2 || start < 0 || count < 0 {
				pdfDamaged("a cross-reference table is malformed")
			}
			if start+count > pdfMaxObjects {
				pdfFail(refuse("the PDF has too many objects (over %d)", pdfMaxObjects))
			}
			for i := range count {
				o, ok1 := l.token().(int64)
				g, ok2 := l.token().(int64)
				kw := l.token()
				if !ok1 || !ok2 || (kw != pdfKeyword("n") && kw != pdfKeyword("f")) {
					pdfDamaged("a cross-reference entry is malformed")
				}
				e := pdfXref{}
				if kw == pdfKeyword("n") && o > 0 {
					e = pdfXref{kind: 1, off: o}
				}
				_ = g
				f.entry(start+i, e)
			}
		}
	}
	l.unread(tok)
	s, ok := f.indirect(l).(*pdfStream)
	if !ok || s.dict["Type"] != pdfName("XRef") {
		pdfDamaged("no cross-reference table at its offset")
	}
	f.xrefStream(s)
	return s.dict
}

// indirect reads "n g obj <object>" and, for a stream, where its data
// starts.
func (f *pdfFile) indirect(l *pdfLexer) any {
	_, ok1 := l.token().(int64)
	_, ok2 := l.token().(int64)
	if !ok1 || !ok2 || l.token() != pdfKeyword("obj") {
		pdfDamaged("an object is not where the cross-reference says")
	}
	obj := l.object(0)
	d, ok := obj.(pdfDict)
	if !ok {
		return obj
	}
	if tok := l.token(); tok != pdfKeyword("stream") {
		return d
	}
	if c, ok := l.readByte(); ok {
		switch c {
		case '\r':
			if c2, ok := l.readByte(); ok && c2 != '\n' {
				l.unreadByte()
			}
		case '\n':
		default:
			l.unreadByte()
		}
	}
	return &pdfStream{dict: d, off: l.pos()}
}

func (f *pdfFile) xrefStream(s *pdfStream) {
	var w [3]int
	ws, _ := f.resolve(s.dict["W"]).(pdfArray)
	if len(ws) < 3 {
		pdfDamaged("a cross-reference stream has no /W")
	}
	total := 0
	for i := range 3 {
		v, ok := f.resolve(ws[i]).(int64)
		if !ok || v < 0 || v > 8 {
			pdfDamaged("a cross-reference stream's /W is malformed")
		}
		w[i] = int(v)
		total += w[i]
	}
	if total == 0 {
		pdfDamaged("a cross-reference stream's /W is empty")
	}
	size, _ := f.resolve(s.dict["Size"]).(int64)
	index, _ := f.resolve(s.dict["Index"]).(pdfArray)
	if index == nil {
		index = pdfArray{int64(0), size}
	}
	r, err := f.decoded(s)
	if err != nil {
		pdfFail(err)
	}
	row := make([]byte, total)
	field := func(b []byte) int64 {
		var v int64
		for _, c := range b {
			v = v<<8 | int64(c)
		}
		return v
	}
	for i := 0; i+1 < len(index); i += 2 {
		start, ok1 := f.resolve(index[i]).(int64)
		count, ok2 := f.resolve(index[i+1]).(int64)
		if !ok1 || !ok2 || start < 0 || count < 0 {
			pdfDamaged("a cross-reference stream's /Index is malformed")
		}
		if start+count > pdfMaxObjects {
			pdfFail(refuse("the PDF has too many objects (over %d)", pdfMaxObjects))
		}
		for j := range count {
			if _, err := io.ReadFull(r, row); err != nil {
				if errors.Is(err, errInflated) {
					pdfFail(refuse("the PDF's cross-reference is too large to read"))
				}
				pdfDamaged("a cross-reference stream is truncated")
			}
			typ := int64(1)
			if w[0] > 0 {
				typ = field(row[:w[0]])
			}
			a, b := field(row[w[0]:w[0]+w[1]]), field(row[w[0]+w[1]:])
			e := pdfXref{}
			switch typ {
			case 1:
				if a > 0 {
					e = pdfXref{kind: 1, off: a}
				}
			case 2:
				if a > 0 && a < pdfMaxObjects && b >= 0 && b < pdfMaxObjects {
					e = pdfXref{kind: 2, stm: int32(a), idx: int32(b)}
				}
			}
			f.entry(start+j, e)
		}
	}
}

// resolve follows a reference (and a chain of them) to its object; a
// reference to nothing is null.
func (f *pdfFile) resolve(v any) any {
	for range pdfMaxDepth {
		ref, ok := v.(pdfRef)
		if !ok {
			return v
		}
		v = f.object(ref.num)
	}
	pdfDamaged("references nest too deep")
	return nil
}

func (f *pdfFile) object(num int64) any {
	if num <= 0 || num >= int64(len(f.xref)) {
		return nil
	}
	if f.resolves++; f.resolves > pdfMaxResolves {
		pdfFail(refuse("the PDF is too costly to read (over %d objects)", pdfMaxResolves))
	}
	if f.depth++; f.depth > pdfMaxDepth {
		pdfDamaged("references nest too deep")
	}
	defer func() { f.depth-- }()
	e := f.xref[num]
	switch e.kind {
	case 1:
		return f.indirect(f.lexerAt(e.off))
	case 2:
		return f.inStream(int64(e.stm), int64(e.idx))
	}
	return nil
}

// inStream reads object idx of object stream stm, decoding the stream once
// (up to pdfMaxObjStm; those kept at once are bounded by pdfMaxObjStmAll).
func (f *pdfFile) inStream(stm, idx int64) any {
	os := f.objstms[stm]
	if os == nil {
		if stm >= int64(len(f.xref)) || f.xref[stm].kind != 1 {
			return nil // an object stream is never itself in a stream
		}
		s, ok := f.indirect(f.lexerAt(f.xref[stm].off)).(*pdfStream)
		if !ok {
			return nil
		}
		n, _ := f.resolve(s.dict["N"]).(int64)
		first, _ := f.resolve(s.dict["First"]).(int64)
		if n < 0 || n > pdfMaxObjects || first < 0 {
			pdfDamaged("an object stream's header is malformed")
		}
		r, err := f.decoded(s)
		if err != nil {
			return nil
		}
		data, err := io.ReadAll(io.LimitReader(r, pdfMaxObjStm+1))
		switch {
		case errors.Is(err, errInflated):
			pdfFail(refuse("the PDF's object streams are too large to read"))
		case len(data) > pdfMaxObjStm:
			pdfFail(refuse("an object stream of the PDF is over %d bytes", pdfMaxObjStm))
		case err != nil:
			pdfDamaged("an object stream cannot be decoded")
		}
		if first > int64(len(data)) {
			pdfDamaged("an object stream's header is malformed")
		}
		os = &pdfObjStm{data: data, first: first}
		l := newPDFLexer(bytes.NewReader(data[:first]), 512, 0)
		for range n {
			num, ok1 := l.token().(int64)
			off, ok2 := l.token().(int64)
			if !ok1 || !ok2 {
				break
			}
			os.nums = append(os.nums, num)
			os.offs = append(os.offs, off)
		}
		if f.objBytes+len(data) > pdfMaxObjStmAll {
			clear(f.objstms)
			f.objBytes = 0
		}
		f.objstms[stm] = os
		f.objBytes += len(data)
	}
	if idx < 0 || idx >= int64(len(os.offs)) {
		return nil
	}
	at := os.first + os.offs[idx]
	if at < os.first || at >= int64(len(os.data)) {
		return nil
	}
	l := newPDFLexer(bytes.NewReader(os.data[at:]), 512, 0)
	l.refs, l.counted = true, &f.elements
	return l.object(0)
}

// raw returns a stream's encoded bytes: /Length of them, or up to
// "endstream" when /Length is missing or wrong.
func (f *pdfFile) raw(s *pdfStream) io.Reader {
	n, ok := f.resolve(s.dict["Length"]).(int64)
	if !ok || n < 0 || s.off+n > f.size {
		n = f.findEndstream(s.off)
	}
	return &countingReader{io.NewSectionReader(f.r, s.off, n), f}
}

func (f *pdfFile) findEndstream(off int64) int64 {
	const mark = "endstream"
	buf := make([]byte, 32<<10)
	for at := off; at < f.size; at += int64(len(buf) - len(mark)) {
		n, _ := f.r.ReadAt(buf, at)
		if f.read += int64(n); f.read > pdfMaxRead {
			pdfFail(refuse("the PDF is too costly to read (over %d bytes of structure)", pdfMaxRead))
		}
		if i := bytes.Index(buf[:n], []byte(mark)); i >= 0 {
			return at + int64(i) - off
		}
		if n < len(buf) {
			break
		}
	}
	return f.size - off
}

var errPDFFilter = errors.New("attach: unsupported PDF filter")

// decoded returns a stream's data with its filters applied, every stage's
// output counted against the inflation budget.
func (f *pdfFile) decoded(s *pdfStream) (io.Reader, error) {
	var r io.Reader = f.raw(s)
	filters := f.resolve(s.dict["Filter"])
	parms := f.resolve(s.dict["DecodeParms"])
	var names []any
	var ps []any
	switch v := filters.(type) {
	case nil:
	case pdfName:
		names, ps = []any{v}, []any{parms}
	case pdfArray:
		names = v
		if a, ok := parms.(pdfArray); ok {
			ps = a
		}
	default:
		return nil, errPDFFilter
	}
	if len(names) > 8 {
		return nil, errPDFFilter
	}
	for i, n := range names {
		name, _ := f.resolve(n).(pdfName)
		var parm pdfDict
		if i < len(ps) {
			parm, _ = f.resolve(ps[i]).(pdfDict)
		}
		var err error
		if r, err = f.filter(r, name, parm); err != nil {
			return nil, err
		}
		r = f.inf.reader(r)
	}
	if len(names) == 0 {
		r = f.inf.reader(r)
	}
	return r, nil
}

func (f *pdfFile) filter(r io.Reader, name pdfName, parm pdfDict) (io.Reader, error) {
	switch name {
	case "FlateDecode", "Fl":
		zr, err := zlib.NewReader(bufio.NewReader(r))
		if err != nil {
			return nil, err
		}
		return f.predictor(zr, parm)
	case "ASCIIHexDecode", "AHx":
		return &hexReader{r: bufio.NewReader(r)}, nil
	case "ASCII85Decode", "A85":
		return ascii85.NewDecoder(&a85Clean{r: bufio.NewReader(r)}), nil
	case "RunLengthDecode", "RL":
		return &runLengthReader{r: bufio.NewReader(r)}, nil
	}
	return nil, errPDFFilter
}

// predictor undoes a Flate stream's PNG predictor (/Predictor 10–15).
func (f *pdfFile) predictor(r io.Reader, parm pdfDict) (io.Reader, error) {
	pred, _ := f.resolve(parm["Predictor"]).(int64)
	if pred <= 1 {
		return r, nil
	}
	if pred < 10 {
		return nil, errPDFFilter // TIFF predictor: not used for text or structure
	}
	get := func(k pdfName, def int64) int64 {
		if v, ok := f.resolve(parm[k]).(int64); ok {
			return v
		}
		return def
	}
	colors, bpc, columns := get("Colors", 1), get("BitsPerComponent", 8), get("Columns", 1)
	if colors < 1 || colors > 32 || bpc < 1 || bpc > 16 || columns < 1 || columns > 1<<20 {
		return nil, errPDFFilter
	}
	bpp := int((colors*bpc + 7) / 8)
	row := int((columns*colors*bpc + 7) / 8)
	return &pngPredictor{r: bufio.NewReader(r), bpp: bpp, prev: make([]byte, row), cur: make([]byte, row)}, nil
}

// pages calls visit with each page, in order, walking the page tree with
// cycle and depth checks, at most maxPDFPages.
func (f *pdfFile) pages(visit func(pdfDict)) {
	root, _ := f.resolve(f.trailer["Root"]).(pdfDict)
	if root == nil {
		pdfDamaged("no document catalog")
	}
	seen := map[int64]bool{}
	count := 0
	var walk func(node any, depth int)
	walk = func(node any, depth int) {
		if depth > pdfMaxDepth {
			pdfDamaged("the page tree nests too deep")
		}
		if ref, ok := node.(pdfRef); ok {
			if seen[ref.num] {
				return
			}
			seen[ref.num] = true
		}
		d, _ := f.resolve(node).(pdfDict)
		if d == nil {
			return
		}
		kids, hasKids := f.resolve(d["Kids"]).(pdfArray)
		if d["Type"] == pdfName("Pages") || (d["Type"] == nil && hasKids) {
			for _, k := range kids {
				if count >= maxPDFPages {
					return
				}
				walk(k, depth+1)
			}
			return
		}
		count++
		visit(d)
	}
	walk(root["Pages"], 0)
}

// pageText writes the text a page's content shows.
func (f *pdfFile) pageText(page pdfDict, b *budget) {
	var streams []*pdfStream
	switch c := f.resolve(page["Contents"]).(type) {
	case *pdfStream:
		streams = append(streams, c)
	case pdfArray:
		for _, v := range c {
			if s, ok := f.resolve(v).(*pdfStream); ok {
				streams = append(streams, s)
			}
		}
	}
	if len(streams) == 0 {
		return
	}
	// A page's content may be split anywhere between its streams: read them
	// as one, each opened (its decompressor made) only when reached.
	next := 0
	r := &lazyMulti{open: func() io.Reader {
		for next < len(streams) {
			s := streams[next]
			next++
			if r, err := f.decoded(s); err == nil {
				return r
			}
		}
		return nil
	}}
	contentText(r, b)
}

// contentText interprets a content stream for its text operators: BT and
// T* start a line, Tj ' " show a string, TJ shows the strings of an array.
// Inline images (BI … ID … EI) are skipped. A stream that breaks off ends
// the page's text; the inflation and text budgets end the document's.
func contentText(r io.Reader, b *budget) {
	l := newPDFLexer(&contentReader{r}, 16<<10, 0)
	l.content = true
	var stk []any
	write := func(s pdfString) {
		if err := b.writeString(string(s)); err != nil {
			pdfFail(err)
		}
	}
	for {
		obj := l.object(0)
		kw, ok := obj.(pdfKeyword)
		if !ok {
			if _, eof := obj.(pdfEOF); eof {
				return
			}
			if len(stk) >= pdfMaxOperands {
				stk = stk[:0]
			}
			stk = append(stk, obj)
			continue
		}
		var last any
		if len(stk) > 0 {
			last = stk[len(stk)-1]
		}
		switch kw {
		case "BT", "T*":
			write("\n")
		case "Tj", "'", "\"":
			if s, ok := last.(pdfString); ok {
				write(s)
			}
		case "TJ":
			if a, ok := last.(pdfArray); ok {
				for _, v := range a {
					if s, ok := v.(pdfString); ok {
						write(s)
					}
				}
			}
		case "BI":
			skipInlineImage(l)
		}
		stk = stk[:0]
	}
}

// contentReader ends a content stream at a decoding error (the page's text
// stops there) but lets the budgets' errors through.
type contentReader struct{ r io.Reader }

func (c *contentReader) Read(p []byte) (int, error) {
	n, err := c.r.Read(p)
	if err != nil && err != io.EOF && !errors.Is(err, errInflated) {
		return n, io.EOF
	}
	return n, err
}

// skipInlineImage skips an inline image's parameters and data: up to ID,
// then to an EI that follows white space and is followed by white space, a
// delimiter or the end.
func skipInlineImage(l *pdfLexer) {
	for {
		tok := l.token()
		if _, eof := tok.(pdfEOF); eof {
			return
		}
		if tok == pdfKeyword("ID") {
			break
		}
	}
	state := 0 // 1: after white space, 2: after " E", 3: after " EI"
	for {
		c, ok := l.readByte()
		if !ok {
			return
		}
		switch {
		case state == 3 && (isPDFSpace(c) || isPDFDelim(c)):
			l.unreadByte()
			return
		case isPDFSpace(c):
			state = 1
		case state == 1 && c == 'E':
			state = 2
		case state == 2 && c == 'I':
			state = 3
		default:
			state = 0
		}
	}
}

// lazyMulti reads the readers open returns, one after the other, until it
// returns nil.
type lazyMulti struct {
	open func() io.Reader
	cur  io.Reader
	done bool
}

func (m *lazyMulti) Read(p []byte) (int, error) {
	for !m.done {
		if m.cur == nil {
			if m.cur = m.open(); m.cur == nil {
				m.done = true
				break
			}
		}
		n, err := m.cur.Read(p)
		if err == io.EOF {
			m.cur = nil
			if n > 0 {
				return n, nil
			}
			continue
		}
		return n, err
	}
	return 0, io.EOF
}

type hexReader struct {
	r    *bufio.Reader
	done bool
}

func (h *hexReader) Read(p []byte) (int, error) {
	n := 0
	for n < len(p) && !h.done {
		var v [2]byte
		got := 0
		for got < 2 {
			c, err := h.r.ReadByte()
			if err != nil || c == '>' {
				h.done = true
				break
			}
			if d, ok := unhex(c); ok {
				v[got] = d
				got++
			}
		}
		if got == 0 {
			break
		}
		p[n] = v[0]<<4 | v[1]
		n++
	}
	if n == 0 && h.done {
		return 0, io.EOF
	}
	return n, nil
}

// a85Clean feeds encoding/ascii85 a PDF's ASCII85 data: without its <~
// prefix and white space, up to the ~> that ends it.
type a85Clean struct {
	r     *bufio.Reader
	start bool
	done  bool
}

func (a *a85Clean) Read(p []byte) (int, error) {
	if !a.start {
		a.start = true
		if head, _ := a.r.Peek(2); string(head) == "<~" {
			_, _ = a.r.Discard(2)
		}
	}
	n := 0
	for n < len(p) && !a.done {
		c, err := a.r.ReadByte()
		if err != nil || c == '~' {
			a.done = true
			break
		}
		if isPDFSpace(c) {
			continue
		}
		p[n] = c
		n++
	}
	if n == 0 && a.done {
		return 0, io.EOF
	}
	return n, nil
}

type runLengthReader struct {
	r           *bufio.Reader
	lit, repeat int
	b           byte
	done        bool
}

func (rl *runLengthReader) Read(p []byte) (int, error) {
	n := 0
	for n < len(p) {
		switch {
		case rl.lit > 0:
			c, err := rl.r.ReadByte()
			if err != nil {
				rl.done, rl.lit = true, 0
				continue
			}
			p[n] = c
			n++
			rl.lit--
		case rl.repeat > 0:
			p[n] = rl.b
			n++
			rl.repeat--
		case rl.done:
			if n == 0 {
				return 0, io.EOF
			}
			return n, nil
		default:
			c, err := rl.r.ReadByte()
			if err != nil || c == 128 {
				rl.done = true
				continue
			}
			if c < 128 {
				rl.lit = int(c) + 1
			} else if b, err := rl.r.ReadByte(); err == nil {
				rl.b, rl.repeat = b, 257-int(c)
			} else {
				rl.done = true
			}
		}
	}
	return n, nil
}

// pngPredictor undoes PNG row filters: each row is a filter byte and a
// row's worth of bytes.
type pngPredictor struct {
	r         *bufio.Reader
	bpp       int
	prev, cur []byte
	pending   []byte
	err       error
}

func (p *pngPredictor) Read(out []byte) (int, error) {
	for len(p.pending) == 0 {
		if p.err != nil {
			return 0, p.err
		}
		typ, err := p.r.ReadByte()
		if err != nil {
			p.err = err
			continue
		}
		if _, err := io.ReadFull(p.r, p.cur); err != nil {
			p.err = err
			if err == io.ErrUnexpectedEOF {
				p.err = io.EOF
			}
			continue
		}
		cur, prev, bpp := p.cur, p.prev, p.bpp
		for i := range cur {
			var a, b, c byte
			if i >= bpp {
				a, c = cur[i-bpp], prev[i-bpp]
			}
			b = prev[i]
			switch typ {
			case 1:
				cur[i] += a
			case 2:
				cur[i] += b
			case 3:
				cur[i] += byte((int(a) + int(b)) / 2)
			case 4:
				cur[i] += paeth(a, b, c)
			}
		}
		p.prev, p.cur = cur, prev
		p.pending = p.prev
	}
	n := copy(out, p.pending)
	p.pending = p.pending[n:]
	return n, nil
}

func paeth(a, b, c byte) byte {
	pa, pb, pc := int(b)-int(c), int(a)-int(c), int(a)+int(b)-2*int(c)
	abs := func(x int) int {
		if x < 0 {
			return -x
		}
		return x
	}
	pa, pb, pc = abs(pa), abs(pb), abs(pc)
	switch {
	case pa <= pb && pa <= pc:
		return a
	case pb <= pc:
		return b
	}
	return c
}
