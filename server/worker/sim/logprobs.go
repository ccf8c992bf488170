package sim

import (
	"strings"

	"github.com/parleyhq/parley/server/llm"
	"github.com/parleyhq/parley/server/tokenize"
)

// logprobs makes the simulated log probabilities of output tokens: each
// token's value is derived from the token and its position, so it is
// deterministic, at most 0, and the emitted token is always the most likely
// at its position (greedy decoding). The alternatives are other vocabulary
// tokens with lower values. Nothing here is a real model's belief.
type logprobs struct {
	tok *tokenize.Tokenizer
	pos int
}

// of returns the log probabilities of text's tokens, with top alternatives
// each (the token itself first).
func (l *logprobs) of(text string, top int) []llm.TokenLogprob {
	ids := l.tok.Encode(text)
	out := make([]llm.TokenLogprob, 0, len(ids))
	for _, id := range ids {
		l.pos++
		h := fnvUint64(fnvUint64(fnvOffset, uint64(id)), uint64(l.pos))
		lp := -float64(h%4000) / 1000 * float64(h%7) / 6 // in [-4, 0]
		t := l.tok.Token(id)
		p := llm.TokenLogprob{Token: validText(t), Logprob: lp, Bytes: []byte(t)}
		for k := range top {
			if k == 0 {
				p.Top = append(p.Top, llm.TopLogprob{Token: p.Token, Logprob: lp, Bytes: p.Bytes})
				continue
			}
			alt := int((h >> (8 * k)) % 50000)
			if alt == id {
				alt++
			}
			at := l.tok.Token(alt)
			p.Top = append(p.Top, llm.TopLogprob{
				Token: validText(at), Logprob: lp - 0.5*float64(k) - float64((h>>(4*k))%1000)/1000, Bytes: []byte(at)})
		}
		out = append(out, p)
	}
	return out
}

// validText is s with bytes that are not UTF-8 (a token can be part of a
// character) dropped: the Bytes field keeps them.
func validText(s string) string { return strings.ToValidUTF8(s, "") }
