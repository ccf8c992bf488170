package attach

import (
	"errors"
	"io"
	"strconv"
	"strings"
)

// The PDF object model, as far as text extraction needs it.
type (
	pdfName    string
	pdfString  string // raw bytes
	pdfArray   []any
	pdfDict    map[pdfName]any
	pdfKeyword string // an operator, or one of [ ] << >> { } R obj endobj stream …
	pdfRef     struct{ num, gen int64 }
	// pdfStream is a stream object: its dictionary and where its data
	// starts in the file.
	pdfStream struct {
		dict pdfDict
		off  int64
	}
	pdfEOF struct{}
)

// Bounds of the PDF reader. Together with the inflation budget they bound
// the memory and the work of reading any file, whatever it claims.
const (
	pdfMaxObjects   = 1 << 19 // object numbers in the cross-reference
	pdfMaxElements  = 1 << 22 // array and dictionary elements parsed from the file's objects, in all
	pdfMaxArray     = 1 << 16 // elements of one array or dictionary
	pdfMaxDepth     = 32      // nesting of arrays and dictionaries, and of references
	pdfMaxString    = 1 << 20 // bytes kept of one string
	pdfMaxToken     = 4 << 10 // bytes of a name, number or operator
	pdfMaxOperands  = 4096    // operands waiting for an operator in a content stream
	pdfMaxObjStm    = 8 << 20 // decoded bytes of one object stream
	pdfMaxObjStmAll = 8 << 20 // decoded object streams kept at once
	pdfMaxResolves  = 1 << 18 // objects loaded, in all
	pdfMaxRead      = 64 << 20
	pdfMaxSections  = 64 // cross-reference sections (the /Prev chain)
)

// pdfAbort carries an error out of the parser by panic; pdfText recovers
// it.
type pdfAbort struct{ err error }

func pdfFail(err error) { panic(pdfAbort{err}) }

func pdfDamaged(format string, args ...any) {
	pdfFail(refuse("the PDF is damaged or unreadable: "+format, args...))
}

// pdfLexer reads PDF tokens and objects from a byte stream, through its
// own buffer (a byte at a time is the hot path).
type pdfLexer struct {
	src  io.Reader
	data []byte
	i, n int   // next byte, bytes in data
	base int64 // source offset of data[0]
	err  error
	back []any // tokens pushed back
	refs bool  // read "n g R" as a reference (not in content streams)
	// content reads a content stream, where only strings matter: numbers
	// and names come back as placeholders, unparsed, and operators
	// interned, so the lexer allocates nothing per token.
	content bool
	counted *int // elements parsed, against pdfMaxElements (nil: not counted)
	buf     []byte
}

// newPDFLexer reads src, whose first byte is at offset pos, with a buffer
// of size bytes.
func newPDFLexer(src io.Reader, size int, pos int64) *pdfLexer {
	return &pdfLexer{src: src, data: make([]byte, size), base: pos}
}

// pos is the source offset of the next byte.
func (l *pdfLexer) pos() int64 { return l.base + int64(l.i) }

func (l *pdfLexer) readByte() (byte, bool) {
	if l.i < l.n {
		c := l.data[l.i]
		l.i++
		return c, true
	}
	return l.fill()
}

// fill refills the buffer, keeping the last byte read so that unreadByte
// always works.
func (l *pdfLexer) fill() (byte, bool) {
	if l.n > 0 {
		l.data[0] = l.data[l.n-1]
		l.base += int64(l.n - 1)
		l.i, l.n = 1, 1
	}
	for l.err == nil {
		m, err := l.src.Read(l.data[l.n:])
		l.n += m
		l.err = err
		if m > 0 {
			break
		}
	}
	if l.i < l.n {
		c := l.data[l.i]
		l.i++
		return c, true
	}
	if l.err != io.EOF {
		pdfFail(l.err)
	}
	return 0, false
}

func (l *pdfLexer) unreadByte() { l.i-- }

// pdfClass classes bytes: 1 white space, 2 delimiter.
var pdfClass = func() (t [256]uint8) {
	for _, c := range []byte(" \n\r\t\f\x00") {
		t[c] = 1
	}
	for _, c := range []byte("()<>[]{}/%") {
		t[c] = 2
	}
	return t
}()

func isPDFSpace(c byte) bool { return pdfClass[c] == 1 }

func isPDFDelim(c byte) bool { return pdfClass[c] == 2 }

func (l *pdfLexer) unread(tok any) { l.back = append(l.back, tok) }

// token returns the next token: int64, float64, pdfName, pdfString,
// pdfKeyword, or pdfEOF at the end.
func (l *pdfLexer) token() any {
	if n := len(l.back); n > 0 {
		tok := l.back[n-1]
		l.back = l.back[:n-1]
		return tok
	}
	var c byte
	for {
		// White space, fast while it lies in the buffer.
		for l.i < l.n && pdfClass[l.data[l.i]] == 1 {
			l.i++
		}
		var ok bool
		if c, ok = l.readByte(); !ok {
			return pdfEOF{}
		}
		if c == '%' { // a comment, to the end of the line
			for c != '\n' && c != '\r' {
				if c, ok = l.readByte(); !ok {
					return pdfEOF{}
				}
			}
			continue
		}
		if !isPDFSpace(c) {
			break
		}
	}
	switch c {
	case '(':
		return l.literal()
	case '<':
		if c2, ok := l.readByte(); ok {
			if c2 == '<' {
				return pdfKeyword("<<")
			}
			l.unreadByte()
		}
		return l.hex()
	case '>':
		if c2, ok := l.readByte(); ok {
			if c2 == '>' {
				return pdfKeyword(">>")
			}
			l.unreadByte()
		}
		return pdfKeyword(">")
	case '[', ']', '{', '}', ')':
		return pdfKeyword(c)
	case '/':
		if l.content {
			l.skipRegular()
			return pdfName("")
		}
		return l.name()
	}
	// A regular token lying wholly in the buffer is taken in place.
	if j := l.i; true {
		for j < l.n && pdfClass[l.data[j]] == 0 {
			j++
		}
		if j < l.n && j-l.i < pdfMaxToken {
			tok := l.data[l.i-1 : j]
			l.i = j
			return l.regular(tok)
		}
	}
	l.buf = append(l.buf[:0], c)
	for {
		c, ok := l.readByte()
		if !ok {
			break
		}
		if pdfClass[c] != 0 {
			l.unreadByte()
			break
		}
		if len(l.buf) < pdfMaxToken {
			l.buf = append(l.buf, c)
		}
	}
	return l.regular(l.buf)
}

// regular makes a number or a keyword of a regular token.
func (l *pdfLexer) regular(tok []byte) any {
	if l.content {
		if c := tok[0]; c >= '0' && c <= '9' || c == '-' || c == '+' || c == '.' {
			return pdfPlaceholder
		}
		if kw, ok := pdfOperators[string(tok)]; ok {
			return kw
		}
		return pdfKeyword(tok)
	}
	if n, ok := pdfNumber(tok); ok {
		return n
	}
	return pdfKeyword(tok)
}

// pdfPlaceholder stands for a number in a content stream.
var pdfPlaceholder any = float64(0)

// pdfOperators are the content stream operators, interned.
var pdfOperators = func() map[string]any {
	m := map[string]any{}
	for _, op := range strings.Fields(`b B b* B* BDC BI BMC BT BX c cm CS cs d d0 d1 Do DP EI EMC ET EX f F f* G g gs
		h i ID j J K k l m M MP n q Q re RG rg ri s S SC sc SCN scn sh T* Tc Td TD Tf Tj TJ TL Tm Tr Ts Tw Tz v w W W* y ' " true false null`) {
		m[op] = pdfKeyword(op)
	}
	return m
}()

func (l *pdfLexer) skipRegular() {
	for {
		c, ok := l.readByte()
		if !ok {
			return
		}
		if isPDFSpace(c) || isPDFDelim(c) {
			l.unreadByte()
			return
		}
	}
}

// pdfNumber parses an integer or a real; anything else is not a number.
func pdfNumber(b []byte) (any, bool) {
	if len(b) == 0 {
		return nil, false
	}
	digits, dot := 0, false
	for i, c := range b {
		switch {
		case c >= '0' && c <= '9':
			digits++
		case c == '.' && !dot:
			dot = true
		case (c == '-' || c == '+') && i == 0:
		default:
			return nil, false
		}
	}
	if digits == 0 {
		return nil, false
	}
	if !dot {
		if n, err := strconv.ParseInt(string(b), 10, 64); err == nil {
			return n, true
		}
	}
	f, err := strconv.ParseFloat(string(b), 64)
	if err != nil {
		return float64(0), true
	}
	return f, true
}

func (l *pdfLexer) literal() pdfString {
	l.buf = l.buf[:0]
	put := func(c byte) {
		if len(l.buf) < pdfMaxString {
			l.buf = append(l.buf, c)
		}
	}
	depth := 1
	for {
		c, ok := l.readByte()
		if !ok {
			return pdfString(l.buf)
		}
		switch c {
		case '(':
			depth++
			put(c)
		case ')':
			if depth--; depth == 0 {
				return pdfString(l.buf)
			}
			put(c)
		case '\\':
			c, ok = l.readByte()
			if !ok {
				return pdfString(l.buf)
			}
			switch c {
			case 'n':
				put('\n')
			case 'r':
				put('\r')
			case 't':
				put('\t')
			case 'b':
				put('\b')
			case 'f':
				put('\f')
			case '\r':
				if c2, ok := l.readByte(); ok && c2 != '\n' {
					l.unreadByte()
				}
			case '\n':
			case '0', '1', '2', '3', '4', '5', '6', '7':
				v := int(c - '0')
				for range 2 {
					c2, ok := l.readByte()
					if !ok {
						break
					}
					if c2 < '0' || c2 > '7' {
						l.unreadByte()
						break
					}
					v = v*8 + int(c2-'0')
				}
				put(byte(v))
			default:
				put(c)
			}
		default:
			put(c)
		}
	}
}

func unhex(c byte) (byte, bool) {
	switch {
	case c >= '0' && c <= '9':
		return c - '0', true
	case c >= 'a' && c <= 'f':
		return c - 'a' + 10, true
	case c >= 'A' && c <= 'F':
		return c - 'A' + 10, true
	}
	return 0, false
}

func (l *pdfLexer) hex() pdfString {
	l.buf = l.buf[:0]
	var hi byte
	half := false
	for {
		c, ok := l.readByte()
		if !ok || c == '>' {
			break
		}
		v, ok := unhex(c)
		if !ok {
			continue
		}
		if half {
			if len(l.buf) < pdfMaxString {
				l.buf = append(l.buf, hi<<4|v)
			}
		} else {
			hi = v
		}
		half = !half
	}
	if half && len(l.buf) < pdfMaxString {
		l.buf = append(l.buf, hi<<4)
	}
	return pdfString(l.buf)
}

func (l *pdfLexer) name() pdfName {
	l.buf = l.buf[:0]
	for {
		c, ok := l.readByte()
		if !ok {
			break
		}
		if isPDFSpace(c) || isPDFDelim(c) {
			l.unreadByte()
			break
		}
		if c == '#' {
			h, ok1 := l.readByte()
			lo, ok2 := l.readByte()
			hv, ok3 := unhex(h)
			lv, ok4 := unhex(lo)
			if ok1 && ok2 && ok3 && ok4 {
				c = hv<<4 | lv
			} else {
				if ok2 {
					l.unreadByte()
				}
				if ok1 && !ok2 {
					l.unreadByte()
				}
			}
		}
		if len(l.buf) < pdfMaxToken {
			l.buf = append(l.buf, c)
		}
	}
	return pdfName(l.buf)
}

// object reads one object: a value, an array, a dictionary, a reference
// (when refs), or a keyword the caller interprets.
func (l *pdfLexer) object(depth int) any {
	tok := l.token()
	switch t := tok.(type) {
	case pdfKeyword:
		switch t {
		case "[":
			return l.array(depth + 1)
		case "<<":
			return l.dict(depth + 1)
		case "true":
			return true
		case "false":
			return false
		case "null":
			return nil
		}
	case int64:
		if !l.refs {
			return t
		}
		t2 := l.token()
		if g, ok := t2.(int64); ok {
			t3 := l.token()
			if t3 == pdfKeyword("R") {
				return pdfRef{t, g}
			}
			l.unread(t3)
		}
		l.unread(t2)
	}
	return tok
}

var errPDFNesting = errors.New("objects nest too deep")

func (l *pdfLexer) count() {
	if l.counted != nil {
		if *l.counted++; *l.counted > pdfMaxElements {
			pdfFail(refuse("the PDF has too many objects to read (over %d elements)", pdfMaxElements))
		}
	}
}

func (l *pdfLexer) array(depth int) pdfArray {
	if depth > pdfMaxDepth {
		pdfFail(refuse("the PDF is damaged or unreadable: %v", errPDFNesting))
	}
	var a pdfArray
	for {
		obj := l.object(depth)
		switch obj {
		case pdfKeyword("]"), pdfEOF{}:
			return a
		}
		l.count()
		if len(a) < pdfMaxArray {
			a = append(a, obj)
		}
	}
}

func (l *pdfLexer) dict(depth int) pdfDict {
	if depth > pdfMaxDepth {
		pdfFail(refuse("the PDF is damaged or unreadable: %v", errPDFNesting))
	}
	d := pdfDict{}
	for {
		key := l.object(depth)
		switch key {
		case pdfKeyword(">>"), pdfEOF{}:
			return d
		}
		l.count()
		k, ok := key.(pdfName)
		if !ok {
			continue // not a key: skipped
		}
		v := l.object(depth)
		switch v {
		case pdfKeyword(">>"), pdfEOF{}:
			return d
		}
		if len(d) < pdfMaxArray {
			d[k] = v
		}
	}
}
