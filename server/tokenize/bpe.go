package tokenize

import (
	"container/heap"
	"math"
)

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
	if len(piece) > largePiece {
		return t.mergeLarge(piece, parts)
	}
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

// largePiece is the length above which merge switches from the quadratic
// scan (fastest for the short pieces of ordinary text) to a heap: a long run
// without spaces — an attacker's 5 MB of letters — would otherwise cost
// O(n²) CPU.
const largePiece = 256

// mergeLarge is merge in O(n log n): a doubly linked list of boundaries and a
// min-heap of (rank, position) with stale entries skipped. The lowest rank,
// leftmost first, is merged at each step, as in merge, so the result is the same.
func (t *Tokenizer) mergeLarge(piece string, parts []part) []part {
	n := len(piece)
	next := make([]int, n+1)
	prev := make([]int, n+1)
	rank := make([]int, n+1)
	for i := 0; i <= n; i++ {
		next[i], prev[i], rank[i] = i+1, i-1, math.MaxInt
	}
	pairRank := func(i int) int {
		j := next[i]
		if j > n {
			return math.MaxInt
		}
		k := next[j]
		if k > n {
			return math.MaxInt
		}
		if r, ok := t.ranks[piece[i:k]]; ok {
			return r
		}
		return math.MaxInt
	}
	h := &mergeHeap{}
	for i := 0; i < n; i++ {
		if rank[i] = pairRank(i); rank[i] != math.MaxInt {
			*h = append(*h, mergeItem{rank[i], i})
		}
	}
	heap.Init(h)
	alive := make([]bool, n+1)
	for i := range alive {
		alive[i] = true
	}
	for h.Len() > 0 {
		it := heap.Pop(h).(mergeItem)
		i := it.pos
		if !alive[i] || rank[i] != it.rank {
			continue // stale
		}
		// Merge i with its successor: drop the boundary next[i].
		j := next[i]
		alive[j] = false
		next[i] = next[j]
		if next[j] <= n {
			prev[next[j]] = i
		}
		if rank[i] = pairRank(i); rank[i] != math.MaxInt {
			heap.Push(h, mergeItem{rank[i], i})
		}
		if p := prev[i]; p >= 0 {
			if rank[p] = pairRank(p); rank[p] != math.MaxInt {
				heap.Push(h, mergeItem{rank[p], p})
			}
		}
	}
	for i := 0; i <= n; i = next[i] {
		parts = append(parts, part{start: i, rank: math.MaxInt})
	}
	return parts
}

type mergeItem struct{ rank, pos int }

// mergeHeap orders merges by rank, then leftmost.
type mergeHeap []mergeItem

func (h mergeHeap) Len() int { return len(h) }
func (h mergeHeap) Less(a, b int) bool {
	return h[a].rank < h[b].rank || h[a].rank == h[b].rank && h[a].pos < h[b].pos
}
func (h mergeHeap) Swap(a, b int) { h[a], h[b] = h[b], h[a] }
func (h *mergeHeap) Push(x any)   { *h = append(*h, x.(mergeItem)) }
func (h *mergeHeap) Pop() any {
	old := *h
	it := old[len(old)-1]
	*h = old[:len(old)-1]
	return it
}
