package sim

import (
	"context"
	"errors"
	"math/rand/v2"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/parleyhq/parley/server/llm"
)

// slowSchema is valid (thirty a's match it) but slow to generate: the
// generator's candidates never match the pattern, so each item tries them
// all, and it runs into its time bound.
const slowSchema = `{"type":"array","minItems":1900,"items":{"type":"string","pattern":"^(a|a)*$","minLength":30}}`

// A size keyword over the generator's budget is refused before anything is
// allocated for it, at once and without retries.
func TestSchemaValueSizeBombs(t *testing.T) {
	for _, schema := range []string{
		`{"type":"array","minItems":1000000000}`,
		`{"type":"object","properties":{"items":{"type":"array","minItems":20000000}},"required":["items"]}`,
		`{"type":"string","minLength":1000000000}`,
		`{"type":"object","minProperties":1000000000}`,
		`{"type":"object","patternProperties":{"^(a|a)*$":{"type":"string"}},"minProperties":1000000000}`,
		`{"type":"array","contains":{"type":"integer"},"minContains":1000000000,"minItems":1000000000}`,
	} {
		var before, after runtime.MemStats
		runtime.ReadMemStats(&before)
		start := time.Now()
		_, err := SchemaValue([]byte(schema), rand.New(rand.NewPCG(1, 2)), nil)
		took := time.Since(start)
		runtime.ReadMemStats(&after)
		alloc := after.TotalAlloc - before.TotalAlloc
		if err == nil || !strings.Contains(err.Error(), "over the ") || !strings.Contains(err.Error(), "generator") {
			t.Errorf("%s: %v, want refused as over the generator's budget", schema, err)
		}
		if strings.Contains(err.Error(), "tries") {
			t.Errorf("%s: retried: %v", schema, err)
		}
		if took > 50*time.Millisecond || alloc > 10<<20 {
			t.Errorf("%s: refused after %v and %d bytes", schema, took, alloc)
		}
	}
}

// A long minLength is made in linear time.
func TestSchemaValueLongString(t *testing.T) {
	start := time.Now()
	v, err := SchemaValue([]byte(`{"type":"string","minLength":200000}`), rand.New(rand.NewPCG(1, 2)), nil)
	if err != nil || len(v) < 200000 {
		t.Fatalf("%d bytes, %v", len(v), err)
	}
	if d := time.Since(start); d > 200*time.Millisecond {
		t.Errorf("200000 code points took %v", d)
	}
}

// Generation stops within the wall-time bound, and within 100 ms of its
// context ending.
func TestSchemaValueStops(t *testing.T) {
	start := time.Now()
	_, err := SchemaValue([]byte(slowSchema), rand.New(rand.NewPCG(1, 2)), nil)
	if d := time.Since(start); err == nil || d > schemaWall+400*time.Millisecond { // slack for a busy machine

		t.Errorf("slow schema: %v after %v, want stopped at %v", err, d, schemaWall)
	}

	ctx, cancel := context.WithCancel(context.Background())
	var cancelled time.Time
	time.AfterFunc(30*time.Millisecond, func() { cancelled = time.Now(); cancel() })
	_, err = SchemaValueContext(ctx, []byte(slowSchema), rand.New(rand.NewPCG(1, 2)), nil)
	if d := time.Since(cancelled); err == nil || d > 100*time.Millisecond {
		t.Errorf("cancelled: %v, %v after the cancel", err, d)
	}
}

// An engine generation whose client leaves while its structured answer is
// being made ends, cancelled, within 100 ms.
func TestGenerateStopsMakingASchemaValueWhenCancelled(t *testing.T) {
	e := New(Config{})
	req := userRequest("sim-small", "hi", 1)
	req.ResponseFormat = llm.ResponseFormat{Type: llm.FormatJSONSchema, Name: "slow", Schema: []byte(slowSchema)}
	ctx, cancel := context.WithCancelCause(context.Background())
	boom := errors.New("client went away")
	var cancelled time.Time
	time.AfterFunc(30*time.Millisecond, func() { cancelled = time.Now(); cancel(boom) })
	res, err := e.Generate(ctx, &req, func(llm.Delta) error { return nil })
	if d := time.Since(cancelled); d > 100*time.Millisecond {
		t.Errorf("returned %v after it was cancelled", d)
	}
	if err != nil || res.FinishReason != llm.FinishCancelled || !errors.Is(res.Err, boom) {
		t.Errorf("Generate = %+v, %v; want cancelled by the client", res, err)
	}
}
