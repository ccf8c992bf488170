package attach

import (
	"bytes"
	"context"
	"fmt"
	"image"
	"image/draw"
	_ "image/gif" // registered for image.Decode: the first frame only
	"image/jpeg"
	"image/png"
	"maps"
	"strconv"
	"strings"

	xdraw "golang.org/x/image/draw"
	_ "golang.org/x/image/webp" // registered for image.Decode

	"github.com/parleyhq/parley/server/store"
)

// Limits bound what is accepted. The zero value of a field takes its
// default (DefaultLimits).
type Limits struct {
	// ImageBytes bounds an image file (default 20 MB).
	ImageBytes int64
	// DocumentBytes bounds a document file (default 512 MB).
	DocumentBytes int64
	// TierBytes bounds what one user stores in all, by tier (defaults:
	// free 50 MB, plus 2 GB, pro 10 GB, max 25 GB); a tier missing from a
	// given map keeps its default.
	TierBytes map[store.Tier]int64
	// UserBytes, when positive, bounds what one user of any tier stores in
	// all, in place of TierBytes.
	UserBytes int64
	// MaxPixels bounds an image's area, read from its header before
	// decoding (default 50 megapixels).
	MaxPixels int64
	// FitSide is the box an image is resized to fit (default 1024).
	FitSide int
	// TextBytes is the budget of a document's text; longer text is cut
	// with a marker (default 512 KiB).
	TextBytes int
	// InflateBytes bounds the bytes one document's extraction decompresses
	// and parses (DOCX and PPTX parts, PDF streams); where it is spent,
	// extraction stops and the text is cut there (default 32 MiB).
	InflateBytes int64
	// UnzipRatio bounds a zipped part's uncompressed to compressed size
	// (default 100).
	UnzipRatio int64
	// Concurrency is how many image decodes and document extractions run
	// at once across the gateway (default 2), and PerUser how many of them
	// one user may hold (default 1); PerUserQueue more of a user's wait
	// their turn, and past that they are refused (default 4).
	Concurrency, PerUser, PerUserQueue int
}

// DefaultLimits are the large providers' own attachment limits (docs/scaling.md).
func DefaultLimits() Limits {
	return Limits{
		ImageBytes: 20_000_000, DocumentBytes: 512_000_000,
		TierBytes: map[store.Tier]int64{store.TierFree: 50_000_000, store.TierPlus: 2_000_000_000, store.TierPro: 10_000_000_000, store.TierMax: 25_000_000_000},
		MaxPixels: 50_000_000, FitSide: 1024, TextBytes: 512 << 10, InflateBytes: 32 << 20, UnzipRatio: 100,
		Concurrency: 2, PerUser: 1, PerUserQueue: 4,
	}
}

// QuotaBytes is what one user of tier t may store in all: UserBytes when
// set, else the tier's (an unknown tier gets the free tier's).
func (l Limits) QuotaBytes(t store.Tier) int64 {
	if l.UserBytes > 0 {
		return l.UserBytes
	}
	if n, ok := l.TierBytes[t]; ok {
		return n
	}
	return l.TierBytes[store.TierFree]
}

func (l Limits) withDefaults() Limits {
	d := DefaultLimits()
	if l.ImageBytes <= 0 {
		l.ImageBytes = d.ImageBytes
	}
	if l.DocumentBytes <= 0 {
		l.DocumentBytes = d.DocumentBytes
	}
	tiers := maps.Clone(d.TierBytes)
	for t, n := range l.TierBytes {
		if n > 0 {
			tiers[t] = n
		}
	}
	l.TierBytes = tiers
	if l.MaxPixels <= 0 {
		l.MaxPixels = d.MaxPixels
	}
	if l.FitSide <= 0 {
		l.FitSide = d.FitSide
	}
	if l.TextBytes <= 0 {
		l.TextBytes = d.TextBytes
	}
	if l.InflateBytes <= 0 {
		l.InflateBytes = d.InflateBytes
	}
	if l.Concurrency <= 0 {
		l.Concurrency = d.Concurrency
	}
	if l.PerUser <= 0 {
		l.PerUser = d.PerUser
	}
	if l.PerUserQueue <= 0 {
		l.PerUserQueue = d.PerUserQueue
	}
	if l.UnzipRatio <= 0 {
		l.UnzipRatio = d.UnzipRatio
	}
	return l
}

// MaxBytes is the size limit of a type's files.
func (l Limits) MaxBytes(t Type) int64 {
	if t.Kind == KindImage {
		return l.ImageBytes
	}
	return l.DocumentBytes
}

// Checker checks files against Limits and prepares them for the model. A
// decoded image can take hundreds of megabytes and an extraction a core, so
// image decodes and document extractions share one Pool, with a share per
// user.
type Checker struct {
	limits Limits
	pool   *Pool
}

// NewChecker makes a Checker; zero fields of limits take their defaults.
func NewChecker(limits Limits) *Checker {
	l := limits.withDefaults()
	return &Checker{limits: l, pool: NewPool(l.Concurrency, l.PerUser, l.PerUserQueue)}
}

// Pool returns the pool that image decodes and document extractions share.
func (c *Checker) Pool() *Pool { return c.pool }

// Limits returns the limits in force.
func (c *Checker) Limits() Limits { return c.limits }

// Image is an image prepared for the model.
type Image struct {
	// Width and Height are the original's size.
	Width, Height int
	// Data is the image re-encoded at its fitted size, as MIME.
	Data []byte
	MIME string
	// FitWidth and FitHeight are the size of Data.
	FitWidth, FitHeight int
}

// Image checks an image of type t and prepares it: the size is read from
// the header and an image over MaxPixels refused undecoded; otherwise it is
// decoded (a GIF's first frame), resized to fit FitSide×FitSide with
// Catmull-Rom, and re-encoded (JPEG when opaque, else PNG), which also drops
// its metadata. The decode runs in the shared pool as an anonymous user
// (see ImageFor).
func (c *Checker) Image(data []byte, t Type) (*Image, error) {
	return c.ImageFor(context.Background(), "", data, t)
}

// ImageFor is Image for user's request: the decode waits for a slot of the
// pool within user's share, or until ctx ends.
func (c *Checker) ImageFor(ctx context.Context, user string, data []byte, t Type) (*Image, error) {
	if int64(len(data)) > c.limits.ImageBytes {
		return nil, refuse("the image is %d bytes, over the limit of %d", len(data), c.limits.ImageBytes)
	}
	cfg, format, err := image.DecodeConfig(bytes.NewReader(data))
	if err != nil || "image/"+format != t.MIME {
		return nil, refuse("the %s is damaged or unreadable", t.Name)
	}
	if cfg.Width <= 0 || cfg.Height <= 0 || int64(cfg.Width)*int64(cfg.Height) > c.limits.MaxPixels {
		return nil, refuse("the image is %d×%d pixels, over the limit of %d pixels", cfg.Width, cfg.Height, c.limits.MaxPixels)
	}
	release, err := c.pool.Acquire(ctx, user)
	if err != nil {
		return nil, err
	}
	defer release()
	src, _, err := image.Decode(bytes.NewReader(data))
	if err != nil {
		return nil, refuse("the %s is damaged or unreadable", t.Name)
	}
	b := src.Bounds()
	w, h := fit(b.Dx(), b.Dy(), c.limits.FitSide)
	dst := image.NewRGBA(image.Rect(0, 0, w, h))
	if w == b.Dx() && h == b.Dy() {
		draw.Draw(dst, dst.Bounds(), src, b.Min, draw.Src)
	} else {
		xdraw.CatmullRom.Scale(dst, dst.Bounds(), src, b, xdraw.Src, nil)
	}
	var out bytes.Buffer
	img := &Image{Width: cfg.Width, Height: cfg.Height, FitWidth: w, FitHeight: h}
	if dst.Opaque() {
		img.MIME, err = "image/jpeg", jpeg.Encode(&out, dst, &jpeg.Options{Quality: 85})
	} else {
		img.MIME, err = "image/png", (&png.Encoder{CompressionLevel: png.BestSpeed}).Encode(&out, dst)
	}
	if err != nil {
		return nil, err
	}
	img.Data = out.Bytes()
	return img, nil
}

// Fit is the size an image of w×h is prepared at to fit side×side.
func Fit(w, h, side int) (int, int) { return fit(w, h, side) }

// fit scales w×h down, keeping its aspect, to fit side×side; a smaller
// image is not enlarged.
func fit(w, h, side int) (int, int) {
	if w <= side && h <= side {
		return w, h
	}
	if w >= h {
		return side, max(1, (h*side+w/2)/w)
	}
	return max(1, (w*side+h/2)/h), side
}

// ParseTierBytes reads a per-tier quota list, "free=50000000,plus=2000000000"
// (bytes; tiers not named keep their defaults).
func ParseTierBytes(s string) (map[store.Tier]int64, error) {
	m := map[store.Tier]int64{}
	for _, item := range strings.Split(s, ",") {
		item = strings.TrimSpace(item)
		if item == "" {
			continue
		}
		name, num, ok := strings.Cut(item, "=")
		t := store.Tier(strings.TrimSpace(name))
		n, err := strconv.ParseInt(strings.TrimSpace(num), 10, 64)
		switch {
		case !ok || !t.Valid():
			return nil, fmt.Errorf("%q: want TIER=BYTES with a tier of free, plus, pro or max", item)
		case err != nil || n <= 0:
			return nil, fmt.Errorf("%q: the bytes must be a positive integer", item)
		}
		m[t] = n
	}
	return m, nil
}
