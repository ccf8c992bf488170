package storetest

import (
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/parleyhq/parley/server/store"
)

// TestBatches is the conformance suite for store.Batches. It skips where a
// store keeps no batches.
func TestBatches(t *testing.T, newStore NewStore) {
	t.Run("Lifecycle", func(t *testing.T) { testBatchLifecycle(t, newStore) })
	t.Run("CrossUser", func(t *testing.T) { testBatchCrossUser(t, newStore) })
	t.Run("Claims", func(t *testing.T) { testBatchClaims(t, newStore) })
	t.Run("LinesOnce", func(t *testing.T) { testBatchLinesOnce(t, newStore) })
	t.Run("Cancel", func(t *testing.T) { testBatchCancel(t, newStore) })
	t.Run("ListOrder", func(t *testing.T) { testBatchList(t, newStore) })
}

func batchStore(t *testing.T, newStore NewStore) store.Store {
	t.Helper()
	s := newStore(t)
	if s.Batches == nil {
		t.Skip("the store keeps no batches")
	}
	return s
}

func newBatch(userID string, at time.Time) store.Batch {
	return store.Batch{ID: "batch_" + newID(), UserID: userID, APIKeyID: "key-1", Endpoint: "/v1/chat/completions",
		InputFileID: "file-1", CompletionWindow: "24h", Status: store.BatchValidating, Metadata: map[string]string{"job": "nightly"},
		CreatedAt: at, ExpiresAt: at.Add(24 * time.Hour)}
}

func batchLines(batchID string, n int) []store.BatchLine {
	out := make([]store.BatchLine, n)
	for i := range out {
		out[i] = store.BatchLine{BatchID: batchID, Index: i, CustomID: fmt.Sprint("req-", i), Body: fmt.Sprintf(`{"model":"m","n":%d}`, i)}
	}
	return out
}

// claimOnly claims the store's one open batch.
func claimOnly(t *testing.T, s store.Store, id string, now time.Time) store.BatchClaim {
	t.Helper()
	c, ok, err := s.Batches.ClaimBatch(t.Context(), now, time.Minute)
	noErr(t, err, "ClaimBatch")
	if !ok || c.BatchID != id {
		t.Fatalf("ClaimBatch: %v %+v, want batch %s", ok, c, id)
	}
	return c
}

func testBatchLifecycle(t *testing.T, newStore NewStore) {
	s, ctx := batchStore(t, newStore), t.Context()
	u := mustUser(t, s, "batch@example.com")
	b := newBatch(u.ID, t0)
	noErr(t, s.Batches.CreateBatch(ctx, b), "CreateBatch")
	wantErr(t, s.Batches.CreateBatch(ctx, b), store.ErrConflict, "CreateBatch with an ID taken")
	got, err := s.Batches.GetBatch(ctx, u.ID, b.ID)
	noErr(t, err, "GetBatch")
	if got.Status != store.BatchValidating || got.Endpoint != b.Endpoint || got.Metadata["job"] != "nightly" ||
		!got.CreatedAt.Equal(t0) || !got.ExpiresAt.Equal(b.ExpiresAt) || got.APIKeyID != "key-1" || !got.InProgressAt.IsZero() {
		t.Fatalf("GetBatch: %+v", got)
	}

	c := claimOnly(t, s, b.ID, t0)
	noErr(t, s.Batches.StartBatch(ctx, c, batchLines(b.ID, 5), t0.Add(time.Second)), "StartBatch")
	wantErr(t, s.Batches.StartBatch(ctx, c, batchLines(b.ID, 5), t0.Add(time.Second)), store.ErrNotFound, "StartBatch twice")
	got, _ = s.Batches.GetBatch(ctx, "", b.ID)
	if got.Status != store.BatchInProgress || got.Total != 5 || !got.InProgressAt.Equal(t0.Add(time.Second)) {
		t.Fatalf("after StartBatch: %+v", got)
	}

	pending, err := s.Batches.PendingBatchLines(ctx, b.ID, -1, 3)
	noErr(t, err, "PendingBatchLines")
	if len(pending) != 3 || pending[0].Index != 0 || pending[2].CustomID != "req-2" || pending[1].Body != `{"model":"m","n":1}` {
		t.Fatalf("PendingBatchLines: %+v", pending)
	}
	for i, failed := range []bool{false, true, false} {
		ok, err := s.Batches.FinishBatchLine(ctx, b.ID, i, failed, fmt.Sprintf(`{"line":%d}`, i), 100)
		noErr(t, err, "FinishBatchLine")
		if !ok {
			t.Fatalf("FinishBatchLine(%d) reported the line done already", i)
		}
	}
	pending, _ = s.Batches.PendingBatchLines(ctx, b.ID, -1, 10)
	if len(pending) != 2 || pending[0].Index != 3 {
		t.Fatalf("pending after 3 done: %+v", pending)
	}
	if after, _ := s.Batches.PendingBatchLines(ctx, b.ID, 3, 10); len(after) != 1 || after[0].Index != 4 {
		t.Fatalf("pending after index 3: %+v", after)
	}
	got, _ = s.Batches.GetBatch(ctx, u.ID, b.ID)
	if got.Completed != 2 || got.Failed != 1 || got.CostNanos != 300 {
		t.Fatalf("counts: %+v", got)
	}
	all, err := s.Batches.BatchLines(ctx, b.ID, -1, 10)
	noErr(t, err, "BatchLines")
	if len(all) != 5 || !all[1].Done || !all[1].Failed || all[1].Result != `{"line":1}` || all[3].Done {
		t.Fatalf("BatchLines: %+v", all)
	}

	noErr(t, s.Batches.UpdateBatch(ctx, c, store.BatchUpdate{Status: store.BatchFinalizing, At: t0.Add(time.Minute)}), "UpdateBatch finalizing")
	noErr(t, s.Batches.UpdateBatch(ctx, c, store.BatchUpdate{Status: store.BatchCompleted, At: t0.Add(2 * time.Minute),
		OutputFileID: "file-out", ErrorFileID: "file-err"}), "UpdateBatch completed")
	got, _ = s.Batches.GetBatch(ctx, u.ID, b.ID)
	if got.Status != store.BatchCompleted || got.OutputFileID != "file-out" || got.ErrorFileID != "file-err" ||
		!got.FinalizingAt.Equal(t0.Add(time.Minute)) || !got.CompletedAt.Equal(t0.Add(2*time.Minute)) {
		t.Fatalf("after completing: %+v", got)
	}
	if open, err := s.Batches.ListOpenBatches(ctx, 10); err != nil || len(open) != 0 {
		t.Fatalf("ListOpenBatches after the batch ended: %v %v", open, err)
	}
	// An ended batch is not claimed again.
	if _, ok, _ := s.Batches.ClaimBatch(ctx, t0.Add(time.Hour), time.Minute); ok {
		t.Fatal("an ended batch was claimed")
	}

	// A failed validation keeps its errors.
	f := newBatch(u.ID, t0.Add(time.Second))
	noErr(t, s.Batches.CreateBatch(ctx, f), "CreateBatch")
	if open, err := s.Batches.ListOpenBatches(ctx, 10); err != nil || len(open) != 1 || open[0].ID != f.ID || open[0].UserID != u.ID {
		t.Fatalf("ListOpenBatches: %+v %v", open, err)
	}
	fc := claimOnly(t, s, f.ID, t0.Add(time.Hour))
	errs := []store.BatchError{{Code: "duplicate_custom_id", Message: "custom_id req-1 is on line 1 already", Param: "custom_id", Line: 3}}
	noErr(t, s.Batches.UpdateBatch(ctx, fc, store.BatchUpdate{Status: store.BatchFailed, At: t0.Add(time.Hour), Errors: errs}), "UpdateBatch failed")
	got, _ = s.Batches.GetBatch(ctx, u.ID, f.ID)
	if got.Status != store.BatchFailed || len(got.Errors) != 1 || got.Errors[0] != errs[0] || !got.FailedAt.Equal(t0.Add(time.Hour)) {
		t.Fatalf("a failed batch: %+v", got)
	}
}

func testBatchCrossUser(t *testing.T, newStore NewStore) {
	s, ctx := batchStore(t, newStore), t.Context()
	a, b := mustUser(t, s, "a@example.com"), mustUser(t, s, "b@example.com")
	x := newBatch(a.ID, t0)
	noErr(t, s.Batches.CreateBatch(ctx, x), "CreateBatch")
	_, err := s.Batches.GetBatch(ctx, b.ID, x.ID)
	wantErr(t, err, store.ErrNotFound, "GetBatch of another user's")
	_, err = s.Batches.CancelBatch(ctx, b.ID, x.ID, t0)
	wantErr(t, err, store.ErrNotFound, "CancelBatch of another user's")
	if got, _, _ := s.Batches.ListBatches(ctx, b.ID, store.PageRequest{}); len(got) != 0 {
		t.Fatalf("B lists A's batches: %+v", got)
	}
	if got, _ := s.Batches.GetBatch(ctx, a.ID, x.ID); got.Status != store.BatchValidating {
		t.Fatalf("A's batch changed: %+v", got)
	}
}

func testBatchClaims(t *testing.T, newStore NewStore) {
	s, ctx := batchStore(t, newStore), t.Context()
	u := mustUser(t, s, "claims@example.com")
	b := newBatch(u.ID, t0)
	noErr(t, s.Batches.CreateBatch(ctx, b), "CreateBatch")
	c := claimOnly(t, s, b.ID, t0)
	if _, ok, _ := s.Batches.ClaimBatch(ctx, t0.Add(30*time.Second), time.Minute); ok {
		t.Fatal("a held claim was given again")
	}
	c, err := s.Batches.RenewBatch(ctx, c, t0.Add(50*time.Second), time.Minute)
	noErr(t, err, "RenewBatch")
	if !c.Until.Equal(t0.Add(110 * time.Second)) {
		t.Fatalf("renewed until %v", c.Until)
	}
	if _, ok, _ := s.Batches.ClaimBatch(ctx, t0.Add(100*time.Second), time.Minute); ok {
		t.Fatal("a renewed claim was given again before it lapsed")
	}
	// Lapsed: another gateway takes it; the first holder's token no longer works.
	c2 := claimOnly(t, s, b.ID, t0.Add(2*time.Minute))
	_, err = s.Batches.RenewBatch(ctx, c, t0.Add(2*time.Minute), time.Minute)
	wantErr(t, err, store.ErrNotFound, "RenewBatch of a lapsed claim")
	wantErr(t, s.Batches.StartBatch(ctx, c, batchLines(b.ID, 1), t0), store.ErrNotFound, "StartBatch with a lapsed claim")
	wantErr(t, s.Batches.UpdateBatch(ctx, c, store.BatchUpdate{Status: store.BatchFailed, At: t0}), store.ErrNotFound, "UpdateBatch with a lapsed claim")
	// Released: claimable at once.
	noErr(t, s.Batches.ReleaseBatch(ctx, c2), "ReleaseBatch")
	claimOnly(t, s, b.ID, t0.Add(2*time.Minute))

	// Racing gateways: one claim each time.
	o := newBatch(u.ID, t0.Add(time.Second))
	noErr(t, s.Batches.CreateBatch(ctx, o), "CreateBatch")
	var won atomic.Int32
	var wg sync.WaitGroup
	for range 8 {
		wg.Go(func() {
			if c, ok, err := s.Batches.ClaimBatch(ctx, t0.Add(3*time.Minute), time.Minute); err == nil && ok && c.BatchID == o.ID {
				won.Add(1)
			}
		})
	}
	wg.Wait()
	if won.Load() != 1 {
		t.Fatalf("%d of 8 racing gateways claimed the batch", won.Load())
	}
}

func testBatchLinesOnce(t *testing.T, newStore NewStore) {
	s, ctx := batchStore(t, newStore), t.Context()
	u := mustUser(t, s, "once@example.com")
	b := newBatch(u.ID, t0)
	noErr(t, s.Batches.CreateBatch(ctx, b), "CreateBatch")
	c := claimOnly(t, s, b.ID, t0)
	noErr(t, s.Batches.StartBatch(ctx, c, batchLines(b.ID, 1), t0), "StartBatch")
	var done atomic.Int32
	var wg sync.WaitGroup
	for i := range 8 {
		wg.Go(func() {
			if ok, err := s.Batches.FinishBatchLine(ctx, b.ID, 0, false, fmt.Sprintf(`{"by":%d}`, i), 7); err == nil && ok {
				done.Add(1)
			}
		})
	}
	wg.Wait()
	got, _ := s.Batches.GetBatch(ctx, u.ID, b.ID)
	if done.Load() != 1 || got.Completed != 1 || got.CostNanos != 7 {
		t.Fatalf("8 racing finishes: %d reported done, batch %+v", done.Load(), got)
	}
}

func testBatchCancel(t *testing.T, newStore NewStore) {
	s, ctx := batchStore(t, newStore), t.Context()
	u := mustUser(t, s, "cancel@example.com")
	b := newBatch(u.ID, t0)
	noErr(t, s.Batches.CreateBatch(ctx, b), "CreateBatch")
	c := claimOnly(t, s, b.ID, t0)
	noErr(t, s.Batches.StartBatch(ctx, c, batchLines(b.ID, 2), t0), "StartBatch")
	got, err := s.Batches.CancelBatch(ctx, u.ID, b.ID, t0.Add(time.Minute))
	noErr(t, err, "CancelBatch")
	if got.Status != store.BatchCancelling || !got.CancellingAt.Equal(t0.Add(time.Minute)) {
		t.Fatalf("CancelBatch: %+v", got)
	}
	again, err := s.Batches.CancelBatch(ctx, u.ID, b.ID, t0.Add(2*time.Minute))
	noErr(t, err, "CancelBatch again")
	if !again.CancellingAt.Equal(t0.Add(time.Minute)) {
		t.Fatalf("a second cancel moved cancelling_at: %+v", again)
	}
	// The runner holding the claim cannot end it otherwise; it ends it cancelled.
	wantErr(t, s.Batches.UpdateBatch(ctx, c, store.BatchUpdate{Status: store.BatchFinalizing, At: t0.Add(2 * time.Minute)}), store.ErrNotFound, "UpdateBatch finalizing of a cancelling batch")
	noErr(t, s.Batches.UpdateBatch(ctx, c, store.BatchUpdate{Status: store.BatchCancelled, At: t0.Add(3 * time.Minute)}), "UpdateBatch cancelled")
	_, err = s.Batches.CancelBatch(ctx, u.ID, b.ID, t0.Add(4*time.Minute))
	wantErr(t, err, store.ErrConflict, "CancelBatch of a cancelled batch")
}

func testBatchList(t *testing.T, newStore NewStore) {
	s, ctx := batchStore(t, newStore), t.Context()
	u := mustUser(t, s, "list@example.com")
	var ids []string
	for i := range 12 {
		b := newBatch(u.ID, t0.Add(time.Duration(i%4)*time.Second)) // ties broken by ID
		noErr(t, s.Batches.CreateBatch(ctx, b), "CreateBatch")
		ids = append(ids, b.ID)
	}
	got := collect(t, 5, func(p store.PageRequest) ([]store.Batch, string, error) { return s.Batches.ListBatches(ctx, u.ID, p) })
	if len(got) != 12 {
		t.Fatalf("listed %d batches, want 12", len(got))
	}
	for i := 1; i < len(got); i++ {
		a, b := got[i-1], got[i]
		if a.CreatedAt.Before(b.CreatedAt) || a.CreatedAt.Equal(b.CreatedAt) && a.ID < b.ID {
			t.Fatalf("not newest first at %d: %v %s then %v %s", i, a.CreatedAt, a.ID, b.CreatedAt, b.ID)
		}
	}
}
