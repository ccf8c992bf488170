package wait

import (
	"sync/atomic"
	"testing"
	"time"
)

func TestForReturnsOnceTheConditionHolds(t *testing.T) {
	var polls atomic.Int32
	For(t, 5*time.Second, "the third poll", func() bool { return polls.Add(1) == 3 })
	if n := polls.Load(); n != 3 {
		t.Fatalf("%d polls, want 3", n)
	}
}

// fatal records a failure instead of ending the test.
type fatal struct {
	testing.TB
	msg string
}

func (f *fatal) Helper() {}
func (f *fatal) Fatalf(format string, args ...any) {
	f.msg = format
}

func TestForFailsAfterTheLimit(t *testing.T) {
	f := &fatal{TB: t}
	start := time.Now()
	For(f, 50*time.Millisecond, "never", func() bool { return f.msg != "" })
	if f.msg == "" || time.Since(start) < 50*time.Millisecond {
		t.Fatalf("For returned after %v without failing", time.Since(start))
	}
}
