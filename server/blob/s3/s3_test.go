package s3_test

import (
	"bytes"
	"errors"
	"io"
	"net/http"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/parleyhq/parley/server/blob"
	"github.com/parleyhq/parley/server/blob/s3"
)

// open returns a store on a fresh bucket of the test server named by
// PARLEY_TEST_S3_ENDPOINT (scripts/services.sh with PARLEY_SERVICES_S3=1
// starts versitygw); it skips when that is unset.
func open(t *testing.T) *s3.Store {
	t.Helper()
	ep := os.Getenv("PARLEY_TEST_S3_ENDPOINT")
	if ep == "" {
		t.Skip("PARLEY_TEST_S3_ENDPOINT not set (PARLEY_SERVICES_S3=1 scripts/services.sh up; eval \"$(scripts/services.sh env)\")")
	}
	s, err := s3.Open(t.Context(), s3.Config{
		Endpoint: ep, Bucket: "t-" + strings.ReplaceAll(uuid.NewString(), "-", "")[:20],
		AccessKey: os.Getenv("PARLEY_TEST_S3_ACCESS_KEY"), SecretKey: os.Getenv("PARLEY_TEST_S3_SECRET_KEY"),
	})
	if err != nil {
		t.Fatalf("Open: %v", err)
	}
	if err := s.Ping(t.Context()); err != nil {
		t.Fatalf("Ping: %v", err)
	}
	return s
}

func do(t *testing.T, method, url string, h map[string]string, body []byte) (int, []byte, http.Header) {
	t.Helper()
	req, err := http.NewRequest(method, url, bytes.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	for k, v := range h {
		req.Header.Set(k, v)
	}
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	b, _ := io.ReadAll(res.Body)
	return res.StatusCode, b, res.Header
}

func TestPresignedUploadBoundToLengthAndType(t *testing.T) {
	t.Parallel()
	s := open(t)
	ctx := t.Context()
	body := []byte("\x89PNG fake image bytes")
	up, err := s.SignedUploadURL(ctx, "att/u1/a1", int64(len(body)), "image/png", time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	if code, b, _ := do(t, up.Method, up.URL, up.Headers, body[:5]); code != http.StatusForbidden {
		t.Fatalf("short body: %d %s", code, b)
	}
	if code, b, _ := do(t, up.Method, up.URL, map[string]string{"Content-Type": "text/html"}, body); code != http.StatusForbidden {
		t.Fatalf("other type: %d %s", code, b)
	}
	tampered := strings.Replace(up.URL, "att/u1/a1", "att/u1/a2", 1)
	if code, b, _ := do(t, up.Method, tampered, up.Headers, body); code != http.StatusForbidden {
		t.Fatalf("other key: %d %s", code, b)
	}
	if code, b, _ := do(t, up.Method, up.URL, up.Headers, body); code != http.StatusOK {
		t.Fatalf("upload: %d %s", code, b)
	}
	get, _, err := s.SignedDownloadURL(ctx, "att/u1/a1", "image/png", time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	code, b, h := do(t, http.MethodGet, get, nil, nil)
	if code != http.StatusOK || !bytes.Equal(b, body) || h.Get("Content-Type") != "image/png" {
		t.Fatalf("download: %d %q %q", code, b, h.Get("Content-Type"))
	}
	if code, _, _ := do(t, http.MethodGet, get+"x", nil, nil); code != http.StatusForbidden {
		t.Fatalf("tampered download: %d", code)
	}
}

func TestPutGetDelete(t *testing.T) {
	t.Parallel()
	s := open(t)
	ctx := t.Context()
	data := bytes.Repeat([]byte("0123456789"), 1000)
	if err := s.Put(ctx, "k/one", bytes.NewReader(data), int64(len(data))); err != nil {
		t.Fatal(err)
	}
	o, err := s.Get(ctx, "k/one")
	if err != nil {
		t.Fatal(err)
	}
	if o.Size() != int64(len(data)) {
		t.Fatalf("size %d", o.Size())
	}
	part := make([]byte, 10)
	if _, err := o.ReadAt(part, 5000); err != nil || string(part) != "0123456789" {
		t.Fatalf("ReadAt: %q %v", part, err)
	}
	all, err := io.ReadAll(o)
	o.Close()
	if err != nil || !bytes.Equal(all, data) {
		t.Fatalf("read %d bytes, %v", len(all), err)
	}
	if err := s.Delete(ctx, "k/one"); err != nil {
		t.Fatal(err)
	}
	if err := s.Delete(ctx, "k/one"); err != nil {
		t.Fatalf("second delete: %v", err)
	}
	if _, err := s.Get(ctx, "k/one"); !errors.Is(err, blob.ErrNotFound) {
		t.Fatalf("Get after delete: %v", err)
	}
}
