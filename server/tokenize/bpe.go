package tokenize

import "math"

// stackParts bounds the pieces merged without a heap allocation; longer pieces
// (long runs of spaces or punctuation) are rare.
const stackParts = 64

// part is a boundary of the byte-pair merge: where a token starts and the rank of
// merging it with its successor (math.MaxInt when there is no such token).
type part struct {
	start, rank int
}

func (t *Tokenizer) countPiece(piece string) int {
	if _, ok := t.ranks[piece]; ok {
		return 1
	}
	var buf [stackParts]part
	return len(t.merge(piece, buf[:0])) - 1
}

func (t *Tokenizer) appendPiece(ids []int, piece string) []int {
	if id, ok := t.ranks[piece]; ok {
		return append(ids, id)
	}
	var buf [stackParts]part
	parts := t.merge(piece, buf[:0])
	for i := 0; i+1 < len(parts); i++ {
		ids = append(ids, t.ranks[piece[parts[i].start:parts[i+1].start]])
	}
	return ids
}

// merge runs tiktoken's byte-pair merge over piece and returns the token
// boundaries (the last entry is len(piece)): repeatedly join the adjacent pair with
// the lowest rank, leftmost first.
func (t *Tokenizer) merge(piece string, parts []part) []part {
	for i := 0; i <= len(piece); i++ {
		parts = append(parts, part{start: i, rank: math.MaxInt})
	}
	rank := func(i, skip int) int {
		if i+skip+2 < len(parts) {
			if r, ok := t.ranks[piece[parts[i].start:parts[i+skip+2].start]]; ok {
				return r
			}
		}
		return math.MaxInt
	}
	for i := 0; i+2 < len(parts); i++ {
		parts[i].rank = rank(i, 0)
	}
	for len(parts) > 1 {
		best, at := math.MaxInt, -1
		for i := 0; i+1 < len(parts); i++ {
			if parts[i].rank < best {
				best, at = parts[i].rank, i
			}
		}
		if at < 0 {
			break
		}
		parts[at].rank = rank(at, 1)
		if at > 0 {
			parts[at-1].rank = rank(at-1, 1)
		}
		parts = append(parts[:at+1], parts[at+2:]...)
	}
	return parts
}
