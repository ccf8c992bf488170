// Package testlock lets tests in different packages (go test runs packages
// in parallel processes) share a test server that some of them disturb: a
// file lock named after the server, held for the rest of a test.
package testlock

import (
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
)

// Hold takes the lock named name for the rest of t: exclusive for a test
// that disturbs the server (stops it, counts its busy slots), shared for
// one that only needs it whole. It waits while another process holds it
// the other way.
func Hold(t testing.TB, name string, exclusive bool) {
	t.Helper()
	name = strings.NewReplacer("/", "_", ":", "_", ",", "_").Replace(name)
	f, err := os.OpenFile(filepath.Join(os.TempDir(), "parley-test-server-"+name+".lock"), os.O_CREATE|os.O_RDWR, 0o600)
	if err != nil {
		t.Fatal(err)
	}
	how := syscall.LOCK_SH
	if exclusive {
		how = syscall.LOCK_EX
	}
	if err := syscall.Flock(int(f.Fd()), how); err != nil {
		f.Close()
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = syscall.Flock(int(f.Fd()), syscall.LOCK_UN)
		f.Close()
	})
}
