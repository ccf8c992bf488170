package attach

import (
	"bufio"
	"bytes"
	"errors"
	"io"
	"strconv"
	"unicode/utf8"
)

// maxTag bounds one XML tag (name and attributes), comment-free: a longer
// one is damage, not a document.
const maxTag = 64 << 10

var errTagTooLong = errors.New("a tag is over 64 KiB")

// xmlText collects the text runs (<w:t>, <a:t>) of WordprocessingML or
// DrawingML, with a newline after each paragraph and tabs and breaks as
// they are. It streams: memory is a read buffer and one tag, whatever the
// size of the part or of one run of text (a 100 MB <w:t> is read in pieces
// until the budget is full). Entities are the XML ones and character
// references; a DOCTYPE is skipped, never expanded.
func xmlText(r io.Reader, b *budget) error {
	x := &xmlScanner{r: bufio.NewReaderSize(r, 32<<10), b: b}
	return x.run()
}

type xmlScanner struct {
	r      *bufio.Reader
	b      *budget
	inText bool
	tag    []byte
}

func (x *xmlScanner) run() error {
	for {
		chunk, err := x.r.ReadSlice('<')
		text := chunk
		if err == nil {
			text = chunk[:len(chunk)-1]
		}
		if x.inText && len(text) > 0 {
			if werr := x.chars(text, err == bufio.ErrBufferFull); werr != nil {
				return werr
			}
		}
		switch err {
		case nil:
			if err := x.markup(); err != nil {
				return err
			}
		case bufio.ErrBufferFull:
		case io.EOF:
			return x.b.writeString("\n")
		default:
			return err
		}
	}
}

// chars writes character data, decoding entities. When more of the same
// run follows (the read buffer's edge cut it), an entity cut there is
// completed from the reader.
func (x *xmlScanner) chars(p []byte, more bool) error {
	for len(p) > 0 {
		i := bytes.IndexByte(p, '&')
		if i < 0 {
			return x.b.write(p)
		}
		if err := x.b.write(p[:i]); err != nil {
			return err
		}
		p = p[i+1:]
		j := bytes.IndexByte(p, ';')
		var name []byte
		if j < 0 && len(p) < 12 && more {
			// The entity runs past this slice (the read buffer's edge):
			// finish it from the reader.
			name = append([]byte(nil), p...)
			p = nil
			for len(name) < 12 {
				c, err := x.r.ReadByte()
				if err != nil {
					break
				}
				if c == ';' {
					j = len(name)
					break
				}
				if c == '<' {
					_ = x.r.UnreadByte()
					break
				}
				name = append(name, c)
			}
			if j < 0 {
				if err := x.b.writeString("&"); err != nil {
					return err
				}
				if err := x.b.write(name); err != nil {
					return err
				}
				continue
			}
		} else if j < 0 || j > 12 {
			if err := x.b.writeString("&"); err != nil {
				return err
			}
			continue
		} else {
			name = p[:j]
			p = p[j+1:]
		}
		if err := x.entity(name); err != nil {
			return err
		}
	}
	return nil
}

func (x *xmlScanner) entity(name []byte) error {
	switch string(name) {
	case "amp":
		return x.b.writeString("&")
	case "lt":
		return x.b.writeString("<")
	case "gt":
		return x.b.writeString(">")
	case "quot":
		return x.b.writeString(`"`)
	case "apos":
		return x.b.writeString("'")
	}
	if len(name) > 1 && name[0] == '#' {
		var n uint64
		var err error
		if name[1] == 'x' || name[1] == 'X' {
			n, err = strconv.ParseUint(string(name[2:]), 16, 32)
		} else {
			n, err = strconv.ParseUint(string(name[1:]), 10, 32)
		}
		if err == nil && utf8.ValidRune(rune(n)) {
			var buf [utf8.UTFMax]byte
			return x.b.write(buf[:utf8.EncodeRune(buf[:], rune(n))])
		}
	}
	// Not an entity Parley knows: keep it as written.
	if err := x.b.writeString("&"); err != nil {
		return err
	}
	if err := x.b.write(name); err != nil {
		return err
	}
	return x.b.writeString(";")
}

// markup reads what follows a '<': a start, end or empty-element tag, a
// comment, a processing instruction, CDATA or a DOCTYPE.
func (x *xmlScanner) markup() error {
	c, err := x.r.ReadByte()
	if err != nil {
		return x.eof(err)
	}
	switch c {
	case '?':
		return x.skipUntil("?>")
	case '!':
		return x.bang()
	case '/':
		name, _, err := x.readTag()
		if err != nil {
			return err
		}
		return x.end(name)
	}
	_ = x.r.UnreadByte()
	name, empty, err := x.readTag()
	if err != nil {
		return err
	}
	if err := x.start(name); err != nil {
		return err
	}
	if empty {
		return x.end(name)
	}
	return nil
}

// readTag reads a tag's name and skips its attributes up to '>', saying
// whether it closed itself ("/>"). The name is the local one (after any
// prefix).
func (x *xmlScanner) readTag() (string, bool, error) {
	x.tag = x.tag[:0]
	var quote byte
	for {
		c, err := x.r.ReadByte()
		if err != nil {
			return "", false, x.eof(err)
		}
		if len(x.tag) >= maxTag {
			return "", false, errTagTooLong
		}
		switch {
		case quote != 0:
			if c == quote {
				quote = 0
			}
		case c == '"' || c == '\'':
			quote = c
		case c == '>':
			empty := len(x.tag) > 0 && x.tag[len(x.tag)-1] == '/'
			name := x.tag
			if i := bytes.IndexAny(name, " \t\r\n/"); i >= 0 {
				name = name[:i]
			}
			if i := bytes.LastIndexByte(name, ':'); i >= 0 {
				name = name[i+1:]
			}
			return string(name), empty, nil
		}
		x.tag = append(x.tag, c)
	}
}

func (x *xmlScanner) start(name string) error {
	switch name {
	case "t":
		x.inText = true
	case "tab":
		return x.b.writeString("\t")
	case "br", "cr":
		return x.b.writeString("\n")
	}
	return nil
}

func (x *xmlScanner) end(name string) error {
	switch name {
	case "t":
		x.inText = false
	case "p":
		return x.b.writeString("\n")
	}
	return nil
}

// bang handles "<!": a comment, CDATA (text when inside a text run) or a
// DOCTYPE (skipped with its internal subset).
func (x *xmlScanner) bang() error {
	head, _ := x.r.Peek(7)
	switch {
	case bytes.HasPrefix(head, []byte("--")):
		_, _ = x.r.Discard(2)
		return x.skipUntil("-->")
	case bytes.HasPrefix(head, []byte("[CDATA[")):
		_, _ = x.r.Discard(7)
		return x.cdata()
	}
	depth := 0
	var quote byte
	for {
		c, err := x.r.ReadByte()
		if err != nil {
			return x.eof(err)
		}
		switch {
		case quote != 0:
			if c == quote {
				quote = 0
			}
		case c == '"' || c == '\'':
			quote = c
		case c == '[':
			depth++
		case c == ']':
			depth--
		case c == '>' && depth <= 0:
			return nil
		}
	}
}

func (x *xmlScanner) cdata() error {
	// The last three bytes read are held back until they are known not to
	// be the "]]>" that ends the section.
	var win []byte
	var run []byte
	flush := func() error {
		if x.inText && len(run) > 0 {
			err := x.b.write(run)
			run = run[:0]
			return err
		}
		run = run[:0]
		return nil
	}
	for {
		c, err := x.r.ReadByte()
		if err != nil {
			return x.eof(err)
		}
		if len(win) == 3 {
			run = append(run, win[0])
			win = append(win[:0], win[1:]...)
		}
		win = append(win, c)
		if string(win) == "]]>" {
			return flush()
		}
		if len(run) >= 4096 {
			if err := flush(); err != nil {
				return err
			}
		}
	}
}

// skipUntil discards input up to and including end (at most 3 bytes).
func (x *xmlScanner) skipUntil(end string) error {
	var win [3]byte
	n := 0
	for {
		c, err := x.r.ReadByte()
		if err != nil {
			return x.eof(err)
		}
		if n == len(end) {
			copy(win[:], win[1:n])
			n--
		}
		win[n] = c
		n++
		if n == len(end) && string(win[:n]) == end {
			return nil
		}
	}
}

// eof turns an end of input inside markup into a damaged-part error.
func (x *xmlScanner) eof(err error) error {
	if err == io.EOF {
		return io.ErrUnexpectedEOF
	}
	return err
}
