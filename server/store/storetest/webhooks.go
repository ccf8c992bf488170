package storetest

import (
	"errors"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/parleyhq/parley/server/store"
)

// TestWebhooks is the conformance suite for store.Webhooks. It skips where
// a store keeps no webhooks.
func TestWebhooks(t *testing.T, newStore NewStore) {
	t.Run("Endpoints", func(t *testing.T) { testWebhookEndpoints(t, newStore) })
	t.Run("Max", func(t *testing.T) { testWebhookMax(t, newStore) })
	t.Run("ConcurrentCreates", func(t *testing.T) { testWebhookCreateRace(t, newStore) })
	t.Run("Enqueue", func(t *testing.T) { testWebhookEnqueue(t, newStore) })
	t.Run("Claims", func(t *testing.T) { testWebhookClaims(t, newStore) })
	t.Run("ClaimRace", func(t *testing.T) { testWebhookClaimRace(t, newStore) })
	t.Run("Finish", func(t *testing.T) { testWebhookFinish(t, newStore) })
	t.Run("ListDeliveries", func(t *testing.T) { testWebhookListDeliveries(t, newStore) })
	t.Run("Redeliver", func(t *testing.T) { testWebhookRedeliver(t, newStore) })
}

func webhookStore(t *testing.T, newStore NewStore) store.Store {
	t.Helper()
	s := newStore(t)
	if s.Webhooks == nil {
		t.Skip("the store keeps no webhooks")
	}
	return s
}

const webhookMax = 10

func newEndpoint(userID string, at time.Time, events ...string) store.WebhookEndpoint {
	id := newID()
	return store.WebhookEndpoint{ID: "we_" + id, UserID: userID, URL: "https://hooks.example.com/" + id, Events: events,
		Description: "endpoint " + id, Secret: "whsec_c2VjcmV0LQ" + id[len(id)-8:], CreatedAt: at}
}

func mustEndpoint(t *testing.T, s store.Store, userID string, at time.Time, events ...string) store.WebhookEndpoint {
	t.Helper()
	e := newEndpoint(userID, at, events...)
	noErr(t, s.Webhooks.CreateEndpoint(t.Context(), e, webhookMax), "CreateEndpoint")
	return e
}

func newEventID() string { return "evt_" + newID() }

func sameEndpoint(t *testing.T, got, want store.WebhookEndpoint, what string) {
	t.Helper()
	if got.ID != want.ID || got.UserID != want.UserID || got.URL != want.URL || got.Description != want.Description ||
		got.Secret != want.Secret || !got.CreatedAt.Equal(want.CreatedAt) || len(got.Events) != len(want.Events) ||
		len(want.Events) > 0 && !slices.Equal(got.Events, want.Events) {
		t.Fatalf("%s: got %+v, want %+v", what, got, want)
	}
}

func listDeliveries(t *testing.T, s store.Store, userID, endpointID string) []store.WebhookDelivery {
	t.Helper()
	return collect(t, 4, func(p store.PageRequest) ([]store.WebhookDelivery, string, error) {
		return s.Webhooks.ListDeliveries(t.Context(), userID, endpointID, p)
	})
}

// deliveryOf reads one delivery through ListDeliveries.
func deliveryOf(t *testing.T, s store.Store, userID, endpointID, id string) store.WebhookDelivery {
	t.Helper()
	for _, d := range listDeliveries(t, s, userID, endpointID) {
		if d.ID == id {
			return d
		}
	}
	t.Fatalf("delivery %s to %s is not listed", id, endpointID)
	return store.WebhookDelivery{}
}

func claim(t *testing.T, s store.Store, now time.Time, lease time.Duration, limit int) []store.DeliveryClaim {
	t.Helper()
	cs, err := s.Webhooks.ClaimDeliveries(t.Context(), now, lease, limit)
	noErr(t, err, "ClaimDeliveries")
	return cs
}

// claimOne claims the store's one due delivery.
func claimOne(t *testing.T, s store.Store, id string, now time.Time, lease time.Duration) store.DeliveryClaim {
	t.Helper()
	cs := claim(t, s, now, lease, 10)
	if len(cs) != 1 || cs[0].Delivery.ID != id {
		t.Fatalf("ClaimDeliveries at %v: %+v, want delivery %s alone", now, cs, id)
	}
	return cs[0]
}

func testWebhookEndpoints(t *testing.T, newStore NewStore) {
	s, ctx := webhookStore(t, newStore), t.Context()
	u, other := mustUser(t, s, "hooks@example.com"), mustUser(t, s, "other@example.com")
	all := mustEndpoint(t, s, u.ID, t0)
	some := mustEndpoint(t, s, u.ID, t0.Add(time.Second), "response.completed", "batch.completed")
	mustEndpoint(t, s, other.ID, t0.Add(time.Hour))

	got, err := s.Webhooks.ListEndpoints(ctx, u.ID)
	noErr(t, err, "ListEndpoints")
	if len(got) != 2 {
		t.Fatalf("listed %d endpoints, want 2: %+v", len(got), got)
	}
	sameEndpoint(t, got[0], some, "newest endpoint")
	sameEndpoint(t, got[1], all, "oldest endpoint")
	if len(got[1].Events) != 0 || !got[1].Receives("anything.at_all") || !got[0].Receives("batch.completed") || got[0].Receives("response.failed") {
		t.Fatalf("events: %+v and %+v", got[0], got[1])
	}
	if none, err := s.Webhooks.ListEndpoints(ctx, mustUser(t, s, "none@example.com").ID); err != nil || len(none) != 0 {
		t.Fatalf("a user with no endpoints lists %+v, %v", none, err)
	}

	// Deleting: not another user's; the endpoint's deliveries go with it.
	n, err := s.Webhooks.Enqueue(ctx, u.ID, newEventID(), "response.completed", `{"a":1}`, t0)
	noErr(t, err, "Enqueue")
	if n != 2 {
		t.Fatalf("Enqueue made %d deliveries, want 2", n)
	}
	wantErr(t, s.Webhooks.DeleteEndpoint(ctx, other.ID, some.ID), store.ErrNotFound, "DeleteEndpoint of another user's")
	if got, _ := s.Webhooks.ListEndpoints(ctx, u.ID); len(got) != 2 {
		t.Fatalf("another user's delete removed an endpoint: %+v", got)
	}
	noErr(t, s.Webhooks.DeleteEndpoint(ctx, u.ID, some.ID), "DeleteEndpoint")
	wantErr(t, s.Webhooks.DeleteEndpoint(ctx, u.ID, some.ID), store.ErrNotFound, "DeleteEndpoint twice")
	got, _ = s.Webhooks.ListEndpoints(ctx, u.ID)
	if len(got) != 1 || got[0].ID != all.ID {
		t.Fatalf("after DeleteEndpoint: %+v", got)
	}
	if ds := listDeliveries(t, s, u.ID, some.ID); len(ds) != 0 {
		t.Fatalf("a deleted endpoint lists %d deliveries", len(ds))
	}
	cs := claim(t, s, t0.Add(time.Minute), time.Minute, 10)
	if len(cs) != 1 || cs[0].Delivery.EndpointID != all.ID {
		t.Fatalf("after DeleteEndpoint claimed %+v, want the remaining endpoint's one delivery", cs)
	}
}

func testWebhookMax(t *testing.T, newStore NewStore) {
	s, ctx := webhookStore(t, newStore), t.Context()
	const max = 3
	u, other := mustUser(t, s, "max@example.com"), mustUser(t, s, "other@example.com")
	var made []store.WebhookEndpoint
	for i := range max {
		e := newEndpoint(u.ID, t0.Add(time.Duration(i)*time.Second))
		noErr(t, s.Webhooks.CreateEndpoint(ctx, e, max), fmt.Sprint("CreateEndpoint ", i))
		made = append(made, e)
	}
	wantErr(t, s.Webhooks.CreateEndpoint(ctx, newEndpoint(u.ID, t0), max), store.ErrQuotaExceeded, "CreateEndpoint past the max")
	noErr(t, s.Webhooks.CreateEndpoint(ctx, newEndpoint(other.ID, t0), max), "another user's CreateEndpoint")
	if got, _ := s.Webhooks.ListEndpoints(ctx, u.ID); len(got) != max {
		t.Fatalf("%d endpoints stored, want %d", len(got), max)
	}
	noErr(t, s.Webhooks.DeleteEndpoint(ctx, u.ID, made[0].ID), "DeleteEndpoint")
	noErr(t, s.Webhooks.CreateEndpoint(ctx, newEndpoint(u.ID, t0), max), "CreateEndpoint after a delete")
}

// Concurrent creates against a max never take a user past it.
func testWebhookCreateRace(t *testing.T, newStore NewStore) {
	s, ctx := webhookStore(t, newStore), t.Context()
	const workers, max = 8, 3
	u := mustUser(t, s, "race@example.com")
	var (
		start = make(chan struct{})
		wg    sync.WaitGroup
		errs  = make([]error, workers)
	)
	for i := range workers {
		wg.Go(func() {
			<-start
			errs[i] = s.Webhooks.CreateEndpoint(ctx, newEndpoint(u.ID, t0.Add(time.Duration(i)*time.Second)), max)
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
			t.Fatalf("CreateEndpoint %d: %v, want nil or %v", i, err, store.ErrQuotaExceeded)
		}
	}
	if all, _ := s.Webhooks.ListEndpoints(ctx, u.ID); ok != max || len(all) != max {
		t.Fatalf("%d of %d concurrent creates succeeded and %d endpoints are stored, want %d", ok, workers, len(all), max)
	}
}

func testWebhookEnqueue(t *testing.T, newStore NewStore) {
	s, ctx := webhookStore(t, newStore), t.Context()
	u, other := mustUser(t, s, "enqueue@example.com"), mustUser(t, s, "other@example.com")
	all := mustEndpoint(t, s, u.ID, t0)
	responses := mustEndpoint(t, s, u.ID, t0.Add(time.Second), "response.completed")
	batches := mustEndpoint(t, s, u.ID, t0.Add(2*time.Second), "batch.completed", "batch.failed")
	others := mustEndpoint(t, s, other.ID, t0)

	id, now, payload := newEventID(), t0.Add(time.Minute), `{"type":"response.completed","data":{"id":"resp_1"}}`
	n, err := s.Webhooks.Enqueue(ctx, u.ID, id, "response.completed", payload, now)
	noErr(t, err, "Enqueue")
	if n != 2 {
		t.Fatalf("Enqueue made %d deliveries, want 2 (all types, response.completed)", n)
	}
	for _, e := range []store.WebhookEndpoint{all, responses} {
		ds := listDeliveries(t, s, u.ID, e.ID)
		if len(ds) != 1 {
			t.Fatalf("endpoint %s has %d deliveries, want 1", e.ID, len(ds))
		}
		d := ds[0]
		if d.ID != id || d.EndpointID != e.ID || d.UserID != u.ID || d.Type != "response.completed" || d.Payload != payload ||
			d.Status != store.DeliveryPending || d.Attempts != 0 || d.LastStatusCode != 0 || d.LastError != "" ||
			!d.CreatedAt.Equal(now) || !d.NextAttemptAt.Equal(now) || !d.DeliveredAt.IsZero() {
			t.Fatalf("delivery to %s: %+v", e.ID, d)
		}
	}
	if ds := listDeliveries(t, s, u.ID, batches.ID); len(ds) != 0 {
		t.Fatalf("an endpoint of other types got %+v", ds)
	}
	if ds := listDeliveries(t, s, other.ID, others.ID); len(ds) != 0 {
		t.Fatalf("another user's endpoint got %+v", ds)
	}

	// The same event again makes no second delivery.
	n, err = s.Webhooks.Enqueue(ctx, u.ID, id, "response.completed", payload, now.Add(time.Second))
	noErr(t, err, "Enqueue again")
	if n != 0 {
		t.Fatalf("the same event enqueued again made %d deliveries, want 0", n)
	}
	if ds := listDeliveries(t, s, u.ID, all.ID); len(ds) != 1 || !ds[0].CreatedAt.Equal(now) {
		t.Fatalf("after enqueueing again: %+v", ds)
	}

	n, err = s.Webhooks.Enqueue(ctx, u.ID, newEventID(), "batch.failed", `{}`, now)
	noErr(t, err, "Enqueue batch.failed")
	if n != 2 {
		t.Fatalf("batch.failed made %d deliveries, want 2", n)
	}
	n, err = s.Webhooks.Enqueue(ctx, mustUser(t, s, "none@example.com").ID, newEventID(), "response.completed", `{}`, now)
	if err != nil || n != 0 {
		t.Fatalf("Enqueue for a user with no endpoints: %d, %v", n, err)
	}
}

func testWebhookClaims(t *testing.T, newStore NewStore) {
	s, ctx := webhookStore(t, newStore), t.Context()
	u := mustUser(t, s, "claims@example.com")
	e := mustEndpoint(t, s, u.ID, t0)
	const lease = 30 * time.Second
	id := newEventID()
	noErr(t, errOf(s.Webhooks.Enqueue(ctx, u.ID, id, "response.completed", `{"n":1}`, t0)), "Enqueue")
	later := newEventID()
	noErr(t, errOf(s.Webhooks.Enqueue(ctx, u.ID, later, "response.completed", `{"n":2}`, t0.Add(time.Hour))), "Enqueue later")

	if cs := claim(t, s, t0.Add(-time.Second), lease, 10); len(cs) != 0 {
		t.Fatalf("claimed before due: %+v", cs)
	}
	c := claimOne(t, s, id, t0, lease)
	if c.URL != e.URL || c.Secret != e.Secret || c.Token == "" || !c.Until.Equal(t0.Add(lease)) ||
		c.Delivery.EndpointID != e.ID || c.Delivery.UserID != u.ID || c.Delivery.Payload != `{"n":1}` || c.Delivery.Status != store.DeliveryPending {
		t.Fatalf("the claim: %+v", c)
	}
	if cs := claim(t, s, t0.Add(lease/2), lease, 10); len(cs) != 0 {
		t.Fatalf("a held claim was given again: %+v", cs)
	}

	// Lapsed: another gateway takes it; the first token no longer works.
	c2 := claimOne(t, s, id, t0.Add(lease+time.Second), lease)
	if c2.Token == c.Token || !c2.Until.Equal(t0.Add(2*lease+time.Second)) {
		t.Fatalf("the second claim: %+v, the first %+v", c2, c)
	}
	wantErr(t, s.Webhooks.FinishAttempt(ctx, c, true, 200, "", t0.Add(lease+2*time.Second), time.Time{}), store.ErrNotFound,
		"FinishAttempt with a lapsed claim")
	if d := deliveryOf(t, s, u.ID, e.ID, id); d.Status != store.DeliveryPending || d.Attempts != 0 || d.LastStatusCode != 0 || !d.DeliveredAt.IsZero() {
		t.Fatalf("a lapsed claim's FinishAttempt changed the delivery: %+v", d)
	}
	noErr(t, s.Webhooks.FinishAttempt(ctx, c2, true, 204, "", t0.Add(lease+2*time.Second), time.Time{}), "FinishAttempt with the live claim")

	// The most overdue first, up to limit.
	ids := make([]string, 3)
	for i, off := range []time.Duration{3, 1, 2} {
		ids[i] = newEventID()
		noErr(t, errOf(s.Webhooks.Enqueue(ctx, u.ID, ids[i], "response.completed", `{}`, t0.Add(off*time.Minute))), "Enqueue")
	}
	cs := claim(t, s, t0.Add(10*time.Minute), lease, 2)
	if len(cs) != 2 || cs[0].Delivery.ID != ids[1] || cs[1].Delivery.ID != ids[2] {
		t.Fatalf("claimed %+v, want %s then %s", cs, ids[1], ids[2])
	}
	cs = append(cs, claimOne(t, s, ids[0], t0.Add(10*time.Minute), lease))
	for _, c := range cs {
		noErr(t, s.Webhooks.FinishAttempt(ctx, c, true, 200, "", t0.Add(11*time.Minute), time.Time{}), "FinishAttempt")
	}
	claimOne(t, s, later, t0.Add(time.Hour), lease)
}

func errOf(_ int, err error) error { return err }

// Racing gateways claim disjoint deliveries.
func testWebhookClaimRace(t *testing.T, newStore NewStore) {
	s, ctx := webhookStore(t, newStore), t.Context()
	u := mustUser(t, s, "claimrace@example.com")
	var eps []store.WebhookEndpoint
	for i := range 4 {
		eps = append(eps, mustEndpoint(t, s, u.ID, t0.Add(time.Duration(i)*time.Second)))
	}
	const events = 6 // 24 deliveries
	for i := range events {
		noErr(t, errOf(s.Webhooks.Enqueue(ctx, u.ID, newEventID(), "response.completed", `{}`, t0.Add(time.Duration(i)*time.Millisecond))), "Enqueue")
	}
	const workers, limit = 8, 4
	now := t0.Add(time.Minute)
	var (
		start = make(chan struct{})
		wg    sync.WaitGroup
		got   = make([][]store.DeliveryClaim, workers)
		errs  = make([]error, workers)
	)
	for i := range workers {
		wg.Go(func() {
			<-start
			got[i], errs[i] = s.Webhooks.ClaimDeliveries(ctx, now, time.Minute, limit)
		})
	}
	close(start)
	wg.Wait()
	seen := map[string]bool{}
	tokens := map[string]bool{}
	add := func(c store.DeliveryClaim) {
		k := c.Delivery.EndpointID + "/" + c.Delivery.ID
		if seen[k] {
			t.Fatalf("delivery %s claimed twice", k)
		}
		if tokens[c.Token] {
			t.Fatalf("token %s given twice", c.Token)
		}
		seen[k], tokens[c.Token] = true, true
	}
	for i := range workers {
		noErr(t, errs[i], fmt.Sprint("racing ClaimDeliveries ", i))
		if len(got[i]) > limit {
			t.Fatalf("claimer %d got %d deliveries, limit %d", i, len(got[i]), limit)
		}
		for _, c := range got[i] {
			add(c)
		}
	}
	// Whatever the race left is claimed afterwards, and nothing twice.
	for _, c := range claim(t, s, now, time.Minute, 100) {
		add(c)
	}
	if len(seen) != events*len(eps) {
		t.Fatalf("%d deliveries claimed, want %d", len(seen), events*len(eps))
	}
	if cs := claim(t, s, now.Add(30*time.Second), time.Minute, 100); len(cs) != 0 {
		t.Fatalf("%d held deliveries claimed again", len(cs))
	}
}

func testWebhookFinish(t *testing.T, newStore NewStore) {
	s, ctx := webhookStore(t, newStore), t.Context()
	u := mustUser(t, s, "finish@example.com")
	e := mustEndpoint(t, s, u.ID, t0)
	const lease = time.Minute

	// Delivered.
	ok := newEventID()
	noErr(t, errOf(s.Webhooks.Enqueue(ctx, u.ID, ok, "response.completed", `{}`, t0)), "Enqueue")
	c := claimOne(t, s, ok, t0, lease)
	noErr(t, s.Webhooks.FinishAttempt(ctx, c, true, 200, "", t0.Add(time.Second), time.Time{}), "FinishAttempt delivered")
	d := deliveryOf(t, s, u.ID, e.ID, ok)
	if d.Status != store.DeliveryDelivered || d.Attempts != 1 || d.LastStatusCode != 200 || !d.DeliveredAt.Equal(t0.Add(time.Second)) {
		t.Fatalf("a delivered delivery: %+v", d)
	}
	wantErr(t, s.Webhooks.FinishAttempt(ctx, c, true, 200, "", t0.Add(2*time.Second), time.Time{}), store.ErrNotFound, "FinishAttempt twice")
	if cs := claim(t, s, t0.Add(24*time.Hour), lease, 10); len(cs) != 0 {
		t.Fatalf("a delivered delivery was claimed: %+v", cs)
	}

	// Failed, tried again at next, then failed for good.
	bad := newEventID()
	noErr(t, errOf(s.Webhooks.Enqueue(ctx, u.ID, bad, "response.completed", `{}`, t0.Add(time.Hour))), "Enqueue")
	at := t0.Add(time.Hour)
	c = claimOne(t, s, bad, at, lease)
	next := at.Add(5 * time.Minute)
	noErr(t, s.Webhooks.FinishAttempt(ctx, c, false, 503, "503 Service Unavailable", at.Add(time.Second), next), "FinishAttempt failed")
	d = deliveryOf(t, s, u.ID, e.ID, bad)
	if d.Status != store.DeliveryPending || d.Attempts != 1 || d.LastStatusCode != 503 || d.LastError != "503 Service Unavailable" ||
		!d.NextAttemptAt.Equal(next) || !d.DeliveredAt.IsZero() {
		t.Fatalf("a failed attempt: %+v", d)
	}
	if cs := claim(t, s, next.Add(-time.Nanosecond), lease, 10); len(cs) != 0 {
		t.Fatalf("claimed before its next attempt: %+v", cs)
	}
	c = claimOne(t, s, bad, next, lease)
	if c.Delivery.Attempts != 1 {
		t.Fatalf("the second claim: %+v", c)
	}
	noErr(t, s.Webhooks.FinishAttempt(ctx, c, false, 0, "connection refused", next.Add(time.Second), time.Time{}), "FinishAttempt failed for good")
	d = deliveryOf(t, s, u.ID, e.ID, bad)
	if d.Status != store.DeliveryFailed || d.Attempts != 2 || d.LastStatusCode != 0 || d.LastError != "connection refused" || !d.DeliveredAt.IsZero() {
		t.Fatalf("a delivery failed for good: %+v", d)
	}
	if cs := claim(t, s, t0.Add(48*time.Hour), lease, 10); len(cs) != 0 {
		t.Fatalf("a failed delivery was claimed: %+v", cs)
	}
}

func testWebhookListDeliveries(t *testing.T, newStore NewStore) {
	s, ctx := webhookStore(t, newStore), t.Context()
	u, other := mustUser(t, s, "list@example.com"), mustUser(t, s, "other@example.com")
	e, e2 := mustEndpoint(t, s, u.ID, t0), mustEndpoint(t, s, u.ID, t0.Add(time.Second), "response.completed")
	oe := mustEndpoint(t, s, other.ID, t0)
	noErr(t, errOf(s.Webhooks.Enqueue(ctx, other.ID, newEventID(), "response.completed", `{}`, t0)), "Enqueue other's")
	const n = 13
	for i := range n {
		// Groups of three share created_at, so the ID tie-break matters.
		typ := "batch.completed"
		if i%2 == 0 {
			typ = "response.completed"
		}
		noErr(t, errOf(s.Webhooks.Enqueue(ctx, u.ID, newEventID(), typ, fmt.Sprintf(`{"i":%d}`, i), t0.Add(time.Duration(i/3)*time.Second))), "Enqueue")
	}
	list := func(p store.PageRequest) ([]store.WebhookDelivery, string, error) {
		return s.Webhooks.ListDeliveries(ctx, u.ID, e.ID, p)
	}
	var first []store.WebhookDelivery
	for _, size := range []int{1, 5, n, 100} {
		got := collect(t, size, list)
		if len(got) != n {
			t.Fatalf("size %d: listed %d, want %d", size, len(got), n)
		}
		for i := 1; i < len(got); i++ {
			a, b := got[i-1], got[i]
			if a.CreatedAt.Before(b.CreatedAt) || a.CreatedAt.Equal(b.CreatedAt) && a.ID < b.ID {
				t.Fatalf("size %d: not newest first at %d: %v %s then %v %s", size, i, a.CreatedAt, a.ID, b.CreatedAt, b.ID)
			}
		}
		for _, d := range got {
			if d.EndpointID != e.ID || d.UserID != u.ID {
				t.Fatalf("listed another endpoint's delivery: %+v", d)
			}
		}
		if first == nil {
			first = got
		} else if !slices.EqualFunc(first, got, func(a, b store.WebhookDelivery) bool { return a.ID == b.ID }) {
			t.Fatalf("size %d listed another order", size)
		}
	}
	checkBadCursors(t, list)
	if got := listDeliveries(t, s, u.ID, e2.ID); len(got) != (n+1)/2 {
		t.Fatalf("the response endpoint lists %d, want %d", len(got), (n+1)/2)
	}
	// Another user's endpoint lists empty, not its deliveries.
	if got := listDeliveries(t, s, u.ID, oe.ID); len(got) != 0 {
		t.Fatalf("listed another user's deliveries: %+v", got)
	}
	if got := listDeliveries(t, s, other.ID, e.ID); len(got) != 0 {
		t.Fatalf("another user lists %d of this user's deliveries", len(got))
	}
	if got := listDeliveries(t, s, u.ID, "we_"+newID()); len(got) != 0 {
		t.Fatalf("an unknown endpoint lists %+v", got)
	}
}

func testWebhookRedeliver(t *testing.T, newStore NewStore) {
	s, ctx := webhookStore(t, newStore), t.Context()
	u, other := mustUser(t, s, "redeliver@example.com"), mustUser(t, s, "other@example.com")
	e := mustEndpoint(t, s, u.ID, t0)
	const lease = time.Minute
	ok, bad := newEventID(), newEventID()
	noErr(t, errOf(s.Webhooks.Enqueue(ctx, u.ID, ok, "response.completed", `{"ok":true}`, t0)), "Enqueue")
	c := claimOne(t, s, ok, t0, lease)
	noErr(t, s.Webhooks.FinishAttempt(ctx, c, true, 200, "", t0.Add(time.Second), time.Time{}), "FinishAttempt delivered")
	noErr(t, errOf(s.Webhooks.Enqueue(ctx, u.ID, bad, "response.completed", `{"ok":false}`, t0.Add(time.Minute))), "Enqueue")
	c = claimOne(t, s, bad, t0.Add(time.Minute), lease)
	noErr(t, s.Webhooks.FinishAttempt(ctx, c, false, 500, "500 Internal Server Error", t0.Add(time.Minute), time.Time{}), "FinishAttempt failed")

	_, err := s.Webhooks.Redeliver(ctx, other.ID, e.ID, ok, t0.Add(time.Hour))
	wantErr(t, err, store.ErrNotFound, "Redeliver of another user's")
	if d := deliveryOf(t, s, u.ID, e.ID, ok); d.Status != store.DeliveryDelivered {
		t.Fatalf("another user's Redeliver changed the delivery: %+v", d)
	}
	_, err = s.Webhooks.Redeliver(ctx, u.ID, e.ID, newEventID(), t0.Add(time.Hour))
	wantErr(t, err, store.ErrNotFound, "Redeliver of an unknown delivery")
	_, err = s.Webhooks.Redeliver(ctx, u.ID, "we_"+newID(), ok, t0.Add(time.Hour))
	wantErr(t, err, store.ErrNotFound, "Redeliver through an unknown endpoint")

	for i, id := range []string{ok, bad} {
		now := t0.Add(time.Duration(i+1) * time.Hour)
		d, err := s.Webhooks.Redeliver(ctx, u.ID, e.ID, id, now)
		noErr(t, err, "Redeliver")
		if d.ID != id || d.EndpointID != e.ID || d.UserID != u.ID || d.Status != store.DeliveryPending || !d.NextAttemptAt.Equal(now) {
			t.Fatalf("Redeliver returned %+v", d)
		}
		if l := deliveryOf(t, s, u.ID, e.ID, id); l.Status != store.DeliveryPending || !l.NextAttemptAt.Equal(now) {
			t.Fatalf("after Redeliver: %+v", l)
		}
		c := claimOne(t, s, id, now, lease)
		noErr(t, s.Webhooks.FinishAttempt(ctx, c, true, 200, "", now.Add(time.Second), time.Time{}), "FinishAttempt after Redeliver")
		if d := deliveryOf(t, s, u.ID, e.ID, id); d.Status != store.DeliveryDelivered || !d.DeliveredAt.Equal(now.Add(time.Second)) {
			t.Fatalf("redelivered: %+v", d)
		}
	}
}
