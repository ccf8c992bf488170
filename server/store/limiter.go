package store

import (
	"context"
	"fmt"
	"time"
)

// Take asks a Limiter for N units from the bucket named Key.
type Take struct {
	// Key names the bucket, e.g. "tier:free:model:x:input_tokens:user:u1".
	// A bucket's parameters are those of the latest call that names it.
	Key string
	// Limit is the bucket's capacity and the amount refilled per Window;
	// must be positive.
	Limit int64
	// Window is the refill period; must be positive.
	Window time.Duration
	// N is the amount to take; zero only reads the state.
	N int64
}

// LimitState describes one bucket.
type LimitState struct {
	// Remaining is how many whole units could be taken now.
	Remaining int64
	// ResetAt is when the bucket will be full again if nothing more is taken;
	// it is now (or earlier) when the bucket is full.
	ResetAt time.Time
}

// Decision is the outcome of Limiter.Take.
type Decision struct {
	// Allowed is true when every take was granted; takes are all or nothing.
	Allowed bool
	// Denied is the index of the first refused take, or -1 if allowed.
	Denied int
	// RetryAfter is how long until the whole request would be allowed, if
	// nothing else is taken meanwhile; 0 when allowed or Impossible.
	RetryAfter time.Duration
	// Impossible is true when a refused take asks for more than its Limit,
	// so no amount of waiting helps.
	Impossible bool
	// States has one entry per take, after the decision.
	States []LimitState
}

// Limiter is a set of token buckets, each refilled continuously at
// Limit/Window up to Limit. Implementations are exact: a bucket drained at t
// holds k units again at exactly t + k·Window/Limit (rounded up to the
// nanosecond). In process it is store/memlimit; at scale, one Redis script.
type Limiter interface {
	// Take takes every take's N from its bucket, or none of them. It returns
	// ErrInvalidArgument for a non-positive Limit or Window or a negative N.
	Take(ctx context.Context, now time.Time, takes []Take) (Decision, error)
	// Refund gives n units back to a bucket, capped at its capacity (for
	// example, reserved output tokens that were not generated).
	Refund(ctx context.Context, now time.Time, key string, limit int64, window time.Duration, n int64) (LimitState, error)
	// Peek returns a bucket's state without taking anything.
	Peek(ctx context.Context, now time.Time, key string, limit int64, window time.Duration) (LimitState, error)
}

// CheckTake validates one take's arguments the same way in every Limiter
// backend: a key, a positive limit and window, a non-negative amount.
func CheckTake(key string, limit int64, window time.Duration, n int64) error {
	switch {
	case key == "":
		return fmt.Errorf("%w: empty limiter key", ErrInvalidArgument)
	case limit <= 0:
		return fmt.Errorf("%w: limit %d for %q is not positive", ErrInvalidArgument, limit, key)
	case window <= 0:
		return fmt.Errorf("%w: window %v for %q is not positive", ErrInvalidArgument, window, key)
	case n < 0:
		return fmt.Errorf("%w: negative amount %d for %q", ErrInvalidArgument, n, key)
	}
	return nil
}

// SavedBucket is one token bucket as a Limiter that lives in process saves
// it, so that a restart does not refill what was taken: Tokens whole units
// plus Frac/Window of one, as of Last (unix nanoseconds).
type SavedBucket struct {
	Key           string
	Limit, Window int64 // Window in nanoseconds
	Tokens        int64
	Frac          uint64 // below Window
	Last          int64
}

// LimiterSaver keeps an in-process Limiter's buckets across restarts (the
// embedded database): SaveBuckets replaces what was saved with bs, and
// LoadBuckets returns it.
type LimiterSaver interface {
	SaveBuckets(ctx context.Context, bs []SavedBucket) error
	LoadBuckets(ctx context.Context) ([]SavedBucket, error)
}
