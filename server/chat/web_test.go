package chat

import (
	"context"
	"sync"
	"testing"
	"time"

	parleyv1 "github.com/parleyhq/parley/gen/parley/v1"
	"github.com/parleyhq/parley/server/auth"
	"github.com/parleyhq/parley/server/limits"
	"github.com/parleyhq/parley/server/store"
	"github.com/parleyhq/parley/server/store/memlimit"
	"github.com/parleyhq/parley/server/store/memlive"
)

// puts records the messages Put stores.
type puts struct {
	store.Messages
	mu  sync.Mutex
	all []store.Message
}

func (p *puts) Put(ctx context.Context, m store.Message) error {
	p.mu.Lock()
	p.all = append(p.all, m)
	p.mu.Unlock()
	return p.Messages.Put(ctx, m)
}

// An answer is stored in progress before it is generated, rewritten as it
// grows at most once per persistDeltas deltas (here, with no time passing),
// and stored complete at the end.
func TestWebAnswerIsSavedAsItGrowsThrottled(t *testing.T) {
	r := newRig(t, 0)
	rec := &puts{Messages: r.store.Messages}
	limiter := memlimit.New(time.Minute)
	r.core.Limits, r.core.Conversations, r.core.Messages, r.core.Generations = limits.New(limiter, time.Now), r.store.Conversations, rec, memlive.New()
	frozen := time.Now()
	r.core.Now = func() time.Time { return frozen } // no time passes: only the count throttles
	ctx := auth.WithPrincipal(t.Context(), auth.Principal{UserID: r.user, Tier: store.TierMax, Channel: auth.ChannelSession})
	deltas := 0
	for i := range 6 { // long enough answers: over persistDeltas in all
		conv, err := r.core.Send(ctx, SendRequest{Model: "sim-small", Parts: []store.Part{{Text: "Tell me a long story, please. " + string(rune('a'+i))}}})
		if err != nil {
			t.Fatal(err)
		}
		if err := r.core.Follow(ctx, conv, 0, func(ev *parleyv1.GenerationEvent) error {
			if ev.GetDelta() != nil {
				deltas++
			}
			return nil
		}); err != nil {
			t.Fatal(err)
		}
	}
	r.core.Wait()
	byAnswer := map[string][]store.Message{}
	for _, m := range rec.all {
		byAnswer[m.ID] = append(byAnswer[m.ID], m)
	}
	if len(byAnswer) != 6 || deltas < persistDeltas {
		t.Fatalf("%d answers with %d deltas: not enough to test", len(byAnswer), deltas)
	}
	writes := 0
	for id, ms := range byAnswer {
		first, last := ms[0], ms[len(ms)-1]
		if first.Status != store.MessageInProgress || len(first.Parts) != 0 || last.Status != store.MessageComplete || last.FinishReason == "" {
			t.Fatalf("answer %s: first put %+v, last %+v", id, first, last)
		}
		for _, m := range ms[1 : len(ms)-1] {
			if m.Status != store.MessageInProgress || m.Parts[0].Text == "" {
				t.Fatalf("answer %s: a save in progress %+v", id, m)
			}
		}
		writes += len(ms) - 2
	}
	t.Logf("%d deltas, %d saves in progress", deltas, writes)
	if max := deltas/persistDeltas + 6; writes > max || writes == 0 {
		t.Fatalf("%d saves in progress for %d deltas, want 1 to %d (one per %d deltas)", writes, deltas, max, persistDeltas)
	}
}
