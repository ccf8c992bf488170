package enginetest

import (
	"strings"
	"testing"

	"github.com/parleyhq/parley/server/internal/testlock"
)

// LockServer holds an exclusive lock on a shared test server (named by its
// URL) for the rest of t, across test processes: the suite counts the
// server's busy slots, so two packages' tests must not use it at once.
func LockServer(t *testing.T, url string) {
	t.Helper()
	testlock.Hold(t, strings.TrimPrefix(strings.TrimPrefix(url, "http://"), "https://"), true)
}
