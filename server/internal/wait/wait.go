// Package wait is the tests' one way of waiting for a condition that another
// goroutine or process makes true: poll it, briefly at first and then every
// limit/500 (at most 100 ms), and fail the test naming what was awaited if it does not hold in
// time. A test that waits for time itself rather than for an event should
// use testing/synctest or an injected clock instead.
package wait

import (
	"testing"
	"time"
)

// maxInterval is the longest pause between two polls.
const maxInterval = 100 * time.Millisecond

// interval is the pause the polls under limit settle at: short waits poll
// often, long ones (a process's, over HTTP) less.
func interval(limit time.Duration) time.Duration {
	return max(time.Millisecond, min(limit/500, maxInterval))
}

// For polls cond until it holds, failing t (with what it waited for) when it
// still does not after limit.
func For(t testing.TB, limit time.Duration, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(limit)
	pause, settle := time.Millisecond, interval(limit)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out after %v waiting for %s", limit, what)
		}
		time.Sleep(pause)
		pause = min(2*pause, settle)
	}
}
