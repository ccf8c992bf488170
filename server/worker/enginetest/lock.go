package enginetest

import (
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
)

// LockServer holds an exclusive lock on a shared test server (named by its
// URL) for the rest of t, across test processes: the suite counts the
// server's busy slots, so two packages' tests must not use it at once.
func LockServer(t *testing.T, url string) {
	t.Helper()
	name := strings.NewReplacer("/", "_", ":", "_").Replace(strings.TrimPrefix(strings.TrimPrefix(url, "http://"), "https://"))
	f, err := os.OpenFile(filepath.Join(os.TempDir(), "parley-test-server-"+name+".lock"), os.O_CREATE|os.O_RDWR, 0o600)
	if err != nil {
		t.Fatal(err)
	}
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX); err != nil {
		f.Close()
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = syscall.Flock(int(f.Fd()), syscall.LOCK_UN)
		f.Close()
	})
}
