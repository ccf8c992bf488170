package store_test

import (
	"fmt"
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

// BenchmarkTreeBranch indexes a 10,000-message conversation (the most a
// context or a listing reads) with a regeneration every tenth answer, and
// takes its active branch with each message's siblings, as ListMessages
// does.
func BenchmarkTreeBranch(b *testing.B) {
	var msgs []store.Message
	parent := ""
	for i := 0; len(msgs) < 10_000; i++ {
		q := store.Message{ID: fmt.Sprintf("q%05d", i), ParentID: parent, Role: "user"}
		a := store.Message{ID: fmt.Sprintf("a%05d", i), ParentID: q.ID, Role: "assistant"}
		msgs = append(msgs, q, a)
		if i%10 == 0 {
			a = store.Message{ID: fmt.Sprintf("r%05d", i), ParentID: q.ID, Role: "assistant"}
			msgs = append(msgs, a)
		}
		parent = a.ID
	}
	b.ReportAllocs()
	for b.Loop() {
		tree := store.NewTree(msgs)
		branch := tree.Branch(tree.Newest())
		n := 0
		for _, m := range branch {
			n += len(tree.Siblings(m.ID))
		}
		if n == 0 {
			b.Fatal("empty branch")
		}
	}
}
