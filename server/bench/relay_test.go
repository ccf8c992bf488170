package bench

import (
	"context"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"
	"time"
)

// The mock streams what vLLM streams, paced as its prompt says, and the
// load client times each token of it.
func TestMockAndLoadClient(t *testing.T) {
	srv := httptest.NewServer(NewMock(MockConfig{Tokens: 5}))
	defer srv.Close()
	c := newLoadClient(4, 1)
	defer c.close()
	target := streamTarget{url: srv.URL, model: "mock"}
	st := c.load(context.Background(), target, target.body(pace(2*time.Millisecond, 7), 100), 4, 12)
	if st.answers != 12 || st.errors != 0 || len(st.ttft) != 12 || len(st.gaps) != 12*6 {
		t.Fatalf("answers %d errors %d (%s), %d TTFTs, %d gaps", st.answers, st.errors, st.firstErr, len(st.ttft), len(st.gaps))
	}
	if p := percentile(st.ttft, 0.5); p < 2*time.Millisecond {
		t.Errorf("TTFT p50 %v, under the pace", p)
	}
	// max_tokens cuts the answer; a wrong model is refused.
	a := c.stream(context.Background(), target, target.body("hi", 3), nil, nil)
	if a.err != nil || a.tokens != 3 {
		t.Errorf("max_tokens 3: %d tokens, %v", a.tokens, a.err)
	}
	other := streamTarget{url: srv.URL, model: "other"}
	a = c.stream(context.Background(), other, other.body("hi", 3), nil, nil)
	if a.err == nil || !strings.Contains(a.err.Error(), "404") {
		t.Errorf("unknown model: %v", a.err)
	}
}

// A hold run keeps every stream open until told, then closes them without
// counting that as an error.
func TestHold(t *testing.T) {
	srv := httptest.NewServer(NewMock(MockConfig{}))
	defer srv.Close()
	c := newLoadClient(20, 1)
	defer c.close()
	target := streamTarget{url: srv.URL, model: "mock"}
	open := 0
	res := c.hold(context.Background(), target, target.body(pace(5*time.Millisecond, 100000), 100000), 20, 5, func(n int) {
		open = n
		time.Sleep(50 * time.Millisecond)
	})
	if open != 20 || res.opened != 20 || res.errors != 0 || len(res.gaps) == 0 {
		t.Errorf("open %d, opened %d, errors %d (%s), %d gaps", open, res.opened, res.errors, res.firstErr, len(res.gaps))
	}
}

// A burst opens its streams at the rate asked, not as fast as it can, and
// reads every one to its end.
func TestBurst(t *testing.T) {
	srv := httptest.NewServer(NewMock(MockConfig{}))
	defer srv.Close()
	c := newLoadClient(40, 1)
	defer c.close()
	target := streamTarget{url: srv.URL, model: "mock"}
	start := time.Now()
	st := c.burst(context.Background(), target, target.body(pace(time.Millisecond, 5), 5), 40, 200)
	if st.answers != 40 || st.errors != 0 || len(st.ttft) != 40 {
		t.Errorf("answers %d, errors %d (%s), %d first tokens", st.answers, st.errors, st.firstErr, len(st.ttft))
	}
	// 40 streams at 200 a second: the last opens 195 ms after the first.
	if took := time.Since(start); took < 190*time.Millisecond {
		t.Errorf("40 streams at 200/s took %v, want at least 195 ms", took)
	}
}

// The proxy, the relay benchmark's floor, relays every token of every
// stream and the upstream's errors as they are.
func TestProxy(t *testing.T) {
	mock := httptest.NewServer(NewMock(MockConfig{Tokens: 5}))
	defer mock.Close()
	u, _ := url.Parse(mock.URL)
	srv := httptest.NewServer(NewProxy(u))
	defer srv.Close()
	c := newLoadClient(8, 1)
	defer c.close()
	target := streamTarget{url: srv.URL, model: "mock"}
	st := c.load(context.Background(), target, target.body(pace(time.Millisecond, 7), 100), 8, 200)
	if st.answers != 200 || st.errors != 0 || len(st.gaps) != 200*6 {
		t.Fatalf("answers %d errors %d (%s), %d gaps", st.answers, st.errors, st.firstErr, len(st.gaps))
	}
	other := streamTarget{url: srv.URL, model: "other"}
	if a := c.stream(context.Background(), other, other.body("hi", 3), nil, nil); a.err == nil || !strings.Contains(a.err.Error(), "404") {
		t.Errorf("unknown model through the proxy: %v", a.err)
	}
}
