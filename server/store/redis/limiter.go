// Package redis holds Parley's Redis-backed stores: the tier Limiter shared by
// every gateway, as one Lua script per call (atomic, one round trip), the
// live generation logs and the auth eviction broadcast.
//
// Every key is hash-tagged so that the keys one script or pipeline touches
// share a Redis Cluster slot: a generation's keys carry {id}, and a
// limiter key carries its caller's {tag} or else the limiter's shared {rl}.
// Open gives a cluster client for a redis+cluster:// URL.
package redis

import (
	"context"
	_ "embed"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	goredis "github.com/redis/go-redis/v9"

	"github.com/parleyhq/parley/server/store"
)

//go:embed limiter.lua
var limiterSource string

var limiterScript = goredis.NewScript(limiterSource)

// DefaultPrefix starts every key the limiter writes.
const DefaultPrefix = "parley:rl:"

// Slack is added to each bucket's TTL: a bucket is dropped only this long
// after it would be full again, so clocks of different gateways that disagree
// by less than this cannot mint units. (A missing bucket is a full one.)
const Slack = time.Minute

// Limiter is a store.Limiter in Redis with store/memlimit's exact semantics.
type Limiter struct {
	rdb    goredis.UniversalClient
	prefix string
}

var _ store.Limiter = (*Limiter)(nil)

// NewLimiter returns a limiter over rdb whose keys start with prefix
// (DefaultPrefix when empty).
//
// Redis Cluster runs a script only on keys of one slot, so the keys of one
// Take must share a hash tag: a bucket key that names one ("lim:{u1}:…")
// keeps it, and one that does not gets the limiter's shared tag {rl} (all
// such buckets then live on one shard). A Take whose keys would land in
// different slots is refused with store.ErrInvalidArgument, on a single
// server too, so a caller's mistake shows before it meets a cluster.
func NewLimiter(rdb goredis.UniversalClient, prefix string) *Limiter {
	if prefix == "" {
		prefix = DefaultPrefix
	}
	return &Limiter{rdb: rdb, prefix: prefix}
}

// sharedTag is the hash tag of the bucket keys that name none.
const sharedTag = "{rl}:"

// key is the Redis key of bucket k.
func (l *Limiter) key(k string) string {
	if _, ok := HashTag(l.prefix + k); ok {
		return l.prefix + k
	}
	return l.prefix + sharedTag + k
}

// HashTag returns the part of key that Redis Cluster hashes to pick its slot
// when key has a non-empty {tag} (the text between the first '{' and the
// next '}'), and ok false when it has none (then the whole key is hashed).
func HashTag(key string) (tag string, ok bool) {
	i := strings.IndexByte(key, '{')
	if i < 0 {
		return "", false
	}
	j := strings.IndexByte(key[i+1:], '}')
	if j <= 0 {
		return "", false
	}
	return key[i+1 : i+1+j], true
}

// sameSlot says whether Redis Cluster puts keys a and b in one slot by their
// tags (equal tags or equal untagged keys; it does not compare CRC16s, so
// two different tags are refused even when they happen to collide).
func sameSlot(a, b string) bool {
	ta, oka := HashTag(a)
	tb, okb := HashTag(b)
	if oka != okb {
		return false
	}
	if !oka {
		return a == b
	}
	return ta == tb
}

func validate(key string, limit int64, window time.Duration, n int64) error {
	if err := store.CheckTake(key, limit, window, n); err != nil {
		return err
	}
	switch {
	case limit > MaxExact || int64(window) > MaxExact || n > MaxExact:
		return fmt.Errorf("%w: limit %d, window %v or amount %d for %q is past the Redis limiter's 2^53 (windows up to 104 days)",
			store.ErrInvalidArgument, limit, window, n, key)
	}
	return nil
}

// MaxExact is the largest limit, window (in ns, about 104 days) or amount
// the Redis limiter takes: the script keeps quantities in Lua's doubles,
// exact up to 2^53, and does the products that pass it in big integers.
const MaxExact = 1<<53 - 1

// Take implements store.Limiter.
func (l *Limiter) Take(ctx context.Context, now time.Time, takes []store.Take) (store.Decision, error) {
	for _, t := range takes {
		if err := validate(t.Key, t.Limit, t.Window, t.N); err != nil {
			return store.Decision{}, err
		}
	}
	if len(takes) == 0 {
		return store.Decision{Allowed: true, Denied: -1, States: []store.LimitState{}}, nil
	}
	keys := make([]string, 0, len(takes))
	args := make([]any, 0, 4+4*len(takes))
	args = append(args, "take", now.Unix(), now.Nanosecond(), Slack.Milliseconds())
	for _, t := range takes {
		k := l.key(t.Key)
		if len(keys) > 0 && !sameSlot(keys[0], k) {
			return store.Decision{}, fmt.Errorf("%w: limiter keys %q and %q of one Take have different hash tags: Redis Cluster cannot take both in one script (give them one {tag})",
				store.ErrInvalidArgument, takes[0].Key, t.Key)
		}
		ki := -1
		for i, have := range keys {
			if have == k {
				ki = i
				break
			}
		}
		if ki < 0 {
			keys = append(keys, k)
			ki = len(keys) - 1
		}
		args = append(args, ki+1, t.Limit, int64(t.Window), t.N)
	}
	res, err := limiterScript.Run(ctx, l.rdb, keys, args...).StringSlice()
	if err != nil {
		return store.Decision{}, fmt.Errorf("redis limiter: %w", err)
	}
	if len(res) != 4+2*len(takes) {
		return store.Decision{}, fmt.Errorf("redis limiter: %d results for %d takes", len(res), len(takes))
	}
	var p parser
	d := store.Decision{
		Allowed:    res[0] == "1",
		Denied:     int(p.int(res[1])),
		Impossible: res[2] == "1",
		RetryAfter: time.Duration(p.int(res[3])),
		States:     make([]store.LimitState, len(takes)),
	}
	for i := range takes {
		d.States[i] = store.LimitState{Remaining: p.int(res[4+2*i]), ResetAt: now.Add(time.Duration(p.int(res[5+2*i])))}
	}
	return d, p.err
}

// Refund implements store.Limiter.
func (l *Limiter) Refund(ctx context.Context, now time.Time, key string, limit int64, window time.Duration, n int64) (store.LimitState, error) {
	if err := validate(key, limit, window, n); err != nil {
		return store.LimitState{}, err
	}
	return l.one(ctx, "refund", now, key, limit, window, n)
}

// Peek implements store.Limiter.
func (l *Limiter) Peek(ctx context.Context, now time.Time, key string, limit int64, window time.Duration) (store.LimitState, error) {
	if err := validate(key, limit, window, 0); err != nil {
		return store.LimitState{}, err
	}
	return l.one(ctx, "peek", now, key, limit, window, 0)
}

func (l *Limiter) one(ctx context.Context, op string, now time.Time, key string, limit int64, window time.Duration, n int64) (store.LimitState, error) {
	res, err := limiterScript.Run(ctx, l.rdb, []string{l.key(key)}, op, now.Unix(), now.Nanosecond(), Slack.Milliseconds(), 1, limit, int64(window), n).StringSlice()
	if err != nil {
		return store.LimitState{}, fmt.Errorf("redis limiter: %w", err)
	}
	if len(res) != 2 {
		return store.LimitState{}, fmt.Errorf("redis limiter: %d results", len(res))
	}
	var p parser
	st := store.LimitState{Remaining: p.int(res[0]), ResetAt: now.Add(time.Duration(p.int(res[1])))}
	return st, p.err
}

// parser reads the script's decimal results, keeping the first error.
type parser struct{ err error }

func (p *parser) int(s string) int64 {
	v, err := strconv.ParseInt(s, 10, 64)
	if err != nil && p.err == nil {
		p.err = errors.New("redis limiter: bad number " + strconv.Quote(s))
	}
	return v
}
