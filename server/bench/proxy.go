package bench

import (
	"bytes"
	"context"
	"io"
	"log/slog"
	"net/http"
	"net/url"
)

// Proxy is the relay benchmark's floor: a relay that does nothing but
// relay. It passes each request to upstream and copies the answer back
// read by read, flushing each at once as a streamed answer needs: one read
// and one write per token, no parsing, authentication, accounting or
// scheduling, through a 4 KiB buffer (a token's chunk is a few hundred
// bytes), with as many connections to upstream as there are streams. What
// a relay costs on this machine beyond it is what that relay does.
type Proxy struct {
	upstream *url.URL
	client   *http.Client
}

// NewProxy returns a Proxy to upstream (a base URL: the request's path is
// appended).
func NewProxy(upstream *url.URL) *Proxy {
	t := http.DefaultTransport.(*http.Transport).Clone()
	t.MaxIdleConns, t.MaxIdleConnsPerHost = 0, 1<<16
	return &Proxy{upstream: upstream, client: &http.Client{Transport: t}}
}

func (p *Proxy) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	out := p.upstream.JoinPath(r.URL.Path)
	out.RawQuery = r.URL.RawQuery
	body, err := io.ReadAll(io.LimitReader(r.Body, 1<<20))
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	req, err := http.NewRequestWithContext(r.Context(), r.Method, out.String(), bytes.NewReader(body))
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadGateway)
		return
	}
	for _, h := range []string{"Content-Type", "Authorization", "Accept"} {
		if v := r.Header.Get(h); v != "" {
			req.Header.Set(h, v)
		}
	}
	res, err := p.client.Do(req)
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadGateway)
		return
	}
	defer res.Body.Close()
	for _, h := range []string{"Content-Type", "Cache-Control"} {
		if v := res.Header.Get(h); v != "" {
			w.Header().Set(h, v)
		}
	}
	w.WriteHeader(res.StatusCode)
	rc := http.NewResponseController(w)
	buf := make([]byte, 4<<10)
	for {
		n, err := res.Body.Read(buf)
		if n > 0 {
			if _, werr := w.Write(buf[:n]); werr != nil {
				return
			}
			if rc.Flush() != nil {
				return
			}
		}
		if err == io.EOF {
			return
		}
		if err != nil {
			panic(http.ErrAbortHandler) // the client sees the stream cut, as it was
		}
	}
}

// RunProxy serves NewProxy(upstream) on listen until ctx ends, logging
// "listening on http://ADDR" when ready, as parley serve does.
func RunProxy(ctx context.Context, listen string, upstream *url.URL, logger *slog.Logger) error {
	return serveUntil(ctx, listen, NewProxy(upstream), logger, "upstream", upstream.String())
}
