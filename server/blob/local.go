package blob

import (
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/parleyhq/parley/server/apierr"
)

// Prefix is the path under which the gateway serves Local's signed URLs.
const Prefix = "/blob/"

// Local keeps blobs in a directory and serves their signed URLs itself:
// the embedded mode's object store. A URL's token is an HMAC over the
// method, key, expiry and (for uploads) the exact size and type, so none of
// them can be changed; an upload URL is spent by its first PUT.
type Local struct {
	dir     string
	baseURL string
	key     []byte
	now     func() time.Time

	sweepMu   sync.Mutex
	lastSweep time.Time
}

// NewLocal keeps blobs under dir, signing URLs with a key derived from
// secret. baseURL is prefixed to the URLs it signs ("" makes them relative
// to the gateway, as a browser resolves them). now is the clock (nil:
// time.Now).
func NewLocal(dir string, secret []byte, baseURL string, now func() time.Time) (*Local, error) {
	if len(secret) < 16 {
		return nil, errors.New("blob: the signing secret must be at least 16 bytes")
	}
	for _, d := range []string{dir, filepath.Join(dir, ".tmp"), filepath.Join(dir, ".spent"), filepath.Join(dir, ".gone")} {
		if err := os.MkdirAll(d, 0o700); err != nil {
			return nil, fmt.Errorf("blob: %w", err)
		}
	}
	if now == nil {
		now = time.Now
	}
	mac := hmac.New(sha256.New, secret)
	mac.Write([]byte("parley blob url v1")) // a key of its own, apart from the secret's other uses
	return &Local{dir: dir, baseURL: strings.TrimSuffix(baseURL, "/"), key: mac.Sum(nil), now: now}, nil
}

var keyRE = regexp.MustCompile(`^[A-Za-z0-9_-][A-Za-z0-9._-]*(/[A-Za-z0-9_-][A-Za-z0-9._-]*)*$`)

func checkKey(key string) error {
	if len(key) > 512 || !keyRE.MatchString(key) {
		return fmt.Errorf("blob: invalid key %q", key)
	}
	return nil
}

func (l *Local) path(key string) string { return filepath.Join(l.dir, filepath.FromSlash(key)) }

// sign is the token of one URL: every field that bounds it is covered.
func (l *Local) sign(method, key string, exp int64, size int64, mime string) string {
	mac := hmac.New(sha256.New, l.key)
	fmt.Fprintf(mac, "%s\n%s\n%d\n%d\n%s", method, key, exp, size, mime)
	return base64.RawURLEncoding.EncodeToString(mac.Sum(nil))
}

func (l *Local) signedURL(method, key string, expiry time.Duration, size int64, mime string) (string, time.Time, error) {
	if err := checkKey(key); err != nil {
		return "", time.Time{}, err
	}
	if expiry <= 0 || expiry > MaxURLExpiry {
		expiry = MaxURLExpiry
	}
	exp := l.now().Add(expiry).Truncate(time.Second)
	q := url.Values{}
	q.Set("m", method)
	q.Set("e", strconv.FormatInt(exp.Unix(), 10))
	if method == http.MethodPut {
		q.Set("n", strconv.FormatInt(size, 10))
	}
	q.Set("t", mime)
	q.Set("s", l.sign(method, key, exp.Unix(), size, mime))
	return l.baseURL + Prefix + key + "?" + q.Encode(), exp, nil
}

// SignedUploadURL implements Blobs.
func (l *Local) SignedUploadURL(_ context.Context, key string, size int64, mime string, expiry time.Duration) (Upload, error) {
	if size < 0 {
		return Upload{}, errors.New("blob: negative size")
	}
	u, exp, err := l.signedURL(http.MethodPut, key, expiry, size, mime)
	if err != nil {
		return Upload{}, err
	}
	return Upload{URL: u, Method: http.MethodPut, Headers: map[string]string{"Content-Type": mime}, ExpiresAt: exp}, nil
}

// SignedDownloadURL implements Blobs.
func (l *Local) SignedDownloadURL(_ context.Context, key, mime string, expiry time.Duration) (string, time.Time, error) {
	return l.signedURL(http.MethodGet, key, expiry, 0, mime)
}

// Put implements Blobs.
func (l *Local) Put(_ context.Context, key string, r io.Reader, size int64) error {
	if err := checkKey(key); err != nil {
		return err
	}
	return l.write(key, r, size)
}

// write streams exactly size bytes from r to key through a temporary file,
// so a reader never sees a partial blob and memory use does not depend on
// the size.
func (l *Local) write(key string, r io.Reader, size int64) error {
	f, err := os.CreateTemp(filepath.Join(l.dir, ".tmp"), "put-*")
	if err != nil {
		return err
	}
	defer os.Remove(f.Name()) // after the rename, a no-op
	n, err := io.Copy(f, io.LimitReader(r, size+1))
	if err == nil && n != size {
		err = &sizeError{got: n, want: size}
	}
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return err
	}
	dst := l.path(key)
	if err := os.MkdirAll(filepath.Dir(dst), 0o700); err != nil {
		return err
	}
	return os.Rename(f.Name(), dst)
}

type sizeError struct{ got, want int64 }

func (e *sizeError) Error() string {
	if e.got > e.want {
		return fmt.Sprintf("blob: the body is longer than the declared %d bytes", e.want)
	}
	return fmt.Sprintf("blob: the body is %d bytes, not the declared %d", e.got, e.want)
}

// Get implements Blobs.
func (l *Local) Get(_ context.Context, key string) (Object, error) {
	if err := checkKey(key); err != nil {
		return nil, err
	}
	f, err := os.Open(l.path(key))
	if errors.Is(err, fs.ErrNotExist) {
		return nil, ErrNotFound
	} else if err != nil {
		return nil, err
	}
	st, err := f.Stat()
	if err != nil || !st.Mode().IsRegular() {
		f.Close()
		return nil, ErrNotFound
	}
	return &file{File: f, size: st.Size()}, nil
}

type file struct {
	*os.File
	size int64
}

func (f *file) Size() int64 { return f.size }

// Delete implements Blobs. The key stays gone: an upload URL still valid
// for it is refused, so a deleted attachment's URL cannot store bytes that
// no quota counts.
func (l *Local) Delete(_ context.Context, key string) error {
	if err := checkKey(key); err != nil {
		return err
	}
	if err := os.WriteFile(l.gonePath(key), nil, 0o600); err != nil {
		return err
	}
	if err := os.Remove(l.path(key)); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return err
	}
	return nil
}

// gonePath is the tombstone of a deleted key, kept while URLs signed for it
// may still be valid.
func (l *Local) gonePath(key string) string {
	sum := sha256.Sum256([]byte(key))
	return filepath.Join(l.dir, ".gone", base64.RawURLEncoding.EncodeToString(sum[:18]))
}

func (l *Local) deleted(key string) bool {
	_, err := os.Stat(l.gonePath(key))
	return err == nil
}

// ServeHTTP serves the signed URLs: PUT stores the one upload a URL allows,
// GET returns a blob.
func (l *Local) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	key, ok := strings.CutPrefix(r.URL.Path, Prefix)
	if !ok || checkKey(key) != nil {
		apierr.WriteJSON(w, http.StatusNotFound, "no such blob")
		return
	}
	q := r.URL.Query()
	method, mime := q.Get("m"), q.Get("t")
	exp, err1 := strconv.ParseInt(q.Get("e"), 10, 64)
	var size int64
	var err2 error
	if method == http.MethodPut {
		size, err2 = strconv.ParseInt(q.Get("n"), 10, 64)
	}
	want := l.sign(method, key, exp, size, mime)
	if err1 != nil || err2 != nil || r.Method != method || !hmac.Equal([]byte(q.Get("s")), []byte(want)) {
		apierr.WriteJSON(w, http.StatusForbidden, "the URL's signature does not match this request")
		return
	}
	now := l.now()
	if now.Unix() >= exp || exp > now.Add(MaxURLExpiry+time.Minute).Unix() {
		apierr.WriteJSON(w, http.StatusForbidden, "the URL has expired")
		return
	}
	switch method {
	case http.MethodPut:
		l.servePut(w, r, key, exp, size, mime, want)
	case http.MethodGet:
		l.serveGet(w, r, key, mime)
	default:
		apierr.WriteJSON(w, http.StatusMethodNotAllowed, "method not allowed")
	}
}

func (l *Local) servePut(w http.ResponseWriter, r *http.Request, key string, exp, size int64, mime, sig string) {
	switch {
	case r.ContentLength < 0:
		apierr.WriteJSON(w, http.StatusLengthRequired, fmt.Sprintf("Content-Length is required and must be %d", size))
		return
	case r.ContentLength != size:
		w.Header().Set("Connection", "close")
		apierr.WriteJSON(w, http.StatusBadRequest, fmt.Sprintf("Content-Length is %d; this URL takes exactly %d bytes", r.ContentLength, size))
		return
	case r.Header.Get("Content-Type") != mime:
		w.Header().Set("Connection", "close")
		apierr.WriteJSON(w, http.StatusBadRequest, fmt.Sprintf("Content-Type is %q; this URL takes %q", r.Header.Get("Content-Type"), mime))
		return
	}
	if l.deleted(key) {
		w.Header().Set("Connection", "close")
		apierr.WriteJSON(w, http.StatusForbidden, "this upload was deleted")
		return
	}
	// Spend the URL before reading a byte: a second PUT, even a
	// concurrent one, is refused. A failed upload gives it back.
	spent := filepath.Join(l.dir, ".spent", strconv.FormatInt(exp, 10)+"-"+sig[:22])
	mark, err := os.OpenFile(spent, os.O_CREATE|os.O_EXCL|os.O_WRONLY, 0o600)
	if errors.Is(err, fs.ErrExist) {
		w.Header().Set("Connection", "close")
		apierr.WriteJSON(w, http.StatusForbidden, "this upload URL has already been used")
		return
	} else if err != nil {
		apierr.WriteJSON(w, http.StatusInternalServerError, "internal error")
		return
	}
	mark.Close()
	if err := l.write(key, r.Body, size); err != nil {
		os.Remove(spent)
		var se *sizeError
		if errors.As(err, &se) {
			apierr.WriteJSON(w, http.StatusBadRequest, strings.TrimPrefix(se.Error(), "blob: "))
			return
		}
		apierr.WriteJSON(w, http.StatusBadRequest, "the upload did not complete")
		return
	}
	if l.deleted(key) { // deleted while the bytes were arriving
		os.Remove(l.path(key))
		apierr.WriteJSON(w, http.StatusForbidden, "this upload was deleted")
		return
	}
	l.sweep(l.now())
	w.WriteHeader(http.StatusOK)
}

func (l *Local) serveGet(w http.ResponseWriter, r *http.Request, key, mime string) {
	f, err := os.Open(l.path(key))
	if err != nil {
		apierr.WriteJSON(w, http.StatusNotFound, "no such blob")
		return
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil || !st.Mode().IsRegular() {
		apierr.WriteJSON(w, http.StatusNotFound, "no such blob")
		return
	}
	// User content on the gateway's own origin: never sniffed, never
	// rendered as a page.
	h := w.Header()
	h.Set("Content-Type", mime)
	h.Set("X-Content-Type-Options", "nosniff")
	h.Set("Content-Security-Policy", "sandbox; default-src 'none'")
	h.Set("Content-Disposition", "attachment")
	h.Set("Cache-Control", "private, max-age=60")
	http.ServeContent(w, r, "", st.ModTime(), f)
}

// sweep forgets spent URLs that have expired (their signatures refuse them
// anyway) and tombstones older than any URL, at most once a minute.
func (l *Local) sweep(now time.Time) {
	l.sweepMu.Lock()
	defer l.sweepMu.Unlock()
	if now.Sub(l.lastSweep) < time.Minute {
		return
	}
	l.lastSweep = now
	gone := filepath.Join(l.dir, ".gone")
	if entries, err := os.ReadDir(gone); err == nil {
		for _, e := range entries {
			if info, err := e.Info(); err == nil && now.Sub(info.ModTime()) > MaxURLExpiry+time.Minute {
				os.Remove(filepath.Join(gone, e.Name()))
			}
		}
	}
	dir := filepath.Join(l.dir, ".spent")
	entries, err := os.ReadDir(dir)
	if err != nil {
		return
	}
	for _, e := range entries {
		expStr, _, _ := strings.Cut(e.Name(), "-")
		if exp, err := strconv.ParseInt(expStr, 10, 64); err == nil && exp < now.Unix() {
			os.Remove(filepath.Join(dir, e.Name()))
		}
	}
}
