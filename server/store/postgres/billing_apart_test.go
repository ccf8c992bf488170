package postgres_test

import (
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/parleyhq/parley/server/store"
	"github.com/parleyhq/parley/server/store/postgres"
	"github.com/parleyhq/parley/server/store/storetest"
)

// openApart returns a store whose ledger lives apart (WithBilling): two
// fresh schemas, each migrated alike, the users and organisations in one,
// the ledger's tables in the other.
func openApart(t *testing.T) (accounts, billing *postgres.DB) {
	accounts, billing = open(t), open(t)
	accounts.WithBilling(billing)
	return accounts, billing
}

func newApartStore(t *testing.T) store.Store       { a, _ := openApart(t); return a.Store() }
func newApartOutboxStore(t *testing.T) store.Store { a, _ := openApart(t); return a.StoreWithOutbox() }
func TestBillingApartLedger(t *testing.T)          { t.Parallel(); storetest.TestLedger(t, newApartStore) }
func TestBillingApartLedgerOutbox(t *testing.T) {
	t.Parallel()
	storetest.TestLedger(t, newApartOutboxStore)
}
func TestBillingApartUsage(t *testing.T) { t.Parallel(); storetest.TestUsage(t, newApartStore) }
func TestBillingApartUsageSummary(t *testing.T) {
	t.Parallel()
	storetest.TestUsageSummary(t, newApartStore)
}
func TestBillingApartUsageOutbox(t *testing.T) {
	t.Parallel()
	storetest.TestUsageOutbox(t, newApartOutboxStore)
}
func TestBillingApartAccounts(t *testing.T) { t.Parallel(); storetest.TestAccounts(t, newApartStore) }
func TestBillingApartOrganizations(t *testing.T) {
	t.Parallel()
	storetest.TestOrganizations(t, newApartStore)
}
func TestBillingApartOrganizationsOutbox(t *testing.T) {
	t.Parallel()
	storetest.TestOrganizations(t, newApartOutboxStore)
}

// With the ledger apart, a charge and an organisation's budget touch only
// the billing schema's ledger tables, and its users and organisations only
// the other's: each side's tables of the other kind stay empty, so the two
// can be separate clusters.
func TestBillingApartKeepsEachSideItsOwn(t *testing.T) {
	t.Parallel()
	accounts, billing := openApart(t)
	s, ctx := accounts.Store(), t.Context()
	now := time.Now()
	u := store.User{ID: uuid.NewString(), Email: uuid.NewString() + "@example.com", PasswordHash: "x", Tier: store.TierFree, CreatedAt: now}
	if err := s.Accounts.CreateUser(ctx, u); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Ledger.Adjust(ctx, store.Adjustment{UserID: u.ID, DeltaNanos: 1000, Reason: "top-up", At: now}); err != nil {
		t.Fatal(err)
	}
	org := store.Organization{ID: uuid.NewString(), Name: "Apart", TimeZone: "Asia/Tokyo", CreatedBy: u.ID, CreatedAt: now}
	bill := store.User{ID: uuid.NewString(), Email: uuid.NewString() + "@org.invalid", PasswordHash: "x", CreatedAt: now}
	if err := s.Organizations.CreateOrganization(ctx, org, bill, store.OrgMember{UserID: u.ID, Role: store.RoleOwner, CreatedAt: now}); err != nil {
		t.Fatal(err)
	}
	b, err := s.Organizations.PutBudget(ctx, store.Budget{ID: uuid.NewString(), OrgID: org.ID, Scope: store.ScopeOrganization, ScopeID: org.ID,
		Period: store.PeriodDaily, LimitNanos: 500}, now)
	if err != nil || b.WindowStart.In(time.UTC).Hour() != 15 { // midnight in Tokyo
		t.Fatalf("budget %+v, %v", b, err)
	}
	org.TimeZone = "UTC"
	if err := s.Organizations.UpdateOrganization(ctx, org); err != nil {
		t.Fatal(err)
	}
	budgets, err := s.Organizations.ListBudgets(ctx, org.ID, now.Add(48*time.Hour))
	if err != nil || len(budgets) != 1 || budgets[0].WindowStart.In(time.UTC).Hour() != 0 {
		t.Fatalf("after the organisation moved to UTC, budgets %+v, %v", budgets, err)
	}
	for _, c := range []struct {
		db     *postgres.DB
		table  string
		filled bool
	}{
		{billing, "billing_accounts", true}, {billing, "ledger_adjustments", true}, {billing, "budgets", true},
		{accounts, "billing_accounts", false}, {accounts, "ledger_adjustments", false}, {accounts, "budgets", false},
		{accounts, "users", true}, {accounts, "organizations", true}, {accounts, "org_members", true},
		{billing, "users", false}, {billing, "organizations", false}, {billing, "org_members", false},
	} {
		n, err := c.db.Count(ctx, c.table)
		if err != nil || (n > 0) != c.filled {
			side := "accounts"
			if c.db == billing {
				side = "billing"
			}
			t.Errorf("%s.%s holds %d rows (%v); want rows: %v", side, c.table, n, err, c.filled)
		}
	}
}

// openSharded returns a store whose ledger is spread over two billing
// schemas (logical shards 0–15 and 16–31), apart from the users' schema.
func openSharded(t *testing.T) (accounts *postgres.DB, billing []*postgres.DB) {
	accounts, billing = open(t), []*postgres.DB{open(t), open(t)}
	accounts.WithBillingShards(billing)
	return accounts, billing
}

func newShardedStore(t *testing.T) store.Store { a, _ := openSharded(t); return a.Store() }
func newShardedOutboxStore(t *testing.T) store.Store {
	a, _ := openSharded(t)
	return a.StoreWithOutbox()
}
func TestBillingShardedLedger(t *testing.T) { t.Parallel(); storetest.TestLedger(t, newShardedStore) }
func TestBillingShardedLedgerOutbox(t *testing.T) {
	t.Parallel()
	storetest.TestLedger(t, newShardedOutboxStore)
}
func TestBillingShardedUsage(t *testing.T) { t.Parallel(); storetest.TestUsage(t, newShardedStore) }
func TestBillingShardedUsageSummary(t *testing.T) {
	t.Parallel()
	storetest.TestUsageSummary(t, newShardedStore)
}
func TestBillingShardedOrganizations(t *testing.T) {
	t.Parallel()
	storetest.TestOrganizations(t, newShardedStore)
}
func TestBillingShardedUsageOutbox(t *testing.T) {
	t.Parallel()
	storetest.TestUsageOutbox(t, newShardedOutboxStore)
}
func TestBillingShardedOrganizationsOutbox(t *testing.T) {
	t.Parallel()
	storetest.TestOrganizations(t, newShardedOutboxStore)
}

// With the ledger over two clusters, each user's account, holds and usage
// records are on the cluster of the user's logical shard and on no other,
// and a hold released (no record, no user named) is found wherever it is.
func TestBillingShardsPlaceEachUserOnOne(t *testing.T) {
	t.Parallel()
	accounts, billing := openSharded(t)
	s, ctx := accounts.Store(), t.Context()
	now := time.Now()
	want, wantRecords := make([]int64, 2), make([]int64, 2)
	for i := range 40 {
		id := uuid.NewString()
		if _, err := s.Ledger.Adjust(ctx, store.Adjustment{UserID: id, DeltaNanos: 1000, Reason: "top-up", At: now}); err != nil {
			t.Fatal(err)
		}
		if _, err := s.Ledger.Reserve(ctx, store.Reservation{ID: uuid.NewString(), UserID: id, AmountNanos: 100, CreatedAt: now, ExpiresAt: now.Add(time.Hour)}); err != nil {
			t.Fatal(err)
		}
		rid := uuid.NewString()
		if _, err := s.Ledger.Reserve(ctx, store.Reservation{ID: rid, UserID: id, AmountNanos: 200, CreatedAt: now, ExpiresAt: now.Add(time.Hour)}); err != nil {
			t.Fatal(err)
		}
		if i%2 == 0 {
			rec := &store.UsageRecord{RequestID: uuid.NewString(), UserID: id, Channel: store.ChannelAPI, Model: "m", FinishReason: "stop", CreatedAt: now}
			if _, err := s.Ledger.Settle(ctx, rid, 150, now, rec); err != nil {
				t.Fatal(err)
			}
		} else if _, err := s.Ledger.Settle(ctx, rid, 0, now, nil); err != nil { // released: found on its cluster
			t.Fatal(err)
		}
		bal, err := s.Ledger.Account(ctx, id)
		wantAvail := int64(1000 - 100 - 150)
		if i%2 == 1 {
			wantAvail = 900
		}
		if err != nil || bal.AvailableNanos != wantAvail || bal.ReservedNanos != 100 {
			t.Fatalf("user %d: balance %+v (%v), want %d available and 100 held", i, bal, err, wantAvail)
		}
		want[postgres.LedgerShard(id)*2/postgres.LedgerShards]++
		if i%2 == 0 {
			wantRecords[postgres.LedgerShard(id)*2/postgres.LedgerShards]++
		}
	}
	for i, db := range billing {
		n, err := db.Count(ctx, "billing_accounts")
		if err != nil || n != want[i] {
			t.Errorf("cluster %d holds %d accounts (%v), want %d", i, n, err, want[i])
		}
		if n, err := db.Count(ctx, "usage_records"); err != nil || n != wantRecords[i] {
			t.Errorf("cluster %d holds %d usage records (%v), want %d", i, n, err, wantRecords[i])
		}
		if want[i] == 0 {
			t.Errorf("no user hashed to cluster %d of 40", i)
		}
	}
	if n, _ := accounts.Count(ctx, "billing_accounts"); n != 0 {
		t.Errorf("the users' schema holds %d accounts", n)
	}
}
