package sim

import (
	"sync"
	"testing"
	"time"
)

// fakeClock lets a test play the GPU's time: the engine asks to wait, the test
// sees how long and lets exactly that much time pass.
type fakeClock struct {
	mu    sync.Mutex
	now   time.Time
	waits chan fakeWait
}

type fakeWait struct {
	d  time.Duration
	ch chan time.Time
}

func newFakeClock() *fakeClock {
	return &fakeClock{now: time.Unix(1_700_000_000, 0), waits: make(chan fakeWait, 16)}
}

func (c *fakeClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

func (c *fakeClock) After(d time.Duration) <-chan time.Time {
	ch := make(chan time.Time, 1)
	c.waits <- fakeWait{d, ch}
	return ch
}

// step waits for the engine to ask for a wait, lets it pass and returns it.
func (c *fakeClock) step(t *testing.T) time.Duration {
	t.Helper()
	select {
	case w := <-c.waits:
		c.fire(w)
		return w.d
	case <-time.After(2 * time.Second):
		t.Fatal("the engine never waited")
		return 0
	}
}

func (c *fakeClock) fire(w fakeWait) {
	c.mu.Lock()
	c.now = c.now.Add(w.d)
	now := c.now
	c.mu.Unlock()
	w.ch <- now
}
