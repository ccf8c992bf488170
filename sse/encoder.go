package sse

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
	"sync"
)

// ErrInvalidField reports an id or event type that cannot be encoded: one holding
// a line break (which would end the field early) or, for an id, a NUL.
var ErrInvalidField = errors.New("sse: field holds a line break or NUL")

// Encoder writes events to a text/event-stream, flushing after each one so the
// reader sees it at once. It is not safe for concurrent use.
type Encoder struct {
	dst io.Writer
	// w buffers what is written until it is flushed. It is taken from
	// writers when an event is written and given back once flushed: an
	// open stream that waits for its next event keeps no buffer.
	w     *bufio.Writer
	flush func() error
	num   [20]byte
}

// writers are the Encoders' buffers. An event is written and flushed at
// once, and an http.ResponseWriter buffers on its own: 512 bytes is enough
// to make an event one write.
var writers = sync.Pool{New: func() any { return bufio.NewWriterSize(nil, 512) }}

// buf is e's buffer, taken from writers if e holds none.
func (e *Encoder) buf() *bufio.Writer {
	if e.w == nil {
		e.w = writers.Get().(*bufio.Writer)
		e.w.Reset(e.dst)
	}
	return e.w
}

// drain writes what e buffers to the underlying writer and gives the buffer
// back (unless writing failed: the buffer then keeps the error, for every
// later write to return).
func (e *Encoder) drain() error {
	if e.w == nil {
		return nil
	}
	if err := e.w.Flush(); err != nil {
		return err
	}
	e.w.Reset(nil)
	writers.Put(e.w)
	e.w = nil
	return nil
}

// NewEncoder returns an Encoder writing to w. When w is an http.ResponseWriter
// (or anything else with a Flush method) every event is flushed to the client as
// it is written; the caller sets the Content-Type header.
func NewEncoder(w io.Writer) *Encoder {
	e := &Encoder{dst: w}
	switch f := w.(type) {
	case http.Flusher:
		e.flush = func() error { f.Flush(); return nil }
	case http.ResponseWriter:
		// Middleware wrappers that expose Unwrap still reach the real flusher.
		rc := http.NewResponseController(f)
		e.flush = func() error {
			if err := rc.Flush(); err != nil && !errors.Is(err, http.ErrNotSupported) {
				return err
			}
			return nil
		}
	}
	return e
}

// WriteEvent writes ev and flushes it. Line breaks in Data (LF, CRLF or CR) split
// it into several data fields, which a decoder joins back with LF.
func (e *Encoder) WriteEvent(ev Event) error {
	if strings.ContainsAny(ev.ID, "\r\n\x00") || strings.ContainsAny(ev.Event, "\r\n") {
		return fmt.Errorf("%w: id %q, event %q", ErrInvalidField, ev.ID, ev.Event)
	}
	if ev.ID != "" {
		e.field("id: ", ev.ID)
	}
	if ev.Event != "" {
		e.field("event: ", ev.Event)
	}
	if ev.Retry > 0 {
		w := e.buf()
		w.WriteString("retry: ")
		w.Write(strconv.AppendInt(e.num[:0], ev.Retry.Milliseconds(), 10))
		w.WriteByte('\n')
	}
	e.lines("data: ", ev.Data)
	e.buf().WriteByte('\n')
	return e.Flush()
}

// WriteData writes an event whose data is data (one line: it must hold no
// line break) and, when flush is set, flushes it to the client. An event
// written without flush waits in the Encoder's buffer for the next flush
// (or FlushBuffer): events that are ready together go out in one write.
func (e *Encoder) WriteData(data []byte, flush bool) error {
	if bytes.ContainsAny(data, "\r\n") {
		return e.WriteEvent(Event{Data: string(data)})
	}
	w := e.buf()
	w.WriteString("data: ")
	w.Write(data)
	w.WriteString("\n\n")
	if !flush {
		return nil
	}
	return e.Flush()
}

// FlushBuffer hands what is buffered to the underlying writer without
// flushing that: for the last events of a response, which the HTTP server
// sends with the response's end in one write.
func (e *Encoder) FlushBuffer() error {
	return e.drain()
}

// WriteComment writes a comment line (": text"), which readers ignore: the
// keep-alive that stops proxies from closing an idle stream.
func (e *Encoder) WriteComment(text string) error {
	e.lines(": ", text)
	return e.Flush()
}

// Flush sends everything written so far to the underlying writer and, where it
// has one, flushes that too.
func (e *Encoder) Flush() error {
	if err := e.drain(); err != nil {
		return err
	}
	if e.flush != nil {
		return e.flush()
	}
	return nil
}

func (e *Encoder) field(name, value string) {
	w := e.buf()
	w.WriteString(name)
	w.WriteString(value)
	w.WriteByte('\n')
}

// lines writes one prefixed line per line of text, splitting on LF, CRLF and CR.
func (e *Encoder) lines(prefix, text string) {
	for {
		i := strings.IndexAny(text, "\r\n")
		if i < 0 {
			e.field(prefix, text)
			return
		}
		e.field(prefix, text[:i])
		if text[i] == '\r' && i+1 < len(text) && text[i+1] == '\n' {
			i++
		}
		text = text[i+1:]
	}
}
