package schemabudget

import (
	"fmt"
	"runtime"
	"strings"
	"testing"
	"time"
)

// Each bomb class is refused naming the keyword at fault; the schemas a
// normal request sends pass.
func TestCheck(t *testing.T) {
	deep := strings.Repeat(`{"type":"array","items":`, 70) + `{"type":"string"}` + strings.Repeat(`}`, 70)
	var many strings.Builder
	many.WriteString(`{"type":"object","properties":{`)
	for i := range 4000 {
		if i > 0 {
			many.WriteString(",")
		}
		fmt.Fprintf(&many, `"p%d":{"type":"string","maxLength":%d}`, i, i)
	}
	many.WriteString(`}}`)
	tests := []struct {
		name, schema string
		maxOut       int64
		path         string // "" for accepted
	}{
		{"plain", `{"type":"object","properties":{"name":{"type":"string"},"tags":{"type":"array","items":{"type":"string"},"minItems":2}},"required":["name"]}`, 4096, ""},
		{"minItems", `{"type":"object","properties":{"items":{"type":"array","minItems":1000000000}},"required":["items"]}`, 4096, "properties.items.minItems"},
		{"minItems optional property", `{"type":"object","properties":{"items":{"type":"array","minItems":1000000000}}}`, 4096, ""},
		{"minItems root", `{"type":"array","minItems":20000000}`, 4096, "minItems"},
		{"minItems float", `{"type":"array","minItems":1e300}`, 4096, "minItems"},
		{"minLength", `{"type":"string","minLength":1000000000}`, 4096, "minLength"},
		{"minLength fits", `{"type":"string","minLength":60000}`, 4096, ""},
		{"minLength just over", `{"type":"string","minLength":65535}`, 4096, "minLength"},
		{"minProperties", `{"type":"object","minProperties":1000000000}`, 4096, "minProperties"},
		{"minContains", `{"type":"array","contains":{"type":"integer"},"minContains":1000000000}`, 4096, "minContains"},
		{"required sum", `{"type":"object","properties":{"a":{"type":"string","minLength":40000},"b":{"type":"string","minLength":40000}},"required":["a","b"]}`, 4096, "required"},
		{"nested arrays multiply", `{"type":"array","minItems":300,"items":{"type":"array","minItems":300,"items":{"type":"integer"}}}`, 4096, "minItems"},
		{"nested arrays inner", `{"type":"array","minItems":3,"items":{"type":"array","minItems":300000,"items":{"type":"integer"}}}`, 4096, "items.minItems"},
		{"nested arrays fit", `{"type":"array","minItems":30,"items":{"type":"array","minItems":30,"items":{"type":"integer"}}}`, 4096, ""},
		{"anyOf cheapest branch", `{"anyOf":[{"type":"string","minLength":1000000000},{"type":"null"}]}`, 4096, ""},
		{"anyOf every branch", `{"anyOf":[{"type":"string","minLength":1000000000},{"type":"array","minItems":1000000000}]}`, 4096, "anyOf[0].minLength"},
		{"type union cheapest", `{"type":["string","null"],"minLength":1000000000}`, 4096, ""},
		{"ref", `{"$defs":{"big":{"type":"string","minLength":1000000000}},"type":"object","properties":{"a":{"$ref":"#/$defs/big"}},"required":["a"]}`, 4096, "$defs.big.minLength"},
		{"ref cycle", `{"$defs":{"n":{"type":"object","properties":{"next":{"$ref":"#/$defs/n"}},"required":["next"]}},"$ref":"#/$defs/n"}`, 4096, ""},
		{"no max tokens", `{"type":"array","minItems":1000000000}`, 0, ""},
		{"depth", deep, 4096, strings.Repeat("items.", 63) + "items"},
		{"nodes", many.String(), 4096, "properties.p*"},
		{"pattern length", `{"type":"string","pattern":"` + strings.Repeat("a", 2000) + `"}`, 4096, "pattern"},
		{"pattern program", `{"type":"string","pattern":"((a{100}){100}){10}"}`, 4096, "pattern"},
		{"pattern RE2 is linear", `{"type":"object","patternProperties":{"^(a|a)*$":{"type":"string"}}}`, 4096, ""},
		{"patternProperties program", `{"type":"object","patternProperties":{"(x{1000}){1000}":{}}}`, 4096, `patternProperties["(x{1000}){1000}"]`},
		{"lookahead is the engine's", `{"type":"string","pattern":"^(?=a)a$"}`, 4096, ""},
		{"odd key", `{"type":"object","properties":{"a b":{"type":"string","minLength":1000000000}},"required":["a b"]}`, 4096, `properties["a b"].minLength`},
	}
	for _, tt := range tests {
		v := Check([]byte(tt.schema), tt.maxOut)
		switch {
		case tt.path == "" && v != nil:
			t.Errorf("%s: refused: %v", tt.name, v)
		case tt.path != "" && v == nil:
			t.Errorf("%s: accepted, want refused at %s", tt.name, tt.path)
		case strings.HasSuffix(tt.path, "*") && strings.HasPrefix(v.Path, strings.TrimSuffix(tt.path, "*")):
		case tt.path != "" && v.Path != tt.path:
			t.Errorf("%s: refused at %q (%s), want %q", tt.name, v.Path, v.Reason, tt.path)
		}
	}
}

// The same schema is refused at the same keyword every time (no map order).
func TestCheckDeterministic(t *testing.T) {
	s := []byte(`{"type":"object","properties":{"z":{"type":"string","pattern":"` + strings.Repeat("z", 2000) + `"},"a":{"type":"string","pattern":"` + strings.Repeat("a", 2000) + `"}}}`)
	want := Check(s, 100).Path
	for range 50 {
		if got := Check(s, 100).Path; got != want {
			t.Fatalf("refused at %q, then at %q", want, got)
		}
	}
	if want != "properties.a.pattern" {
		t.Errorf("refused at %q, want the first in key order", want)
	}
}

// A schema of references that fan out (each referring to the next twice)
// costs the checker linear time, not exponential.
func TestCheckRefFanOut(t *testing.T) {
	var b strings.Builder
	b.WriteString(`{"$defs":{`)
	const levels = 40
	for i := range levels {
		if i > 0 {
			b.WriteString(",")
		}
		fmt.Fprintf(&b, `"d%d":{"type":"object","properties":{"a":{"$ref":"#/$defs/d%d"},"b":{"$ref":"#/$defs/d%d"}},"required":["a","b"]}`, i, i+1, i+1)
	}
	fmt.Fprintf(&b, `,"d%d":{"type":"string","minLength":1}},"$ref":"#/$defs/d0"}`, levels)
	start := time.Now()
	v := Check([]byte(b.String()), 4096)
	if d := time.Since(start); d > time.Second {
		t.Errorf("took %v", d)
	}
	if v == nil { // 2^40 leaves
		t.Errorf("accepted a schema whose least value has 2^40 strings")
	}
}

// The largest schema a request may carry (64 KiB) is checked within the
// budget of 50 ms and 10 MB.
func TestCheckCost(t *testing.T) {
	var b strings.Builder
	b.WriteString(`{"type":"object","properties":{`)
	for i := 0; b.Len() < 63<<10; i++ {
		if i > 0 {
			b.WriteString(",")
		}
		fmt.Fprintf(&b, `"p%d":{"type":"string","pattern":"^[a-z]{1,8}$"}`, i)
	}
	b.WriteString(`}}`)
	schema := []byte(b.String())
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	start := time.Now()
	const runs = 5
	for range runs {
		Check(schema, 4096)
	}
	per := time.Since(start) / runs
	runtime.ReadMemStats(&after)
	alloc := (after.TotalAlloc - before.TotalAlloc) / runs
	t.Logf("a %d-byte schema: %v and %d bytes allocated per check", len(schema), per, alloc)
	if per > 50*time.Millisecond || alloc > 10<<20 {
		t.Errorf("a check took %v and %d bytes; the budget is 50 ms and 10 MB", per, alloc)
	}
}
