package store_test

import (
	"slices"
	"testing"

	"github.com/parleyhq/parley/server/store"
)

func ids(ms []store.Message) []string {
	var out []string
	for _, m := range ms {
		out = append(out, m.ID)
	}
	return out
}

// A message whose parent is gone counts as a root; a cycle (bad data) ends
// the walk instead of looping.
func TestTreeOrphansAndCycles(t *testing.T) {
	tree := store.NewTree([]store.Message{
		{ID: "a"}, {ID: "b", ParentID: "a"},
		{ID: "o", ParentID: "deleted"}, {ID: "p", ParentID: "o"},
		{ID: "x", ParentID: "y"}, {ID: "y", ParentID: "x"},
		{ID: "s", ParentID: "s"},
	})
	if got := ids(tree.Branch("o")); !slices.Equal(got, []string{"o", "p"}) {
		t.Fatalf("Branch(o) = %v", got)
	}
	if got := tree.Siblings("o"); !slices.Equal(got, []string{"a", "o", "s"}) {
		t.Fatalf("roots = %v", got)
	}
	if got := ids(tree.Path("x")); len(got) == 0 || len(got) > 2 {
		t.Fatalf("Path in a cycle = %v", got)
	}
	if got := ids(tree.Branch("y")); len(got) == 0 || len(got) > 2 {
		t.Fatalf("Branch in a cycle = %v", got)
	}
	if got := ids(tree.Branch("s")); !slices.Equal(got, []string{"s"}) {
		t.Fatalf("Branch of its own parent = %v", got)
	}
	if tree.Newest() != "s" || store.NewTree(nil).Newest() != "" {
		t.Fatal("Newest")
	}
}
