// Package redis holds Parley's Redis-backed stores: the tier Limiter shared by
// every gateway, as one Lua script per call (atomic, one round trip).
package redis

import (
	"context"
	_ "embed"
	"errors"
	"fmt"
	"strconv"
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
// (DefaultPrefix when empty). Keys of one Take are not hash-tagged: with
// Redis Cluster, give every gateway one shard's client or tag the keys.
func NewLimiter(rdb goredis.UniversalClient, prefix string) *Limiter {
	if prefix == "" {
		prefix = DefaultPrefix
	}
	return &Limiter{rdb: rdb, prefix: prefix}
}

// Open connects to the Redis at url (redis://…) and checks that it answers.
func Open(ctx context.Context, url string) (*goredis.Client, error) {
	opts, err := goredis.ParseURL(url)
	if err != nil {
		return nil, fmt.Errorf("redis: %w", err)
	}
	c := goredis.NewClient(opts)
	if err := c.Ping(ctx).Err(); err != nil {
		c.Close()
		return nil, fmt.Errorf("redis: ping: %w", err)
	}
	return c, nil
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
		k := l.prefix + t.Key
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
	res, err := limiterScript.Run(ctx, l.rdb, []string{l.prefix + key}, op, now.Unix(), now.Nanosecond(), Slack.Milliseconds(), 1, limit, int64(window), n).StringSlice()
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
