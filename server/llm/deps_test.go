package llm_test

import (
	"os/exec"
	"strings"
	"testing"
)

const module = "github.com/parleyhq/parley"

// deps lists the packages pkg imports, directly or not, itself included
// (tests excluded).
func deps(t *testing.T, pkg string) []string {
	t.Helper()
	out, err := exec.Command("go", "list", "-deps", "-f", "{{.ImportPath}}", pkg).Output()
	if err != nil {
		t.Fatalf("go list -deps %s: %v", pkg, err)
	}
	return strings.Fields(string(out))
}

// under reports whether pkg is dir or a package below it.
func under(pkg, dir string) bool {
	return pkg == dir || strings.HasPrefix(pkg, dir+"/")
}

// TestLeaf keeps the domain a leaf: llm imports nothing of Parley, and
// neither llm nor the chat core reaches the worker's transport, the
// scheduler or the HTTP surfaces.
func TestLeaf(t *testing.T) {
	for _, p := range deps(t, module+"/server/llm") {
		if under(p, module) && p != module+"/server/llm" {
			t.Errorf("server/llm imports %s: it must import nothing of Parley", p)
		}
	}
	forbidden := []string{"server/worker", "server/scheduler", "server/api", "server/compat"}
	for _, pkg := range []string{"server/llm", "server/chat"} {
		for _, p := range deps(t, module+"/"+pkg) {
			for _, f := range forbidden {
				if under(p, module+"/"+f) {
					t.Errorf("%s imports %s", pkg, p)
				}
			}
		}
	}
}
