package sse

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"time"
)

// DefaultMaxLineSize is the longest line a Decoder accepts unless told otherwise:
// far above any chat completion chunk, far below what would hurt the process.
const DefaultMaxLineSize = 1 << 20

// ErrLineTooLong reports a line longer than the Decoder's bound; the stream cannot
// be read further.
var ErrLineTooLong = errors.New("sse: line too long")

// DecoderOption configures a Decoder.
type DecoderOption func(*Decoder)

// WithMaxLineSize bounds the length of one line in bytes (DefaultMaxLineSize when
// not given).
func WithMaxLineSize(n int) DecoderOption {
	return func(d *Decoder) { d.maxLine = n }
}

// WithBufferSize sets the read buffer's size (default 4096): each open
// stream keeps one.
func WithBufferSize(n int) DecoderOption {
	return func(d *Decoder) { d.bufSize = n }
}

// Decoder reads events from a text/event-stream. It is not safe for concurrent
// use.
type Decoder struct {
	r       *bufio.Reader
	maxLine int
	bufSize int
	err     error // sticky: once reading fails, Next keeps failing

	started bool // the optional byte-order mark has been dealt with
	skipLF  bool // the last line ended with CR: an LF right after it belongs to it
	line    []byte

	data      []byte
	hasData   bool
	eventType string
	lastID    string
	retry     time.Duration // set by the event being read
	streamRet time.Duration // the stream's reconnection time
}

// NewDecoder returns a Decoder reading from r.
func NewDecoder(r io.Reader, opts ...DecoderOption) *Decoder {
	d := &Decoder{maxLine: DefaultMaxLineSize}
	for _, o := range opts {
		o(d)
	}
	size := 4096
	if d.bufSize > 0 {
		size = d.bufSize
	}
	if d.maxLine < size {
		size = max(16, d.maxLine)
	}
	d.r = bufio.NewReaderSize(r, size)
	return d
}

// Next returns the next event. It returns io.EOF when the stream ends; as the spec
// requires, an event not terminated by a blank line before the end is discarded.
func (d *Decoder) Next() (Event, error) {
	if d.err != nil {
		return Event{}, d.err
	}
	for {
		line, err := d.readLine()
		if err != nil {
			d.err = err
			return Event{}, err
		}
		if len(line) == 0 {
			if ev, ok := d.dispatch(); ok {
				return ev, nil
			}
			continue
		}
		d.processField(line)
	}
}

// NextData returns the data of the next event, as Next would, without
// copying it: the slice is valid until the next call.
func (d *Decoder) NextData() ([]byte, error) {
	if d.err != nil {
		return nil, d.err
	}
	for {
		line, err := d.readLine()
		if err != nil {
			d.err = err
			return nil, err
		}
		if len(line) == 0 {
			if d.hasData {
				data := d.data
				if n := len(data); n > 0 && data[n-1] == '\n' {
					data = data[:n-1]
				}
				d.data, d.hasData, d.eventType, d.retry = d.data[:0], false, "", 0
				return data, nil
			}
			d.eventType, d.retry = "", 0
			continue
		}
		d.processField(line)
	}
}

// Buffered reports whether the next event is already in the buffer, data
// and end, so that Next would return it without reading: a reader that
// holds something back while more is arriving can tell when to stop
// waiting. It may report false when in doubt (a comment-only block first,
// CR line ends), never true wrongly.
func (d *Decoder) Buffered() bool {
	if d.err != nil || d.skipLF || !d.started || len(d.data) > 0 || d.hasData {
		return false
	}
	buf, _ := d.r.Peek(d.r.Buffered())
	end := bytes.Index(buf, []byte("\n\n"))
	if crlf := bytes.Index(buf, []byte("\r\n\r\n")); crlf >= 0 && (end < 0 || crlf < end) {
		end = crlf
	}
	if end < 0 {
		return false
	}
	block := buf[:end+1]
	for i, c := range block {
		if c == '\r' && (i+1 >= len(buf) || buf[i+1] != '\n') {
			return false // a lone CR ends a line where LF counting does not see one
		}
	}
	return bytes.HasPrefix(block, []byte("data:")) || bytes.Contains(block, []byte("\ndata:"))
}

// Retry returns the reconnection time the stream last set, or zero.
func (d *Decoder) Retry() time.Duration {
	return d.streamRet
}

// dispatch ends the event being read; an event without data is not dispatched.
func (d *Decoder) dispatch() (Event, bool) {
	defer func() {
		d.data, d.hasData, d.eventType, d.retry = d.data[:0], false, "", 0
	}()
	if !d.hasData {
		return Event{}, false
	}
	data := d.data
	if n := len(data); n > 0 && data[n-1] == '\n' {
		data = data[:n-1]
	}
	return Event{ID: d.lastID, Event: d.eventType, Data: string(data), Retry: d.retry}, true
}

func (d *Decoder) processField(line []byte) {
	if line[0] == ':' {
		return // comment
	}
	name, value := line, []byte(nil)
	if i := bytes.IndexByte(line, ':'); i >= 0 {
		name, value = line[:i], line[i+1:]
		if len(value) > 0 && value[0] == ' ' {
			value = value[1:]
		}
	}
	switch string(name) {
	case "data":
		d.data = append(d.data, value...)
		d.data = append(d.data, '\n')
		d.hasData = true
	case "event":
		d.eventType = string(value)
	case "id":
		if bytes.IndexByte(value, 0) < 0 {
			d.lastID = string(value)
		}
	case "retry":
		if ms, ok := parseDigits(value); ok {
			d.retry = time.Duration(ms) * time.Millisecond
			d.streamRet = d.retry
		}
	}
}

// parseDigits parses a non-empty run of ASCII digits, saturating rather than
// overflowing.
func parseDigits(b []byte) (int64, bool) {
	if len(b) == 0 {
		return 0, false
	}
	const limit = int64(1<<63-1) / int64(time.Millisecond)
	var n int64
	for _, c := range b {
		if c < '0' || c > '9' {
			return 0, false
		}
		n = min(n*10+int64(c-'0'), limit)
	}
	return n, true
}

// readLine returns the next line without its terminator (LF, CRLF or CR). The
// returned slice is valid until the next call. At the end of the stream it
// returns io.EOF, dropping an unterminated last line as the spec does.
func (d *Decoder) readLine() ([]byte, error) {
	d.line = d.line[:0]
	if d.skipLF {
		d.skipLF = false
		if b, err := d.r.Peek(1); err == nil && b[0] == '\n' {
			d.r.Discard(1)
		} else if err != nil {
			return nil, d.eofOr(err)
		}
	}
	if !d.started {
		d.started = true
		// Peek past the first byte only when it can start a BOM, so a live stream
		// is never held up waiting for bytes that have not been sent.
		if b, err := d.r.Peek(1); err == nil && b[0] == 0xEF {
			if b, err := d.r.Peek(3); err == nil && string(b) == "\uFEFF" {
				d.r.Discard(3)
			}
		}
	}
	for {
		if d.r.Buffered() == 0 {
			if _, err := d.r.Peek(1); err != nil {
				return nil, d.eofOr(err)
			}
		}
		buf, _ := d.r.Peek(d.r.Buffered())
		i := bytes.IndexAny(buf, "\r\n")
		n := i
		if i < 0 {
			n = len(buf)
		}
		if len(d.line)+n > d.maxLine {
			return nil, fmt.Errorf("%w: more than %d bytes", ErrLineTooLong, d.maxLine)
		}
		d.line = append(d.line, buf[:n]...)
		if i < 0 {
			d.r.Discard(n)
			continue
		}
		switch {
		case buf[i] == '\n':
			d.r.Discard(i + 1)
		case i+1 < len(buf):
			if buf[i+1] == '\n' {
				d.r.Discard(i + 2)
			} else {
				d.r.Discard(i + 1)
			}
		default:
			// A CR at the end of what has arrived: do not wait for the next byte
			// to find out whether it is an LF; drop it next time if it is.
			d.r.Discard(i + 1)
			d.skipLF = true
		}
		return d.line, nil
	}
}

func (d *Decoder) eofOr(err error) error {
	if errors.Is(err, io.EOF) {
		return io.EOF
	}
	return err
}
