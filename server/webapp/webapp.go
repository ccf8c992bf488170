// Package webapp serves Parley's browser chat app from files embedded in the
// binary. The files are the committed build output of clients/web (`make web`
// rebuilds them), so a fresh clone serves the app with Go alone.
//
// Files under /assets/ carry a content hash in their names and are cached for
// a year; index.html is revalidated on every load. Any other GET path that
// names no file and no extension is a route of the app and gets index.html.
// Compressible files are sent gzipped to clients that accept it.
package webapp

import (
	"bytes"
	"compress/gzip"
	"embed"
	"html/template"
	"io"
	"io/fs"
	"mime"
	"net/http"
	"path"
	"strconv"
	"strings"
	"sync"
	"time"
)

//go:embed all:dist
var dist embed.FS

// file is one embedded file, ready to send.
type file struct {
	body, gz    []byte
	contentType string
	etag        string
}

// Handler serves the embedded app.
type Handler struct {
	once  sync.Once
	files map[string]*file
	err   error
	csp   string
	hsts  string
}

// Options are what a deployment adds to the page's security headers.
type Options struct {
	// Origins are the other origins the app talks to (scheme://host[:port]),
	// such as the S3 endpoint that presigned upload and download URLs name:
	// the page's Content-Security-Policy lets it fetch from and show images
	// of these, and of its own origin, only.
	Origins []string
	// HSTSMaxAge, when positive, sends Strict-Transport-Security with this
	// max-age (in seconds) on the page; set it only where the gateway is
	// served over TLS, since browsers then refuse plain HTTP to the host.
	HSTSMaxAge int
}

// New returns the handler of the embedded build.
func New(o Options) *Handler {
	h := &Handler{csp: ContentSecurityPolicy(o.Origins...)}
	if o.HSTSMaxAge > 0 {
		h.hsts = "max-age=" + strconv.Itoa(o.HSTSMaxAge) + "; includeSubDomains"
	}
	return h
}

// ContentSecurityPolicy is the policy of every page Parley serves: scripts
// from its own origin only (no inline script, no eval), no plugins, no
// <base> rewriting, never framed. Styles allow inline attributes because
// KaTeX lays out math with style attributes; images allow data: and blob:
// URLs, which the app uses for its icon and for previews of files being
// uploaded. origins are added to connect-src and img-src.
func ContentSecurityPolicy(origins ...string) string {
	extra := ""
	for _, o := range origins {
		extra += " " + o
	}
	return "default-src 'self'; script-src 'self'; style-src 'self' 'unsafe-inline'; img-src 'self' data: blob:" + extra +
		"; font-src 'self' data:; connect-src 'self'" + extra +
		"; media-src 'self' blob:" + extra +
		"; object-src 'none'; base-uri 'none'; form-action 'self'; frame-ancestors 'none'"
}

func (h *Handler) load() {
	sub, err := fs.Sub(dist, "dist")
	if err != nil {
		h.err = err
		return
	}
	h.files = map[string]*file{}
	h.err = fs.WalkDir(sub, ".", func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		body, err := fs.ReadFile(sub, p)
		if err != nil {
			return err
		}
		ct := mime.TypeByExtension(path.Ext(p))
		if path.Ext(p) == ".webmanifest" {
			ct = "application/manifest+json"
		}
		if ct == "" {
			ct = http.DetectContentType(body)
		}
		f := &file{body: body, contentType: ct, etag: `"` + strconv.FormatUint(fnv64(body), 36) + `"`}
		if compressible(ct) && len(body) > 512 {
			var b bytes.Buffer
			zw, _ := gzip.NewWriterLevel(&b, gzip.BestCompression)
			zw.Write(body)
			zw.Close()
			if b.Len() < len(body) {
				f.gz = b.Bytes()
			}
		}
		h.files["/"+p] = f
		return nil
	})
}

func compressible(ct string) bool {
	return strings.HasPrefix(ct, "text/") || strings.Contains(ct, "javascript") || strings.Contains(ct, "json") || strings.Contains(ct, "svg")
}

func fnv64(b []byte) uint64 {
	h := uint64(14695981039346656037)
	for _, c := range b {
		h = (h ^ uint64(c)) * 1099511628211
	}
	return h
}

// ServeHTTP serves GET and HEAD; other methods get 404 so that unknown API
// paths stay unknown.
func (h *Handler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodGet && r.Method != http.MethodHead {
		http.NotFound(w, r)
		return
	}
	h.once.Do(h.load)
	if h.err != nil {
		http.Error(w, "web app unavailable: "+h.err.Error(), http.StatusInternalServerError)
		return
	}
	p := path.Clean("/" + r.URL.Path)
	f, ok := h.files[p]
	switch {
	case ok && p != "/index.html":
	case path.Ext(p) == "" || p == "/index.html":
		// The app's own routes, and the page itself.
		f, ok = h.files["/index.html"]
		if !ok {
			http.Error(w, "the web app is not built: run `make web`", http.StatusNotFound)
			return
		}
		p = "/index.html"
	default:
		http.NotFound(w, r)
		return
	}
	hd := w.Header()
	hd.Set("Content-Type", f.contentType)
	hd.Set("ETag", f.etag)
	if strings.HasPrefix(p, "/assets/") {
		hd.Set("X-Content-Type-Options", "nosniff")
		hd.Set("Cache-Control", "public, max-age=31536000, immutable")
		if h.hsts != "" {
			hd.Set("Strict-Transport-Security", h.hsts)
		}
	} else {
		h.pageHeaders(hd)
	}
	body := f.body
	if f.gz != nil {
		hd.Add("Vary", "Accept-Encoding")
		if acceptsGzip(r.Header.Get("Accept-Encoding")) {
			hd.Set("Content-Encoding", "gzip")
			body = f.gz
		}
	}
	// ServeContent answers If-None-Match and Range; a fixed modtime keeps it
	// from sending Last-Modified for embedded files, which have none.
	http.ServeContent(w, r, p, time.Time{}, bytes.NewReader(body))
}

// pageHeaders are the security headers of every page (not of assets).
func (h *Handler) pageHeaders(hd http.Header) {
	hd.Set("X-Content-Type-Options", "nosniff")
	hd.Set("Cache-Control", "no-cache")
	hd.Set("X-Frame-Options", "DENY")
	hd.Set("Referrer-Policy", "same-origin")
	hd.Set("Content-Security-Policy", h.csp)
	if h.hsts != "" {
		hd.Set("Strict-Transport-Security", h.hsts)
	}
}

// WritePage writes a page rendered on the server in the app's shell: head
// (escaped HTML: the title and meta tags) in place of the shell's title,
// body inside its <body>, with the app's scripts, so the app takes the page
// over when they run, and with every page's security headers.
func (h *Handler) WritePage(w http.ResponseWriter, status int, head, body template.HTML) {
	h.once.Do(h.load)
	f, ok := h.files["/index.html"]
	if h.err != nil || !ok {
		http.Error(w, "the web app is not built: run `make web`", http.StatusInternalServerError)
		return
	}
	page := strings.Replace(string(f.body), shellTitle, string(head), 1)
	page = strings.Replace(page, "<body>", "<body>"+string(body), 1)
	hd := w.Header()
	h.pageHeaders(hd)
	hd.Set("Content-Type", "text/html; charset=utf-8")
	hd.Set("Content-Length", strconv.Itoa(len(page)))
	w.WriteHeader(status)
	_, _ = io.WriteString(w, page)
}

// shellTitle is the app shell's <title>, which WritePage replaces.
const shellTitle = "<title>Parley</title>"

func acceptsGzip(ae string) bool {
	for _, part := range strings.Split(ae, ",") {
		name, q, _ := strings.Cut(strings.TrimSpace(part), ";")
		if strings.EqualFold(strings.TrimSpace(name), "gzip") {
			return !strings.Contains(strings.ReplaceAll(q, " ", ""), "q=0") || strings.Contains(q, "q=0.")
		}
	}
	return false
}
