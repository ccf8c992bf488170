package enginetest

import (
	"bytes"
	"net"
	"net/url"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// Proxy is a TCP proxy on loopback in front of an upstream server that can
// misbehave as a failing server would: cut each connection after a number
// of server-sent events, or hold back each connection's response.
type Proxy struct {
	// URL is the proxy's base URL (http://127.0.0.1:port), standing for the
	// upstream's.
	URL string

	ln       net.Listener
	upstream string // host:port

	mu        sync.Mutex
	cutEvents int
	delay     time.Duration
	conns     []net.Conn
}

// NewProxy starts a proxy to upstream (a base URL), closed with t.
func NewProxy(t *testing.T, upstream string) *Proxy {
	t.Helper()
	u, err := url.Parse(upstream)
	if err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	p := &Proxy{URL: "http://" + ln.Addr().String(), ln: ln, upstream: u.Host}
	go p.serve()
	t.Cleanup(p.Close)
	return p
}

// CutAfterEvents closes each connection, both ways, once n events (blank
// line ended) of its response have gone through.
func (p *Proxy) CutAfterEvents(n int) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.cutEvents = n
}

// DelayResponses holds back the first response byte for d after each time
// the client sent something: every response of a kept-alive connection, not
// only its first.
func (p *Proxy) DelayResponses(d time.Duration) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.delay = d
}

// Close stops the proxy and its connections.
func (p *Proxy) Close() {
	_ = p.ln.Close()
	p.mu.Lock()
	defer p.mu.Unlock()
	for _, c := range p.conns {
		_ = c.Close()
	}
}

func (p *Proxy) serve() {
	for {
		c, err := p.ln.Accept()
		if err != nil {
			return
		}
		up, err := net.DialTimeout("tcp", p.upstream, 5*time.Second)
		if err != nil {
			_ = c.Close()
			continue
		}
		p.mu.Lock()
		p.conns = append(p.conns, c, up)
		cut, delay := p.cutEvents, p.delay
		p.mu.Unlock()
		var asked atomic.Int64 // reads from the client: requests, or parts of them
		go func() {
			buf := make([]byte, 32<<10)
			for {
				n, err := c.Read(buf)
				if n > 0 {
					asked.Add(1)
					if _, werr := up.Write(buf[:n]); werr != nil {
						break
					}
				}
				if err != nil {
					break
				}
			}
			_ = up.Close()
		}()
		go p.respond(c, up, cut, delay, &asked)
	}
}

// respond copies the upstream's bytes to the client, delayed and cut as set.
func (p *Proxy) respond(c, up net.Conn, cut int, delay time.Duration, asked *atomic.Int64) {
	defer c.Close()
	defer up.Close()
	buf := make([]byte, 32<<10)
	var answered int64 // the client's reads the delay has been paid for
	events := 0
	var seen []byte // the response so far, while counting events
	for {
		n, err := up.Read(buf)
		if n > 0 {
			if a := asked.Load(); a > answered && delay > 0 {
				time.Sleep(delay)
				answered = a
			}
			chunk := buf[:n]
			if cut > 0 {
				start := len(seen)
				seen = append(seen, chunk...)
				body := bytes.Index(seen, []byte("\r\n\r\n"))
				if body >= 0 {
					// Count the blank lines that end events, past the headers.
					for i := max(start-1, body+4); i+1 < len(seen); i++ {
						if seen[i] == '\n' && seen[i+1] == '\n' {
							events++
							if events == cut {
								_, _ = c.Write(seen[start : i+2])
								return
							}
						}
					}
				}
			}
			if _, werr := c.Write(chunk); werr != nil {
				return
			}
		}
		if err != nil {
			return
		}
	}
}
