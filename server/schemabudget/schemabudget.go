// Package schemabudget checks a JSON Schema that a request carries (a
// response format, a tool's parameters) against written budgets before the
// request is admitted: its nesting depth, its node count, the least output a
// value valid against it can take, and the size of its patterns. A schema
// over a budget is refused naming the keyword at fault, by its path inside
// the schema. The budgets and their reasons are in docs/schema-budget.md.
//
// The check decodes the schema once and walks it once (references are
// followed, each at most once), so its cost is linear in the schema's size,
// which the caller bounds in bytes beforehand.
package schemabudget

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math"
	"regexp/syntax"
	"sort"
	"strconv"
	"strings"
)

// Budget is what one schema may ask for.
type Budget struct {
	// MaxDepth bounds the nesting of the schema document: objects and arrays
	// inside one another (each level of properties is two: the properties
	// object and the property's schema).
	MaxDepth int
	// MaxNodes bounds the JSON values in the schema document: every object,
	// array, string, number, boolean and null, keywords' values included.
	MaxNodes int
	// BytesPerToken is the most bytes of output one token can hold, on
	// average: a value of B bytes takes at least B/BytesPerToken tokens.
	BytesPerToken int64
	// MaxPatternBytes bounds one regular expression (pattern,
	// patternProperties' names), as written.
	MaxPatternBytes int
	// MaxPatternInsts bounds one regular expression's compiled program, in
	// RE2 instructions: the matching time per input byte is proportional.
	MaxPatternInsts int
	// MaxPatterns bounds the regular expressions in one schema.
	MaxPatterns int
}

// Default is the budget every surface applies.
var Default = Budget{
	MaxDepth:        64,
	MaxNodes:        10000,
	BytesPerToken:   16,
	MaxPatternBytes: 1000,
	MaxPatternInsts: 2000,
	MaxPatterns:     256,
}

// Violation is a schema over a budget: the keyword at fault, by its path
// inside the schema ("properties.items.minItems"; "" is the schema itself),
// and why.
type Violation struct {
	Path   string
	Reason string
}

func (v *Violation) Error() string {
	if v.Path == "" {
		return v.Reason
	}
	return v.Path + ": " + v.Reason
}

// Check checks schema (raw JSON) against Default for a completion of at most
// maxOutputTokens tokens (zero or less: no output bound is checked).
func Check(schema []byte, maxOutputTokens int64) *Violation {
	return Default.Check(schema, maxOutputTokens)
}

// Check checks schema (raw JSON) against b for a completion of at most
// maxOutputTokens tokens. Malformed JSON is not its concern: it returns nil
// for a schema it cannot decode (the caller's own check reports that).
func (b Budget) Check(schema []byte, maxOutputTokens int64) *Violation {
	dec := json.NewDecoder(bytes.NewReader(schema))
	dec.UseNumber()
	var doc any
	if err := dec.Decode(&doc); err != nil {
		return nil
	}
	c := &checker{b: b, root: doc, memo: map[string]int64{}, active: map[string]bool{}}
	if v := c.shape(doc, "", 1); v != nil {
		return v
	}
	if maxOutputTokens <= 0 || b.BytesPerToken <= 0 {
		return nil
	}
	c.limit = satMul(maxOutputTokens, b.BytesPerToken)
	if n := c.least(doc, ""); n > c.limit && c.over == nil {
		c.over = &Violation{Path: "", Reason: c.overReason(n)}
	}
	return c.over
}

type checker struct {
	b        Budget
	root     any
	nodes    int
	patterns int

	limit  int64            // the most output bytes the tokens can hold
	memo   map[string]int64 // least output of a referenced schema, by reference
	active map[string]bool  // references being followed (a cycle)
	over   *Violation       // the first keyword whose least output is over limit
}

// --- shape: depth, nodes, patterns ---

// shape walks v (at path, depth levels deep), counting nodes and checking
// depth and patterns, in a fixed order (object keys sorted).
func (c *checker) shape(v any, path string, depth int) *Violation {
	c.nodes++
	if c.nodes > c.b.MaxNodes {
		return &Violation{Path: path, Reason: fmt.Sprintf("the schema has over %d JSON values; at most %d", c.b.MaxNodes, c.b.MaxNodes)}
	}
	switch v := v.(type) {
	case map[string]any:
		if depth > c.b.MaxDepth {
			return &Violation{Path: path, Reason: fmt.Sprintf("the schema nests over %d levels deep", c.b.MaxDepth)}
		}
		for _, k := range sortedKeys(v) {
			kp := join(path, k)
			if k == "pattern" {
				if s, ok := v[k].(string); ok {
					if err := c.pattern(kp, s); err != nil {
						return err
					}
				}
			}
			if k == "patternProperties" {
				if pp, ok := v[k].(map[string]any); ok {
					for _, name := range sortedKeys(pp) {
						if err := c.pattern(join(kp, name), name); err != nil {
							return err
						}
					}
				}
			}
			if err := c.shape(v[k], kp, depth+1); err != nil {
				return err
			}
		}
	case []any:
		if depth > c.b.MaxDepth {
			return &Violation{Path: path, Reason: fmt.Sprintf("the schema nests over %d levels deep", c.b.MaxDepth)}
		}
		for i, x := range v {
			if err := c.shape(x, path+"["+strconv.Itoa(i)+"]", depth+1); err != nil {
				return err
			}
		}
	}
	return nil
}

// pattern checks one regular expression. Matching is by RE2 (Go's regexp),
// in time linear in the input and in the compiled program, never
// backtracking, so ^(a|a)*$ is no worse than ^a*$: what is bounded is the
// pattern's length and its compiled program's size (counted repetitions like
// (a{100}){100} expand). A pattern RE2 cannot parse (ECMA-262 lookaround or
// back references) is bounded by its length only; the engine decides
// whether it can follow it.
func (c *checker) pattern(path, p string) *Violation {
	c.patterns++
	if c.patterns > c.b.MaxPatterns {
		return &Violation{Path: path, Reason: fmt.Sprintf("the schema has over %d patterns", c.b.MaxPatterns)}
	}
	if len(p) > c.b.MaxPatternBytes {
		return &Violation{Path: path, Reason: fmt.Sprintf("the pattern is %d bytes; at most %d", len(p), c.b.MaxPatternBytes)}
	}
	re, err := syntax.Parse(p, syntax.Perl)
	if err != nil {
		if strings.Contains(err.Error(), "invalid repeat count") || strings.Contains(err.Error(), "too large") ||
			strings.Contains(err.Error(), "nests too deeply") {
			return &Violation{Path: path, Reason: "the pattern's repetitions are too large: " + err.Error()}
		}
		return nil
	}
	prog, err := syntax.Compile(re.Simplify())
	if err != nil || len(prog.Inst) > c.b.MaxPatternInsts {
		n := 0
		if prog != nil {
			n = len(prog.Inst)
		}
		return &Violation{Path: path, Reason: fmt.Sprintf("the pattern compiles to %d instructions; at most %d", n, c.b.MaxPatternInsts)}
	}
	return nil
}

// --- least output ---

// least is a lower bound on the bytes of the shortest JSON text valid
// against the schema s (at path), as the size keywords ask for: minItems,
// minContains, minLength, minProperties and required, multiplied through
// nested arrays and summed through objects; the cheapest branch of anyOf and
// oneOf, every part of allOf and $ref. A schema with an explicit "type" of
// several kinds costs its cheapest kind. The first keyword at which the
// bound passes the limit is recorded in c.over.
func (c *checker) least(s any, path string) int64 {
	obj, ok := s.(map[string]any)
	if !ok {
		return 1 // true, false, or not a schema: any value (at least one byte)
	}
	n := c.own(obj, path)
	if ref, ok := obj["$ref"].(string); ok {
		n = max(n, c.ref(ref, join(path, "$ref")))
	}
	if all, ok := obj["allOf"].([]any); ok {
		for i, x := range all {
			n = max(n, c.least(x, join(path, "allOf")+"["+strconv.Itoa(i)+"]"))
		}
	}
	for _, k := range []string{"anyOf", "oneOf"} {
		if bs, ok := obj[k].([]any); ok && len(bs) > 0 {
			saved := c.over
			best := int64(math.MaxInt64)
			for i, x := range bs {
				best = min(best, c.least(x, join(path, k)+"["+strconv.Itoa(i)+"]"))
			}
			if best <= c.limit {
				c.over = saved // a branch that fits: the others' keywords are not at fault
			}
			n = max(n, best)
		}
	}
	return n
}

// own is the least output of obj's own keywords: its type's, or the
// cheapest of its types'.
func (c *checker) own(obj map[string]any, path string) int64 {
	var kinds []string
	switch t := obj["type"].(type) {
	case string:
		kinds = []string{t}
	case []any:
		for _, x := range t {
			if s, ok := x.(string); ok {
				kinds = append(kinds, s)
			}
		}
	}
	if len(kinds) == 0 {
		// No type: the generator infers it from the keywords, so each kind's
		// keywords apply.
		return max(c.str(obj, path), c.arr(obj, path), c.object(obj, path), 1)
	}
	saved := c.over
	best := int64(math.MaxInt64)
	for _, k := range kinds {
		var n int64
		switch k {
		case "string":
			n = c.str(obj, path)
		case "array":
			n = c.arr(obj, path)
		case "object":
			n = c.object(obj, path)
		default:
			n = 1
		}
		best = min(best, n)
	}
	if best <= c.limit {
		c.over = saved // a kind that fits: the others' keywords are not at fault
	}
	return best
}

func (c *checker) str(obj map[string]any, path string) int64 {
	n, ok := count(obj["minLength"])
	if !ok {
		return 0
	}
	b := satAdd(n, 2) // each code point at least a byte, and the quotes
	if b > c.limit {
		c.mark(join(path, "minLength"), b)
	}
	return b
}

func (c *checker) arr(obj map[string]any, path string) int64 {
	minItems, hasMin := count(obj["minItems"])
	minContains, hasContains := int64(0), false
	if _, ok := obj["contains"]; ok {
		minContains, hasContains = 1, true
		if m, ok := count(obj["minContains"]); ok {
			minContains = m
		}
	}
	if !hasMin && !hasContains {
		return 0
	}
	items := max(minItems, minContains)
	if items == 0 {
		return 2
	}
	// Each item: at least one byte (or its schema's least), and a comma.
	var prefix []any
	var rest any
	if p, ok := obj["prefixItems"].([]any); ok {
		prefix, rest = p, obj["items"]
	} else if p, ok := obj["items"].([]any); ok {
		prefix, rest = p, obj["additionalItems"]
	} else {
		rest = obj["items"]
	}
	total := int64(2)
	for i := int64(0); i < items && i < int64(len(prefix)); i++ {
		total = satAdd(total, 1+c.least(prefix[i], join(path, "prefixItems")+"["+strconv.FormatInt(i, 10)+"]"))
	}
	restN := max(0, items-int64(len(prefix)))
	per := int64(1)
	if rest != nil {
		per = max(1, c.least(rest, join(path, "items")))
	}
	if hasContains && minContains > 0 {
		// minContains items are valid against contains too.
		withC := max(per, c.least(obj["contains"], join(path, "contains")))
		k := min(minContains, restN)
		total = satAdd(total, satMul(k, 1+withC))
		restN -= k
	}
	total = satAdd(total, satMul(restN, 1+per))
	if total > c.limit {
		kw := "minItems"
		if !hasMin || minContains > minItems {
			kw = "minContains"
		}
		c.mark(join(path, kw), total)
	}
	return total
}

func (c *checker) object(obj map[string]any, path string) int64 {
	minProps, hasMin := count(obj["minProperties"])
	req, _ := obj["required"].([]any)
	if !hasMin && len(req) == 0 {
		return 0
	}
	props, _ := obj["properties"].(map[string]any)
	total := int64(2)
	seen := 0
	names := map[string]bool{}
	for _, x := range req {
		name, ok := x.(string)
		if !ok || names[name] {
			continue
		}
		names[name] = true
		seen++
		v := int64(1)
		if ps, ok := props[name]; ok {
			v = max(1, c.least(ps, join(join(path, "properties"), name)))
		}
		// "name":value,
		total = satAdd(total, satAdd(int64(len(name))+4, v))
	}
	if total > c.limit {
		c.mark(join(path, "required"), total)
	}
	if extra := minProps - int64(seen); extra > 0 {
		// "":0 is the shortest member; the others are longer still.
		total = satAdd(total, satMul(extra, 5))
		if total > c.limit {
			c.mark(join(path, "minProperties"), total)
		}
	}
	return total
}

// ref is the least output of the schema a local reference ("#", "#/$defs/x")
// names; other references count as any value. Each is followed once.
func (c *checker) ref(ref, path string) int64 {
	if n, ok := c.memo[ref]; ok {
		return n
	}
	if c.active[ref] {
		return 1 // a cycle: what it requires is bounded by the engine's depth
	}
	target, ok := resolve(c.root, ref)
	if !ok {
		return 1
	}
	c.active[ref] = true
	n := c.least(target, strings.TrimPrefix(strings.ReplaceAll(strings.TrimPrefix(ref, "#"), "/", "."), "."))
	delete(c.active, ref)
	c.memo[ref] = n
	if n > c.limit {
		c.mark(path, n)
	}
	return n
}

// mark records the first keyword at which the least output passes the limit.
func (c *checker) mark(path string, n int64) {
	if c.over == nil {
		c.over = &Violation{Path: path, Reason: c.overReason(n)}
	}
}

func (c *checker) overReason(n int64) string {
	return fmt.Sprintf("a value valid against the schema is at least %s bytes of output, more than %d tokens can hold (%d bytes at most %d bytes a token)",
		human(n), c.limit/c.b.BytesPerToken, c.limit, c.b.BytesPerToken)
}

// resolve follows a local JSON Pointer reference in root.
func resolve(root any, ref string) (any, bool) {
	frag, ok := strings.CutPrefix(ref, "#")
	if !ok {
		return nil, false
	}
	if frag == "" {
		return root, true
	}
	if !strings.HasPrefix(frag, "/") {
		return nil, false // an anchor: not followed
	}
	cur := root
	for _, tok := range strings.Split(frag[1:], "/") {
		tok = strings.ReplaceAll(strings.ReplaceAll(tok, "~1", "/"), "~0", "~")
		switch v := cur.(type) {
		case map[string]any:
			if cur, ok = v[tok]; !ok {
				return nil, false
			}
		case []any:
			i, err := strconv.Atoi(tok)
			if err != nil || i < 0 || i >= len(v) {
				return nil, false
			}
			cur = v[i]
		default:
			return nil, false
		}
	}
	return cur, true
}

// --- helpers ---

// count reads a size keyword's value: a non-negative integer (saturated).
func count(v any) (int64, bool) {
	n, ok := v.(json.Number)
	if !ok {
		return 0, false
	}
	if i, err := n.Int64(); err == nil {
		return max(i, 0), true
	}
	f, err := n.Float64()
	if err != nil || f < 0 || math.IsNaN(f) {
		return 0, false
	}
	if f >= math.MaxInt64/2 {
		return math.MaxInt64 / 2, true
	}
	return int64(math.Ceil(f)), true
}

const satMax = math.MaxInt64 / 4

func satAdd(a, b int64) int64 {
	if a >= satMax-b {
		return satMax
	}
	return a + b
}

func satMul(a, b int64) int64 {
	if a == 0 || b == 0 {
		return 0
	}
	if a > satMax/b {
		return satMax
	}
	return a * b
}

func human(n int64) string {
	if n >= satMax {
		return "an unbounded number of"
	}
	return strconv.FormatInt(n, 10)
}

func sortedKeys(m map[string]any) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

// join appends a key to a path: ".key", or ["key"] when the key is not a
// plain name.
func join(path, key string) string {
	plain := key != ""
	for i, r := range key {
		if !(r == '_' || r == '$' || r == '-' || r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || i > 0 && r >= '0' && r <= '9') {
			plain = false
			break
		}
	}
	if !plain {
		q, _ := json.Marshal(key)
		return path + "[" + string(q) + "]"
	}
	if path == "" {
		return key
	}
	return path + "." + key
}
