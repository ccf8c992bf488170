package chat

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"connectrpc.com/connect"
	"google.golang.org/protobuf/proto"

	parleyv1 "github.com/parleyhq/parley/gen/parley/v1"
	"github.com/parleyhq/parley/server/apierr"
	"github.com/parleyhq/parley/server/auth"
	"github.com/parleyhq/parley/server/billing"
	"github.com/parleyhq/parley/server/llm"
	"github.com/parleyhq/parley/server/models"
	"github.com/parleyhq/parley/server/scheduler"
	"github.com/parleyhq/parley/server/store"
	"github.com/parleyhq/parley/server/store/sqlite"
	"github.com/parleyhq/parley/server/tokenize"
	"github.com/parleyhq/parley/server/worker/sim"
)

// rig is the core over real parts: SQLite, billing, the scheduler and a sim
// worker at time scale 0.
type rig struct {
	core  *Core
	store store.Store
	user  string
}

func newRig(t *testing.T, balanceNanos int64) *rig {
	t.Helper()
	ctx := context.Background()
	db, err := sqlite.Open(ctx, filepath.Join(t.TempDir(), "parley.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	st := db.Store()
	logger := slog.New(slog.NewTextHandler(io.Discard, nil))
	sched, err := scheduler.New(scheduler.Config{}, logger)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(sched.Close)
	sched.AddWorker("sim", sim.New(sim.Config{TimeScale: 0}))
	catalog, _ := models.Load("")
	r := &rig{store: st, user: "u1"}
	if err := st.Accounts.CreateUser(ctx, store.User{ID: r.user, Email: "u1@example.com", Tier: store.TierFree, CreatedAt: time.Now()}); err != nil {
		t.Fatal(err)
	}
	if balanceNanos > 0 {
		if _, err := st.Ledger.Adjust(ctx, store.Adjustment{UserID: r.user, DeltaNanos: balanceNanos, Reason: "test", At: time.Now()}); err != nil {
			t.Fatal(err)
		}
	}
	r.core = &Core{
		Models: catalog, Tokens: tokenize.Default(), Router: sched, Logger: logger, Now: time.Now,
		Billing:        billing.New(st.Ledger, time.Now, time.Minute, logger),
		MaxPromptBytes: 1 << 20,
	}
	return r
}

func (r *rig) ctx() context.Context {
	return auth.WithPrincipal(context.Background(), auth.Principal{UserID: r.user, Tier: store.TierFree, Channel: auth.ChannelAPIKey, KeyID: "k1"})
}

func userMsg(text string) []llm.ChatMessage {
	return []llm.ChatMessage{{Role: "user", Parts: []llm.Part{{Text: text}}}}
}

func TestCompleteEventsUsageAndCharge(t *testing.T) {
	r := newRig(t, 1e9)
	var got []*parleyv1.GenerationEvent
	out, err := r.core.Complete(r.ctx(), &Request{Request: llm.Request{Model: "sim-small", Messages: userMsg("Hello there, rabbit.")}, MaxOutputTokens: 40}, func(ev *parleyv1.GenerationEvent) error {
		got = append(got, proto.CloneOf(ev)) // an Emit keeps copies: the deltas come in one event, reused
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(got) < 3 || got[0].GetStarted() == nil || got[len(got)-1].GetFinished() == nil {
		t.Fatalf("events %v", got)
	}
	for i, ev := range got {
		if ev.GetSeq() != uint64(i+1) {
			t.Fatalf("event %d has seq %d", i, ev.GetSeq())
		}
	}
	deltas := len(got) - 2
	fin := got[len(got)-1].GetFinished()
	if int(fin.GetUsage().GetCompletionTokens()) != deltas || out.Usage.CompletionTokens != deltas {
		t.Fatalf("%d deltas, usage says %d", deltas, fin.GetUsage().GetCompletionTokens())
	}
	m, _ := r.core.Models.Lookup("sim-small")
	wantCost := m.Cost(int64(out.Usage.PromptTokens), int64(out.Usage.CompletionTokens))
	if fin.GetCostNanos() != wantCost || wantCost == 0 {
		t.Fatalf("cost %d, want %d", fin.GetCostNanos(), wantCost)
	}
	b, _ := r.store.Ledger.Account(context.Background(), r.user)
	if b.AvailableNanos != 1e9-wantCost || b.ReservedNanos != 0 {
		t.Fatalf("balance %+v after a charge of %d", b, wantCost)
	}
}

// A token costs no allocation on its way through the core: every delta
// goes out in the same event. Measured over the real path (scheduler, sim
// worker, metrics, events) as the difference between a long answer and a
// short one, so the request's own allocations cancel out.
func TestDeltasAllocateNothing(t *testing.T) {
	r := newRig(t, 1e12)
	deltas := 0
	run := func(tokens int64) {
		_, err := r.core.Complete(r.ctx(), &Request{Request: llm.Request{Model: "sim-small", Messages: userMsg("Hello there, rabbit.")}, MaxOutputTokens: tokens}, func(ev *parleyv1.GenerationEvent) error {
			if ev.GetDelta().GetText() != "" {
				deltas++
			}
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	run(5) // warm: prepared statements, pools
	deltas = 0
	short := testing.AllocsPerRun(20, func() { run(5) })
	shortDeltas := deltas
	deltas = 0
	long := testing.AllocsPerRun(20, func() { run(1024) })
	more := float64(deltas-shortDeltas) / 21 // AllocsPerRun runs once more to warm up
	if more < 50 {
		t.Fatalf("the long answer had only %.0f deltas more than the short one", more)
	}
	if perToken := (long - short) / more; perToken > 0.25 { // the sim worker grows a few slices of its own
		t.Errorf("%.2f allocations per delta (%.0f for the short answer, %.0f for one %.0f deltas longer), want none (one would be 1.0)", perToken, short, long, more)
	}
}

func TestBadRequestsNameTheField(t *testing.T) {
	r := newRig(t, 1e9)
	huge := make([]byte, 2<<20)
	for i := range huge {
		huge[i] = 'a'
	}
	for _, tc := range []struct {
		name  string
		req   Request
		field string
	}{
		{"no model", Request{Request: llm.Request{Messages: userMsg("hi")}}, "model"},
		{"empty messages", Request{Request: llm.Request{Model: "sim-small"}}, "messages"},
		{"max output over the model's", Request{Request: llm.Request{Model: "sim-small", Messages: userMsg("hi")}, MaxOutputTokens: 1 << 20}, "max_output_tokens"},
		{"negative max output", Request{Request: llm.Request{Model: "sim-small", Messages: userMsg("hi")}, MaxOutputTokens: -1}, "max_output_tokens"},
		{"bad role", Request{Request: llm.Request{Model: "sim-small", Messages: []llm.ChatMessage{{Role: "robot", Parts: []llm.Part{{Text: "x"}}}}}}, "messages[0].role"},
		{"invalid UTF-8", Request{Request: llm.Request{Model: "sim-small", Messages: userMsg("ok \xff\xfe")}}, "messages[0].parts[0].text"},
		{"too many bytes", Request{Request: llm.Request{Model: "sim-small", Messages: userMsg(string(huge))}}, "messages"},
		{"past the context window", Request{Request: llm.Request{Model: "sim-small", Messages: userMsg(repeat("word ", 20000))}}, "messages"},
		{"temperature", Request{Request: llm.Request{Model: "sim-small", Messages: userMsg("hi"), Temperature: ptr(3.0)}}, "temperature"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := r.core.Complete(r.ctx(), &tc.req, func(*parleyv1.GenerationEvent) error { return nil })
			var fv parleyv1.FieldViolation
			if connect.CodeOf(err) != connect.CodeInvalidArgument || !apierr.Detail(err, &fv) || fv.GetField() != tc.field {
				t.Fatalf("err %v (field %q), want invalid_argument naming %q", err, fv.GetField(), tc.field)
			}
		})
	}
	b, _ := r.store.Ledger.Account(context.Background(), r.user)
	if b.AvailableNanos != 1e9 || b.ReservedNanos != 0 {
		t.Fatalf("refused requests moved money: %+v", b)
	}
}

// 200 concurrent requests against a balance that covers exactly 50 of them:
// exactly 50 succeed, the rest are refused for balance, and the ledger
// balances to the nano-USD against the usage records.
func TestConcurrentRequestsCannotOverdraw(t *testing.T) {
	m, _ := models.Load("")
	model, _ := m.Lookup("sim-small")
	tok := tokenize.Default()
	msgs := userMsg("Tell me about the white rabbit and the pocket watch, at length.")
	const maxOut = 8
	hold := model.Cost(int64(llm.PromptTokens(tok, msgs)), maxOut)
	r := newRig(t, 50*hold+hold-1)
	var wg sync.WaitGroup
	var mu sync.Mutex
	ok, short := 0, 0
	for range 200 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			out, err := r.core.Complete(r.ctx(), &Request{Request: llm.Request{Model: "sim-small", Messages: msgs}, MaxOutputTokens: maxOut}, func(*parleyv1.GenerationEvent) error { return nil })
			mu.Lock()
			defer mu.Unlock()
			switch {
			case err == nil && out.FinishReason == llm.FinishLength:
				ok++
			case err == nil:
				t.Errorf("finished %s before max tokens; the test needs length finishes", out.FinishReason)
			case apierr.Detail(err, &parleyv1.InsufficientBalance{}):
				short++
			default:
				t.Errorf("unexpected error %v", err)
			}
		}()
	}
	wg.Wait()
	if ok != 50 || short != 150 {
		t.Fatalf("%d succeeded, %d refused for balance; want 50 and 150", ok, short)
	}
	// Each charge committed with its record: nothing to wait for.
	recs, _, err := r.store.Usage.List(context.Background(), r.user, store.UsageFilter{}, store.PageRequest{Size: 1000})
	if err != nil {
		t.Fatal(err)
	}
	var charged int64
	for _, rec := range recs {
		charged += rec.CostNanos
	}
	b, _ := r.store.Ledger.Account(context.Background(), r.user)
	if len(recs) != 50 || b.ReservedNanos != 0 || b.AvailableNanos != 50*hold+hold-1-charged || b.AvailableNanos != hold-1 {
		t.Fatalf("%d records charging %d; balance %+v", len(recs), charged, b)
	}
}

// A client that goes away mid-stream cancels the generation and is charged
// the prompt plus the tokens actually generated.
func TestDisconnectChargesWhatWasGenerated(t *testing.T) {
	r := newRig(t, 1e9)
	ctx, cancel := context.WithCancel(r.ctx())
	deltas := 0
	out, err := r.core.Complete(ctx, &Request{Request: llm.Request{Model: "sim-small", Messages: userMsg("Hello")}, MaxOutputTokens: 500}, func(ev *parleyv1.GenerationEvent) error {
		if ev.GetDelta() != nil {
			if deltas++; deltas == 5 {
				cancel()
				return errors.New("client gone")
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if out.FinishReason != llm.FinishCancelled || out.Usage.CompletionTokens < 4 || out.Usage.CompletionTokens > 6 {
		t.Fatalf("outcome %+v", out)
	}
	m, _ := r.core.Models.Lookup("sim-small")
	want := m.Cost(int64(out.Usage.PromptTokens), int64(out.Usage.CompletionTokens))
	b, _ := r.store.Ledger.Account(context.Background(), r.user)
	if out.CostNanos != want || b.AvailableNanos != 1e9-want || b.ReservedNanos != 0 {
		t.Fatalf("charged %d (want %d), balance %+v", out.CostNanos, want, b)
	}
}

func TestUnauthenticated(t *testing.T) {
	r := newRig(t, 0)
	_, err := r.core.Complete(context.Background(), &Request{Request: llm.Request{Model: "sim-small", Messages: userMsg("hi")}}, func(*parleyv1.GenerationEvent) error { return nil })
	if connect.CodeOf(err) != connect.CodeUnauthenticated {
		t.Fatalf("err %v", err)
	}
}

func repeat(s string, n int) string {
	b := make([]byte, 0, len(s)*n)
	for range n {
		b = append(b, s...)
	}
	return string(b)
}

func ptr[T any](v T) *T { return &v }
