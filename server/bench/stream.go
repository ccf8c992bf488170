package bench

import (
	"bufio"
	"bytes"
	"context"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"sync"
	"sync/atomic"
	"time"
)

// streamTarget is where the load client sends chat completions: the mock
// directly, or a gateway (with its API key).
type streamTarget struct {
	url    string // base URL, without /v1
	apiKey string
	model  string
	// connect: the gateway's own API (ChatService.CompleteStream over the
	// Connect protocol, as the SDKs' streams) instead of
	// /v1/chat/completions; with grpcWeb, over gRPC-Web (as the web app's).
	connect, grpcWeb bool
}

// streamStats are the client's measurements of a set of streamed answers.
type streamStats struct {
	answers, errors int // answers counts every request, errors the failed ones
	firstErr        string
	errs            errorTally
	ttft            []time.Duration // request sent → first content token
	gaps            []time.Duration // between content tokens of one answer
	elapsed         time.Duration
}

func (s *streamStats) merge(o *streamStats) {
	s.answers += o.answers
	s.errors += o.errors
	if s.firstErr == "" {
		s.firstErr = o.firstErr
	}
	s.errs.merge(&o.errs)
	s.ttft = append(s.ttft, o.ttft...)
	s.gaps = append(s.gaps, o.gaps...)
}

// loadClient streams chat completions over HTTP/1.1, one connection per
// stream in flight, and times their tokens. Its parsing is the least it
// can be (find data lines, look for non-empty content), so it takes as
// little as possible of the CPU the servers measured need.
type loadClient struct {
	http *http.Client
}

// newLoadClient returns a client for up to conns streams at once. With
// spread > 1 its connections come from that many loopback addresses
// (127.0.0.1, .2, …), so more streams can be open to one server port than
// the ephemeral port range allows from one address.
func newLoadClient(conns, spread int) *loadClient {
	var next atomic.Uint32
	dialer := &net.Dialer{Timeout: 30 * time.Second, KeepAlive: -1}
	dial := dialer.DialContext
	if spread > 1 {
		dial = func(ctx context.Context, network, addr string) (net.Conn, error) {
			n := next.Add(1) % uint32(spread)
			d := *dialer
			d.LocalAddr = &net.TCPAddr{IP: net.IPv4(127, 0, byte(n>>8), byte(n&0xff)+1)}
			return d.DialContext(ctx, network, addr)
		}
	}
	return &loadClient{http: &http.Client{Transport: &http.Transport{
		DialContext:         dial,
		MaxIdleConns:        conns,
		MaxIdleConnsPerHost: conns,
		DisableCompression:  true,
		ForceAttemptHTTP2:   false,
		WriteBufferSize:     1024,
		ReadBufferSize:      4096,
	}}}
}

func (c *loadClient) close() { c.http.CloseIdleConnections() }

// body is a streamed chat completion request for t; prompt may carry a
// mock-pace directive.
func (t streamTarget) body(prompt string, maxTokens int) []byte {
	if t.connect {
		b, _ := json.Marshal(map[string]any{
			"model": t.model, "maxOutputTokens": maxTokens,
			"messages": []map[string]any{{"role": "ROLE_USER", "parts": []map[string]string{{"text": prompt}}}},
		})
		// One Connect (or gRPC-Web) envelope: no flags, the length, the message.
		return append(binary.BigEndian.AppendUint32([]byte{0}, uint32(len(b))), b...)
	}
	b, _ := json.Marshal(map[string]any{
		"model": t.model, "stream": true, "max_tokens": maxTokens,
		"stream_options": map[string]bool{"include_usage": true},
		"messages":       []map[string]string{{"role": "user", "content": prompt}},
	})
	return b
}

var (
	dataPrefix   = []byte("data: ")
	contentKey   = []byte(`"content":"`)
	textKey      = []byte(`"text":"`)
	donePayload  = []byte("[DONE]")
	errorPayload = []byte(`{"error"`)
)

// answer is one streamed answer's timing.
type answer struct {
	ttft   time.Duration
	gaps   []time.Duration
	tokens int
	err    error
}

// stream sends one request and reads its answer to the end (or until ctx
// ends: then err is ctx's). onFirst runs at the first content token; record
// says whether gaps are kept at that moment (hold runs keep only those of
// the steady state).
func (c *loadClient) stream(ctx context.Context, t streamTarget, body []byte, onFirst func(), record func() bool) answer {
	var a answer
	path, contentType := "/v1/chat/completions", "application/json"
	if t.connect {
		path, contentType = "/parley.v1.ChatService/CompleteStream", "application/connect+json"
		if t.grpcWeb {
			contentType = "application/grpc-web+json"
		}
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, t.url+path, bytes.NewReader(body))
	if err != nil {
		a.err = err
		return a
	}
	req.Header.Set("Content-Type", contentType)
	if t.apiKey != "" {
		req.Header.Set("Authorization", "Bearer "+t.apiKey)
	}
	start := time.Now()
	res, err := c.http.Do(req)
	if err != nil {
		a.err = err
		return a
	}
	defer res.Body.Close()
	if res.StatusCode != http.StatusOK {
		b, _ := io.ReadAll(io.LimitReader(res.Body, 512))
		a.err = &httpStatusError{res.StatusCode, string(bytes.TrimSpace(b))}
		return a
	}
	r := bufio.NewReaderSize(res.Body, 4096)
	last := start
	token := func() {
		now := time.Now()
		if a.tokens == 0 {
			a.ttft = now.Sub(start)
			if onFirst != nil {
				onFirst()
			}
		} else if record == nil || record() {
			a.gaps = append(a.gaps, now.Sub(last))
		}
		last = now
		a.tokens++
	}
	cut := func(err error) answer {
		if ctx.Err() != nil {
			a.err = ctx.Err()
		} else {
			a.err = fmt.Errorf("stream cut after %d tokens: %w", a.tokens, err)
		}
		return a
	}
	if t.connect {
		var frame []byte
		for {
			var head [5]byte
			if _, err := io.ReadFull(r, head[:]); err != nil {
				if st := res.Header.Get("Grpc-Status"); t.grpcWeb && st != "" && st != "0" {
					a.err = fmt.Errorf("error: grpc-status %s: %s", st, res.Header.Get("Grpc-Message"))
					return a
				}
				return cut(err)
			}
			n := binary.BigEndian.Uint32(head[1:])
			if n > 1<<20 {
				a.err = fmt.Errorf("a Connect message of %d bytes", n)
				return a
			}
			if uint32(cap(frame)) < n {
				frame = make([]byte, n)
			}
			frame = frame[:n]
			if _, err := io.ReadFull(r, frame); err != nil {
				return cut(err)
			}
			if head[0]&0x02 != 0 && !t.grpcWeb { // the end of a Connect stream
				switch {
				case bytes.Contains(frame, []byte(`"error"`)):
					a.err = fmt.Errorf("error: %s", frame)
				case a.tokens == 0:
					a.err = errors.New("an answer without content")
				}
				return a
			}
			if head[0]&0x80 != 0 && t.grpcWeb { // gRPC-Web's trailers: the end
				switch {
				case !bytes.Contains(frame, []byte("grpc-status: 0\r\n")):
					a.err = fmt.Errorf("error: %q", frame)
				case a.tokens == 0:
					a.err = errors.New("an answer without content")
				}
				return a
			}
			if i := bytes.Index(frame, textKey); i >= 0 && i+len(textKey) < len(frame) && frame[i+len(textKey)] != '"' {
				token()
			}
		}
	}
	for {
		line, err := r.ReadSlice('\n')
		if err != nil {
			if errors.Is(err, bufio.ErrBufferFull) {
				continue // a long line: only its start matters
			}
			return cut(err)
		}
		payload, ok := bytes.CutPrefix(line, dataPrefix)
		if !ok {
			continue
		}
		switch {
		case bytes.HasPrefix(payload, donePayload):
			if a.tokens == 0 {
				a.err = errors.New("an answer without content")
			}
			_, _ = io.Copy(io.Discard, r)
			return a
		case bytes.HasPrefix(payload, errorPayload):
			a.err = fmt.Errorf("error event: %s", bytes.TrimSpace(payload))
			return a
		}
		i := bytes.Index(payload, contentKey)
		if i < 0 || i+len(contentKey) >= len(payload) || payload[i+len(contentKey)] == '"' {
			continue
		}
		token()
	}
}

// load streams answers answers, streams at a time, and gathers their
// timings.
func (c *loadClient) load(ctx context.Context, t streamTarget, body []byte, streams, answers int) *streamStats {
	var (
		issued atomic.Int64
		mu     sync.Mutex
		all    streamStats
		wg     sync.WaitGroup
	)
	start := time.Now()
	for range streams {
		wg.Go(func() {
			var mine streamStats
			for ctx.Err() == nil && issued.Add(1) <= int64(answers) {
				a := c.stream(ctx, t, body, nil, nil)
				mine.answers++
				if a.err != nil {
					mine.errors++
					mine.errs.add(a.err)
					if mine.firstErr == "" {
						mine.firstErr = a.err.Error()
					}
					continue
				}
				mine.ttft = append(mine.ttft, a.ttft)
				mine.gaps = append(mine.gaps, a.gaps...)
			}
			mu.Lock()
			all.merge(&mine)
			mu.Unlock()
		})
	}
	wg.Wait()
	all.elapsed = time.Since(start)
	return &all
}

// holdResult is what a hold run saw: the streams open at once, their
// token gaps in the steady state, and the errors.
type holdResult struct {
	opened   int
	openTime time.Duration // from the first request to the last first token
	errors   int
	firstErr string
	errs     errorTally
	gaps     []time.Duration
}

// hold opens n streams paced by body's directive, at most opening at a time
// waiting for their first token, and calls steady once all are open (or
// failed); steady's return ends the streams. Gaps are kept from the call
// of steady on.
func (c *loadClient) hold(ctx context.Context, t streamTarget, body []byte, n, opening int, steady func(open int)) *holdResult {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	var (
		res      holdResult
		mu       sync.Mutex
		wg       sync.WaitGroup
		opened   atomic.Int64
		failed   atomic.Int64
		settled  = make(chan struct{}, n)
		sem      = make(chan struct{}, max(opening, 1))
		steadyOn atomic.Bool
		closing  atomic.Bool // the client is closing the streams
	)
	start := time.Now()
	for range n {
		select {
		case sem <- struct{}{}:
		case <-ctx.Done():
		}
		if ctx.Err() != nil {
			break
		}
		wg.Go(func() {
			released := false
			release := func() {
				if !released {
					released = true
					<-sem
					settled <- struct{}{}
				}
			}
			a := c.stream(ctx, t, body, func() { opened.Add(1); release() }, steadyOn.Load)
			if a.err != nil && !(errors.Is(a.err, context.Canceled) && closing.Load()) {
				failed.Add(1)
				mu.Lock()
				res.errors++
				res.errs.add(a.err)
				if res.firstErr == "" {
					res.firstErr = a.err.Error()
				}
				mu.Unlock()
			}
			release()
			mu.Lock()
			res.gaps = append(res.gaps, a.gaps...)
			mu.Unlock()
		})
	}
	for range n {
		<-settled
	}
	res.openTime = time.Since(start)
	res.opened = int(opened.Load())
	steadyOn.Store(true)
	steady(res.opened)
	steadyOn.Store(false) // gaps after here are of the streams being closed
	closing.Store(true)
	cancel()
	wg.Wait()
	return &res
}
