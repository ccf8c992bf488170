package sse

import (
	"bufio"
	"bytes"
	"encoding/binary"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"time"

	"google.golang.org/protobuf/reflect/protoreflect"
	"google.golang.org/protobuf/reflect/protoregistry"
)

// Adapter serves every server-streaming RPC as Server-Sent Events:
// POST /sse/<package.Service>/<Method> with the request as JSON answers
// with one `data:` line of protojson per response message, and an RPC error
// as `event: error` with the Connect error JSON. It has no per-method code:
// it calls the RPC on the same handler in-process over the Connect
// streaming protocol, passing the caller's headers (so authentication and
// CSRF rules apply unchanged), and re-frames what comes back.
//
// A message holding `event.seq` (a GenerationEvent) is sent with that seq as
// its SSE id, and a Last-Event-ID header sets the request's `after_seq`
// field where the method has one, so a client resumes where it left off;
// on a method without one (ChatService.CompleteStream) it is refused with
// failed_precondition, so a reconnect never starts a second billed run.
type Adapter struct {
	// Handler serves the RPCs (the gateway's mux, inside the middleware that
	// the adapter itself is mounted behind).
	Handler http.Handler
	// KeepAlive is the interval of `: keep-alive` comments on a quiet stream.
	KeepAlive time.Duration
	// Files resolves procedures to methods; nil means the global registry.
	Files *protoregistry.Files
}

// Prefix is the path under which the adapter is mounted.
const Prefix = "/sse/"

// ServeHTTP implements http.Handler.
func (a *Adapter) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	procedure := "/" + strings.TrimPrefix(r.URL.Path, Prefix)
	method, ok := a.method(procedure)
	if !ok {
		writeError(w, http.StatusNotFound, "not_found", "no server-streaming method "+strings.TrimPrefix(procedure, "/"))
		return
	}
	if r.Method != http.MethodPost {
		w.Header().Set("Allow", "POST")
		writeError(w, http.StatusMethodNotAllowed, "invalid_argument", "use POST with the request as JSON")
		return
	}
	body, err := io.ReadAll(r.Body)
	if err != nil {
		writeError(w, http.StatusRequestEntityTooLarge, "resource_exhausted", "request body: "+err.Error())
		return
	}
	if len(bytes.TrimSpace(body)) == 0 {
		body = []byte("{}")
	}
	if r.Header.Get("Last-Event-ID") != "" && method.Input().Fields().ByName("after_seq") == nil {
		// A reconnecting EventSource must not start a second (billed) run of a
		// method that cannot resume.
		writeError(w, http.StatusBadRequest, "failed_precondition",
			"Last-Event-ID: "+string(method.FullName())+" cannot resume a stream; send the request again without Last-Event-ID to start a new one")
		return
	}
	if last := r.Header.Get("Last-Event-ID"); last != "" {
		seq, perr := strconv.ParseUint(last, 10, 64)
		if perr != nil {
			writeError(w, http.StatusBadRequest, "invalid_argument", "Last-Event-ID: must be an event seq")
			return
		}
		if body, err = setField(body, "afterSeq", strconv.FormatUint(seq, 10)); err != nil {
			writeError(w, http.StatusBadRequest, "invalid_argument", "the request body is not a JSON object")
			return
		}
	}

	// Call the RPC in-process over the Connect streaming protocol.
	inner, err := http.NewRequestWithContext(r.Context(), http.MethodPost, procedure, bytes.NewReader(envelope(0, body)))
	if err != nil {
		writeError(w, http.StatusBadRequest, "invalid_argument", err.Error())
		return
	}
	inner.Header = r.Header.Clone()
	inner.Header.Set("Content-Type", "application/connect+json")
	inner.Header.Del("Content-Length")
	// The adapter reads the frames itself: ask for them uncompressed.
	inner.Header.Del("Accept-Encoding")
	inner.Header.Del("Connect-Content-Encoding")
	inner.Header.Del("Connect-Accept-Encoding")
	inner.RemoteAddr, inner.Host = r.RemoteAddr, r.Host
	pr, pw := io.Pipe()
	rw := &pipeResponse{header: http.Header{}, pipe: pw}
	go func() {
		a.Handler.ServeHTTP(rw, inner)
		pw.Close()
	}()
	defer pr.Close()

	out := &stream{w: w, enc: NewEncoder(w)}
	stop := out.keepAlive(a.KeepAlive)
	defer stop()
	frames := bufio.NewReader(pr)
	if _, err := frames.Peek(1); err == nil && rw.status != http.StatusOK {
		// Refused before streaming (e.g. 415): the body is a JSON error, not frames.
		raw, _ := io.ReadAll(io.LimitReader(frames, 64<<10))
		if !json.Valid(raw) {
			raw = []byte(`{"code":"internal","message":"` + http.StatusText(rw.status) + `"}`)
		}
		out.event(Event{Event: "error", Data: string(raw)})
		return
	}
	for {
		flags, payload, err := readEnvelope(frames)
		if err != nil {
			if err != io.EOF && r.Context().Err() == nil {
				out.event(Event{Event: "error", Data: `{"code":"internal","message":"stream broken"}`})
			}
			return
		}
		if flags&0x02 != 0 { // end of stream
			var end struct {
				Error json.RawMessage `json:"error"`
			}
			if json.Unmarshal(payload, &end) == nil && len(end.Error) > 0 {
				out.event(Event{Event: "error", Data: string(end.Error)})
			}
			return
		}
		if err := out.event(Event{ID: seqOf(payload), Data: string(payload)}); err != nil {
			return
		}
	}
}

// method finds a server-streaming method by its procedure path.
func (a *Adapter) method(procedure string) (protoreflect.MethodDescriptor, bool) {
	files := a.Files
	if files == nil {
		files = protoregistry.GlobalFiles
	}
	svc, name, ok := strings.Cut(strings.TrimPrefix(procedure, "/"), "/")
	if !ok {
		return nil, false
	}
	d, err := files.FindDescriptorByName(protoreflect.FullName(svc))
	if err != nil {
		return nil, false
	}
	sd, ok := d.(protoreflect.ServiceDescriptor)
	if !ok {
		return nil, false
	}
	md := sd.Methods().ByName(protoreflect.Name(name))
	if md == nil || !md.IsStreamingServer() || md.IsStreamingClient() {
		return nil, false
	}
	return md, true
}

// stream writes SSE events; the keep-alive goroutine shares it.
type stream struct {
	mu      sync.Mutex
	w       http.ResponseWriter
	enc     *Encoder
	started bool
}

func (s *stream) open() {
	if !s.started {
		s.started = true
		h := s.w.Header()
		h.Set("Content-Type", "text/event-stream")
		h.Set("Cache-Control", "no-cache")
		h.Set("X-Accel-Buffering", "no")
		s.w.WriteHeader(http.StatusOK)
	}
}

func (s *stream) event(ev Event) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.open()
	return s.enc.WriteEvent(ev)
}

func (s *stream) keepAlive(d time.Duration) (stop func()) {
	if d <= 0 {
		return func() {}
	}
	done := make(chan struct{})
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		t := time.NewTicker(d)
		defer t.Stop()
		for {
			select {
			case <-done:
				return
			case <-t.C:
				s.mu.Lock()
				s.open()
				err := s.enc.WriteComment("keep-alive")
				s.mu.Unlock()
				if err != nil {
					return
				}
			}
		}
	}()
	return func() { close(done); wg.Wait() }
}

// pipeResponse is the in-process RPC's ResponseWriter: its body goes into a
// pipe that the adapter reads frame by frame.
type pipeResponse struct {
	header http.Header
	pipe   *io.PipeWriter
	status int
}

func (p *pipeResponse) Header() http.Header { return p.header }
func (p *pipeResponse) WriteHeader(code int) {
	if p.status == 0 {
		p.status = code
	}
}
func (p *pipeResponse) Write(b []byte) (int, error) {
	if p.status == 0 {
		p.status = http.StatusOK
	}
	return p.pipe.Write(b)
}

// Flush is a no-op: the pipe hands each write over at once.
func (p *pipeResponse) Flush() {}

func envelope(flags byte, payload []byte) []byte {
	b := make([]byte, 5+len(payload))
	b[0] = flags
	binary.BigEndian.PutUint32(b[1:5], uint32(len(payload)))
	copy(b[5:], payload)
	return b
}

func readEnvelope(r io.Reader) (byte, []byte, error) {
	var head [5]byte
	if _, err := io.ReadFull(r, head[:]); err != nil {
		if errors.Is(err, io.ErrUnexpectedEOF) {
			return 0, nil, err
		}
		return 0, nil, err
	}
	n := binary.BigEndian.Uint32(head[1:])
	if n > 64<<20 {
		return 0, nil, errors.New("sse: frame too large")
	}
	payload := make([]byte, n)
	if _, err := io.ReadFull(r, payload); err != nil {
		return 0, nil, err
	}
	return head[0], payload, nil
}

// seqOf returns event.seq of a response message, if it has one.
func seqOf(payload []byte) string {
	if !bytes.Contains(payload, []byte(`"seq"`)) {
		return ""
	}
	var m struct {
		Event struct {
			Seq json.RawMessage `json:"seq"`
		} `json:"event"`
	}
	if json.Unmarshal(payload, &m) != nil {
		return ""
	}
	return strings.Trim(string(m.Event.Seq), `"`)
}

func setField(body []byte, name, value string) ([]byte, error) {
	var obj map[string]json.RawMessage
	if err := json.Unmarshal(body, &obj); err != nil || obj == nil {
		return nil, errors.New("not an object")
	}
	delete(obj, "after_seq")
	obj[name] = json.RawMessage(strconv.Quote(value))
	return json.Marshal(obj)
}

func writeError(w http.ResponseWriter, status int, code, msg string) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(map[string]string{"code": code, "message": msg})
}
