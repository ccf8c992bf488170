package vectorscan

import (
	"testing"
)

func set(t *testing.T, n, dims int) *Set {
	t.Helper()
	s := &Set{}
	for i := range n {
		v := make([]float32, dims)
		v[i%dims] = 1
		if err := s.Add(string(rune('a'+i)), nil, EncodeUnit(v)); err != nil {
			t.Fatal(err)
		}
	}
	return s
}

func TestCacheVersions(t *testing.T) {
	var c Cache
	s1, s2 := set(t, 2, 4), set(t, 3, 4)
	if got := c.Put("vs", c.Begin("vs"), 5, s1); got != s1 {
		t.Fatal("Put did not return its set")
	}
	if c.Get("vs", 5) != s1 || c.Get("vs", 6) != nil || c.Get("other", 5) != nil {
		t.Fatal("Get serves only the version cached")
	}
	// A read of an older version does not replace a newer one.
	if got := c.Put("vs", c.Begin("vs"), 4, s2); got != s2 || c.Get("vs", 5) != s1 {
		t.Fatal("an older version replaced a newer one")
	}
	// A read of the same version returns the one cached first.
	if got := c.Put("vs", c.Begin("vs"), 5, s2); got != s1 {
		t.Fatal("a second read of one version was not given the cached set")
	}
	// A newer one replaces it, and the floats are counted once.
	c.Put("vs", c.Begin("vs"), 7, s2)
	if c.Get("vs", 7) != s2 || c.Floats() != len(s2.Vecs) {
		t.Fatalf("newer version: cached %v, %d floats", c.Get("vs", 7) != nil, c.Floats())
	}
}

func TestCacheInvalidateSpendsTickets(t *testing.T) {
	var c Cache
	ticket := c.Begin("vs")
	c.Invalidate("vs") // a write while the read was in progress
	c.Put("vs", ticket, 0, set(t, 2, 4))
	if c.Get("vs", 0) != nil || c.Floats() != 0 {
		t.Fatal("a read begun before a write was cached")
	}
	s := set(t, 2, 4)
	c.Put("vs", c.Begin("vs"), 0, s)
	if c.Get("vs", 0) != s {
		t.Fatal("a read begun after the write was not cached")
	}
	c.Invalidate("vs")
	if c.Get("vs", 0) != nil || c.Floats() != 0 {
		t.Fatal("Invalidate left the set")
	}
}

func TestCacheBound(t *testing.T) {
	c := Cache{MaxFloats: 10}
	small, big := set(t, 2, 4), set(t, 3, 4) // 8 and 12 floats
	c.Put("a", c.Begin("a"), 1, big)
	if c.Get("a", 1) != nil {
		t.Fatal("a set over the bound was cached")
	}
	c.Put("a", c.Begin("a"), 1, small)
	c.Put("b", c.Begin("b"), 1, small)
	if c.Get("a", 1) != small || c.Get("b", 1) != nil || c.Floats() != 8 {
		t.Fatalf("bound: %d floats", c.Floats())
	}
}

func TestSetRefusesOtherDimensions(t *testing.T) {
	s := set(t, 1, 4)
	if err := s.Add("x", nil, EncodeUnit([]float32{1, 2})); err == nil {
		t.Fatal("Add took a vector of other dimensions")
	}
	if err := s.Add("y", nil, []byte{1, 2, 3}); err == nil {
		t.Fatal("Add took a vector of 3 bytes")
	}
}
