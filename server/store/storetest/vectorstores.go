package storetest

import (
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/parleyhq/parley/server/store"
)

// TestVectorStores is the conformance suite for store.VectorStores.
func TestVectorStores(t *testing.T, newStore NewStore) {
	t.Run("CreateGetOwned", func(t *testing.T) { testVectorStoreCreate(t, newStore) })
	t.Run("ListUpdateExpire", func(t *testing.T) { testVectorStoreList(t, newStore) })
	t.Run("Files", func(t *testing.T) { testVectorStoreFiles(t, newStore) })
	t.Run("Ingestion", func(t *testing.T) { testVectorStoreIngestion(t, newStore) })
	t.Run("ConcurrentClaims", func(t *testing.T) { testVectorStoreClaimRace(t, newStore) })
}

func newVectorStore(t *testing.T, s store.Store, userID string, at time.Time, files ...string) store.VectorStore {
	t.Helper()
	v := store.VectorStore{ID: newID(), UserID: userID, Name: "docs", Metadata: map[string]string{"team": "a"},
		EmbeddingModel: "embed-1", CreatedAt: at, LastActiveAt: at}
	rows := make([]store.VectorStoreFile, len(files))
	for i, f := range files {
		rows[i] = store.VectorStoreFile{FileID: f, Status: store.FileInProgress, ChunkTokens: 800, OverlapTokens: 400,
			CreatedAt: at.Add(time.Duration(i) * time.Millisecond), Attributes: map[string]any{"n": float64(i)}}
	}
	noErr(t, s.VectorStores.CreateVectorStore(t.Context(), v, rows), "CreateVectorStore")
	return v
}

func testVectorStoreCreate(t *testing.T, newStore NewStore) {
	s := newStore(t)
	ctx := t.Context()
	alice, bob := mustUser(t, s, "alice@example.com"), mustUser(t, s, "bob@example.com")
	v := newVectorStore(t, s, alice.ID, t0, "f1", "f2", "f3")

	got, err := s.VectorStores.GetVectorStore(ctx, alice.ID, v.ID)
	noErr(t, err, "GetVectorStore")
	if got.Name != "docs" || got.Metadata["team"] != "a" || got.EmbeddingModel != "embed-1" || got.UserID != alice.ID || got.Web {
		t.Fatalf("store read back as %+v", got)
	}
	sameTime(t, got.CreatedAt, t0, "created_at")
	web := store.VectorStore{ID: newID(), UserID: alice.ID, EmbeddingModel: "embed-1", CreatedAt: t0, LastActiveAt: t0, Web: true}
	noErr(t, s.VectorStores.CreateVectorStore(ctx, web, nil), "CreateVectorStore (web)")
	if got, err := s.VectorStores.GetVectorStore(ctx, alice.ID, web.ID); err != nil || !got.Web {
		t.Fatalf("a project's store read back as %+v, %v; want Web", got, err)
	}
	if got.Counts != (store.VectorStoreFileCounts{InProgress: 3}) || got.UsageBytes != 0 {
		t.Fatalf("a new store's counts %+v and usage %d, want 3 in progress and 0", got.Counts, got.UsageBytes)
	}
	f, err := s.VectorStores.GetVectorStoreFile(ctx, alice.ID, v.ID, "f2")
	noErr(t, err, "GetVectorStoreFile")
	if f.Status != store.FileInProgress || f.UserID != alice.ID || f.ChunkTokens != 800 || f.OverlapTokens != 400 || f.Attributes["n"] != float64(1) {
		t.Fatalf("file read back as %+v", f)
	}

	// Another user's store and files are not found, for every read and change.
	_, err = s.VectorStores.GetVectorStore(ctx, bob.ID, v.ID)
	wantErr(t, err, store.ErrNotFound, "bob reads alice's store")
	_, err = s.VectorStores.GetVectorStoreFile(ctx, bob.ID, v.ID, "f1")
	wantErr(t, err, store.ErrNotFound, "bob reads alice's file")
	name := "mine"
	_, err = s.VectorStores.UpdateVectorStore(ctx, bob.ID, v.ID, &name, nil, nil, t0)
	wantErr(t, err, store.ErrNotFound, "bob renames alice's store")
	wantErr(t, s.VectorStores.TouchVectorStore(ctx, bob.ID, v.ID, t0), store.ErrNotFound, "bob touches alice's store")
	wantErr(t, s.VectorStores.AddVectorStoreFile(ctx, store.VectorStoreFile{StoreID: v.ID, FileID: "fb", UserID: bob.ID, CreatedAt: t0}),
		store.ErrNotFound, "bob adds a file to alice's store")
	_, err = s.VectorStores.SetVectorStoreFileAttributes(ctx, bob.ID, v.ID, "f1", nil)
	wantErr(t, err, store.ErrNotFound, "bob sets attributes of alice's file")
	wantErr(t, s.VectorStores.RemoveVectorStoreFile(ctx, bob.ID, v.ID, "f1"), store.ErrNotFound, "bob removes alice's file")
	_, err = s.VectorStores.CancelVectorStoreFiles(ctx, bob.ID, v.ID, "")
	wantErr(t, err, store.ErrNotFound, "bob cancels alice's files")
	wantErr(t, s.VectorStores.DeleteVectorStore(ctx, bob.ID, v.ID), store.ErrNotFound, "bob deletes alice's store")
	if items, _, err := s.VectorStores.ListVectorStoreFiles(ctx, bob.ID, v.ID, store.VectorStoreFilter{}, store.PageRequest{}); err != nil || len(items) != 0 {
		t.Fatalf("bob lists alice's files: %d, %v", len(items), err)
	}
	if ids, err := s.VectorStores.VectorStoresOfFile(ctx, bob.ID, "f1"); err != nil || len(ids) != 0 {
		t.Fatalf("bob's stores of alice's file: %v, %v", ids, err)
	}

	// An ID taken is a conflict, and nothing of the second store is kept.
	dup := store.VectorStore{ID: v.ID, UserID: alice.ID, EmbeddingModel: "embed-1", CreatedAt: t0, LastActiveAt: t0}
	wantErr(t, s.VectorStores.CreateVectorStore(ctx, dup, []store.VectorStoreFile{{FileID: "fb", CreatedAt: t0}}), store.ErrConflict, "a taken store ID")
	// Another user's store with a taken ID: a conflict where both users'
	// rows share a database; a store spread over clusters may keep it
	// (store IDs are random, never reused), and the first stays alice's.
	dup.UserID = bob.ID
	if err := s.VectorStores.CreateVectorStore(ctx, dup, []store.VectorStoreFile{{FileID: "fb", CreatedAt: t0}}); err != nil {
		wantErr(t, err, store.ErrConflict, "another user's taken store ID")
	} else {
		if got, err := s.VectorStores.GetVectorStore(ctx, alice.ID, v.ID); err != nil || got.UserID != alice.ID {
			t.Fatalf("alice's store after bob took its ID elsewhere: %+v, %v", got, err)
		}
		noErr(t, s.VectorStores.DeleteVectorStore(ctx, bob.ID, v.ID), "bob deletes his store")
	}
	// A file named twice in one create is a conflict, and no store is left.
	twice := store.VectorStore{ID: newID(), UserID: bob.ID, EmbeddingModel: "embed-1", CreatedAt: t0, LastActiveAt: t0}
	err = s.VectorStores.CreateVectorStore(ctx, twice, []store.VectorStoreFile{{FileID: "fb", CreatedAt: t0}, {FileID: "fb", CreatedAt: t0}})
	wantErr(t, err, store.ErrConflict, "a file twice in one create")
	_, err = s.VectorStores.GetVectorStore(ctx, bob.ID, twice.ID)
	wantErr(t, err, store.ErrNotFound, "the half-made store")

	// Delete takes the store and its files; it is then not found.
	noErr(t, s.VectorStores.DeleteVectorStore(ctx, alice.ID, v.ID), "DeleteVectorStore")
	_, err = s.VectorStores.GetVectorStore(ctx, alice.ID, v.ID)
	wantErr(t, err, store.ErrNotFound, "a deleted store")
	_, err = s.VectorStores.GetVectorStoreFile(ctx, alice.ID, v.ID, "f1")
	wantErr(t, err, store.ErrNotFound, "a deleted store's file")
	if ids, err := s.VectorStores.VectorStoresOfFile(ctx, alice.ID, "f1"); err != nil || len(ids) != 0 {
		t.Fatalf("stores of a deleted store's file: %v, %v", ids, err)
	}
	if claims, err := s.VectorStores.ClaimIngestion(ctx, t0.Add(time.Hour), time.Minute, 10); err != nil || len(claims) != 0 {
		t.Fatalf("a deleted store's files are still claimed: %d, %v", len(claims), err)
	}
	wantErr(t, s.VectorStores.DeleteVectorStore(ctx, alice.ID, v.ID), store.ErrNotFound, "deleting twice")
}

func testVectorStoreList(t *testing.T, newStore NewStore) {
	s := newStore(t)
	ctx := t.Context()
	alice, bob := mustUser(t, s, "alice@example.com"), mustUser(t, s, "bob@example.com")
	var want []string
	for i := range 7 {
		v := newVectorStore(t, s, alice.ID, t0.Add(time.Duration(i)*time.Second), fmt.Sprintf("f%d", i))
		want = append(want, v.ID)
	}
	newVectorStore(t, s, bob.ID, t0)
	slices.Reverse(want)
	list := func(p store.PageRequest) ([]store.VectorStore, string, error) {
		return s.VectorStores.ListVectorStores(ctx, alice.ID, p)
	}
	for _, size := range []int{1, 3, 100} {
		var got []string
		for _, v := range collect(t, size, list) {
			if v.Counts.InProgress != 1 {
				t.Fatalf("listed store %s with counts %+v, want 1 in progress", v.ID, v.Counts)
			}
			got = append(got, v.ID)
		}
		if !slices.Equal(got, want) {
			t.Fatalf("pages of %d listed %v, want alice's stores newest first %v", size, got, want)
		}
	}
	checkBadCursors(t, list)

	// Update: name and metadata change, nil leaves a field, the expiry is
	// counted from now.
	id := want[0]
	name := "renamed"
	week := 7 * 24 * time.Hour
	now := t0.Add(time.Minute)
	v, err := s.VectorStores.UpdateVectorStore(ctx, alice.ID, id, &name, map[string]string{"k": "v"}, &week, now)
	noErr(t, err, "UpdateVectorStore")
	if v.Name != "renamed" || len(v.Metadata) != 1 || v.Metadata["k"] != "v" || v.ExpiresAfter != week {
		t.Fatalf("updated store %+v", v)
	}
	sameTime(t, v.LastActiveAt, now, "last_active_at after the update")
	sameTime(t, v.ExpiresAt(), now.Add(week), "expires_at after the update")
	v, err = s.VectorStores.UpdateVectorStore(ctx, alice.ID, id, nil, nil, nil, now)
	noErr(t, err, "UpdateVectorStore with nothing")
	if v.Name != "renamed" || v.Metadata["k"] != "v" || v.ExpiresAfter != week {
		t.Fatalf("an empty update changed the store: %+v", v)
	}

	// Nothing expired yet; a search moves the expiry on; past it the
	// store is listed for the sweep (and only it).
	expired, err := s.VectorStores.ExpiredVectorStores(ctx, now.Add(week-time.Second), 10)
	noErr(t, err, "ExpiredVectorStores")
	if len(expired) != 0 {
		t.Fatalf("%d expired before their time", len(expired))
	}
	later := now.Add(3 * 24 * time.Hour)
	noErr(t, s.VectorStores.TouchVectorStore(ctx, alice.ID, id, later), "TouchVectorStore")
	expired, err = s.VectorStores.ExpiredVectorStores(ctx, now.Add(week+time.Second), 10)
	noErr(t, err, "ExpiredVectorStores")
	if len(expired) != 0 {
		t.Fatalf("a store touched at %v expired at %v", later, now.Add(week+time.Second))
	}
	expired, err = s.VectorStores.ExpiredVectorStores(ctx, later.Add(week+time.Second), 10)
	noErr(t, err, "ExpiredVectorStores")
	if len(expired) != 1 || expired[0].ID != id || expired[0].UserID != alice.ID {
		t.Fatalf("expired %+v, want the one store with an expiry", expired)
	}
	// A touch never moves the activity back.
	noErr(t, s.VectorStores.TouchVectorStore(ctx, alice.ID, id, now), "TouchVectorStore in the past")
	v, err = s.VectorStores.GetVectorStore(ctx, alice.ID, id)
	noErr(t, err, "GetVectorStore")
	sameTime(t, v.LastActiveAt, later, "last_active_at after an older touch")
	// Removing the expiry (0) takes it off the sweep.
	zero := time.Duration(0)
	_, err = s.VectorStores.UpdateVectorStore(ctx, alice.ID, id, nil, nil, &zero, later)
	noErr(t, err, "UpdateVectorStore without expiry")
	expired, err = s.VectorStores.ExpiredVectorStores(ctx, later.Add(100*week), 10)
	noErr(t, err, "ExpiredVectorStores")
	if len(expired) != 0 {
		t.Fatalf("a store without expiry expired: %+v", expired)
	}
}

func testVectorStoreFiles(t *testing.T, newStore NewStore) {
	s := newStore(t)
	ctx := t.Context()
	alice := mustUser(t, s, "alice@example.com")
	v := newVectorStore(t, s, alice.ID, t0, "f0")
	for i := 1; i <= 5; i++ {
		batch := ""
		if i >= 3 {
			batch = "batch-1"
		}
		noErr(t, s.VectorStores.AddVectorStoreFile(ctx, store.VectorStoreFile{StoreID: v.ID, FileID: fmt.Sprintf("f%d", i), UserID: alice.ID,
			Status: store.FileInProgress, ChunkTokens: 100, OverlapTokens: 10, CreatedAt: t0.Add(time.Duration(i) * time.Second), BatchID: batch}), "AddVectorStoreFile")
	}
	wantErr(t, s.VectorStores.AddVectorStoreFile(ctx, store.VectorStoreFile{StoreID: v.ID, FileID: "f1", UserID: alice.ID, CreatedAt: t0}),
		store.ErrConflict, "a file added twice")
	fileIDsOf := func(fs []store.VectorStoreFile) []string {
		out := make([]string, len(fs))
		for i, f := range fs {
			out[i] = f.FileID
		}
		return out
	}
	list := func(filter store.VectorStoreFilter) func(p store.PageRequest) ([]store.VectorStoreFile, string, error) {
		return func(p store.PageRequest) ([]store.VectorStoreFile, string, error) {
			return s.VectorStores.ListVectorStoreFiles(ctx, alice.ID, v.ID, filter, p)
		}
	}
	if got := fileIDsOf(collect(t, 2, list(store.VectorStoreFilter{}))); !slices.Equal(got, []string{"f5", "f4", "f3", "f2", "f1", "f0"}) {
		t.Fatalf("files listed %v, want newest first", got)
	}
	checkBadCursors(t, list(store.VectorStoreFilter{}))
	if got := fileIDsOf(collect(t, 2, list(store.VectorStoreFilter{BatchID: "batch-1"}))); !slices.Equal(got, []string{"f5", "f4", "f3"}) {
		t.Fatalf("batch files listed %v", got)
	}

	// Attributes replace the file's; bad attributes are refused.
	f, err := s.VectorStores.SetVectorStoreFileAttributes(ctx, alice.ID, v.ID, "f1", map[string]any{"lang": "en", "year": float64(2024)})
	noErr(t, err, "SetVectorStoreFileAttributes")
	if len(f.Attributes) != 2 || f.Attributes["lang"] != "en" || f.Attributes["year"] != float64(2024) {
		t.Fatalf("attributes set to %v", f.Attributes)
	}
	_, err = s.VectorStores.SetVectorStoreFileAttributes(ctx, alice.ID, v.ID, "f1", map[string]any{"x": []int{1}})
	wantErr(t, err, store.ErrInvalidArgument, "a list attribute")
	_, err = s.VectorStores.SetVectorStoreFileAttributes(ctx, alice.ID, v.ID, "nope", nil)
	wantErr(t, err, store.ErrNotFound, "attributes of a file not in the store")

	// Cancelling a batch cancels its files still in progress, and only them.
	n, err := s.VectorStores.CancelVectorStoreFiles(ctx, alice.ID, v.ID, "batch-1")
	noErr(t, err, "CancelVectorStoreFiles")
	if n != 3 {
		t.Fatalf("cancelled %d files, want 3", n)
	}
	if n, err = s.VectorStores.CancelVectorStoreFiles(ctx, alice.ID, v.ID, "batch-1"); err != nil || n != 0 {
		t.Fatalf("cancelling again: %d, %v", n, err)
	}
	_, err = s.VectorStores.CancelVectorStoreFiles(ctx, alice.ID, v.ID, "batch-2")
	wantErr(t, err, store.ErrNotFound, "cancelling a batch that does not exist")
	if got := fileIDsOf(collect(t, 10, list(store.VectorStoreFilter{Status: store.FileCancelled}))); !slices.Equal(got, []string{"f5", "f4", "f3"}) {
		t.Fatalf("cancelled files %v", got)
	}
	got, err := s.VectorStores.GetVectorStore(ctx, alice.ID, v.ID)
	noErr(t, err, "GetVectorStore")
	if got.Counts != (store.VectorStoreFileCounts{InProgress: 3, Cancelled: 3}) {
		t.Fatalf("counts after the cancel %+v", got.Counts)
	}

	// A second store holding f1: the file's stores are both; removing it
	// from one leaves the other.
	w := newVectorStore(t, s, alice.ID, t0.Add(time.Hour), "f1")
	ids, err := s.VectorStores.VectorStoresOfFile(ctx, alice.ID, "f1")
	noErr(t, err, "VectorStoresOfFile")
	if want := []string{v.ID, w.ID}; !slices.Equal(ids, slices.Sorted(slices.Values(want))) {
		t.Fatalf("stores of f1 %v, want %v", ids, want)
	}
	noErr(t, s.VectorStores.RemoveVectorStoreFile(ctx, alice.ID, v.ID, "f1"), "RemoveVectorStoreFile")
	wantErr(t, s.VectorStores.RemoveVectorStoreFile(ctx, alice.ID, v.ID, "f1"), store.ErrNotFound, "removing twice")
	_, err = s.VectorStores.GetVectorStoreFile(ctx, alice.ID, v.ID, "f1")
	wantErr(t, err, store.ErrNotFound, "a removed file")
	if ids, _ := s.VectorStores.VectorStoresOfFile(ctx, alice.ID, "f1"); !slices.Equal(ids, []string{w.ID}) {
		t.Fatalf("stores of f1 after the removal %v", ids)
	}
}

func testVectorStoreIngestion(t *testing.T, newStore NewStore) {
	s := newStore(t)
	ctx := t.Context()
	alice := mustUser(t, s, "alice@example.com")
	v := newVectorStore(t, s, alice.ID, t0, "f0", "f1", "f2", "f3")
	lease := time.Minute
	now := t0.Add(time.Second)

	first, err := s.VectorStores.ClaimIngestion(ctx, now, lease, 2)
	noErr(t, err, "ClaimIngestion")
	if len(first) != 2 || first[0].File.FileID != "f0" || first[1].File.FileID != "f1" {
		t.Fatalf("first claims %+v, want f0 and f1 (oldest first)", first)
	}
	if first[0].Token == "" || first[0].Token == first[1].Token || !first[0].Until.Equal(now.Add(lease)) {
		t.Fatalf("claims carry tokens %q, %q until %v", first[0].Token, first[1].Token, first[0].Until)
	}
	if first[0].File.UserID != alice.ID || first[0].File.ChunkTokens != 800 || first[0].File.Attributes["n"] != float64(0) {
		t.Fatalf("a claim's file %+v", first[0].File)
	}
	second, err := s.VectorStores.ClaimIngestion(ctx, now, lease, 10)
	noErr(t, err, "ClaimIngestion")
	if len(second) != 2 || second[0].File.FileID != "f2" || second[1].File.FileID != "f3" {
		t.Fatalf("second claims %+v, want only the unclaimed f2 and f3", second)
	}
	if more, _ := s.VectorStores.ClaimIngestion(ctx, now.Add(lease-time.Second), lease, 10); len(more) != 0 {
		t.Fatalf("claimed %d files whose claims hold", len(more))
	}
	// f2's holder renews its claim: it holds past the first lease, and a
	// renewal never shortens it.
	renewed, err := s.VectorStores.RenewIngestion(ctx, second[0], now.Add(lease/2), lease)
	noErr(t, err, "RenewIngestion")
	if renewed.Token != second[0].Token || !renewed.Until.Equal(now.Add(lease/2+lease)) {
		t.Fatalf("renewed claim %+v, want the same token until %v", renewed, now.Add(lease/2+lease))
	}
	if same, err := s.VectorStores.RenewIngestion(ctx, second[0], now, time.Second); err != nil || !same.Until.Equal(renewed.Until) {
		t.Fatalf("a shorter renewal: %+v, %v; want the claim kept until %v", same, err, renewed.Until)
	}
	second[0] = renewed

	// f0 completes: its chunks and bytes count in the store.
	noErr(t, s.VectorStores.FinishIngestion(ctx, first[0], store.FileCompleted, "", 12, 9000), "FinishIngestion completed")
	f, err := s.VectorStores.GetVectorStoreFile(ctx, alice.ID, v.ID, "f0")
	noErr(t, err, "GetVectorStoreFile")
	if f.Status != store.FileCompleted || f.Chunks != 12 || f.UsageBytes != 9000 || f.LastError != "" {
		t.Fatalf("completed file %+v", f)
	}
	wantErr(t, s.VectorStores.FinishIngestion(ctx, first[0], store.FileFailed, "again", 0, 0), store.ErrNotFound, "finishing twice")
	// f2 fails with its reason.
	noErr(t, s.VectorStores.FinishIngestion(ctx, second[0], store.FileFailed, "not a document", 0, 0), "FinishIngestion failed")
	f, _ = s.VectorStores.GetVectorStoreFile(ctx, alice.ID, v.ID, "f2")
	if f.Status != store.FileFailed || f.LastError != "not a document" {
		t.Fatalf("failed file %+v", f)
	}

	// f1's gateway died: its claim lapses and is given again with a new
	// token; the old holder's finish changes nothing.
	again, err := s.VectorStores.ClaimIngestion(ctx, now.Add(lease+time.Second), lease, 10)
	noErr(t, err, "ClaimIngestion after the lease")
	if len(again) != 2 || again[0].File.FileID != "f1" || again[1].File.FileID != "f3" {
		t.Fatalf("claims after the lease %+v, want f1 and f3", again)
	}
	if again[0].Token == first[1].Token {
		t.Fatal("a lapsed claim was given again with its old token")
	}
	_, err = s.VectorStores.RenewIngestion(ctx, first[1], now.Add(lease+2*time.Second), lease)
	wantErr(t, err, store.ErrNotFound, "renewing a lapsed claim given again")
	_, err = s.VectorStores.RenewIngestion(ctx, first[0], now.Add(lease+2*time.Second), lease)
	wantErr(t, err, store.ErrNotFound, "renewing a finished file's claim")
	wantErr(t, s.VectorStores.FinishIngestion(ctx, first[1], store.FileCompleted, "", 1, 1), store.ErrNotFound, "a lapsed claim's finish")
	noErr(t, s.VectorStores.FinishIngestion(ctx, again[0], store.FileCompleted, "", 3, 1000), "the new claim's finish")
	// f3 is removed while claimed: its finish is not found.
	noErr(t, s.VectorStores.RemoveVectorStoreFile(ctx, alice.ID, v.ID, "f3"), "RemoveVectorStoreFile")
	wantErr(t, s.VectorStores.FinishIngestion(ctx, again[1], store.FileCompleted, "", 1, 1), store.ErrNotFound, "a removed file's finish")
	wantErr(t, s.VectorStores.FinishIngestion(ctx, again[0], "in_progress", "", 0, 0), store.ErrInvalidArgument, "finishing as in progress")

	got, err := s.VectorStores.GetVectorStore(ctx, alice.ID, v.ID)
	noErr(t, err, "GetVectorStore")
	if got.Counts != (store.VectorStoreFileCounts{Completed: 2, Failed: 1}) || got.UsageBytes != 10000 {
		t.Fatalf("store counts %+v and usage %d, want 2 completed, 1 failed, 10000 bytes", got.Counts, got.UsageBytes)
	}
	if more, _ := s.VectorStores.ClaimIngestion(ctx, now.Add(10*lease), lease, 10); len(more) != 0 {
		t.Fatalf("claimed %d finished files", len(more))
	}

	// A cancelled file's claim is no longer held either.
	noErr(t, s.VectorStores.AddVectorStoreFile(ctx, store.VectorStoreFile{StoreID: v.ID, FileID: "f9", UserID: alice.ID, CreatedAt: t0, BatchID: "b"}), "AddVectorStoreFile")
	c, err := s.VectorStores.ClaimIngestion(ctx, now.Add(20*lease), lease, 10)
	noErr(t, err, "ClaimIngestion")
	if len(c) != 1 || c[0].File.FileID != "f9" || c[0].File.BatchID != "b" {
		t.Fatalf("claims %+v, want f9", c)
	}
	if _, err := s.VectorStores.CancelVectorStoreFiles(ctx, alice.ID, v.ID, "b"); err != nil {
		t.Fatal(err)
	}
	wantErr(t, s.VectorStores.FinishIngestion(ctx, c[0], store.FileCompleted, "", 1, 1), store.ErrNotFound, "a cancelled file's finish")
}

// testVectorStoreClaimRace claims from many goroutines at once: every file
// is claimed exactly once.
func testVectorStoreClaimRace(t *testing.T, newStore NewStore) {
	s := newStore(t)
	ctx := t.Context()
	alice := mustUser(t, s, "alice@example.com")
	var files []string
	for i := range 40 {
		files = append(files, fmt.Sprintf("f%02d", i))
	}
	newVectorStore(t, s, alice.ID, t0, files...)
	var mu sync.Mutex
	seen := map[string]int{}
	var wg sync.WaitGroup
	for range 8 {
		wg.Go(func() {
			for {
				claims, err := s.VectorStores.ClaimIngestion(ctx, t0.Add(time.Second), time.Minute, 3)
				if err != nil {
					t.Errorf("ClaimIngestion: %v", err)
					return
				}
				if len(claims) == 0 {
					return
				}
				mu.Lock()
				for _, c := range claims {
					seen[c.File.FileID]++
				}
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	if len(seen) != len(files) {
		t.Fatalf("claimed %d distinct files of %d", len(seen), len(files))
	}
	for id, n := range seen {
		if n != 1 {
			t.Fatalf("file %s claimed %d times", id, n)
		}
	}
}
