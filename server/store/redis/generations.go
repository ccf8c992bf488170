package redis

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"time"

	goredis "github.com/redis/go-redis/v9"

	"github.com/parleyhq/parley/server/store"
)

// Generations is the store.Generations shared by every gateway: each log is
// a Redis stream (gen:{id}:log) beside a state key (gen:{id}:state, running
// or done, with a TTL the running gateway keeps refreshing so a crashed one
// lets go); cancellation requests go out over pub/sub.
type Generations struct {
	rdb goredis.UniversalClient
	// Prefix starts every key and the cancel channel ("parley:gen:").
	Prefix string
	// RunningTTL is how long a running generation's claim lasts unless
	// renewed: each event and each Keep renews it (the running gateway
	// keeps it every few seconds, however long the queue wait or prefill).
	RunningTTL time.Duration
}

var _ store.Generations = (*Generations)(nil)

// NewGenerations returns the generation logs in rdb.
func NewGenerations(rdb goredis.UniversalClient) *Generations {
	// The running gateway renews the claim every few seconds (Keep): 20 s
	// bounds how long a crashed gateway's claim blocks the conversation
	// (and how soon its answer reads as interrupted).
	return &Generations{rdb: rdb, Prefix: "parley:gen:", RunningTTL: 20 * time.Second}
}

// A generation's two keys share the hash tag {id}: its scripts and
// pipelines touch both, in one Redis Cluster slot.
func (g *Generations) state(id string) string { return g.Prefix + "{" + id + "}:state" }
func (g *Generations) log(id string) string   { return g.Prefix + "{" + id + "}:log" }
func (g *Generations) channel() string        { return g.Prefix + "cancel" }

var startScript = goredis.NewScript(`
if redis.call('GET', KEYS[1]) == 'running' then return 0 end
redis.call('DEL', KEYS[2])
redis.call('SET', KEYS[1], 'running', 'PX', ARGV[1])
return 1`)

var abandonScript = goredis.NewScript(`
if redis.call('XLEN', KEYS[2]) == 0 then redis.call('DEL', KEYS[1], KEYS[2]) end
return 1`)

// Start implements store.Generations.
func (g *Generations) Start(ctx context.Context, id string) error {
	ok, err := startScript.Run(ctx, g.rdb, []string{g.state(id), g.log(id)}, g.RunningTTL.Milliseconds()).Int()
	if err != nil {
		return fmt.Errorf("redis: start generation: %w", err)
	}
	if ok == 0 {
		return fmt.Errorf("%w: a generation is running", store.ErrConflict)
	}
	return nil
}

// Append implements store.Generations.
func (g *Generations) Append(ctx context.Context, id string, seq uint64, event []byte) error {
	_, err := g.rdb.Pipelined(ctx, func(p goredis.Pipeliner) error {
		p.XAdd(ctx, &goredis.XAddArgs{Stream: g.log(id), Values: []any{"seq", seq, "ev", event}})
		p.PExpire(ctx, g.log(id), g.RunningTTL)
		p.PExpire(ctx, g.state(id), g.RunningTTL)
		return nil
	})
	if err != nil {
		return fmt.Errorf("redis: append event: %w", err)
	}
	return nil
}

// Finish implements store.Generations.
func (g *Generations) Finish(ctx context.Context, id string, linger time.Duration) error {
	_, err := g.rdb.Pipelined(ctx, func(p goredis.Pipeliner) error {
		p.XAdd(ctx, &goredis.XAddArgs{Stream: g.log(id), Values: []any{"end", 1}})
		p.PExpire(ctx, g.log(id), linger)
		p.Set(ctx, g.state(id), "done", linger)
		return nil
	})
	if err != nil {
		return fmt.Errorf("redis: finish generation: %w", err)
	}
	return nil
}

// Abandon implements store.Generations.
func (g *Generations) Abandon(ctx context.Context, id string) error {
	return abandonScript.Run(ctx, g.rdb, []string{g.state(id), g.log(id)}).Err()
}

// Follow implements store.Generations.
func (g *Generations) Follow(ctx context.Context, id string, afterSeq uint64, fn func(uint64, []byte) error) error {
	n, err := g.rdb.Exists(ctx, g.state(id)).Result()
	if err != nil {
		return fmt.Errorf("redis: follow: %w", err)
	}
	if n == 0 {
		return fmt.Errorf("%w: no generation", store.ErrNotFound)
	}
	last := "0-0"
	for {
		res, err := g.rdb.XRead(ctx, &goredis.XReadArgs{Streams: []string{g.log(id), last}, Count: 512, Block: time.Second}).Result()
		if errors.Is(err, goredis.Nil) {
			// Nothing new for a second: is the generation still there?
			if n, err := g.rdb.Exists(ctx, g.state(id)).Result(); err == nil && n == 0 {
				return errors.New("redis: the generation's gateway stopped publishing it")
			}
			continue
		}
		if err != nil {
			if ctx.Err() != nil {
				return ctx.Err()
			}
			return fmt.Errorf("redis: follow: %w", err)
		}
		for _, s := range res {
			for _, m := range s.Messages {
				last = m.ID
				if _, end := m.Values["end"]; end {
					return nil
				}
				seq, _ := strconv.ParseUint(fmt.Sprint(m.Values["seq"]), 10, 64)
				if seq <= afterSeq {
					continue
				}
				ev, _ := m.Values["ev"].(string)
				if err := fn(seq, []byte(ev)); err != nil {
					return err
				}
			}
		}
	}
}

// keepScript renews a running claim and its log, and nothing else (a
// finished generation's linger stays as it is).
var keepScript = goredis.NewScript(`
if redis.call('GET', KEYS[1]) ~= 'running' then return 0 end
redis.call('PEXPIRE', KEYS[1], ARGV[1])
redis.call('PEXPIRE', KEYS[2], ARGV[1])
return 1`)

// Keep implements store.Generations.
func (g *Generations) Keep(ctx context.Context, id string) error {
	if err := keepScript.Run(ctx, g.rdb, []string{g.state(id), g.log(id)}, g.RunningTTL.Milliseconds()).Err(); err != nil {
		return fmt.Errorf("redis: keep generation: %w", err)
	}
	return nil
}

// Running implements store.Generations.
func (g *Generations) Running(ctx context.Context, id string) (bool, error) {
	s, err := g.rdb.Get(ctx, g.state(id)).Result()
	if errors.Is(err, goredis.Nil) {
		return false, nil
	}
	return s == "running", err
}

// Cancel implements store.Generations.
func (g *Generations) Cancel(ctx context.Context, id string) (bool, error) {
	running, err := g.Running(ctx, id)
	if err != nil || !running {
		return false, err
	}
	if err := g.rdb.Publish(ctx, g.channel(), id).Err(); err != nil {
		return false, fmt.Errorf("redis: cancel: %w", err)
	}
	return true, nil
}

// Cancels implements store.Generations.
func (g *Generations) Cancels(ctx context.Context) <-chan string {
	out := make(chan string)
	sub := g.rdb.Subscribe(ctx, g.channel())
	go func() {
		defer close(out)
		defer sub.Close()
		ch := sub.Channel()
		for {
			select {
			case <-ctx.Done():
				return
			case m, ok := <-ch:
				if !ok {
					return
				}
				select {
				case out <- m.Payload:
				case <-ctx.Done():
					return
				}
			}
		}
	}()
	return out
}
