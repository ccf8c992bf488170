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
)

// ErrInvalidField reports an id or event type that cannot be encoded: one holding
// a line break (which would end the field early) or, for an id, a NUL.
var ErrInvalidField = errors.New("sse: field holds a line break or NUL")

// Encoder writes events to a text/event-stream, flushing after each one so the
// reader sees it at once. It is not safe for concurrent use.
type Encoder struct {
	w     *bufio.Writer
	flush func() error
	num   [20]byte
}

// NewEncoder returns an Encoder writing to w. When w is an http.ResponseWriter
// (or anything else with a Flush method) every event is flushed to the client as
// it is written; the caller sets the Content-Type header.
func NewEncoder(w io.Writer) *Encoder {
	// A small buffer: an event is written and flushed at once, and an
	// http.ResponseWriter buffers on its own; each open stream keeps it.
	e := &Encoder{w: bufio.NewWriterSize(w, 512)}
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
		e.w.WriteString("retry: ")
		e.w.Write(strconv.AppendInt(e.num[:0], ev.Retry.Milliseconds(), 10))
		e.w.WriteByte('\n')
	}
	e.lines("data: ", ev.Data)
	e.w.WriteByte('\n')
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
	e.w.WriteString("data: ")
	e.w.Write(data)
	e.w.WriteString("\n\n")
	if !flush {
		return nil
	}
	return e.Flush()
}

// FlushBuffer hands what is buffered to the underlying writer without
// flushing that: for the last events of a response, which the HTTP server
// sends with the response's end in one write.
func (e *Encoder) FlushBuffer() error {
	return e.w.Flush()
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
	if err := e.w.Flush(); err != nil {
		return err
	}
	if e.flush != nil {
		return e.flush()
	}
	return nil
}

func (e *Encoder) field(name, value string) {
	e.w.WriteString(name)
	e.w.WriteString(value)
	e.w.WriteByte('\n')
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
