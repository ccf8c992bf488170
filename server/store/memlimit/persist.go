package memlimit

import (
	"context"
	"time"

	"github.com/parleyhq/parley/server/store"
)

// Snapshot returns the buckets that are not full (a missing bucket is a
// full one), for a store.LimiterSaver.
func (l *Limiter) Snapshot() []store.SavedBucket {
	l.mu.Lock()
	defer l.mu.Unlock()
	bs := make([]store.SavedBucket, 0, len(l.buckets))
	for k, b := range l.buckets {
		if !b.full() {
			bs = append(bs, store.SavedBucket{Key: k, Limit: b.limit, Window: b.window, Tokens: b.tokens, Frac: b.frac, Last: b.last})
		}
	}
	return bs
}

// Restore puts saved buckets back, for a Limiter that has taken nothing yet;
// each refills from its saved time on its next use, so the time the process
// was down counts as it would have. Invalid rows are skipped.
func (l *Limiter) Restore(bs []store.SavedBucket) {
	l.mu.Lock()
	defer l.mu.Unlock()
	for _, s := range bs {
		if s.Limit <= 0 || s.Window <= 0 || s.Tokens < 0 || s.Tokens > s.Limit || s.Frac >= uint64(s.Window) {
			continue
		}
		if _, ok := l.buckets[s.Key]; !ok {
			l.buckets[s.Key] = bucket{limit: s.Limit, window: s.Window, tokens: s.Tokens, frac: s.Frac, last: s.Last}
		}
	}
	l.version++
}

// Persist restores l from saver, then saves l to it every interval while
// something changed, and once more when ctx ends (a clean shutdown loses
// nothing; a crash loses at most one interval of takes). It returns once
// the buckets are restored; the saving goes on in the background, and done
// is closed after the last save.
func Persist(ctx context.Context, l *Limiter, saver store.LimiterSaver, interval time.Duration, logErr func(error)) (done <-chan struct{}, err error) {
	bs, err := saver.LoadBuckets(ctx)
	if err != nil {
		return nil, err
	}
	l.Restore(bs)
	ch := make(chan struct{})
	saved := l.changes()
	go func() {
		defer close(ch)
		t := time.NewTicker(interval)
		defer t.Stop()
		save := func(c context.Context) {
			v := l.changes()
			if v == saved {
				return
			}
			if err := saver.SaveBuckets(c, l.Snapshot()); err != nil {
				logErr(err)
				return
			}
			saved = v
		}
		for {
			select {
			case <-ctx.Done():
				c, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
				save(c)
				cancel()
				return
			case <-t.C:
				save(ctx)
			}
		}
	}()
	return ch, nil
}

// changes counts the calls that changed a bucket.
func (l *Limiter) changes() uint64 {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.version
}
