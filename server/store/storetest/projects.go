package storetest

import (
	"cmp"
	"errors"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/parleyhq/parley/server/store"
)

// TestProjects is the conformance suite for store.Projects, and for the
// project of a conversation (store.Conversation.ProjectID and
// store.ConversationFilter.ProjectID). It skips where a store keeps no
// projects.
func TestProjects(t *testing.T, newStore NewStore) {
	t.Run("CRUD", func(t *testing.T) { testProjectCRUD(t, newStore) })
	t.Run("CrossUser", func(t *testing.T) { testProjectCrossUser(t, newStore) })
	t.Run("ListOrder", func(t *testing.T) { testProjectList(t, newStore) })
	t.Run("MaxCount", func(t *testing.T) { testProjectMax(t, newStore) })
	t.Run("ConcurrentCreates", func(t *testing.T) { testProjectCreateRace(t, newStore) })
	t.Run("Conversations", func(t *testing.T) { testProjectConversations(t, newStore) })
}

// projectStore is a fresh store for a projects test, which it skips where
// the store keeps no projects.
func projectStore(t *testing.T, newStore NewStore) store.Store {
	t.Helper()
	s := newStore(t)
	if s.Projects == nil {
		t.Skip("the store keeps no projects")
	}
	return s
}

// projectMax is the max count of the tests that do not test it.
const projectMax = 100

func newProject(userID, name string, at time.Time) store.Project {
	return store.Project{ID: newID(), UserID: userID, Name: name, Instructions: "Answer as " + name + ".",
		VectorStoreID: newID(), CreatedAt: at, UpdatedAt: at}
}

func mustProject(t *testing.T, s store.Store, userID, name string, at time.Time) store.Project {
	t.Helper()
	p := newProject(userID, name, at)
	noErr(t, s.Projects.Create(t.Context(), p, projectMax), "Create project "+name)
	return p
}

func sameProject(t *testing.T, got, want store.Project, what string) {
	t.Helper()
	if got.ID != want.ID || got.UserID != want.UserID || got.Name != want.Name || got.Instructions != want.Instructions ||
		got.VectorStoreID != want.VectorStoreID || !got.CreatedAt.Equal(want.CreatedAt) || !got.UpdatedAt.Equal(want.UpdatedAt) {
		t.Fatalf("%s: got %+v, want %+v", what, got, want)
	}
}

func testProjectCRUD(t *testing.T, newStore NewStore) {
	s, ctx := projectStore(t, newStore), t.Context()
	u := mustUser(t, s, "p@example.com")
	p := newProject(u.ID, "Thesis", t0)
	p.CreatedAt = t0.Add(-time.Hour) // kept as given, apart from UpdatedAt
	noErr(t, s.Projects.Create(ctx, p, projectMax), "Create")
	got, err := s.Projects.Get(ctx, u.ID, p.ID)
	noErr(t, err, "Get")
	sameProject(t, got, p, "Get")

	// A taken ID is a conflict for its user; an unknown user is not found.
	dup := newProject(u.ID, "Again", t0)
	dup.ID = p.ID
	wantErr(t, s.Projects.Create(ctx, dup, projectMax), store.ErrConflict, "Create duplicate ID")
	other := mustUser(t, s, "other@example.com")
	dup.UserID = other.ID
	// Another user's project with a taken ID: a conflict where both users'
	// rows share a database; a store spread over clusters may keep it
	// (callers' IDs are UUIDv7, never reused), and the first stays the
	// first user's alone.
	if err := s.Projects.Create(ctx, dup, projectMax); err != nil {
		wantErr(t, err, store.ErrConflict, "Create another user's ID")
	}
	unknownUser(t, s.Projects.Create(ctx, newProject(newID(), "Orphan", t0), projectMax), "Create for unknown user")
	got, err = s.Projects.Get(ctx, u.ID, p.ID)
	noErr(t, err, "Get after the refused creates")
	sameProject(t, got, p, "Get after the refused creates")

	// Update changes only the fields set, and moves UpdatedAt forward only.
	got, err = s.Projects.Update(ctx, u.ID, p.ID, store.ProjectPatch{Name: ptr("Dissertation")}, t0.Add(time.Minute))
	noErr(t, err, "Update name")
	p.Name, p.UpdatedAt = "Dissertation", t0.Add(time.Minute)
	sameProject(t, got, p, "Update name")
	got, err = s.Projects.Update(ctx, u.ID, p.ID, store.ProjectPatch{Instructions: ptr("Cite sources.")}, t0.Add(2*time.Minute))
	noErr(t, err, "Update instructions")
	p.Instructions, p.UpdatedAt = "Cite sources.", t0.Add(2*time.Minute)
	sameProject(t, got, p, "Update instructions")
	got, err = s.Projects.Update(ctx, u.ID, p.ID, store.ProjectPatch{Name: ptr("Book"), Instructions: ptr("")}, t0.Add(time.Second))
	noErr(t, err, "Update with an older clock")
	p.Name, p.Instructions = "Book", "" // UpdatedAt stays
	sameProject(t, got, p, "Update with an older clock")
	got, err = s.Projects.Update(ctx, u.ID, p.ID, store.ProjectPatch{}, t0.Add(3*time.Minute))
	noErr(t, err, "Update nothing")
	p.UpdatedAt = t0.Add(3 * time.Minute)
	sameProject(t, got, p, "Update nothing")
	got, err = s.Projects.Get(ctx, u.ID, p.ID)
	noErr(t, err, "Get after Update")
	sameProject(t, got, p, "Get after Update")

	noErr(t, s.Projects.Delete(ctx, u.ID, p.ID), "Delete")
	_, err = s.Projects.Get(ctx, u.ID, p.ID)
	wantErr(t, err, store.ErrNotFound, "Get after Delete")
	wantErr(t, s.Projects.Delete(ctx, u.ID, p.ID), store.ErrNotFound, "Delete twice")
	_, err = s.Projects.Update(ctx, u.ID, p.ID, store.ProjectPatch{Name: ptr("x")}, t0.Add(time.Hour))
	wantErr(t, err, store.ErrNotFound, "Update deleted")
	if items, next, err := s.Projects.List(ctx, u.ID, store.PageRequest{}); err != nil || len(items) != 0 || next != "" {
		t.Fatalf("List after Delete: %d items, next %q, %v", len(items), next, err)
	}
	// Its ID is free again.
	noErr(t, s.Projects.Create(ctx, p, projectMax), "Create a deleted project's ID")
}

func testProjectCrossUser(t *testing.T, newStore NewStore) {
	s, ctx := projectStore(t, newStore), t.Context()
	alice, bob := mustUser(t, s, "alice@example.com"), mustUser(t, s, "bob@example.com")
	p := mustProject(t, s, alice.ID, "Alice's", t0)

	_, err := s.Projects.Get(ctx, bob.ID, p.ID)
	wantErr(t, err, store.ErrNotFound, "bob gets alice's project")
	_, err = s.Projects.Update(ctx, bob.ID, p.ID, store.ProjectPatch{Name: ptr("pwned"), Instructions: ptr("pwned")}, t0.Add(time.Hour))
	wantErr(t, err, store.ErrNotFound, "bob updates alice's project")
	wantErr(t, s.Projects.Delete(ctx, bob.ID, p.ID), store.ErrNotFound, "bob deletes alice's project")
	if items, next, err := s.Projects.List(ctx, bob.ID, store.PageRequest{}); err != nil || len(items) != 0 || next != "" {
		t.Fatalf("bob lists %d projects (next %q, %v)", len(items), next, err)
	}
	got, err := s.Projects.Get(ctx, alice.ID, p.ID)
	noErr(t, err, "alice gets her project")
	sameProject(t, got, p, "alice's project after bob's tries")
}

func testProjectList(t *testing.T, newStore NewStore) {
	s, ctx := projectStore(t, newStore), t.Context()
	u, other := mustUser(t, s, "l@example.com"), mustUser(t, s, "other@example.com")
	mustProject(t, s, other.ID, "Not mine", t0.Add(time.Hour))
	const n = 23
	var want []store.Project
	for i := range n {
		// Groups of three share UpdatedAt, so the ID tie-break matters.
		p := newProject(u.ID, fmt.Sprint(i), t0.Add(time.Duration(i/3)*time.Millisecond))
		p.CreatedAt = t0
		noErr(t, s.Projects.Create(ctx, p, projectMax), "Create")
		want = append(want, p)
	}
	slices.SortFunc(want, func(x, y store.Project) int {
		if c := y.UpdatedAt.Compare(x.UpdatedAt); c != 0 {
			return c
		}
		return cmp.Compare(y.ID, x.ID)
	})
	list := func(p store.PageRequest) ([]store.Project, string, error) { return s.Projects.List(ctx, u.ID, p) }
	for _, size := range []int{1, 3, 7, n, 100} {
		got := collect(t, size, list)
		if len(got) != len(want) {
			t.Fatalf("size %d: listed %d, want %d", size, len(got), len(want))
		}
		for i := range got {
			if got[i].ID != want[i].ID {
				t.Fatalf("size %d: item %d is %s (%s), want %s (%s)", size, i, got[i].ID, got[i].Name, want[i].ID, want[i].Name)
			}
			sameProject(t, got[i], want[i], fmt.Sprintf("size %d: item %d", size, i))
		}
	}
	checkBadCursors(t, list)

	// Updating the oldest brings it to the top.
	oldest := want[len(want)-1]
	_, err := s.Projects.Update(ctx, u.ID, oldest.ID, store.ProjectPatch{Name: ptr("renamed")}, t0.Add(time.Hour))
	noErr(t, err, "Update oldest")
	first, next, err := s.Projects.List(ctx, u.ID, store.PageRequest{Size: 1})
	noErr(t, err, "List first")
	if len(first) != 1 || first[0].ID != oldest.ID || first[0].Name != "renamed" || next == "" {
		t.Fatalf("after Update the first project is %+v (next %q)", first, next)
	}
}

func testProjectMax(t *testing.T, newStore NewStore) {
	s, ctx := projectStore(t, newStore), t.Context()
	u, other := mustUser(t, s, "m@example.com"), mustUser(t, s, "other@example.com")
	const max = 3
	var made []store.Project
	for i := range max {
		p := newProject(u.ID, fmt.Sprint(i), t0.Add(time.Duration(i)*time.Second))
		noErr(t, s.Projects.Create(ctx, p, max), fmt.Sprintf("Create %d of %d", i+1, max))
		made = append(made, p)
	}
	extra := newProject(u.ID, "extra", t0.Add(time.Minute))
	wantErr(t, s.Projects.Create(ctx, extra, max), store.ErrQuotaExceeded, "Create past max")
	_, err := s.Projects.Get(ctx, u.ID, extra.ID)
	wantErr(t, err, store.ErrNotFound, "the refused project")
	// A larger max lets it in; a smaller one refuses even the first.
	noErr(t, s.Projects.Create(ctx, extra, max+1), "Create with a larger max")
	wantErr(t, s.Projects.Create(ctx, newProject(u.ID, "more", t0), max), store.ErrQuotaExceeded, "Create past max again")
	wantErr(t, s.Projects.Create(ctx, newProject(other.ID, "none", t0), 0), store.ErrQuotaExceeded, "Create with max 0")

	// Another user's projects count for none of these.
	for i := range max {
		noErr(t, s.Projects.Create(ctx, newProject(other.ID, fmt.Sprint(i), t0), max), "other user's Create")
	}
	wantErr(t, s.Projects.Create(ctx, newProject(other.ID, "extra", t0), max), store.ErrQuotaExceeded, "other user's Create past max")

	// Deleting one makes room for one.
	noErr(t, s.Projects.Delete(ctx, u.ID, made[0].ID), "Delete")
	noErr(t, s.Projects.Delete(ctx, u.ID, made[1].ID), "Delete")
	noErr(t, s.Projects.Create(ctx, newProject(u.ID, "after delete", t0), max), "Create after Delete")
	wantErr(t, s.Projects.Create(ctx, newProject(u.ID, "one too many", t0), max), store.ErrQuotaExceeded, "Create past max after Delete")
	all := collect(t, 10, func(p store.PageRequest) ([]store.Project, string, error) { return s.Projects.List(ctx, u.ID, p) })
	if len(all) != max {
		t.Fatalf("the user has %d projects, want %d", len(all), max)
	}
}

// Concurrent creates against a max never take a user past it: exactly max
// of them succeed, and the rest are ErrQuotaExceeded.
func testProjectCreateRace(t *testing.T, newStore NewStore) {
	s, ctx := projectStore(t, newStore), t.Context()
	const workers, max, rounds = 16, 5, 3
	for round := range rounds {
		u := mustUser(t, s, fmt.Sprintf("race%d@example.com", round))
		var (
			start = make(chan struct{})
			wg    sync.WaitGroup
			errs  = make([]error, workers)
		)
		for i := range workers {
			wg.Go(func() {
				<-start
				errs[i] = s.Projects.Create(ctx, newProject(u.ID, fmt.Sprint(i), t0.Add(time.Duration(i)*time.Millisecond)), max)
			})
		}
		close(start)
		wg.Wait()
		ok := 0
		for i, err := range errs {
			switch {
			case err == nil:
				ok++
			case !errors.Is(err, store.ErrQuotaExceeded):
				t.Fatalf("round %d: Create %d: %v, want nil or %v", round, i, err, store.ErrQuotaExceeded)
			}
		}
		all := collect(t, 100, func(p store.PageRequest) ([]store.Project, string, error) { return s.Projects.List(ctx, u.ID, p) })
		if ok != max || len(all) != max {
			t.Fatalf("round %d: %d of %d concurrent creates succeeded and %d projects are stored, want %d", round, ok, workers, len(all), max)
		}
	}
}

func testProjectConversations(t *testing.T, newStore NewStore) {
	s, ctx := projectStore(t, newStore), t.Context()
	alice, bob := mustUser(t, s, "alice@example.com"), mustUser(t, s, "bob@example.com")
	p1 := mustProject(t, s, alice.ID, "One", t0)
	p2 := mustProject(t, s, alice.ID, "Two", t0)
	q := mustProject(t, s, bob.ID, "Bob's", t0)

	conv := func(userID, projectID, title string, archived bool, at time.Time) store.Conversation {
		t.Helper()
		c := store.Conversation{ID: newID(), UserID: userID, Title: title, Model: "sim-small", Archived: archived,
			CreatedAt: at, UpdatedAt: at, ProjectID: projectID}
		noErr(t, s.Conversations.Create(ctx, c), "Create conversation "+title)
		return c
	}
	loose := conv(alice.ID, "", "loose", false, t0)
	a1 := conv(alice.ID, p1.ID, "quarterly budget", false, t0.Add(1*time.Second))
	a2 := conv(alice.ID, p1.ID, "archived one", true, t0.Add(2*time.Second))
	a3 := conv(alice.ID, p1.ID, "third", false, t0.Add(3*time.Second))
	b1 := conv(alice.ID, p2.ID, "in two", false, t0.Add(4*time.Second))
	// Bob's, in his project, and one naming alice's project: neither is ever
	// in alice's lists.
	conv(bob.ID, q.ID, "bob's", false, t0.Add(5*time.Second))
	conv(bob.ID, p1.ID, "bob's in alice's project", false, t0.Add(6*time.Second))

	byID := map[string]store.Conversation{}
	for _, c := range []store.Conversation{loose, a1, a2, a3, b1} {
		byID[c.ID] = c
		got, err := s.Conversations.Get(ctx, alice.ID, c.ID)
		noErr(t, err, "Get "+c.Title)
		if got.ProjectID != c.ProjectID || got.Title != c.Title || got.Archived != c.Archived {
			t.Fatalf("Get %s = %+v, want project %q", c.Title, got, c.ProjectID)
		}
	}

	ids := func(cs []store.Conversation) []string {
		var out []string
		for _, c := range cs {
			if want, ok := byID[c.ID]; !ok || c.ProjectID != want.ProjectID {
				t.Fatalf("listed %+v, not alice's conversation of project %q", c, want.ProjectID)
			}
			out = append(out, c.Title)
		}
		return out
	}
	list := func(user string, f store.ConversationFilter, size int) []string {
		t.Helper()
		return ids(collect(t, size, func(p store.PageRequest) ([]store.Conversation, string, error) {
			return s.Conversations.List(ctx, user, f, p)
		}))
	}
	for _, tc := range []struct {
		filter store.ConversationFilter
		want   []string
	}{
		// No project: every conversation, those of projects included.
		{store.ConversationFilter{Archived: store.ArchiveAll}, []string{"in two", "third", "archived one", "quarterly budget", "loose"}},
		{store.ConversationFilter{}, []string{"in two", "third", "quarterly budget", "loose"}},
		{store.ConversationFilter{ProjectID: p1.ID, Archived: store.ArchiveAll}, []string{"third", "archived one", "quarterly budget"}},
		{store.ConversationFilter{ProjectID: p1.ID}, []string{"third", "quarterly budget"}},
		{store.ConversationFilter{ProjectID: p1.ID, Archived: store.ArchiveArchived}, []string{"archived one"}},
		{store.ConversationFilter{ProjectID: p2.ID, Archived: store.ArchiveAll}, []string{"in two"}},
		{store.ConversationFilter{ProjectID: q.ID, Archived: store.ArchiveAll}, nil},
		{store.ConversationFilter{ProjectID: newID(), Archived: store.ArchiveAll}, nil},
	} {
		for _, size := range []int{1, 2, 50} {
			if got := list(alice.ID, tc.filter, size); !slices.Equal(got, tc.want) {
				t.Fatalf("List %+v (pages of %d) = %q, want %q", tc.filter, size, got, tc.want)
			}
		}
	}
	checkBadCursors(t, func(p store.PageRequest) ([]store.Conversation, string, error) {
		return s.Conversations.List(ctx, alice.ID, store.ConversationFilter{ProjectID: p1.ID}, p)
	})

	// Bob's project lists only his own conversations of it.
	bl, _, err := s.Conversations.List(ctx, bob.ID, store.ConversationFilter{ProjectID: p1.ID, Archived: store.ArchiveAll}, store.PageRequest{})
	noErr(t, err, "bob lists alice's project")
	if len(bl) != 1 || bl[0].Title != "bob's in alice's project" || bl[0].UserID != bob.ID {
		t.Fatalf("bob lists alice's project: %+v", bl)
	}

	// The project stays through every change of the conversation.
	got, err := s.Conversations.Update(ctx, alice.ID, a1.ID, store.ConversationPatch{Title: ptr("renamed"), Archived: ptr(true)}, t0.Add(time.Hour))
	noErr(t, err, "Update")
	if got.ProjectID != p1.ID || got.Title != "renamed" {
		t.Fatalf("Update = %+v, want project %s", got, p1.ID)
	}
	noErr(t, s.Conversations.Touch(ctx, alice.ID, a3.ID, t0.Add(2*time.Hour), "x"), "Touch")
	noErr(t, s.Conversations.SetLeaf(ctx, alice.ID, a3.ID, newID()), "SetLeaf")
	got, err = s.Conversations.Get(ctx, alice.ID, a3.ID)
	noErr(t, err, "Get after Touch")
	if got.ProjectID != p1.ID {
		t.Fatalf("after Touch and SetLeaf the project is %q, want %s", got.ProjectID, p1.ID)
	}
	if got := list(alice.ID, store.ConversationFilter{ProjectID: p1.ID, Archived: store.ArchiveAll}, 2); !slices.Equal(got, []string{"third", "renamed", "archived one"}) {
		t.Fatalf("project list after the changes = %q", got)
	}

	// Search reads the project too.
	if s.Search != nil {
		hits, _, err := s.Search.Search(ctx, alice.ID, []string{"renamed"}, store.PageRequest{})
		noErr(t, err, "Search")
		if len(hits) != 1 || hits[0].Conversation.ID != a1.ID || hits[0].Conversation.ProjectID != p1.ID {
			t.Fatalf("Search = %+v, want %s of project %s", hits, a1.ID, p1.ID)
		}
	}

	// Deleting a project leaves its conversations as they are (the caller
	// deletes them first).
	noErr(t, s.Projects.Delete(ctx, alice.ID, p2.ID), "Delete project")
	got, err = s.Conversations.Get(ctx, alice.ID, b1.ID)
	noErr(t, err, "Get a deleted project's conversation")
	if got.ProjectID != p2.ID {
		t.Fatalf("a deleted project's conversation has project %q, want %s", got.ProjectID, p2.ID)
	}
}
