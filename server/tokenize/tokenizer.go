package tokenize

import (
	"fmt"
	"strings"
	"sync"
	"unicode/utf8"

	tiktoken_loader "github.com/pkoukk/tiktoken-go-loader"
)

// Encoding is the name of the BPE encoding the tokenizer implements.
const Encoding = "o200k_base"

// specialTokens are o200k_base's special tokens. Encode never produces them (text that
// spells one is encoded as ordinary text), but Decode renders them.
var specialTokens = map[string]int{
	"<|endoftext|>":   199999,
	"<|endofprompt|>": 200018,
}

// Tokenizer encodes text to o200k_base token ids and back. It is immutable and safe
// for concurrent use.
type Tokenizer struct {
	ranks  map[string]int // token bytes → id
	tokens []string       // id → token bytes ("" where the id is unused)
}

var (
	defaultOnce sync.Once
	defaultTok  *Tokenizer
)

// Default returns the process's tokenizer, loading it on first use (about a
// hundred milliseconds). It panics only if the embedded BPE file is broken, which is
// a build defect rather than a runtime condition.
func Default() *Tokenizer {
	defaultOnce.Do(func() {
		t, err := load()
		if err != nil {
			panic(fmt.Sprintf("tokenize: loading embedded %s: %v", Encoding, err))
		}
		defaultTok = t
	})
	return defaultTok
}

func load() (*Tokenizer, error) {
	ranks, err := tiktoken_loader.NewOfflineLoader().LoadTiktokenBpe(Encoding + ".tiktoken")
	if err != nil {
		return nil, err
	}
	if len(ranks) == 0 {
		return nil, fmt.Errorf("no ranks")
	}
	maxID := 0
	for _, id := range ranks {
		maxID = max(maxID, id)
	}
	for _, id := range specialTokens {
		maxID = max(maxID, id)
	}
	tokens := make([]string, maxID+1)
	for tok, id := range ranks {
		if id < 0 {
			return nil, fmt.Errorf("negative rank %d", id)
		}
		tokens[id] = tok
	}
	for b := range 256 {
		if _, ok := ranks[string([]byte{byte(b)})]; !ok {
			return nil, fmt.Errorf("byte %#x has no rank", b)
		}
	}
	for tok, id := range specialTokens {
		tokens[id] = tok
	}
	return &Tokenizer{ranks: ranks, tokens: tokens}, nil
}

// Count returns the number of tokens Encode would return, without allocating for
// valid UTF-8 text.
func (t *Tokenizer) Count(s string) int {
	s = validUTF8(s)
	n := 0
	for i := 0; i < len(s); {
		j := nextPiece(s, i)
		n += t.countPiece(s[i:j])
		i = j
	}
	return n
}

// Encode returns the token ids of s. Invalid UTF-8 bytes are encoded as U+FFFD, as
// tiktoken does.
func (t *Tokenizer) Encode(s string) []int {
	s = validUTF8(s)
	ids := make([]int, 0, len(s)/3+1)
	for i := 0; i < len(s); {
		j := nextPiece(s, i)
		ids = t.appendPiece(ids, s[i:j])
		i = j
	}
	return ids
}

// Decode returns the text of ids. A token can end inside a multi-byte UTF-8
// character, so decoding a prefix of a sequence may return invalid UTF-8; unknown
// ids are skipped.
func (t *Tokenizer) Decode(ids []int) string {
	n := 0
	for _, id := range ids {
		n += len(t.Token(id))
	}
	var b strings.Builder
	b.Grow(n)
	for _, id := range ids {
		b.WriteString(t.Token(id))
	}
	return b.String()
}

// Token returns the bytes of one token id ("" for an unknown id), without
// allocating: the way to stream a sequence token by token.
func (t *Tokenizer) Token(id int) string {
	if id < 0 || id >= len(t.tokens) {
		return ""
	}
	return t.tokens[id]
}

// validUTF8 replaces each invalid byte with U+FFFD, as Go's []rune conversion (and so
// tiktoken-go) does.
func validUTF8(s string) string {
	if utf8.ValidString(s) {
		return s
	}
	return string([]rune(s))
}
