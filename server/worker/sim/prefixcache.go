package sim

import "container/list"

// prefixCache is the KV prefix cache: prompt blocks of a fixed number of tokens,
// each keyed by a hash of every token up to the end of the block, so a block hits
// only when the whole prefix before it matches. Least recently used blocks go first.
type prefixCache struct {
	blockTokens int64
	blocks      map[uint64]*list.Element
	lru         list.List // front: most recently used; values are uint64 keys
}

func newPrefixCache(blockTokens int) *prefixCache {
	return &prefixCache{blockTokens: int64(blockTokens), blocks: make(map[uint64]*list.Element)}
}

// tokens returns the tokens the cache holds.
func (c *prefixCache) tokens() int64 {
	return int64(c.lru.Len()) * c.blockTokens
}

// lookup returns how many leading blocks of keys are cached, marking them used.
func (c *prefixCache) lookup(keys []uint64) int {
	n := 0
	for n < len(keys) {
		if _, ok := c.blocks[keys[n]]; !ok {
			break
		}
		n++
	}
	c.touch(keys[:n])
	return n
}

// insert adds keys (marking present ones used), then evicts the least recently
// used blocks until the cache and the tokens held elsewhere fit in capacity.
func (c *prefixCache) insert(keys []uint64, elsewhere, capacity int64) {
	c.touch(keys)
	for c.lru.Len() > 0 && c.tokens()+elsewhere > capacity {
		back := c.lru.Back()
		delete(c.blocks, back.Value.(uint64))
		c.lru.Remove(back)
	}
}

// touch marks keys used, last first, so a prefix's first block is the last of
// its chain to be evicted: evicting it would make the rest unreachable.
func (c *prefixCache) touch(keys []uint64) {
	for i := len(keys) - 1; i >= 0; i-- {
		if el, ok := c.blocks[keys[i]]; ok {
			c.lru.MoveToFront(el)
		} else {
			c.blocks[keys[i]] = c.lru.PushFront(keys[i])
		}
	}
}

// blockKeys returns the chain hashes of the full blocks of prompt that precede
// its last token (an engine always computes the last token to start decoding).
func blockKeys(model string, prompt []int, blockTokens int) []uint64 {
	n := 0
	if len(prompt) > 0 {
		n = (len(prompt) - 1) / blockTokens
	}
	keys := make([]uint64, n)
	h := fnvString(fnvOffset, model)
	for b := range n {
		for _, t := range prompt[b*blockTokens : (b+1)*blockTokens] {
			h = fnvUint64(h, uint64(t))
		}
		keys[b] = h
	}
	return keys
}

const (
	fnvOffset = 14695981039346656037
	fnvPrime  = 1099511628211
)

func fnvUint64(h, v uint64) uint64 {
	for range 8 {
		h ^= v & 0xff
		h *= fnvPrime
		v >>= 8
	}
	return h
}

func fnvString(h uint64, s string) uint64 {
	for i := 0; i < len(s); i++ {
		h ^= uint64(s[i])
		h *= fnvPrime
	}
	return fnvUint64(h, uint64(len(s)))
}
