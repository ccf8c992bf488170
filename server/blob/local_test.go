package blob

import (
	"bytes"
	"context"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

type clock struct{ t atomic.Int64 }

func (c *clock) now() time.Time      { return time.Unix(0, c.t.Load()) }
func (c *clock) add(d time.Duration) { c.t.Add(int64(d)) }
func newClock(t time.Time) *clock    { c := &clock{}; c.t.Store(t.UnixNano()); return c }
func put(t *testing.T, url, mime string, body []byte) *http.Response {
	t.Helper()
	req, err := http.NewRequest(http.MethodPut, url, bytes.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	if mime != "" {
		req.Header.Set("Content-Type", mime)
	}
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	res.Body.Close()
	return res
}

func newTestLocal(t *testing.T) (*Local, *httptest.Server, *clock) {
	t.Helper()
	c := newClock(time.Now())
	srv := httptest.NewUnstartedServer(nil)
	srv.Start()
	t.Cleanup(srv.Close)
	l, err := NewLocal(t.TempDir(), []byte("0123456789abcdef0123456789abcdef"), srv.URL, c.now)
	if err != nil {
		t.Fatal(err)
	}
	srv.Config.Handler = l
	return l, srv, c
}

func TestUploadOnceThenDownload(t *testing.T) {
	l, _, _ := newTestLocal(t)
	ctx := context.Background()
	body := []byte("hello, blob")
	up, err := l.SignedUploadURL(ctx, "u/1/a", int64(len(body)), "text/plain", 5*time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	if up.Method != http.MethodPut || up.Headers["Content-Type"] != "text/plain" {
		t.Fatalf("upload %+v", up)
	}
	if res := put(t, up.URL, "text/plain", body); res.StatusCode != http.StatusOK {
		t.Fatalf("first PUT: %s", res.Status)
	}
	if res := put(t, up.URL, "text/plain", body); res.StatusCode != http.StatusForbidden {
		t.Fatalf("replayed PUT: %s, want 403", res.Status)
	}
	obj, err := l.Get(ctx, "u/1/a")
	if err != nil {
		t.Fatal(err)
	}
	got, _ := io.ReadAll(obj)
	obj.Close()
	if !bytes.Equal(got, body) || obj.Size() != int64(len(body)) {
		t.Fatalf("stored %q", got)
	}
	dl, _, err := l.SignedDownloadURL(ctx, "u/1/a", "text/plain", time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	res, err := http.Get(dl)
	if err != nil {
		t.Fatal(err)
	}
	got, _ = io.ReadAll(res.Body)
	res.Body.Close()
	if res.StatusCode != http.StatusOK || !bytes.Equal(got, body) || res.Header.Get("X-Content-Type-Options") != "nosniff" {
		t.Fatalf("GET: %s %q %v", res.Status, got, res.Header)
	}
	// The download URL does not upload, and does not open another key.
	if res := put(t, dl, "text/plain", body); res.StatusCode != http.StatusForbidden {
		t.Fatalf("PUT to a GET URL: %s", res.Status)
	}
	other := strings.Replace(dl, "/u/1/a?", "/u/1/b?", 1)
	if res, _ := http.Get(other); res.StatusCode != http.StatusForbidden {
		t.Fatalf("GET of another key: %s", res.Status)
	}
}

func TestUploadRefusals(t *testing.T) {
	l, _, c := newTestLocal(t)
	ctx := context.Background()
	body := []byte("0123456789")
	newURL := func() string {
		up, err := l.SignedUploadURL(ctx, "k", 10, "text/csv", time.Minute)
		if err != nil {
			t.Fatal(err)
		}
		return up.URL
	}
	tests := []struct {
		name   string
		url    func() string
		mime   string
		body   []byte
		status int
	}{
		{"size tampered", func() string { return strings.Replace(newURL(), "n=10", "n=11", 1) }, "text/csv", append(body, 'x'), http.StatusForbidden},
		{"type tampered", func() string { return strings.Replace(newURL(), "t=text%2Fcsv", "t=text%2Fhtml", 1) }, "text/html", body, http.StatusForbidden},
		{"expiry tampered", func() string {
			u := newURL()
			i := strings.Index(u, "e=")
			return u[:i+2] + "9" + u[i+2:]
		}, "text/csv", body, http.StatusForbidden},
		{"signature tampered", func() string { u := newURL(); return u[:len(u)-2] + "AA" }, "text/csv", body, http.StatusForbidden},
		{"short body", newURL, "text/csv", body[:9], http.StatusBadRequest},
		{"long body", newURL, "text/csv", append(body, 'x'), http.StatusBadRequest},
		{"other type", newURL, "text/plain", body, http.StatusBadRequest},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if res := put(t, tt.url(), tt.mime, tt.body); res.StatusCode != tt.status {
				t.Fatalf("%s, want %d", res.Status, tt.status)
			}
			if _, err := l.Get(ctx, "k"); !errors.Is(err, ErrNotFound) {
				t.Fatalf("a refused upload stored something: %v", err)
			}
		})
	}
	t.Run("expired", func(t *testing.T) {
		u := newURL()
		c.add(61 * time.Second)
		if res := put(t, u, "text/csv", body); res.StatusCode != http.StatusForbidden {
			t.Fatalf("%s, want 403", res.Status)
		}
	})
	t.Run("a failed upload may be retried", func(t *testing.T) {
		u := newURL()
		if res := put(t, u, "text/csv", body[:3]); res.StatusCode != http.StatusBadRequest {
			t.Fatalf("%s", res.Status)
		}
		if res := put(t, u, "text/csv", body); res.StatusCode != http.StatusOK {
			t.Fatalf("%s", res.Status)
		}
	})
}

func TestExpiryIsCapped(t *testing.T) {
	l, _, c := newTestLocal(t)
	up, err := l.SignedUploadURL(context.Background(), "k", 1, "text/plain", 24*time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	if d := up.ExpiresAt.Sub(c.now()); d > MaxURLExpiry {
		t.Fatalf("expires in %v", d)
	}
}

func TestPutGetDelete(t *testing.T) {
	l, _, _ := newTestLocal(t)
	ctx := context.Background()
	if err := l.Put(ctx, "a/b.c", strings.NewReader("xyz"), 3); err != nil {
		t.Fatal(err)
	}
	if err := l.Put(ctx, "a/short", strings.NewReader("xy"), 3); err == nil {
		t.Fatal("short Put stored")
	}
	for _, bad := range []string{"../x", "a/../../x", ".spent/x", "/abs", "a//b", ""} {
		if _, err := l.Get(ctx, bad); err == nil || errors.Is(err, ErrNotFound) {
			t.Errorf("Get(%q) = %v, want an invalid key", bad, err)
		}
	}
	if err := l.Delete(ctx, "a/b.c"); err != nil {
		t.Fatal(err)
	}
	if _, err := l.Get(ctx, "a/b.c"); !errors.Is(err, ErrNotFound) {
		t.Fatalf("after Delete: %v", err)
	}
	if err := l.Delete(ctx, "a/b.c"); err != nil {
		t.Fatalf("second Delete: %v", err)
	}
}

func TestUploadAfterDeleteRefused(t *testing.T) {
	l, _, _ := newTestLocal(t)
	ctx := context.Background()
	up, err := l.SignedUploadURL(ctx, "u/1/gone", 3, "text/plain", time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	if err := l.Delete(ctx, "u/1/gone"); err != nil {
		t.Fatal(err)
	}
	if res := put(t, up.URL, "text/plain", []byte("abc")); res.StatusCode != http.StatusForbidden {
		t.Fatalf("PUT after Delete: %s, want 403", res.Status)
	}
	if _, err := l.Get(ctx, "u/1/gone"); !errors.Is(err, ErrNotFound) {
		t.Fatalf("stored after Delete: %v", err)
	}
}
