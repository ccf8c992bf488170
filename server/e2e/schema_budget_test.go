package e2e

import (
	"context"
	"net/http"
	"strings"
	"testing"
	"time"

	"connectrpc.com/connect"

	parleyv1 "github.com/parleyhq/parley/gen/parley/v1"
)

// The schema budget (docs/schema-budget.md): a schema over it is refused
// before any hold or scheduling with ≤ 10 MB and ≤ 50 ms of CPU, naming the
// keyword's path as the surface spells it.
var schemaRefused = cost{rss: 10e6, alloc: 10e6, cpu: 0.05}

// schemaSurface sends schema on one surface that takes one and returns the
// path the refusal must name for a keyword at kw inside it.
type schemaSurface struct {
	name, url string
	headers   func(key string) map[string]string
	body      func(schema string) string
	base      string // the schema's own field on this surface
}

var schemaSurfaces = []schemaSurface{
	{"chat response_format", "/v1/chat/completions", bearer,
		func(s string) string {
			return `{"model":"sim-small","messages":[{"role":"user","content":"hi"}],"response_format":{"type":"json_schema","json_schema":{"name":"out","schema":` + s + `}}}`
		}, "response_format.json_schema.schema"},
	{"chat tool required", "/v1/chat/completions", bearer,
		func(s string) string {
			return `{"model":"sim-small","messages":[{"role":"user","content":"hi"}],"tool_choice":"required","tools":[{"type":"function","function":{"name":"f","parameters":` + s + `}}]}`
		}, "tools[0].function.parameters"},
	{"chat tool named", "/v1/chat/completions", bearer,
		func(s string) string {
			return `{"model":"sim-small","messages":[{"role":"user","content":"hi"}],"tool_choice":{"type":"function","function":{"name":"f"}},"tools":[{"type":"function","function":{"name":"f","parameters":` + s + `}}]}`
		}, "tools[0].function.parameters"},
	{"responses text.format", "/v1/responses", bearer,
		func(s string) string {
			return `{"model":"sim-small","input":"hi","store":false,"text":{"format":{"type":"json_schema","name":"out","schema":` + s + `}}}`
		}, "text.format.schema"},
	{"responses tool", "/v1/responses", bearer,
		func(s string) string {
			return `{"model":"sim-small","input":"hi","store":false,"tool_choice":"required","tools":[{"type":"function","name":"f","parameters":` + s + `}]}`
		}, "tools[0].parameters"},
	{"messages input_schema", "/v1/messages", func(key string) map[string]string {
		return map[string]string{"x-api-key": key, "anthropic-version": "2023-06-01", "Content-Type": "application/json"}
	}, func(s string) string {
		return `{"model":"sim-small","max_tokens":100,"messages":[{"role":"user","content":"hi"}],"tool_choice":{"type":"any"},"tools":[{"name":"f","input_schema":` + s + `}]}`
	}, "tools[0].input_schema"},
}

func bearer(key string) map[string]string {
	return map[string]string{"Authorization": "Bearer " + key, "Content-Type": "application/json"}
}

// schemaBombs are the classes of schema over the budget, each with the
// keyword the refusal names (relative to the schema).
var schemaBombs = []struct{ name, schema, kw string }{
	{"minItems 1e9", `{"type":"object","properties":{"items":{"type":"array","minItems":1000000000}},"required":["items"]}`, ".properties.items.minItems"},
	{"minLength 1e9", `{"type":"object","properties":{"s":{"type":"string","minLength":1000000000}},"required":["s"]}`, ".properties.s.minLength"},
	{"minProperties 1e9", `{"type":"object","minProperties":1000000000}`, ".minProperties"},
	{"minContains 1e9", `{"type":"object","properties":{"a":{"type":"array","contains":{"type":"integer"},"minContains":1000000000}},"required":["a"]}`, ".properties.a.minContains"},
	{"nested minItems 2e4 x 100", `{"type":"object","properties":{"a":{"type":"array","minItems":20000,"items":{"type":"array","minItems":100}}},"required":["a"]}`, ".properties.a.minItems"},
	{"nesting 70 deep", `{"type":"object","properties":{"a":` + strings.Repeat(`{"type":"array","items":`, 70) + `{}` + strings.Repeat(`}`, 70) + `}}`, ".properties.a" + strings.Repeat(".items", 62)},
	{"10001 nodes", `{"type":"object","properties":{"a":{"enum":[` + strings.Repeat(`0,`, 10000) + `0]}}}`, ".properties.a.enum[9996]"},
	{"pattern program", `{"type":"object","patternProperties":{"(x{1000}){1000}":{"type":"string"}}}`, `.patternProperties["(x{1000}){1000}"]`},
}

// Every schema bomb on every surface that takes a schema: refused with 400
// naming the keyword, within the budget, while normal requests stay fast.
func TestSchemaBudgetRefusals(t *testing.T) {
	e := newAbuseEnv(t)
	for _, sf := range schemaSurfaces {
		for _, b := range schemaBombs {
			if sf.name != "chat response_format" && !strings.HasPrefix(b.name, "minItems") && !strings.HasPrefix(b.name, "pattern") {
				continue // every class on one surface, two on the others: the check is one
			}
			name := sf.name + ": " + b.name
			e.within(t, name, schemaRefused, 3, func(t *testing.T) {
				status, got := post(t, h1Client(), e.s.BaseURL+sf.url, sf.headers(e.paid), []byte(sf.body(b.schema)))
				if status != http.StatusBadRequest || !strings.Contains(strings.ReplaceAll(got, `\"`, `"`), sf.base+b.kw) {
					t.Errorf("%s: %d %.400s; want 400 naming %s", name, status, got, sf.base+b.kw)
				}
			})
		}
	}
	// Nothing refused was charged or left held.
	bal, err := e.s.api(protocols[0], cred{bearer: e.paid}).Billing.GetBalance(ctxTimeout(t, 5*time.Second), connect.NewRequest(&parleyv1.GetBalanceRequest{}))
	if err != nil || bal.Msg.GetBalanceNanos() != 100e9 || bal.Msg.GetReservedNanos() != 0 {
		t.Errorf("balance after the refusals: %v, %v; want all of $100, nothing held", bal.Msg, err)
	}
}

// A pattern RE2 matches in linear time (^(a|a)*$ in patternProperties and
// pattern) passes the budget, and the sim generates for it within bounds:
// paid for, cheap.
func TestSchemaBudgetLinearPatterns(t *testing.T) {
	e := newAbuseEnv(t)
	schema := `{"type":"object","patternProperties":{"^(a|a)*$":{"type":"array","minItems":20,"items":{"type":"string","pattern":"^(a|a)*$"}}},"minProperties":4,"properties":{"s":{"type":"string","pattern":"^(a|a)*$","minLength":30}},"required":["s"]}`
	for _, sf := range schemaSurfaces {
		e.within(t, sf.name+": ^(a|a)*$ patterns", cost{rss: 64 << 20, alloc: 128 << 20, cpu: 0.5}, 3, func(t *testing.T) {
			status, got := post(t, h1Client(), e.s.BaseURL+sf.url, sf.headers(e.paid), []byte(sf.body(schema)))
			if status != http.StatusOK && status != http.StatusBadRequest {
				t.Errorf("%s: %d %.300s", sf.name, status, got)
			}
		})
	}
}

// A schema generation abandoned by its client stops within 100 ms and
// releases its hold: the schema is within the budget but slow for the sim
// (no candidate matches its pattern, so each item tries them all).
func TestSchemaBudgetAbandonedGenerationStops(t *testing.T) {
	s := startServer(t, fastAuth...)
	a := s.newAccount(t, "abandon@example.com")
	s.topup(t, a, "1")
	billing := s.api(protocols[0], cred{bearer: a.Key}).Billing
	reserved := func() int64 {
		bal, err := billing.GetBalance(ctxTimeout(t, 5*time.Second), connect.NewRequest(&parleyv1.GetBalanceRequest{}))
		if err != nil {
			t.Fatal(err)
		}
		return bal.Msg.GetReservedNanos()
	}
	slow := `{"type":"array","minItems":450,"items":{"type":"string","pattern":"^(a|a)*$","minLength":30}}`
	body := schemaSurfaces[0].body(slow)

	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, "POST", s.BaseURL+"/v1/chat/completions", strings.NewReader(body))
	for k, v := range bearer(a.Key) {
		req.Header.Set(k, v)
	}
	done := make(chan error, 1)
	start := time.Now()
	go func() {
		res, err := h1Client().Do(req)
		if err == nil {
			res.Body.Close()
		}
		done <- err
	}()
	for reserved() == 0 {
		if time.Since(start) > 5*time.Second {
			t.Fatal("no hold within 5 s")
		}
		select {
		case err := <-done:
			t.Fatalf("the request ended before it was held: %v", err)
		default:
		}
		time.Sleep(2 * time.Millisecond)
	}
	heldAt := time.Since(start)
	cpu0 := cpuSeconds(t, s.cmd.Process.Pid)
	cancel()
	cancelled := time.Now()
	<-done
	for reserved() != 0 {
		if time.Since(cancelled) > 5*time.Second {
			t.Fatal("still held 5 s after the client left")
		}
		time.Sleep(2 * time.Millisecond)
	}
	released := time.Since(cancelled)
	cpuToRelease := cpuSeconds(t, s.cmd.Process.Pid) - cpu0
	time.Sleep(200 * time.Millisecond)
	after := cpuSeconds(t, s.cmd.Process.Pid) - cpu0 - cpuToRelease
	t.Logf("BUDGET abandoned schema generation: held at %v, released %v after the client left (%.3f CPU-s), %.3f CPU-s in the 200 ms after",
		heldAt.Round(time.Millisecond), released.Round(time.Millisecond), cpuToRelease, after)
	if released > 100*time.Millisecond {
		t.Errorf("the hold was released %v after the client left; want within 100 ms", released)
	}
	if after > 0.05 {
		t.Errorf("the gateway spent %.3f CPU-s in the 200 ms after the release: the generation went on", after)
	}
}
