package sim

import (
	"math/rand/v2"
	"strings"
	"sync"
	"unicode"
	"unicode/utf8"

	"github.com/parleyhq/parley/server/llm"
	"github.com/parleyhq/parley/server/tokenize"
)

// chain is an order-2 word Markov chain over the corpus: readable English that
// never says anything, which is all a simulated model should do.
type chain struct {
	starts [][2]string // word pairs that begin a sentence
	next   map[[2]string][]string
}

var corpusChain = sync.OnceValue(func() *chain {
	words := strings.Fields(strings.NewReplacer("(", "", ")", "").Replace(corpus))
	c := &chain{next: make(map[[2]string][]string)}
	for i := 0; i+1 < len(words); i++ {
		key := [2]string{words[i], words[i+1]}
		if i+2 < len(words) {
			c.next[key] = append(c.next[key], words[i+2])
		}
		if (i == 0 || endsSentence(words[i-1])) && unicode.IsUpper(rune(words[i][0])) {
			c.starts = append(c.starts, key)
		}
	}
	return c
})

// write returns whole sentences totalling at least targetWords words, with a
// paragraph break every few sentences.
func (c *chain) write(rng *rand.Rand, targetWords int) string {
	var b strings.Builder
	words, sentences := 0, 0
	for words < targetWords {
		if sentences > 0 {
			if sentences%4 == 0 {
				b.WriteString("\n\n")
			} else {
				b.WriteByte(' ')
			}
		}
		pair := c.starts[rng.IntN(len(c.starts))]
		b.WriteString(pair[0] + " " + pair[1])
		n := 2
		for !endsSentence(pair[1]) && n < 100 {
			next := c.next[pair]
			if len(next) == 0 {
				break
			}
			w := next[rng.IntN(len(next))]
			b.WriteString(" " + w)
			pair = [2]string{pair[1], w}
			n++
		}
		if !endsSentence(pair[1]) {
			// Cut off mid-sentence (rare): end it properly.
			s := strings.TrimRight(b.String(), ",;:-")
			b.Reset()
			b.WriteString(s + ".")
		}
		words += n
		sentences++
	}
	return b.String()
}

func endsSentence(w string) bool {
	return strings.HasSuffix(w, ".") || strings.HasSuffix(w, "!") || strings.HasSuffix(w, "?")
}

// plan is a completion worked out in advance: the deltas to stream, how it ends,
// and how many decode steps it takes.
type plan struct {
	deltas []delta
	finish llm.FinishReason
	steps  int
}

// delta is one streamed piece: the text of one token, or of the few tokens that
// together complete a multi-byte character; end is the number of completion tokens
// produced once it is.
type delta struct {
	text   string
	tokens int
	end    int
	// call is the tool call the delta belongs to (its text is more of the
	// call's arguments), or -1 for answer text; id and name are set on the
	// first delta of each call.
	call     int
	id, name string
}

// makePlan cuts text at the first stop string, tokenizes it and bounds it by
// maxTokens. A stop finish costs one step more than its tokens: the model's
// end-of-sequence token, which is not streamed.
func makePlan(tok *tokenize.Tokenizer, text string, stop []string, maxTokens int) plan {
	cut := len(text)
	for _, s := range stop {
		if i := strings.Index(text, s); s != "" && i >= 0 && i < cut {
			cut = i
		}
	}
	ids := tok.Encode(text[:cut])
	p := plan{finish: llm.FinishStop, steps: len(ids) + 1}
	if len(ids) > maxTokens {
		ids = ids[:maxTokens]
		p.finish, p.steps = llm.FinishLength, maxTokens
	}
	p.deltas = splitDeltas(tok, ids)
	return p
}

// splitDeltas gives each token its own delta, except that tokens ending inside a
// UTF-8 character are held until the character completes, so every delta is
// valid text. Trailing tokens that never complete one (a completion cut by
// maxTokens) are dropped.
func splitDeltas(tok *tokenize.Tokenizer, ids []int) []delta {
	out := make([]delta, 0, len(ids))
	pending, n := "", 0
	for i, id := range ids {
		pending += tok.Token(id)
		n++
		if utf8.ValidString(pending) {
			out = append(out, delta{text: pending, tokens: n, end: i + 1, call: -1})
			pending, n = "", 0
		}
	}
	return out
}

// makeCallPlan streams tool calls: each call's name (its tokens on the first
// delta, which carries the id and name) and then its arguments token by
// token, bounded by maxTokens (a cut call ends in FinishLength with its
// arguments incomplete, as a real model's would).
func makeCallPlan(tok *tokenize.Tokenizer, calls []llm.ToolCall, maxTokens int) plan {
	p := plan{finish: llm.FinishToolCalls}
	used := 0
	for i, c := range calls {
		nameTokens := max(tok.Count(c.Name), 1)
		if used+nameTokens > maxTokens {
			p.finish = llm.FinishLength
			break
		}
		used += nameTokens
		p.deltas = append(p.deltas, delta{tokens: nameTokens, end: used, call: i, id: c.ID, name: c.Name})
		args := splitDeltas(tok, tok.Encode(c.Arguments))
		for _, d := range args {
			if used+d.tokens > maxTokens {
				p.finish = llm.FinishLength
				break
			}
			used += d.tokens
			p.deltas = append(p.deltas, delta{text: d.text, tokens: d.tokens, end: used, call: i})
		}
		if p.finish == llm.FinishLength {
			break
		}
	}
	p.steps = used + 1
	if p.finish == llm.FinishLength {
		p.steps = used
	}
	return p
}

// tokens returns the completion tokens the plan produces (streamed or not).
func (p plan) tokens() int {
	if p.finish == llm.FinishLength {
		return p.steps
	}
	return p.steps - 1
}
