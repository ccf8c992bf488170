package respcache

import (
	"context"
	"errors"
	"fmt"
	"runtime"
	"sync/atomic"
	"testing"
	"time"

	parleyv1 "github.com/parleyhq/parley/gen/parley/v1"
)

func answer(text string) []byte {
	b, err := Encode([]*parleyv1.GenerationEvent{
		{Kind: &parleyv1.GenerationEvent_Delta{Delta: &parleyv1.GenerationDelta{Text: text}}},
		{Kind: &parleyv1.GenerationEvent_Finished{Finished: &parleyv1.GenerationFinished{
			FinishReason: parleyv1.FinishReason_FINISH_REASON_STOP, Usage: &parleyv1.Usage{PromptTokens: 3, CompletionTokens: 2}}}},
	})
	if err != nil {
		panic(err)
	}
	return b
}

func TestEncodeDecode(t *testing.T) {
	evs, err := Decode(answer("hello"))
	if err != nil || len(evs) != 2 || evs[0].GetDelta().GetText() != "hello" || evs[1].GetFinished().GetUsage().GetCompletionTokens() != 2 {
		t.Fatalf("decoded %v, %v", evs, err)
	}
	if _, err := Decode(answer("x")[:5]); err == nil {
		t.Fatal("a torn entry decoded")
	}
	if _, err := Decode(nil); err == nil {
		t.Fatal("an empty entry decoded")
	}
}

func TestKeySeparatesScopesModelsVersions(t *testing.T) {
	base := Key("u1", "m", "v1", []byte(`{"a":1}`))
	for _, k := range []string{
		Key("u2", "m", "v1", []byte(`{"a":1}`)),
		Key("u1", "m2", "v1", []byte(`{"a":1}`)),
		Key("u1", "m", "v2", []byte(`{"a":1}`)),
		Key("u1", "m", "v1", []byte(`{"a":2}`)),
		Key("u", "1m", "v1", []byte(`{"a":1}`)), // no collision by concatenation
	} {
		if k == base {
			t.Fatalf("key %s collides", k)
		}
	}
	if Key("u1", "m", "v1", []byte(`{"a":1}`)) != base {
		t.Fatal("key is not stable")
	}
}

// The process level holds at most its entries and bytes under 100,000
// distinct answers, and the heap stays bounded with it.
func TestMemoryBoundedUnderManyDistinctRequests(t *testing.T) {
	const entries, bytes = 1000, 256 << 10
	c, err := New(Config{LocalEntries: entries, LocalBytes: bytes})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	runtime.GC()
	var before runtime.MemStats
	runtime.ReadMemStats(&before)
	for i := range 100_000 {
		c.Put(ctx, Key("u", "m", "v", fmt.Appendf(nil, "%d", i)), answer(fmt.Sprintf("answer number %d, padded to about a hundred bytes ......................", i)))
		if c.Len() > entries || c.Bytes() > bytes {
			t.Fatalf("after %d puts: %d entries, %d bytes", i+1, c.Len(), c.Bytes())
		}
	}
	runtime.GC()
	var after runtime.MemStats
	runtime.ReadMemStats(&after)
	grown := int64(after.HeapAlloc) - int64(before.HeapAlloc)
	t.Logf("100,000 puts: %d entries, %d bytes held, heap grew %d bytes", c.Len(), c.Bytes(), grown)
	if grown > 8<<20 {
		t.Fatalf("heap grew %d bytes for a %d-byte cache", grown, bytes)
	}
	// The newest are there, the oldest are gone.
	if _, lvl := c.Get(ctx, Key("u", "m", "v", []byte("99999"))); lvl != Local {
		t.Fatal("the newest answer is gone")
	}
	if _, lvl := c.Get(ctx, Key("u", "m", "v", []byte("0"))); lvl != Miss {
		t.Fatal("the oldest answer is still there")
	}
	// Replacing an entry does not count its bytes twice.
	c2, _ := New(Config{})
	for range 10 {
		c2.Put(ctx, "k", answer("same"))
	}
	if c2.Len() != 1 || c2.Bytes() != int64(len(answer("same"))) {
		t.Fatalf("one key put 10 times: %d entries, %d bytes", c2.Len(), c2.Bytes())
	}
}

func TestLocalTTL(t *testing.T) {
	c, _ := New(Config{LocalTTL: 50 * time.Millisecond})
	c.Put(context.Background(), "k", answer("a"))
	if _, lvl := c.Get(context.Background(), "k"); lvl != Local {
		t.Fatal("not cached")
	}
	time.Sleep(120 * time.Millisecond)
	if _, lvl := c.Get(context.Background(), "k"); lvl != Miss {
		t.Fatal("still cached past its TTL")
	}
}

// fakeRemote is a shared level that can be made to fail.
type fakeRemote struct {
	m     map[string][]byte
	down  atomic.Bool
	calls atomic.Int64
	ttl   time.Duration
}

func (f *fakeRemote) Get(_ context.Context, k string) ([]byte, bool, error) {
	f.calls.Add(1)
	if f.down.Load() {
		return nil, false, errors.New("connection refused")
	}
	v, ok := f.m[k]
	return v, ok, nil
}

func (f *fakeRemote) Set(_ context.Context, k string, v []byte, ttl time.Duration) error {
	f.calls.Add(1)
	if f.down.Load() {
		return errors.New("connection refused")
	}
	f.m[k], f.ttl = v, ttl
	return nil
}

func TestSharedLevelAndItsOutage(t *testing.T) {
	ctx := context.Background()
	remote := &fakeRemote{m: map[string][]byte{}}
	a, _ := New(Config{Remote: remote, RemoteBackoff: 200 * time.Millisecond})
	b, _ := New(Config{Remote: remote, RemoteBackoff: 200 * time.Millisecond})
	a.Put(ctx, "k", answer("shared"))
	if remote.ttl != 300*time.Second {
		t.Fatalf("shared TTL %v, want the shared level's 300 s (docs/scaling.md)", remote.ttl)
	}
	if v, lvl := b.Get(ctx, "k"); lvl != Shared || string(v) != string(answer("shared")) {
		t.Fatalf("the other gateway got %q from %q", v, lvl)
	}
	if _, lvl := b.Get(ctx, "k"); lvl != Local {
		t.Fatalf("a shared hit is not copied to the process: %q", lvl)
	}

	remote.down.Store(true)
	if _, lvl := b.Get(ctx, "other"); lvl != Miss {
		t.Fatal("a miss with the shared level down")
	}
	calls := remote.calls.Load()
	for range 100 {
		b.Get(ctx, "other")
		b.Put(ctx, "new", answer("x"))
	}
	if remote.calls.Load() != calls {
		t.Fatalf("the failed shared level was called %d more times within its backoff", remote.calls.Load()-calls)
	}
	if _, lvl := b.Get(ctx, "new"); lvl != Local {
		t.Fatal("the process level stopped working with the shared one down")
	}
	remote.down.Store(false)
	time.Sleep(250 * time.Millisecond)
	if _, lvl := a.Get(ctx, "k"); lvl != Local {
		t.Fatal("lost the local entry")
	}
	if _, lvl := newCache(t, remote).Get(ctx, "k"); lvl != Shared {
		t.Fatal("shared level not used again after its backoff")
	}
}

func newCache(t *testing.T, r Remote) *Cache {
	c, err := New(Config{Remote: r})
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func TestTooLargeIsNotStored(t *testing.T) {
	c, _ := New(Config{MaxEntryBytes: 10})
	c.Put(context.Background(), "k", answer("this answer is far longer than ten bytes"))
	if c.Len() != 0 {
		t.Fatal("an answer over the entry bound was stored")
	}
}

// With small answers' byte bound reached before the entry bound, the bytes
// bind.
func TestByteBound(t *testing.T) {
	c, _ := New(Config{LocalEntries: 1000, LocalBytes: 4096})
	for i := range 10_000 {
		c.Put(context.Background(), fmt.Sprint(i), answer(fmt.Sprintf("answer %d ....................................", i)))
		if c.Bytes() > 4096 {
			t.Fatalf("%d bytes held, bound 4096", c.Bytes())
		}
	}
	if c.Len() == 0 || c.Len() >= 1000 {
		t.Fatalf("%d entries: the byte bound did not bind", c.Len())
	}
}
