package sim

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/json"
	"errors"
	"fmt"
	"math/big"
	"math/rand/v2"
	"regexp"
	"regexp/syntax"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/santhosh-tekuri/jsonschema/v6"
)

// This file makes JSON values that are valid against a JSON Schema: tool-call
// arguments and structured output (response_format json_schema). The schema is
// compiled by a real validator (santhosh-tekuri/jsonschema, draft 2020-12 when
// the schema names none, formats asserted), the value is generated from the
// compiled form (so $ref, $defs/definitions and the draft differences are
// already resolved), and the text is checked against the schema before it is
// returned.

const (
	// schemaURL is where the inline schema lives for the compiler; nothing else
	// can be loaded.
	schemaURL = "sim:///schema.json"
	// schemaCacheMax bounds the compiled-schema cache.
	schemaCacheMax = 256
	// schemaDeep is the nesting depth beyond which the generator takes the
	// shortest options: null where allowed, no optional properties, the fewest
	// items.
	schemaDeep = 6
	// schemaMaxDepth is the nesting depth at which it gives up (a recursive
	// schema that requires ever deeper values).
	schemaMaxDepth = 32
	// schemaTries is how many values are made before giving up; the last few
	// are minimal (only required properties, fewest items).
	schemaTries = 8
	// schemaBudget bounds the generator's work for one value.
	schemaBudget = 20000
	// schemaSoftNodes is the number of values (scalars, arrays, objects) after
	// which the generator takes the shortest options, as when deep: it keeps a
	// recursive schema's value to a readable size.
	schemaSoftNodes = 80
	// schemaMaxText bounds one string's length, in code points: a minLength
	// over it is refused before any text is made.
	schemaMaxText = 1 << 20
	// schemaWall bounds the time making one value takes, all tries together.
	schemaWall = 250 * time.Millisecond
)

// errSchemaTooBig is a schema whose value is over the generator's budget, or
// a generation stopped (its context ended, its time ran out): final, never
// retried.
type errSchemaTooBig struct{ err error }

func (e *errSchemaTooBig) Error() string { return e.err.Error() }
func (e *errSchemaTooBig) Unwrap() error { return e.err }

// compiledSchema is a compiled schema with its source, which keeps what the
// compiled form does not: the order of properties and of type lists, and the
// names of formats the validator does not know.
type compiledSchema struct {
	sch *jsonschema.Schema
	raw any // the schema as ordered JSON: *ordObj, []any, string, json.Number, bool, nil
}

var schemaCache struct {
	sync.Mutex
	m     map[[32]byte]*compiledSchema
	order [][32]byte // insertion order, for eviction
}

// noRemoteLoader refuses every URL: only the inline schema (and the drafts'
// metaschemas, which the library embeds) can be used.
type noRemoteLoader struct{}

func (noRemoteLoader) Load(url string) (any, error) {
	return nil, fmt.Errorf("cannot load %q: only the inline schema is available (no remote or file $ref)", url)
}

// compilePattern compiles a schema's regular expression (ECMA-262 in the
// spec) with Go's regexp. What Go lacks is bridged where that is safe: \uXXXX
// escapes are rewritten, and lookaround groups, which only ever narrow a
// match, are dropped, so such a pattern is checked leniently (pydantic's
// Decimal pattern has a lookahead). Anything else Go cannot compile (back
// references) makes the schema invalid.
func compilePattern(pattern string) (jsonschema.Regexp, error) {
	re, err := regexp.Compile(pattern)
	if err == nil {
		return re, nil
	}
	loose, changed := loosenPattern(pattern)
	if !changed {
		return nil, err
	}
	re2, err2 := regexp.Compile(loose)
	if err2 != nil {
		return nil, err
	}
	return &loosePattern{src: pattern, re: re2}, nil
}

// loosePattern is a pattern checked without its lookaround groups.
type loosePattern struct {
	src string
	re  *regexp.Regexp
}

func (p *loosePattern) String() string            { return p.src }
func (p *loosePattern) MatchString(s string) bool { return p.re.MatchString(s) }

// goPattern is the Go syntax of a compiled pattern, for making strings from it.
func goPattern(re jsonschema.Regexp) string {
	if p, ok := re.(*loosePattern); ok {
		return p.re.String()
	}
	return re.String()
}

// loosenPattern rewrites \uXXXX as \x{XXXX} and drops lookaround groups
// ((?=…), (?!…), (?<=…), (?<!…)); it reports whether anything changed.
func loosenPattern(p string) (string, bool) {
	var b strings.Builder
	changed := false
	inClass := false
	for i := 0; i < len(p); i++ {
		c := p[i]
		switch {
		case c == '\\' && i+1 < len(p):
			if p[i+1] == 'u' && i+5 < len(p) && isHex(p[i+2:i+6]) {
				b.WriteString(`\x{` + p[i+2:i+6] + `}`)
				i += 5
				changed = true
				continue
			}
			b.WriteString(p[i : i+2])
			i++
		case inClass:
			if c == ']' {
				inClass = false
			}
			b.WriteByte(c)
		case c == '[':
			inClass = true
			b.WriteByte(c)
			// A ']' right after '[' or '[^' is literal.
			if i+1 < len(p) && p[i+1] == '^' {
				b.WriteByte('^')
				i++
			}
			if i+1 < len(p) && p[i+1] == ']' {
				b.WriteByte(']')
				i++
			}
		case c == '(' && (strings.HasPrefix(p[i:], "(?=") || strings.HasPrefix(p[i:], "(?!") ||
			strings.HasPrefix(p[i:], "(?<=") || strings.HasPrefix(p[i:], "(?<!")):
			end := groupEnd(p, i)
			if end < 0 {
				return p, false
			}
			i = end
			changed = true
		default:
			b.WriteByte(c)
		}
	}
	return b.String(), changed
}

// groupEnd is the index of the ')' that closes the group opened at p[open].
func groupEnd(p string, open int) int {
	depth := 0
	inClass := false
	for i := open; i < len(p); i++ {
		switch c := p[i]; {
		case c == '\\':
			i++
		case inClass:
			if c == ']' {
				inClass = false
			}
		case c == '[':
			inClass = true
			if i+1 < len(p) && p[i+1] == '^' {
				i++
			}
			if i+1 < len(p) && p[i+1] == ']' {
				i++
			}
		case c == '(':
			depth++
		case c == ')':
			depth--
			if depth == 0 {
				return i
			}
		}
	}
	return -1
}

func isHex(s string) bool {
	for _, c := range s {
		if !strings.ContainsRune("0123456789abcdefABCDEF", c) {
			return false
		}
	}
	return true
}

// compileSchema compiles schema, or returns it from the cache.
func compileSchema(schema []byte) (*compiledSchema, error) {
	if t := bytes.TrimSpace(schema); len(t) == 0 || string(t) == "null" {
		schema = []byte(`{"type":"object"}`)
	}
	key := sha256.Sum256(schema)
	schemaCache.Lock()
	cs, ok := schemaCache.m[key]
	schemaCache.Unlock()
	if ok {
		return cs, nil
	}

	doc, err := jsonschema.UnmarshalJSON(bytes.NewReader(schema))
	if err != nil {
		return nil, fmt.Errorf("schema is not JSON: %v", err)
	}
	raw, err := parseOrdered(schema)
	if err != nil {
		return nil, fmt.Errorf("schema is not JSON: %v", err)
	}
	c := jsonschema.NewCompiler()
	c.UseLoader(noRemoteLoader{})
	c.UseRegexpEngine(compilePattern)
	c.DefaultDraft(jsonschema.Draft2020)
	c.AssertFormat()
	if err := c.AddResource(schemaURL, doc); err != nil {
		return nil, fmt.Errorf("invalid schema: %v", err)
	}
	sch, err := c.Compile(schemaURL)
	if err != nil {
		msg := strings.ReplaceAll(oneLine(err.Error()), schemaURL, "")
		return nil, fmt.Errorf("invalid schema: %s", strings.ReplaceAll(msg, "sim:///", ""))
	}
	cs = &compiledSchema{sch: sch, raw: raw}

	schemaCache.Lock()
	defer schemaCache.Unlock()
	if old, ok := schemaCache.m[key]; ok {
		return old, nil
	}
	if schemaCache.m == nil {
		schemaCache.m = make(map[[32]byte]*compiledSchema)
	}
	for len(schemaCache.order) >= schemaCacheMax {
		delete(schemaCache.m, schemaCache.order[0])
		schemaCache.order = schemaCache.order[1:]
	}
	schemaCache.m[key] = cs
	schemaCache.order = append(schemaCache.order, key)
	return cs, nil
}

// ValidateJSON compiles schema (raw JSON Schema; nil or empty means
// {"type":"object"}) and validates the JSON text doc against it. Remote
// references are refused; formats are asserted. The error says where doc
// fails, in one line; errors.As finds the *jsonschema.ValidationError.
func ValidateJSON(schema []byte, doc string) error {
	cs, err := compileSchema(schema)
	if err != nil {
		return err
	}
	return cs.validate(doc)
}

func (cs *compiledSchema) validate(doc string) error {
	inst, err := jsonschema.UnmarshalJSON(strings.NewReader(doc))
	if err != nil {
		return fmt.Errorf("not JSON: %v", err)
	}
	if err := cs.sch.Validate(inst); err != nil {
		var ve *jsonschema.ValidationError
		if errors.As(err, &ve) {
			return &mismatchError{ve}
		}
		return err
	}
	return nil
}

// mismatchError is a validation failure told in one line: where in the value,
// and which keyword of the schema.
type mismatchError struct{ ve *jsonschema.ValidationError }

func (e *mismatchError) Unwrap() error { return e.ve }

func (e *mismatchError) Error() string {
	leaf := e.ve
	for len(leaf.Causes) > 0 {
		leaf = leaf.Causes[0]
	}
	kw := strings.TrimPrefix(leaf.SchemaURL, schemaURL)
	if leaf.ErrorKind != nil {
		if p := leaf.ErrorKind.KeywordPath(); len(p) > 0 {
			kw = strings.TrimSuffix(kw, "/") + "/" + strings.Join(p, "/")
		}
	}
	msg := oneLine(leaf.Error())
	if n := countLeaves(e.ve); n > 1 {
		msg += fmt.Sprintf(" (and %d more)", n-1)
	}
	return fmt.Sprintf("schema path %s: %s", kw, msg)
}

func countLeaves(e *jsonschema.ValidationError) int {
	if len(e.Causes) == 0 {
		return 1
	}
	n := 0
	for _, c := range e.Causes {
		n += countLeaves(c)
	}
	return n
}

func oneLine(s string) string {
	return strings.Join(strings.Fields(s), " ")
}

// SchemaValue writes a JSON value that is valid against schema (a JSON Schema,
// raw JSON; nil or empty means {"type":"object"} with no properties),
// deterministic in rng. words gives short natural-language text for strings.
// It returns the JSON text (compact, valid UTF-8), checked against the schema by
// a real validator before it is returned; an error if the schema cannot be
// compiled or no valid value could be made.
func SchemaValue(schema []byte, rng *rand.Rand, words func(n int) string) (string, error) {
	return SchemaValueContext(context.Background(), schema, rng, words)
}

// SchemaValueContext is SchemaValue that stops when ctx ends, and after
// schemaWall in any case. A size keyword over the generator's budget (more
// items, properties or values than it makes for one value, a string over
// schemaMaxText) is refused before anything is allocated for it, and is not
// retried.
func SchemaValueContext(ctx context.Context, schema []byte, rng *rand.Rand, words func(n int) string) (string, error) {
	ctx, cancel := context.WithTimeoutCause(ctx, schemaWall, fmt.Errorf("making a value took over %v", schemaWall))
	defer cancel()
	cs, err := compileSchema(schema)
	if err != nil {
		return "", err
	}
	if words == nil {
		words = fallbackWords(rng)
	}
	var lastErr error
	patterns := map[string]*syntax.Regexp{} // parsed once for all tries
	for try := 0; try < schemaTries; try++ {
		g := &schemaGen{cs: cs, rng: rng, words: words, minimal: try >= schemaTries-3, budget: schemaBudget, ctx: ctx, patterns: patterns}
		v, err := g.gen([]*jsonschema.Schema{cs.sch}, nil, "", 0)
		var final *errSchemaTooBig
		if errors.As(err, &final) {
			return "", err
		}
		if err != nil {
			lastErr = err
			continue
		}
		text := encodeValue(v)
		if !utf8.ValidString(text) {
			lastErr = errors.New("generated text is not valid UTF-8")
			continue
		}
		if err := cs.validate(text); err != nil {
			lastErr = err
			continue
		}
		return text, nil
	}
	return "", fmt.Errorf("no value valid against the schema after %d tries: %v", schemaTries, lastErr)
}

// fallbackWords gives words when the caller passes none.
func fallbackWords(rng *rand.Rand) func(int) string {
	list := []string{"alpha", "river", "stone", "lantern", "maple", "orbit", "harbor", "quiet", "signal", "meadow"}
	return func(n int) string {
		out := make([]string, max(n, 1))
		for i := range out {
			out[i] = list[rng.IntN(len(list))]
		}
		return strings.Join(out, " ")
	}
}

// --- generation ---

type schemaGen struct {
	cs      *compiledSchema
	rng     *rand.Rand
	words   func(int) string
	minimal bool
	budget  int
	nodes   int // values made so far
	// ctx ends the generation (the client left, or schemaWall passed).
	ctx context.Context
	// patterns are the patterns parsed for fromRegex, by source.
	patterns map[string]*syntax.Regexp
}

// stopped is the final error for a generation whose context ended.
func (g *schemaGen) stopped(path string) error {
	if g.ctx == nil || g.ctx.Err() == nil {
		return nil
	}
	return &errSchemaTooBig{genError(nil, path, "stopped: %v", context.Cause(g.ctx))}
}

// tooBig is the final error for a size keyword over the generator's budget.
func tooBig(s *jsonschema.Schema, path, format string, args ...any) error {
	return &errSchemaTooBig{genError(s, path, format, args...)}
}

// short reports whether to take the shortest options at this depth.
func (g *schemaGen) short(depth int) bool {
	return depth > schemaDeep || g.minimal || g.nodes > schemaSoftNodes
}

// choiceKey marks an anyOf (kind 'a') or oneOf (kind 'o') already decided.
type choiceKey struct {
	s    *jsonschema.Schema
	kind byte
}

// genError is a failure to generate, with the schema location.
func genError(s *jsonschema.Schema, path, format string, args ...any) error {
	loc := "#"
	if s != nil {
		loc = schemaPtr(s)
	}
	where := path
	if where == "" {
		where = "(root)"
	} else if len(where) > 80 {
		where = "..." + where[len(where)-77:]
	}
	return fmt.Errorf("schema path %s, value at %s: %s", loc, where, fmt.Sprintf(format, args...))
}

// schemaPtr is s's location as a fragment: "#/properties/x".
func schemaPtr(s *jsonschema.Schema) string {
	loc := strings.TrimPrefix(s.Location, schemaURL)
	if loc == "" {
		loc = "#"
	}
	return loc
}

// flatten follows $ref, $dynamicRef, $recursiveRef and allOf: the schemas
// that all apply to one value. A false schema is an error; true ones drop out.
func flatten(in []*jsonschema.Schema, path string) ([]*jsonschema.Schema, error) {
	var out []*jsonschema.Schema
	seen := make(map[*jsonschema.Schema]bool)
	var add func(s *jsonschema.Schema) error
	add = func(s *jsonschema.Schema) error {
		if s == nil || seen[s] {
			return nil
		}
		seen[s] = true
		if s.Bool != nil {
			if !*s.Bool {
				return genError(s, path, "the schema is false: no value is valid")
			}
			return nil
		}
		out = append(out, s)
		if err := add(s.Ref); err != nil {
			return err
		}
		if err := add(s.RecursiveRef); err != nil {
			return err
		}
		if s.DynamicRef != nil {
			if err := add(s.DynamicRef.Ref); err != nil {
				return err
			}
		}
		for _, a := range s.AllOf {
			if err := add(a); err != nil {
				return err
			}
		}
		return nil
	}
	for _, s := range in {
		if err := add(s); err != nil {
			return nil, err
		}
	}
	return out, nil
}

// gen makes a value valid against all of parts; done are the anyOf/oneOf
// choices already made on this value.
func (g *schemaGen) gen(parts []*jsonschema.Schema, done map[choiceKey]bool, path string, depth int) (any, error) {
	g.budget--
	if g.budget < 0 {
		return nil, genError(nil, path, "the schema is too complex to generate a value for")
	}
	if g.budget%64 == 0 {
		if err := g.stopped(path); err != nil {
			return nil, err
		}
	}
	if depth > schemaMaxDepth {
		var s *jsonschema.Schema
		if len(parts) > 0 {
			s = parts[0]
		}
		return nil, genError(s, path, "recursion deeper than %d levels: the schema requires ever deeper values", schemaMaxDepth)
	}
	flat, err := flatten(parts, path)
	if err != nil {
		return nil, err
	}
	for _, p := range flat {
		if len(p.AnyOf) > 0 && !done[choiceKey{p, 'a'}] {
			return g.choose(flat, p, p.AnyOf, choiceKey{p, 'a'}, done, path, depth)
		}
		if len(p.OneOf) > 0 && !done[choiceKey{p, 'o'}] {
			return g.choose(flat, p, p.OneOf, choiceKey{p, 'o'}, done, path, depth)
		}
	}
	return g.plain(flat, path, depth)
}

// choose decides one anyOf or oneOf: it tries branches (non-null ones first,
// in random order; the shortest first when deep) until the value made with
// one is valid against it (and, for oneOf, against no other branch).
func (g *schemaGen) choose(flat []*jsonschema.Schema, owner *jsonschema.Schema, branches []*jsonschema.Schema, key choiceKey, done map[choiceKey]bool, path string, depth int) (any, error) {
	done2 := make(map[choiceKey]bool, len(done)+1)
	for k := range done {
		done2[k] = true
	}
	done2[key] = true
	var (
		last    any
		hasLast bool
		lastErr error
	)
	for _, bi := range g.branchOrder(branches, path, depth) {
		b := branches[bi]
		v, err := g.gen(append(slices.Clip(flat), b), done2, path, depth)
		var final *errSchemaTooBig
		if errors.As(err, &final) {
			return nil, err
		}
		if err != nil {
			lastErr = err
			continue
		}
		if !hasLast {
			last, hasLast = v, true
		}
		plain := toPlain(v)
		if b.Validate(plain) != nil {
			continue
		}
		if key.kind == 'o' {
			others := false
			for j, o := range branches {
				if j != bi && o.Validate(plain) == nil {
					others = true
					break
				}
			}
			if others {
				continue
			}
		}
		return v, nil
	}
	if hasLast {
		return last, nil // the final check says what is wrong
	}
	if lastErr != nil {
		return nil, lastErr
	}
	return nil, genError(owner, path, "no branch could be generated")
}

// branchOrder is the order in which to try branches.
func (g *schemaGen) branchOrder(branches []*jsonschema.Schema, path string, depth int) []int {
	cost := make([]int, len(branches))
	var nonNull, null []int
	for i, b := range branches {
		cost[i] = branchCost(b, path)
		if cost[i] == 0 {
			null = append(null, i)
		} else {
			nonNull = append(nonNull, i)
		}
	}
	if g.short(depth) {
		order := make([]int, len(branches))
		for i := range order {
			order[i] = i
		}
		sort.SliceStable(order, func(a, b int) bool { return cost[order[a]] < cost[order[b]] })
		return order
	}
	g.rng.Shuffle(len(nonNull), func(i, j int) { nonNull[i], nonNull[j] = nonNull[j], nonNull[i] })
	return append(nonNull, null...)
}

// branchCost ranks a branch by the size of the value it leads to: 0 null, 1 a
// scalar, 2 an array, 3 an object or unknown.
func branchCost(b *jsonschema.Schema, path string) int {
	flat, err := flatten([]*jsonschema.Schema{b}, path)
	if err != nil {
		return 4
	}
	t := allTypes
	for _, p := range flat {
		if p.Const != nil {
			return valueCost(*p.Const)
		}
		if p.Types != nil {
			t &= typeBits(p.Types)
		}
	}
	switch {
	case t == tNull:
		return 0
	case t&(tObject|tArray) == 0 && t != 0:
		return 1
	case t&tObject == 0 && t != 0:
		return 2
	}
	return 3
}

func valueCost(v any) int {
	switch v.(type) {
	case nil:
		return 0
	case []any:
		return 2
	case map[string]any:
		return 3
	}
	return 1
}

// type bits
const (
	tNull = 1 << iota
	tBoolean
	tInteger
	tNumber // number proper; a number type also allows integers
	tString
	tArray
	tObject
	allTypes = tNull | tBoolean | tInteger | tNumber | tString | tArray | tObject
)

var typeNames = map[string]int{
	"null": tNull, "boolean": tBoolean, "integer": tInteger, "number": tNumber | tInteger,
	"string": tString, "array": tArray, "object": tObject,
}

var defaultTypeOrder = []string{"object", "array", "string", "number", "integer", "boolean", "null"}

func typeBits(t *jsonschema.Types) int {
	bits := 0
	for _, n := range t.ToStrings() {
		bits |= typeNames[n]
	}
	return bits
}

// plain makes a value for schemas with no choices left.
func (g *schemaGen) plain(flat []*jsonschema.Schema, path string, depth int) (any, error) {
	g.nodes++
	deep := g.short(depth)
	var first *jsonschema.Schema
	if len(flat) > 0 {
		first = flat[0]
	}

	// const and enum: a value valid against every part.
	for _, p := range flat {
		if p.Const != nil {
			return *p.Const, nil
		}
	}
	for _, p := range flat {
		if p.Enum == nil {
			continue
		}
		var ok []any
		for _, v := range p.Enum.Values {
			if validAll(flat, v) {
				ok = append(ok, v)
			}
		}
		if len(ok) == 0 {
			return nil, genError(p, path, "no value of the enum is valid against the rest of the schema")
		}
		// Prefer non-null values.
		var nonNull []any
		for _, v := range ok {
			if v != nil {
				nonNull = append(nonNull, v)
			}
		}
		if len(nonNull) > 0 && !deep {
			ok = nonNull
		}
		if deep {
			return ok[0], nil
		}
		return ok[g.rng.IntN(len(ok))], nil
	}

	typ, err := g.pickType(flat, path, depth)
	if err != nil {
		return nil, err
	}
	switch typ {
	case "null":
		return nil, nil
	case "boolean":
		return g.rng.IntN(2) == 0, nil
	case "integer", "number":
		return g.number(flat, typ == "integer", path, deep)
	case "string":
		return g.str(flat, path, deep)
	case "array":
		return g.array(flat, path, depth)
	case "object":
		return g.object(flat, path, depth)
	}
	return nil, genError(first, path, "unknown type %q", typ)
}

// validAll reports whether v is valid against every schema in flat.
func validAll(flat []*jsonschema.Schema, v any) bool {
	for _, p := range flat {
		if p.Validate(v) != nil {
			return false
		}
	}
	return true
}

// pickType chooses the JSON type of the value: the first non-null type the
// schema lists (in its order), or one inferred from the keywords.
func (g *schemaGen) pickType(flat []*jsonschema.Schema, path string, depth int) (string, error) {
	allowed := allTypes
	explicit := false
	var order []string
	for _, p := range flat {
		if p.Types == nil {
			continue
		}
		explicit = true
		allowed &= typeBits(p.Types)
		if order == nil {
			order = g.rawTypeOrder(p)
		}
	}
	if !explicit {
		return inferType(flat, depth), nil
	}
	if allowed == 0 {
		var s *jsonschema.Schema
		if len(flat) > 0 {
			s = flat[0]
		}
		return "", genError(s, path, "no JSON type satisfies every part of the schema")
	}
	if allowed&tNull != 0 && (depth > schemaDeep || g.nodes > schemaSoftNodes || allowed == tNull) {
		return "null", nil
	}
	for _, n := range append(order, defaultTypeOrder...) {
		b := typeNames[n]
		if n == "number" {
			b = tNumber
		}
		if n != "null" && allowed&b != 0 {
			return n, nil
		}
	}
	return "null", nil
}

// rawTypeOrder is the order of p's "type" list as written.
func (g *schemaGen) rawTypeOrder(p *jsonschema.Schema) []string {
	o, _ := g.cs.rawAt(p).(*ordObj)
	if o == nil {
		return nil
	}
	switch t := o.m["type"].(type) {
	case string:
		return []string{t}
	case []any:
		var out []string
		for _, x := range t {
			if s, ok := x.(string); ok {
				out = append(out, s)
			}
		}
		return out
	}
	return nil
}

// inferType guesses the type of a schema that names none.
func inferType(flat []*jsonschema.Schema, depth int) string {
	for _, p := range flat {
		if len(p.Properties) > 0 || len(p.Required) > 0 || p.MinProperties != nil || p.MaxProperties != nil ||
			p.AdditionalProperties != nil || len(p.PatternProperties) > 0 || p.PropertyNames != nil ||
			len(p.DependentRequired) > 0 {
			return "object"
		}
	}
	for _, p := range flat {
		if p.Items != nil || p.Items2020 != nil || len(p.PrefixItems) > 0 || p.MinItems != nil ||
			p.MaxItems != nil || p.Contains != nil || p.UniqueItems {
			return "array"
		}
	}
	for _, p := range flat {
		if p.MinLength != nil || p.MaxLength != nil || p.Pattern != nil || p.Format != nil {
			return "string"
		}
	}
	for _, p := range flat {
		if p.Minimum != nil || p.Maximum != nil || p.ExclusiveMinimum != nil || p.ExclusiveMaximum != nil {
			return "number"
		}
		if p.MultipleOf != nil {
			return "integer"
		}
	}
	if depth == 0 {
		return "object"
	}
	return "string"
}

// --- objects ---

func (g *schemaGen) object(flat []*jsonschema.Schema, path string, depth int) (any, error) {
	deep := g.short(depth)

	// Property names: declared ones in the schema's order, then required ones
	// that are not declared.
	var names []string
	known := make(map[string]bool)
	for _, p := range flat {
		for _, n := range g.propertyOrder(p) {
			if !known[n] {
				known[n] = true
				names = append(names, n)
			}
		}
	}
	required := make(map[string]bool)
	for _, p := range flat {
		for _, n := range p.Required {
			required[n] = true
			if !known[n] {
				known[n] = true
				names = append(names, n)
			}
		}
	}
	minProps, maxProps := 0, -1
	for _, p := range flat {
		if p.MinProperties != nil {
			minProps = max(minProps, *p.MinProperties)
		}
		if p.MaxProperties != nil && (maxProps < 0 || *p.MaxProperties < maxProps) {
			maxProps = *p.MaxProperties
		}
	}

	emit := make(map[string]bool)
	for _, n := range names {
		if required[n] {
			emit[n] = true
		}
	}
	// dependentRequired of required properties.
	for changed := true; changed; {
		changed = false
		for _, p := range flat {
			for _, n := range sortedKeys(p.DependentRequired) {
				if emit[n] {
					for _, d := range p.DependentRequired[n] {
						if !emit[d] {
							emit[d], changed = true, true
							if !known[d] {
								known[d] = true
								names = append(names, d)
							}
						}
					}
				}
			}
		}
	}
	count := len(emit)
	optionalOK := func(n string) bool {
		if emit[n] || !allowedName(flat, n) {
			return false
		}
		for _, p := range flat {
			for _, d := range p.DependentRequired[n] {
				if !emit[d] {
					return false
				}
			}
		}
		return true
	}
	for _, n := range names {
		if maxProps >= 0 && count >= maxProps {
			break
		}
		if deep && count >= minProps {
			break
		}
		if optionalOK(n) {
			emit[n] = true
			count++
		}
	}

	obj := &ordObj{m: make(map[string]any)}
	for _, n := range names {
		if !emit[n] {
			continue
		}
		v, err := g.gen(propSchemas(flat, n), nil, path+"/"+escapePtr(n), depth+1)
		if err != nil {
			return nil, err
		}
		obj.set(n, v)
	}

	// A map-like object (no declared properties, a schema for the others) gets
	// an entry or two; minProperties is met with extra entries.
	extra := 0
	if len(names) == 0 && !deep && extraAllowed(flat) && mapLike(flat) {
		extra = 1 + g.rng.IntN(2)
	}
	if minProps-len(obj.keys) > schemaBudget {
		return nil, tooBig(flat[0], path, "minProperties %d is over the %d values the generator makes for one value", minProps, schemaBudget)
	}
	extra = max(extra, minProps-len(obj.keys))
	if maxProps >= 0 {
		extra = min(extra, maxProps-len(obj.keys))
	}
	for i := 0; i < extra && extraAllowed(flat); i++ {
		n, ok := g.extraName(flat, obj)
		if !ok {
			break
		}
		v, err := g.gen(propSchemas(flat, n), nil, path+"/"+escapePtr(n), depth+1)
		if err != nil {
			return nil, err
		}
		obj.set(n, v)
	}
	return obj, nil
}

// propertyOrder is p's declared property names, as written (sorted if the
// source cannot be found).
func (g *schemaGen) propertyOrder(p *jsonschema.Schema) []string {
	if len(p.Properties) == 0 {
		return nil
	}
	if o, _ := g.cs.rawAt(p).(*ordObj); o != nil {
		if props, _ := o.m["properties"].(*ordObj); props != nil && len(props.keys) == len(p.Properties) {
			return props.keys
		}
	}
	return sortedKeys(p.Properties)
}

// allowedName reports whether an object valid against flat may have the
// property n (additionalProperties false, propertyNames).
func allowedName(flat []*jsonschema.Schema, n string) bool {
	for _, p := range flat {
		if p.PropertyNames != nil && p.PropertyNames.Validate(n) != nil {
			return false
		}
		if _, ok := p.Properties[n]; ok {
			continue
		}
		if matchesPattern(p, n) {
			continue
		}
		if forbids(p.AdditionalProperties) || (p.UnevaluatedProperties != nil && p.UnevaluatedProperties.Bool != nil && !*p.UnevaluatedProperties.Bool) {
			return false
		}
	}
	return true
}

func forbids(ap any) bool {
	switch ap := ap.(type) {
	case bool:
		return !ap
	case *jsonschema.Schema:
		return ap != nil && ap.Bool != nil && !*ap.Bool
	}
	return false
}

func matchesPattern(p *jsonschema.Schema, n string) bool {
	for re := range p.PatternProperties {
		if re.MatchString(n) {
			return true
		}
	}
	return false
}

// extraAllowed reports whether undeclared properties are allowed at all.
func extraAllowed(flat []*jsonschema.Schema) bool {
	for _, p := range flat {
		if forbids(p.AdditionalProperties) && len(p.PatternProperties) == 0 {
			return false
		}
	}
	return true
}

// mapLike reports whether flat describes a map: a schema for undeclared
// properties or pattern properties.
func mapLike(flat []*jsonschema.Schema) bool {
	for _, p := range flat {
		if len(p.PatternProperties) > 0 {
			return true
		}
		if s, ok := p.AdditionalProperties.(*jsonschema.Schema); ok && s != nil && s.Bool == nil {
			return true
		}
	}
	return false
}

// extraName makes a new property name allowed by flat.
func (g *schemaGen) extraName(flat []*jsonschema.Schema, obj *ordObj) (string, bool) {
	var patterns []string
	for _, p := range flat {
		for _, re := range sortedPatterns(p.PatternProperties) {
			patterns = append(patterns, goPattern(re))
		}
	}
	for try := 0; try < 12; try++ {
		var n string
		if len(patterns) > 0 && try%2 == 0 {
			s, ok := g.fromRegex(patterns[g.rng.IntN(len(patterns))])
			if !ok {
				continue
			}
			n = s
		} else {
			n = strings.ToLower(strings.Join(strings.Fields(g.words(1+try/4)), "_"))
		}
		if _, dup := obj.m[n]; dup || n == "" {
			continue
		}
		if allowedName(flat, n) {
			return n, true
		}
	}
	return "", false
}

// propSchemas is what applies to the property n of an object valid against
// flat.
func propSchemas(flat []*jsonschema.Schema, n string) []*jsonschema.Schema {
	var out []*jsonschema.Schema
	for _, p := range flat {
		matched := false
		if s, ok := p.Properties[n]; ok {
			out = append(out, s)
			matched = true
		}
		for _, re := range sortedPatterns(p.PatternProperties) {
			if re.MatchString(n) {
				out = append(out, p.PatternProperties[re])
				matched = true
			}
		}
		if !matched {
			if s, ok := p.AdditionalProperties.(*jsonschema.Schema); ok && s != nil {
				out = append(out, s)
			}
		}
	}
	return out
}

func sortedPatterns(m map[jsonschema.Regexp]*jsonschema.Schema) []jsonschema.Regexp {
	out := make([]jsonschema.Regexp, 0, len(m))
	for re := range m {
		out = append(out, re)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].String() < out[j].String() })
	return out
}

func sortedKeys[V any](m map[string]V) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

func escapePtr(s string) string {
	return strings.ReplaceAll(strings.ReplaceAll(s, "~", "~0"), "/", "~1")
}

// --- arrays ---

func (g *schemaGen) array(flat []*jsonschema.Schema, path string, depth int) (any, error) {
	deep := g.short(depth)
	minItems, maxItems := 0, -1
	prefixLen := 0
	unique := false
	var contains []*jsonschema.Schema
	for _, p := range flat {
		if p.MinItems != nil {
			minItems = max(minItems, *p.MinItems)
		}
		if p.MaxItems != nil && (maxItems < 0 || *p.MaxItems < maxItems) {
			maxItems = *p.MaxItems
		}
		prefix, rest := arrayParts(p)
		prefixLen = max(prefixLen, len(prefix))
		if rest != nil && rest.Bool != nil && !*rest.Bool {
			if maxItems < 0 || len(prefix) < maxItems {
				maxItems = len(prefix)
			}
		}
		unique = unique || p.UniqueItems
		if p.Contains != nil && (p.MinContains == nil || *p.MinContains > 0) {
			contains = append(contains, p.Contains)
			minItems = max(minItems, 1)
		}
	}
	var n int
	if deep {
		n = minItems
	} else {
		lo := max(minItems, 1, prefixLen)
		hi := max(lo, 3)
		if maxItems >= 0 {
			lo, hi = min(lo, maxItems), min(hi, maxItems)
		}
		n = lo + g.rng.IntN(hi-lo+1)
	}
	if maxItems >= 0 && n > maxItems {
		n = maxItems
	}
	if n > schemaBudget {
		return nil, tooBig(flat[0], path, "%d items are over the %d values the generator makes for one value", n, schemaBudget)
	}

	out := make([]any, 0, min(n, 64))
	seen := make(map[string]bool)
	for i := 0; i < n; i++ {
		schemas := itemSchemas(flat, i)
		if i == 0 {
			schemas = append(schemas, contains...)
		}
		var v any
		var err error
		ok := false
		for try := 0; try < 12; try++ {
			v, err = g.gen(schemas, nil, path+"/"+strconv.Itoa(i), depth+1)
			if err != nil {
				return nil, err
			}
			if !unique {
				ok = true
				break
			}
			k := encodeValue(toPlain(v))
			if !seen[k] {
				seen[k] = true
				ok = true
				break
			}
		}
		if !ok {
			if i >= minItems {
				break // shorter, but unique
			}
			return nil, genError(flat[0], path, "cannot make %d distinct items", minItems)
		}
		out = append(out, v)
	}
	return out, nil
}

// arrayParts is p's per-position item schemas and the schema for the rest,
// in either draft's spelling.
func arrayParts(p *jsonschema.Schema) (prefix []*jsonschema.Schema, rest *jsonschema.Schema) {
	if len(p.PrefixItems) > 0 || p.Items2020 != nil {
		return p.PrefixItems, p.Items2020
	}
	switch it := p.Items.(type) {
	case *jsonschema.Schema:
		return nil, it
	case []*jsonschema.Schema:
		switch ai := p.AdditionalItems.(type) {
		case *jsonschema.Schema:
			return it, ai
		case bool:
			if !ai {
				f := false
				return it, &jsonschema.Schema{Bool: &f}
			}
		}
		return it, nil
	}
	return nil, nil
}

// itemSchemas is what applies to item i of an array valid against flat.
func itemSchemas(flat []*jsonschema.Schema, i int) []*jsonschema.Schema {
	var out []*jsonschema.Schema
	for _, p := range flat {
		prefix, rest := arrayParts(p)
		if i < len(prefix) {
			out = append(out, prefix[i])
		} else if rest != nil && rest.Bool == nil {
			out = append(out, rest)
		}
	}
	return out
}

// --- strings ---

func (g *schemaGen) str(flat []*jsonschema.Schema, path string, deep bool) (any, error) {
	minLen, maxLen := 0, -1
	var format string
	var patterns []jsonschema.Regexp
	for _, p := range flat {
		if p.MinLength != nil {
			minLen = max(minLen, *p.MinLength)
		}
		if p.MaxLength != nil && (maxLen < 0 || *p.MaxLength < maxLen) {
			maxLen = *p.MaxLength
		}
		if p.Pattern != nil {
			patterns = append(patterns, p.Pattern)
		}
		if format == "" {
			if p.Format != nil {
				format = p.Format.Name
			} else if o, _ := g.cs.rawAt(p).(*ordObj); o != nil {
				format, _ = o.m["format"].(string)
			}
		}
	}
	if minLen > schemaMaxText {
		return nil, tooBig(flat[0], path, "minLength %d is over the generator's %d code points for one string", minLen, schemaMaxText)
	}
	fits := func(s string) bool {
		n := utf8.RuneCountInString(s)
		if n < minLen || (maxLen >= 0 && n > maxLen) {
			return false
		}
		for _, re := range patterns {
			if !re.MatchString(s) {
				return false
			}
		}
		return true
	}
	if format != "" {
		if s, ok := g.formatValue(format); ok {
			if fits(s) || len(patterns) == 0 {
				return s, nil
			}
		}
	}
	if len(patterns) == 0 {
		return g.text(minLen, maxLen, deep, path)
	}
	// A few natural candidates, then strings made from the pattern itself.
	for try := 0; try < 6; try++ {
		w := g.words(1 + try/2)
		fields := strings.Fields(w)
		for _, c := range []string{
			w, strings.ToLower(strings.Join(fields, "_")), strings.ToLower(strings.Join(fields, "-")),
			strings.ToUpper(w), titleCase(w), strings.Join(fields, ""),
		} {
			if fits(c) {
				return c, nil
			}
		}
	}
	for _, re := range patterns {
		for try := 0; try < 24; try++ {
			if s, ok := g.fromRegex(goPattern(re)); ok && fits(s) {
				return s, nil
			}
		}
	}
	// Give up on the pattern: the final check reports it.
	return g.text(minLen, maxLen, deep, path)
}

// text is words fitted to the length bounds (in code points), made in time
// linear in minLen and stopped when the generation is.
func (g *schemaGen) text(minLen, maxLen int, deep bool, path string) (string, error) {
	if maxLen == 0 {
		return "", nil
	}
	n := 1 + g.rng.IntN(3)
	if deep {
		n = 1
	}
	s := strings.ToValidUTF8(g.words(n), "")
	// Under a maximum length, look for words that fit whole.
	for try := 0; maxLen >= 0 && try < 8; try++ {
		if c := utf8.RuneCountInString(s); c <= maxLen && c >= minLen {
			return s, nil
		}
		n = max(1, n-1)
		s = strings.ToValidUTF8(g.words(n), "")
	}
	if count := utf8.RuneCountInString(s); count < minLen {
		var b strings.Builder
		b.Grow(min(minLen, schemaMaxText) + 64)
		b.WriteString(s)
		for i := 0; count < minLen; i++ {
			if i%256 == 255 {
				if err := g.stopped(path); err != nil {
					return "", err
				}
			}
			w := strings.ToValidUTF8(g.words(4), "")
			if w == "" || i > 10000 {
				w = "lorem ipsum"
			}
			if b.Len() > 0 {
				b.WriteByte(' ')
				count++
			}
			b.WriteString(w)
			count += utf8.RuneCountInString(w)
		}
		s = b.String()
	}
	if maxLen >= 0 && utf8.RuneCountInString(s) > maxLen {
		r := []rune(s)[:maxLen]
		s = string(r)
		if t := strings.TrimRight(s, " "); utf8.RuneCountInString(t) >= max(minLen, 1) {
			s = t
		}
	}
	return s, nil
}

func titleCase(s string) string {
	f := strings.Fields(s)
	for i, w := range f {
		r, n := utf8.DecodeRuneInString(w)
		f[i] = string(unicode.ToUpper(r)) + w[n:]
	}
	return strings.Join(f, " ")
}

// formatValue is a valid example of a string format.
func (g *schemaGen) formatValue(format string) (string, bool) {
	r := g.rng
	word := func() string {
		f := strings.Fields(strings.ToLower(g.words(1)))
		w := ""
		if len(f) > 0 {
			w = f[0]
		}
		var b strings.Builder
		for _, c := range w {
			if c < 128 && (unicode.IsLetter(c) || unicode.IsDigit(c)) {
				b.WriteRune(c)
			}
		}
		if b.Len() == 0 {
			return "item"
		}
		return b.String()
	}
	date := func() string {
		return fmt.Sprintf("%04d-%02d-%02d", 2020+r.IntN(6), 1+r.IntN(12), 1+r.IntN(28))
	}
	tod := func() string {
		return fmt.Sprintf("%02d:%02d:%02d", r.IntN(24), r.IntN(60), r.IntN(60))
	}
	switch format {
	case "date-time":
		return date() + "T" + tod() + "Z", true
	case "date":
		return date(), true
	case "time":
		return tod() + "Z", true
	case "duration":
		return fmt.Sprintf("P%dDT%dH%dM", r.IntN(10), r.IntN(24), 1+r.IntN(59)), true
	case "email", "idn-email":
		return word() + "." + word() + "@example.com", true
	case "uri", "url", "iri":
		return "https://example.com/" + word() + "/" + word(), true
	case "uri-reference", "iri-reference":
		return "/" + word() + "/" + word(), true
	case "uri-template":
		return "https://example.com/" + word() + "/{id}", true
	case "uuid":
		var b [16]byte
		for i := range b {
			b[i] = byte(r.IntN(256))
		}
		b[6] = b[6]&0x0f | 0x40
		b[8] = b[8]&0x3f | 0x80
		return fmt.Sprintf("%x-%x-%x-%x-%x", b[0:4], b[4:6], b[6:8], b[8:10], b[10:16]), true
	case "ipv4":
		return fmt.Sprintf("192.0.2.%d", 1+r.IntN(254)), true
	case "ipv6":
		return fmt.Sprintf("2001:db8::%x", 1+r.IntN(0xfffe)), true
	case "hostname", "idn-hostname":
		return word() + ".example.com", true
	case "json-pointer":
		return "/" + word() + "/" + strconv.Itoa(r.IntN(10)), true
	case "relative-json-pointer":
		return strconv.Itoa(r.IntN(3)) + "/" + word(), true
	case "regex":
		return "^" + word() + "[0-9]*$", true
	case "semver":
		return fmt.Sprintf("%d.%d.%d", r.IntN(5), r.IntN(20), r.IntN(20)), true
	case "byte", "base64":
		return "c2ltdWxhdGVk", true
	case "int32", "int64":
		return strconv.Itoa(r.IntN(1000)), true
	case "phone":
		return fmt.Sprintf("+1-555-%03d-%04d", r.IntN(1000), r.IntN(10000)), true
	}
	return "", false
}

// fromRegex makes a string that the pattern (Go syntax, as the validator
// compiled it) should match, by walking its parse tree. It is not a matcher;
// the caller checks the result.
func (g *schemaGen) fromRegex(pattern string) (string, bool) {
	re, ok := g.patterns[pattern]
	if !ok {
		var err error
		if re, err = syntax.Parse(pattern, syntax.Perl); err != nil {
			re = nil
		}
		if g.patterns != nil {
			g.patterns[pattern] = re
		}
	}
	if re == nil {
		return "", false
	}
	var b strings.Builder
	if !g.regexWalk(re, &b, 0) {
		return "", false
	}
	return b.String(), utf8.ValidString(b.String())
}

func (g *schemaGen) regexWalk(re *syntax.Regexp, b *strings.Builder, depth int) bool {
	if depth > 50 || b.Len() > 4096 {
		return false
	}
	repeat := func(lo, hi int) bool {
		if hi < 0 || hi > lo+3 {
			hi = lo + 3
		}
		n := lo + g.rng.IntN(hi-lo+1)
		for i := 0; i < n; i++ {
			if !g.regexWalk(re.Sub[0], b, depth+1) {
				return false
			}
		}
		return true
	}
	switch re.Op {
	case syntax.OpNoMatch:
		return false
	case syntax.OpEmptyMatch, syntax.OpBeginLine, syntax.OpEndLine, syntax.OpBeginText, syntax.OpEndText,
		syntax.OpWordBoundary, syntax.OpNoWordBoundary:
		return true
	case syntax.OpLiteral:
		for _, r := range re.Rune {
			b.WriteRune(r)
		}
		return true
	case syntax.OpCharClass:
		r, ok := g.classRune(re.Rune)
		if ok {
			b.WriteRune(r)
		}
		return ok
	case syntax.OpAnyChar, syntax.OpAnyCharNotNL:
		b.WriteByte(byte('a' + g.rng.IntN(26)))
		return true
	case syntax.OpCapture:
		return g.regexWalk(re.Sub[0], b, depth+1)
	case syntax.OpStar:
		return repeat(0, 3)
	case syntax.OpPlus:
		return repeat(1, 3)
	case syntax.OpQuest:
		return repeat(0, 1)
	case syntax.OpRepeat:
		return repeat(re.Min, re.Max)
	case syntax.OpConcat:
		for _, s := range re.Sub {
			if !g.regexWalk(s, b, depth+1) {
				return false
			}
		}
		return true
	case syntax.OpAlternate:
		return g.regexWalk(re.Sub[g.rng.IntN(len(re.Sub))], b, depth+1)
	}
	return false
}

// classRune picks a rune from a character class (pairs of inclusive ranges),
// printable ASCII where the class has some.
func (g *schemaGen) classRune(ranges []rune) (rune, bool) {
	if len(ranges) < 2 {
		return 0, false
	}
	var nice []rune
	for c := rune(0x20); c < 0x7f; c++ {
		for i := 0; i+1 < len(ranges); i += 2 {
			if c >= ranges[i] && c <= ranges[i+1] {
				nice = append(nice, c)
				break
			}
		}
	}
	// Prefer letters and digits over punctuation.
	var alnum []rune
	for _, c := range nice {
		if unicode.IsLetter(c) || unicode.IsDigit(c) {
			alnum = append(alnum, c)
		}
	}
	if len(alnum) > 0 {
		return alnum[g.rng.IntN(len(alnum))], true
	}
	if len(nice) > 0 {
		return nice[g.rng.IntN(len(nice))], true
	}
	for try := 0; try < 8; try++ {
		i := 2 * g.rng.IntN(len(ranges)/2)
		lo, hi := ranges[i], ranges[i+1]
		c := lo + rune(g.rng.IntN(int(min(hi-lo, 255))+1))
		if utf8.ValidRune(c) && c >= 0x20 {
			return c, true
		}
	}
	return 0, false
}

// --- numbers ---

func (g *schemaGen) number(flat []*jsonschema.Schema, integer bool, path string, deep bool) (any, error) {
	var lo, hi *big.Rat
	var loEx, hiEx bool
	tighten := func(b *big.Rat, ex bool, isLo bool) {
		if b == nil {
			return
		}
		cur, curEx := hi, hiEx
		if isLo {
			cur, curEx = lo, loEx
		}
		c := 0
		if cur != nil {
			c = b.Cmp(cur)
			if !isLo {
				c = -c
			}
		}
		if cur == nil || c > 0 || (c == 0 && ex && !curEx) {
			if isLo {
				lo, loEx = b, ex
			} else {
				hi, hiEx = b, ex
			}
		}
	}
	var step *big.Rat
	for _, p := range flat {
		tighten(p.Minimum, false, true)
		tighten(p.ExclusiveMinimum, true, true)
		tighten(p.Maximum, false, false)
		tighten(p.ExclusiveMaximum, true, false)
		if p.MultipleOf != nil && p.MultipleOf.Sign() > 0 {
			if step == nil {
				step = new(big.Rat).Set(p.MultipleOf)
			} else {
				step = ratLCM(step, p.MultipleOf)
			}
		}
	}
	if integer {
		if step == nil {
			step = big.NewRat(1, 1)
		} else {
			step = ratLCM(step, big.NewRat(1, 1))
		}
	}
	// Default range: 0..100, or 100 wide from the one bound given.
	hundred := big.NewRat(100, 1)
	switch {
	case lo == nil && hi == nil:
		lo, hi = new(big.Rat), hundred
	case lo == nil:
		lo = new(big.Rat).Sub(hi, hundred)
	case hi == nil:
		hi = new(big.Rat).Add(lo, hundred)
	}
	steps := []*big.Rat{step}
	if step == nil {
		steps = []*big.Rat{big.NewRat(1, 100), big.NewRat(1, 1_000_000), big.NewRat(1, 1_000_000_000_000)}
	}
	for _, s := range steps {
		kmin := ratCeil(new(big.Rat).Quo(lo, s))
		if loEx && new(big.Rat).SetInt(kmin).Cmp(new(big.Rat).Quo(lo, s)) == 0 {
			kmin.Add(kmin, big.NewInt(1))
		}
		kmax := ratFloor(new(big.Rat).Quo(hi, s))
		if hiEx && new(big.Rat).SetInt(kmax).Cmp(new(big.Rat).Quo(hi, s)) == 0 {
			kmax.Sub(kmax, big.NewInt(1))
		}
		if kmin.Cmp(kmax) > 0 {
			continue
		}
		k := new(big.Int).Set(kmin)
		if !deep {
			span := new(big.Int).Sub(kmax, kmin)
			limit := int64(1) << 40
			if span.IsInt64() && span.Int64() < limit {
				limit = span.Int64() + 1
			}
			k.Add(k, big.NewInt(g.rng.Int64N(limit)))
		}
		v := new(big.Rat).Mul(new(big.Rat).SetInt(k), s)
		return json.Number(ratString(v)), nil
	}
	var s *jsonschema.Schema
	if len(flat) > 0 {
		s = flat[0]
	}
	return nil, genError(s, path, "no number satisfies the bounds and multipleOf")
}

func ratCeil(r *big.Rat) *big.Int {
	q, m := new(big.Int).DivMod(r.Num(), r.Denom(), new(big.Int)) // floor division (Denom > 0)
	if m.Sign() != 0 {
		q.Add(q, big.NewInt(1))
	}
	return q
}

func ratFloor(r *big.Rat) *big.Int {
	q, _ := new(big.Int).DivMod(r.Num(), r.Denom(), new(big.Int))
	return q
}

// ratLCM is the least common multiple of two positive rationals.
func ratLCM(a, b *big.Rat) *big.Rat {
	// lcm(p/q, r/s) = lcm(p, r) / gcd(q, s), both in lowest terms.
	gp := new(big.Int).GCD(nil, nil, a.Num(), b.Num())
	l := new(big.Int).Mul(a.Num(), b.Num())
	l.Quo(l, gp)
	d := new(big.Int).GCD(nil, nil, a.Denom(), b.Denom())
	return new(big.Rat).SetFrac(l, d)
}

// ratString writes r as a JSON number: an integer, or an exact decimal where
// the denominator allows (it always does for bounds and multipleOf written in
// JSON).
func ratString(r *big.Rat) string {
	if r.IsInt() {
		return r.Num().String()
	}
	d := new(big.Int).Set(r.Denom())
	two, five := big.NewInt(2), big.NewInt(5)
	digits := 0
	for _, f := range []*big.Int{two, five} {
		n := 0
		for new(big.Int).Mod(d, f).Sign() == 0 {
			d.Quo(d, f)
			n++
		}
		digits = max(digits, n)
	}
	if d.Cmp(big.NewInt(1)) != 0 {
		digits = 12
	}
	s := r.FloatString(digits)
	if strings.Contains(s, ".") {
		s = strings.TrimRight(strings.TrimRight(s, "0"), ".")
	}
	if s == "-0" {
		s = "0"
	}
	return s
}

// --- values ---

// ordObj is a JSON object that keeps its keys' order.
type ordObj struct {
	keys []string
	m    map[string]any
}

func (o *ordObj) set(k string, v any) {
	if _, ok := o.m[k]; !ok {
		o.keys = append(o.keys, k)
	}
	o.m[k] = v
}

// toPlain turns a generated value into the validator's form.
func toPlain(v any) any {
	switch v := v.(type) {
	case *ordObj:
		m := make(map[string]any, len(v.m))
		for k, x := range v.m {
			m[k] = toPlain(x)
		}
		return m
	case []any:
		out := make([]any, len(v))
		for i, x := range v {
			out[i] = toPlain(x)
		}
		return out
	}
	return v
}

// encodeValue writes v as compact JSON: *ordObj in its order, maps sorted.
func encodeValue(v any) string {
	var b bytes.Buffer
	writeValue(&b, v)
	return b.String()
}

func writeValue(b *bytes.Buffer, v any) {
	switch v := v.(type) {
	case nil:
		b.WriteString("null")
	case bool:
		b.WriteString(strconv.FormatBool(v))
	case json.Number:
		b.WriteString(string(v))
	case string:
		writeString(b, v)
	case []any:
		b.WriteByte('[')
		for i, x := range v {
			if i > 0 {
				b.WriteByte(',')
			}
			writeValue(b, x)
		}
		b.WriteByte(']')
	case *ordObj:
		b.WriteByte('{')
		for i, k := range v.keys {
			if i > 0 {
				b.WriteByte(',')
			}
			writeString(b, k)
			b.WriteByte(':')
			writeValue(b, v.m[k])
		}
		b.WriteByte('}')
	case map[string]any:
		b.WriteByte('{')
		for i, k := range sortedKeys(v) {
			if i > 0 {
				b.WriteByte(',')
			}
			writeString(b, k)
			b.WriteByte(':')
			writeValue(b, v[k])
		}
		b.WriteByte('}')
	default:
		// Other numbers, from a caller's const: let encoding/json write them.
		out, err := json.Marshal(v)
		if err != nil {
			out = []byte("null")
		}
		b.Write(out)
	}
}

func writeString(b *bytes.Buffer, s string) {
	var tmp bytes.Buffer
	enc := json.NewEncoder(&tmp)
	enc.SetEscapeHTML(false)
	_ = enc.Encode(strings.ToValidUTF8(s, "\uFFFD"))
	b.Write(bytes.TrimRight(tmp.Bytes(), "\n"))
}

// --- the schema's source, in order ---

// rawAt is the source of the compiled schema s, if it is in the inline
// document.
func (cs *compiledSchema) rawAt(s *jsonschema.Schema) any {
	ptr, ok := strings.CutPrefix(s.Location, schemaURL+"#")
	if !ok {
		return nil
	}
	node := cs.raw
	if ptr == "" {
		return node
	}
	for _, tok := range strings.Split(strings.TrimPrefix(ptr, "/"), "/") {
		tok = strings.ReplaceAll(strings.ReplaceAll(tok, "~1", "/"), "~0", "~")
		switch n := node.(type) {
		case *ordObj:
			node = n.m[tok]
		case []any:
			i, err := strconv.Atoi(tok)
			if err != nil || i < 0 || i >= len(n) {
				return nil
			}
			node = n[i]
		default:
			return nil
		}
	}
	return node
}

// parseOrdered parses JSON keeping the order of object keys.
func parseOrdered(data []byte) (any, error) {
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	var parse func() (any, error)
	parse = func() (any, error) {
		tok, err := dec.Token()
		if err != nil {
			return nil, err
		}
		switch t := tok.(type) {
		case json.Delim:
			switch t {
			case '{':
				o := &ordObj{m: make(map[string]any)}
				for dec.More() {
					kt, err := dec.Token()
					if err != nil {
						return nil, err
					}
					k, _ := kt.(string)
					v, err := parse()
					if err != nil {
						return nil, err
					}
					o.set(k, v)
				}
				_, err := dec.Token()
				return o, err
			case '[':
				var arr []any
				for dec.More() {
					v, err := parse()
					if err != nil {
						return nil, err
					}
					arr = append(arr, v)
				}
				_, err := dec.Token()
				return arr, err
			}
			return nil, fmt.Errorf("unexpected %v", t)
		default:
			return t, nil
		}
	}
	return parse()
}
