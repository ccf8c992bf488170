package gateway

import (
	"net/http"
	"net/http/httptest"
	"net/netip"
	"testing"
)

func TestRealIP(t *testing.T) {
	trusted := []netip.Prefix{netip.MustParsePrefix("10.0.0.0/8"), netip.MustParsePrefix("::1/128")}
	var got string
	h := RealIP(trusted)(http.HandlerFunc(func(_ http.ResponseWriter, r *http.Request) { got = r.RemoteAddr }))
	for _, c := range []struct {
		name, peer string
		xff        []string
		want       string
	}{
		{"an untrusted peer's header is ignored", "192.0.2.7:5000", []string{"203.0.113.9"}, "192.0.2.7:5000"},
		{"a trusted proxy names the client", "10.0.0.2:5000", []string{"203.0.113.9"}, "203.0.113.9:0"},
		{"the client's own additions on the left are not believed", "10.0.0.2:5000", []string{"1.2.3.4, 203.0.113.9"}, "203.0.113.9:0"},
		{"proxies in a chain are skipped", "10.0.0.2:5000", []string{"203.0.113.9, 10.0.0.7", "10.0.0.3"}, "203.0.113.9:0"},
		{"garbage stops the walk", "10.0.0.2:5000", []string{"203.0.113.9, nonsense, 10.0.0.7"}, "10.0.0.7:0"},
		{"no header keeps the peer", "10.0.0.2:5000", nil, "10.0.0.2:5000"},
		{"IPv6 peer", "[::1]:5000", []string{"2001:db8::1"}, "[2001:db8::1]:0"},
	} {
		r := httptest.NewRequest("GET", "/", nil)
		r.RemoteAddr = c.peer
		for _, v := range c.xff {
			r.Header.Add("X-Forwarded-For", v)
		}
		h.ServeHTTP(httptest.NewRecorder(), r)
		if got != c.want {
			t.Errorf("%s: RemoteAddr %q, want %q", c.name, got, c.want)
		}
		if r.RemoteAddr != c.peer {
			t.Errorf("%s: the caller's request changed", c.name)
		}
	}
	if h := RealIP(nil)(http.NotFoundHandler()); h == nil {
		t.Fatal("no handler without trusted proxies")
	}
}
