package detach

import (
	"bufio"
	"bytes"
	"errors"
	"io"
	"net"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"time"
)

// writer is the ResponseWriter of a request under Conns.Handler: net/http's
// until Go detaches the response, then its own, writing HTTP/1.1 with a
// chunked body straight to the connection.
type writer struct {
	http.ResponseWriter // net/http's; nil once detached
	rs                  *response
	started             bool // something was written through net/http: Go leaves the response there

	// Once detached.
	detached    bool
	header      http.Header
	wroteHeader bool
	status      int
	headSent    bool
	trailers    []string // the keys the head's Trailer header declared
	buf         *[]byte  // body bytes not yet sent, after chunkRoom; nil when none
	err         error    // the first write error: every later write fails with it
	close       bool     // the connection is not to be served again
}

// chunkRoom is the room kept at the start of a buffer for the chunk's size
// line (up to 8 hex digits and CRLF), so that a chunk goes out in one write.
const chunkRoom = 10

// flushAt is how many body bytes are buffered before they go out unflushed,
// as net/http's 4 KiB writer would.
const flushAt = 4 << 10

var bufs = sync.Pool{New: func() any {
	b := make([]byte, chunkRoom, chunkRoom+flushAt+512)
	return &b
}}

func (w *writer) hijacked() {
	w.header = w.ResponseWriter.Header()
	w.ResponseWriter = nil
	w.detached = true
}

// Header implements http.ResponseWriter.
func (w *writer) Header() http.Header {
	if w.detached {
		return w.header
	}
	return w.ResponseWriter.Header()
}

// WriteHeader implements http.ResponseWriter.
func (w *writer) WriteHeader(code int) {
	if !w.detached {
		w.started = true
		w.ResponseWriter.WriteHeader(code)
		return
	}
	if w.wroteHeader || code < 200 {
		return // informational answers are not sent by a detached response
	}
	w.wroteHeader, w.status = true, code
}

// Write implements http.ResponseWriter.
func (w *writer) Write(p []byte) (int, error) {
	if !w.detached {
		w.started = true
		return w.ResponseWriter.Write(p)
	}
	if !w.wroteHeader {
		w.WriteHeader(http.StatusOK)
	}
	if w.err != nil {
		return 0, w.err
	}
	if !bodyAllowed(w.status) {
		return 0, http.ErrBodyNotAllowed
	}
	if w.buf == nil {
		w.buf = bufs.Get().(*[]byte)
	}
	*w.buf = append(*w.buf, p...)
	if len(*w.buf)-chunkRoom >= flushAt {
		if err := w.send(false); err != nil {
			return 0, err
		}
	}
	return len(p), nil
}

// ReadFrom keeps net/http's sendfile for responses that are not detached.
func (w *writer) ReadFrom(src io.Reader) (int64, error) {
	if rf, ok := w.ResponseWriter.(io.ReaderFrom); ok && !w.detached {
		w.started = true
		return rf.ReadFrom(src)
	}
	return io.Copy(writeOnly{w}, src)
}

type writeOnly struct{ io.Writer }

// Flush implements http.Flusher.
func (w *writer) Flush() { _ = w.FlushError() }

// FlushError is Flush with its error, for http.ResponseController.
func (w *writer) FlushError() error {
	if !w.detached {
		w.started = true
		return http.NewResponseController(w.ResponseWriter).Flush()
	}
	if !w.wroteHeader {
		w.WriteHeader(http.StatusOK)
	}
	return w.send(false)
}

// SetReadDeadline is for http.ResponseController.
func (w *writer) SetReadDeadline(t time.Time) error {
	if w.detached {
		return w.rs.conn.SetReadDeadline(t)
	}
	return http.NewResponseController(w.ResponseWriter).SetReadDeadline(t)
}

// SetWriteDeadline is for http.ResponseController.
func (w *writer) SetWriteDeadline(t time.Time) error {
	if w.detached {
		return w.rs.conn.SetWriteDeadline(t)
	}
	return http.NewResponseController(w.ResponseWriter).SetWriteDeadline(t)
}

// EnableFullDuplex is for http.ResponseController.
func (w *writer) EnableFullDuplex() error {
	if w.detached {
		return nil
	}
	return http.NewResponseController(w.ResponseWriter).EnableFullDuplex()
}

// Hijack is for http.ResponseController.
func (w *writer) Hijack() (net.Conn, *bufio.ReadWriter, error) {
	if w.detached {
		return nil, nil, errors.New("detach: the response is detached")
	}
	w.started = true
	return http.NewResponseController(w.ResponseWriter).Hijack()
}

// Unwrap is for http.ResponseController.
func (w *writer) Unwrap() http.ResponseWriter { return w.ResponseWriter }

// end writes the end of a detached response (its head too, if nothing was
// written).
func (w *writer) end() error {
	if !w.wroteHeader {
		w.WriteHeader(http.StatusOK)
	}
	return w.send(true)
}

// send writes the head if not yet sent and what is buffered as one chunk,
// with the last chunk when final, in one write.
func (w *writer) send(final bool) error {
	if w.err != nil {
		return w.err
	}
	var body []byte
	if w.buf != nil {
		body = (*w.buf)[chunkRoom:]
	}
	chunked := bodyAllowed(w.status)
	var out []byte
	switch {
	case !w.headSent:
		out = w.head(body, chunked)
		if len(body) > 0 {
			out = strconv.AppendUint(out, uint64(len(body)), 16)
			out = append(out, "\r\n"...)
			out = append(out, body...)
			out = append(out, "\r\n"...)
		}
		if final && chunked {
			out = w.lastChunk(out)
		}
	case len(body) > 0:
		// The size line goes in the room kept before the body.
		var size [chunkRoom]byte
		line := append(strconv.AppendUint(size[:0], uint64(len(body)), 16), "\r\n"...)
		start := chunkRoom - len(line)
		copy((*w.buf)[start:], line)
		*w.buf = append(*w.buf, "\r\n"...)
		if final {
			*w.buf = w.lastChunk(*w.buf)
		}
		out = (*w.buf)[start:]
	case final && chunked:
		out = w.lastChunk(nil)
	}
	if len(out) > 0 {
		if _, err := w.rs.conn.Write(out); err != nil {
			w.err, w.close = err, true
		}
	}
	if w.buf != nil {
		*w.buf = (*w.buf)[:chunkRoom]
		if len(*w.buf)+cap(*w.buf) <= 64<<10 {
			bufs.Put(w.buf)
		}
		w.buf = nil
	}
	return w.err
}

// head is the status line and header of the response, as net/http would
// write them for a chunked body.
func (w *writer) head(body []byte, chunked bool) []byte {
	h := w.header
	if h.Get("Date") == "" {
		h.Set("Date", time.Now().UTC().Format(http.TimeFormat))
	}
	if chunked {
		if h.Get("Content-Type") == "" && len(body) > 0 {
			h.Set("Content-Type", http.DetectContentType(body))
		}
		h.Del("Content-Length")
		h.Set("Transfer-Encoding", "chunked")
	}
	if h.Get("Connection") == "close" {
		w.close = true
	}
	// Trailers, as net/http takes them: the keys the Trailer header
	// declares, and any key under http.TrailerPrefix (not sent in the head).
	var exclude map[string]bool
	for k := range h {
		if strings.HasPrefix(k, http.TrailerPrefix) {
			if exclude == nil {
				exclude = make(map[string]bool)
			}
			exclude[k] = true
		}
	}
	for _, v := range h["Trailer"] {
		for _, k := range strings.Split(v, ",") {
			switch k = http.CanonicalHeaderKey(strings.TrimSpace(k)); k {
			case "", "Transfer-Encoding", "Trailer", "Content-Length":
			default:
				w.trailers = append(w.trailers, k)
			}
		}
	}
	var b bytes.Buffer
	b.WriteString("HTTP/1.1 ")
	b.WriteString(strconv.Itoa(w.status))
	b.WriteByte(' ')
	if text := http.StatusText(w.status); text != "" {
		b.WriteString(text)
	} else {
		b.WriteString("status code " + strconv.Itoa(w.status)) // as net/http words it
	}
	b.WriteString("\r\n")
	_ = h.WriteSubset(&b, exclude)
	b.WriteString("\r\n")
	w.headSent = true
	return b.Bytes()
}

// lastChunk appends the chunked body's end to out: the last chunk and the
// trailers, if the response has any.
func (w *writer) lastChunk(out []byte) []byte {
	out = append(out, "0\r\n"...)
	var t http.Header
	for k, vv := range w.header {
		if name, ok := strings.CutPrefix(k, http.TrailerPrefix); ok {
			if t == nil {
				t = make(http.Header)
			}
			t[name] = vv
		}
	}
	for _, k := range w.trailers {
		if vv := w.header[k]; len(vv) > 0 {
			if t == nil {
				t = make(http.Header)
			}
			t[k] = vv
		}
	}
	if t != nil {
		var b bytes.Buffer
		_ = t.Write(&b)
		out = append(out, b.Bytes()...)
	}
	return append(out, "\r\n"...)
}

// bodyAllowed reports whether a response of status may have a body.
func bodyAllowed(status int) bool {
	return status >= 200 && status != http.StatusNoContent && status != http.StatusNotModified
}
