package webapp

import (
	"compress/gzip"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

func get(t *testing.T, h http.Handler, method, target string, hdr map[string]string) *http.Response {
	t.Helper()
	r := httptest.NewRequest(method, target, nil)
	for k, v := range hdr {
		r.Header.Set(k, v)
	}
	w := httptest.NewRecorder()
	h.ServeHTTP(w, r)
	return w.Result()
}

func TestServesTheApp(t *testing.T) {
	h := New(Options{})
	res := get(t, h, "GET", "/", nil)
	body, _ := io.ReadAll(res.Body)
	if res.StatusCode != 200 || !strings.HasPrefix(res.Header.Get("Content-Type"), "text/html") || !strings.Contains(string(body), "<title>Parley</title>") {
		t.Fatalf("GET /: %d %q %.100s", res.StatusCode, res.Header.Get("Content-Type"), body)
	}
	if cc := res.Header.Get("Cache-Control"); cc != "no-cache" {
		t.Errorf("index Cache-Control %q", cc)
	}
	// The page's assets: hashed names, long cache, right types, gzip when asked.
	var js, css string
	for _, m := range strings.Split(string(body), `"`) {
		if strings.HasPrefix(m, "/assets/") && strings.HasSuffix(m, ".js") {
			js = m
		}
		if strings.HasPrefix(m, "/assets/") && strings.HasSuffix(m, ".css") {
			css = m
		}
	}
	if js == "" || css == "" {
		t.Fatalf("no assets in index.html: %s", body)
	}
	for path, ct := range map[string]string{js: "text/javascript", css: "text/css"} {
		res := get(t, h, "GET", path, map[string]string{"Accept-Encoding": "gzip, br"})
		if res.StatusCode != 200 || !strings.HasPrefix(res.Header.Get("Content-Type"), ct) {
			t.Errorf("%s: %d %q", path, res.StatusCode, res.Header.Get("Content-Type"))
		}
		if cc := res.Header.Get("Cache-Control"); !strings.Contains(cc, "immutable") || !strings.Contains(cc, "max-age=31536000") {
			t.Errorf("%s Cache-Control %q", path, cc)
		}
		if res.Header.Get("Content-Encoding") != "gzip" {
			t.Errorf("%s not gzipped", path)
		} else if zr, err := gzip.NewReader(res.Body); err != nil {
			t.Error(err)
		} else if b, err := io.ReadAll(zr); err != nil || len(b) == 0 {
			t.Errorf("%s: bad gzip: %v", path, err)
		}
		plain := get(t, h, "GET", path, nil)
		if plain.Header.Get("Content-Encoding") != "" {
			t.Errorf("%s gzipped without Accept-Encoding", path)
		}
		etag := plain.Header.Get("ETag")
		if again := get(t, h, "GET", path, map[string]string{"If-None-Match": etag}); again.StatusCode != http.StatusNotModified {
			t.Errorf("%s If-None-Match: %d", path, again.StatusCode)
		}
	}
}

func TestSPAFallbackAndMisses(t *testing.T) {
	h := New(Options{})
	for _, p := range []string{"/c/0190abcd", "/keys", "/index.html"} {
		res := get(t, h, "GET", p, nil)
		if res.StatusCode != 200 || !strings.HasPrefix(res.Header.Get("Content-Type"), "text/html") {
			t.Errorf("GET %s: %d %q", p, res.StatusCode, res.Header.Get("Content-Type"))
		}
	}
	if res := get(t, h, "HEAD", "/", nil); res.StatusCode != 200 {
		t.Errorf("HEAD /: %d", res.StatusCode)
	}
	for _, c := range []struct{ method, path string }{{"GET", "/assets/missing.js"}, {"GET", "/favicon.ico"}, {"POST", "/"}, {"POST", "/nope.v1.Service/Method"}} {
		if res := get(t, h, c.method, c.path, nil); res.StatusCode != http.StatusNotFound {
			t.Errorf("%s %s: %d, want 404", c.method, c.path, res.StatusCode)
		}
	}
}

func TestEveryPageCarriesTheSecurityPolicy(t *testing.T) {
	h := New(Options{Origins: []string{"https://s3.example.test"}})
	for _, p := range []string{"/", "/c/0190abcd", "/share/abc", "/index.html"} {
		res := get(t, h, "GET", p, nil)
		csp := res.Header.Get("Content-Security-Policy")
		for _, want := range []string{"default-src 'self'", "script-src 'self';", "object-src 'none'", "base-uri 'none'", "frame-ancestors 'none'",
			"connect-src 'self' https://s3.example.test", "img-src 'self' data: blob: https://s3.example.test"} {
			if !strings.Contains(csp, want) {
				t.Errorf("GET %s: Content-Security-Policy %q lacks %q", p, csp, want)
			}
		}
		if strings.Contains(csp, "unsafe-eval") || strings.Contains(strings.SplitN(strings.SplitN(csp, "script-src", 2)[1], ";", 2)[0], "unsafe-inline") {
			t.Errorf("GET %s: scripts not restricted: %q", p, csp)
		}
		if hsts := res.Header.Get("Strict-Transport-Security"); hsts != "" {
			t.Errorf("GET %s: HSTS %q without the option", p, hsts)
		}
	}
	// The page itself has no inline script for the policy to refuse.
	body, _ := io.ReadAll(get(t, h, "GET", "/", nil).Body)
	for _, tag := range strings.Split(string(body), "<script")[1:] {
		if end := strings.Index(tag, ">"); end < 0 || !strings.Contains(tag[:end], "src=") {
			t.Errorf("index.html has an inline script: <script%.80s", tag)
		}
	}
	tls := New(Options{HSTSMaxAge: 31536000})
	if hsts := get(t, tls, "GET", "/", nil).Header.Get("Strict-Transport-Security"); hsts != "max-age=31536000; includeSubDomains" {
		t.Errorf("HSTS %q", hsts)
	}
}
