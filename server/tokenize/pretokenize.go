package tokenize

import (
	"unicode"
	"unicode/utf8"
)

// nextPiece returns the end of the pre-tokenizer piece that starts at byte i of s
// (valid UTF-8). It is a hand-written, backtracking-exact equivalent of o200k_base's
// pattern, matched leftmost with regexp2 by tiktoken:
//
//	[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]*[\p{Ll}\p{Lm}\p{Lo}\p{M}]+(?i:'s|'t|'re|'ve|'m|'ll|'d)?
//	|[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]+[\p{Ll}\p{Lm}\p{Lo}\p{M}]*(?i:'s|'t|'re|'ve|'m|'ll|'d)?
//	|\p{N}{1,3}
//	| ?[^\s\p{L}\p{N}]+[\r\n/]*
//	|\s*[\r\n]+
//	|\s+(?!\S)
//	|\s+
//
// Every character matches some alternative, so pieces tile s.
func nextPiece(s string, i int) int {
	k0, w0 := kindAt(s, i)
	prefix := k0&(kLetter|kNumber|kNewline) == 0
	if prefix {
		if j := upperThenLower(s, i+w0); j > 0 {
			return contraction(s, j)
		}
	}
	if j := upperThenLower(s, i); j > 0 {
		return contraction(s, j)
	}
	if prefix {
		if j := upperRun(s, i+w0); j > 0 {
			return contraction(s, j)
		}
	}
	if j := upperRun(s, i); j > 0 {
		return contraction(s, j)
	}
	if k0&kNumber != 0 {
		j := i + w0
		for n := 1; n < 3 && j < len(s); n++ {
			k, w := kindAt(s, j)
			if k&kNumber == 0 {
				break
			}
			j += w
		}
		return j
	}
	if j := punctuation(s, i); j > 0 {
		return j
	}
	// Whitespace: the only kind left.
	end := i
	lastNewline := -1
	lastStart := i
	for end < len(s) {
		k, w := kindAt(s, end)
		if k&kSpace == 0 {
			break
		}
		if k&kNewline != 0 {
			lastNewline = end
		}
		lastStart = end
		end += w
	}
	switch {
	case end == i:
		return i + w0 // unreachable for valid input; guarantees progress
	case lastNewline >= 0: // \s*[\r\n]+
		return lastNewline + 1
	case end == len(s): // \s+(?!\S) at the end of the text
		return end
	case lastStart > i: // \s+(?!\S): leave the last space to prefix the next word
		return lastStart
	default: // \s+
		return end
	}
}

// upperThenLower matches [U]*[L]+ at p (U = Lu Lt Lm Lo M, L = Ll Lm Lo M) and
// returns its end, or -1.
func upperThenLower(s string, p int) int {
	e := p
	bothEnd := -1 // the end of the U run's rightmost character that is also in L
	for e < len(s) {
		k, w := kindAt(s, e)
		if k&kUpper == 0 {
			break
		}
		if k&kLower != 0 {
			bothEnd = e + w
		}
		e += w
	}
	if e < len(s) {
		if k, _ := kindAt(s, e); k&kLower != 0 {
			return lowerRun(s, e)
		}
	}
	// Backtrack the U run to its rightmost character that L+ accepts; everything
	// after it is upper-only, so L+ ends right there.
	return bothEnd
}

// upperRun matches [U]+[L]* at p and returns its end, or -1.
func upperRun(s string, p int) int {
	e := p
	for e < len(s) {
		k, w := kindAt(s, e)
		if k&kUpper == 0 {
			break
		}
		e += w
	}
	if e == p {
		return -1
	}
	return lowerRun(s, e)
}

// lowerRun returns the end of the run of L characters at p.
func lowerRun(s string, p int) int {
	for p < len(s) {
		k, w := kindAt(s, p)
		if k&kLower == 0 {
			break
		}
		p += w
	}
	return p
}

// contraction extends a letter piece ending at j by (?i:'s|'t|'re|'ve|'m|'ll|'d)?.
func contraction(s string, j int) int {
	if j+1 >= len(s) || s[j] != '\'' {
		return j
	}
	switch s[j+1] | 0x20 {
	case 's', 't', 'm', 'd':
		return j + 2
	case 'r', 'v':
		if j+2 < len(s) && s[j+2]|0x20 == 'e' {
			return j + 3
		}
	case 'l':
		if j+2 < len(s) && s[j+2]|0x20 == 'l' {
			return j + 3
		}
	}
	return j
}

// punctuation matches " ?[^\s\p{L}\p{N}]+[\r\n/]*" at i and returns its end, or -1.
func punctuation(s string, i int) int {
	p := i
	if s[p] == ' ' {
		p++
	}
	e := p
	for e < len(s) {
		k, w := kindAt(s, e)
		if k&(kSpace|kLetter|kNumber) != 0 {
			break
		}
		e += w
	}
	if e == p {
		return -1
	}
	for e < len(s) && (s[e] == '\r' || s[e] == '\n' || s[e] == '/') {
		e++
	}
	return e
}

// Character kinds, as bits: one character may be several.
const (
	kUpper   = 1 << iota // \p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}
	kLower               // \p{Ll}\p{Lm}\p{Lo}\p{M}
	kLetter              // \p{L}
	kNumber              // \p{N}
	kSpace               // \s (unicode.IsSpace, as regexp2 has it)
	kNewline             // \r or \n
)

var asciiKinds = func() (t [utf8.RuneSelf]uint8) {
	for r := range rune(utf8.RuneSelf) {
		t[r] = kindOf(r)
	}
	return t
}()

// kindAt returns the kind and width of the character at byte i of s.
func kindAt(s string, i int) (uint8, int) {
	if c := s[i]; c < utf8.RuneSelf {
		return asciiKinds[c], 1
	}
	r, w := utf8.DecodeRuneInString(s[i:])
	return kindOf(r), w
}

func kindOf(r rune) uint8 {
	switch {
	case r == '\r' || r == '\n':
		return kSpace | kNewline
	case unicode.IsSpace(r):
		return kSpace
	case unicode.In(r, unicode.Lu, unicode.Lt):
		return kUpper | kLetter
	case unicode.Is(unicode.Ll, r):
		return kLower | kLetter
	case unicode.In(r, unicode.Lm, unicode.Lo):
		return kUpper | kLower | kLetter
	case unicode.Is(unicode.M, r):
		return kUpper | kLower
	case unicode.Is(unicode.N, r):
		return kNumber
	}
	return 0
}
