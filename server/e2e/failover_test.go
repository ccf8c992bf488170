package e2e

import (
	"fmt"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"connectrpc.com/connect"
	"github.com/jackc/pgx/v5"

	parleyv1 "github.com/parleyhq/parley/gen/parley/v1"
	"github.com/parleyhq/parley/server/store/postgres"
)

// Charges survive the loss of the primary (RPO 0 for the ledger), on
// scripts/services.sh's pair (PARLEY_SERVICES_PGSYNC=1): a primary whose
// commits wait for its synchronous hot standby. A gateway, given both hosts
// with target_session_attrs=read-write, settles API charges; right after
// the last one answers, the primary is stopped at once and the standby
// promoted. The same gateway reconnects to the new primary by itself, and
// the balance is exactly the top-up less every charge the client was told
// of, with a usage record for each and nothing left held. Twice: with the
// whole database on the pair, and with only the ledger there
// (--billing-postgres-url; users, keys and the rest on the test PostgreSQL),
// the billing cluster of docs/scaling.md.
func TestChargesSurviveFailoverToSyncStandby(t *testing.T) {
	primary, standby := os.Getenv("PARLEY_TEST_PGSYNC_PRIMARY_URL"), os.Getenv("PARLEY_TEST_PGSYNC_STANDBY_URL")
	if primary == "" || standby == "" {
		t.Skip("PARLEY_TEST_PGSYNC_PRIMARY_URL or PARLEY_TEST_PGSYNC_STANDBY_URL not set (PARLEY_SERVICES_PGSYNC=1 scripts/services.sh up)")
	}
	t.Run("one cluster", func(t *testing.T) { chargesSurviveFailover(t, primary, standby, false) })
	t.Run("billing apart", func(t *testing.T) {
		if os.Getenv("PARLEY_TEST_POSTGRES_URL") == "" {
			t.Skip("PARLEY_TEST_POSTGRES_URL not set")
		}
		chargesSurviveFailover(t, primary, standby, true)
	})
}

func chargesSurviveFailover(t *testing.T, primary, standby string, apart bool) {
	root, _ := filepath.Abs("../..")
	services := func(cmd string) {
		t.Helper()
		c := exec.Command("scripts/services.sh", cmd)
		c.Dir = root
		if out, err := c.CombinedOutput(); err != nil {
			t.Fatalf("services.sh %s: %v\n%s", cmd, err, out)
		}
	}
	// The promoted standby's history is not the old primary's: a new pair
	// for whoever comes next.
	t.Cleanup(func() { services("pgsync-reset") })
	name := freshDatabase(t, primary)
	conn, err := pgx.Connect(ctxTimeout(t, 10*time.Second), primary)
	if err != nil {
		t.Fatal(err)
	}
	var state string
	err = conn.QueryRow(ctxTimeout(t, 10*time.Second), `SELECT sync_state FROM pg_stat_replication WHERE application_name = 'standby'`).Scan(&state)
	conn.Close(ctxTimeout(t, 10*time.Second))
	if err != nil || state != "sync" {
		t.Fatalf("the standby is %q (%v), not a synchronous standby", state, err)
	}
	p, _ := url.Parse(primary)
	s, _ := url.Parse(standby)
	pair := fmt.Sprintf("postgres://postgres@%s,%s/%s?sslmode=disable&target_session_attrs=read-write", p.Host, s.Host, name)
	var mainURL string
	if apart {
		main := os.Getenv("PARLEY_TEST_POSTGRES_URL")
		mainURL = inDatabase(t, main, freshDatabase(t, main))
		t.Setenv("PARLEY_POSTGRES_URL", mainURL)
		t.Setenv("PARLEY_BILLING_POSTGRES_URL", pair)
	} else {
		t.Setenv("PARLEY_POSTGRES_URL", pair)
	}
	setSecret(t)
	gw := startServer(t, fastAuth...)
	a := gw.newAccount(t, "failover@example.com")
	gw.topup(t, a, "1")
	c := gw.api(protocols[0], cred{bearer: a.Key})

	const charges = 20
	var spent int64
	for i := range charges {
		res, err := c.Chat.Complete(ctxTimeout(t, 20*time.Second), connect.NewRequest(&parleyv1.CompleteRequest{
			Model: "sim-small", Messages: userText(fmt.Sprintf("Charge %d, please.", i)), MaxOutputTokens: 6}))
		if err != nil {
			t.Fatal(err)
		}
		spent += res.Msg.GetCostNanos()
	}
	failedAt := time.Now()
	services("pgsync-failover")

	var bal *parleyv1.GetBalanceResponse
	waitFor(t, 60*time.Second, "the gateway answering from the promoted standby", func() bool {
		res, err := c.Billing.GetBalance(ctxTimeout(t, 5*time.Second), connect.NewRequest(&parleyv1.GetBalanceRequest{}))
		if err == nil {
			bal = res.Msg
		}
		return err == nil
	})
	t.Logf("failover: the gateway answered %.1f s after the primary was stopped", time.Since(failedAt).Seconds())
	if want := int64(1e9) - spent; bal.GetBalanceNanos() != want || bal.GetReservedNanos() != 0 {
		t.Fatalf("after the failover: balance %d reserved %d; want %d (1 USD less the %d charges the client was told of, %d) and nothing held",
			bal.GetBalanceNanos(), bal.GetReservedNanos(), want, charges, spent)
	}
	usage, err := c.Billing.ListUsage(ctxTimeout(t, 10*time.Second), connect.NewRequest(&parleyv1.ListUsageRequest{PageSize: 100}))
	if err != nil {
		t.Fatal(err)
	}
	var recorded int64
	for _, r := range usage.Msg.GetUsageRecords() {
		recorded += r.GetCostNanos()
	}
	if len(usage.Msg.GetUsageRecords()) != charges || recorded != spent {
		t.Fatalf("after the failover: %d usage records costing %d, want %d costing %d", len(usage.Msg.GetUsageRecords()), recorded, charges, spent)
	}
	if apart { // the ledger was on the pair only; the users on the other
		conn, err := pgx.Connect(ctxTimeout(t, 10*time.Second), mainURL)
		if err != nil {
			t.Fatal(err)
		}
		var users, accounts, records int
		err = conn.QueryRow(ctxTimeout(t, 10*time.Second), `SELECT (SELECT count(*) FROM users), (SELECT count(*) FROM billing_accounts),
			(SELECT count(*) FROM usage_records)`).Scan(&users, &accounts, &records)
		conn.Close(ctxTimeout(t, 10*time.Second))
		if err != nil || users == 0 || accounts != 0 || records != 0 {
			t.Fatalf("the accounts' database holds %d users, %d billing accounts, %d usage records (%v): want users and no ledger", users, accounts, records, err)
		}
	}
	// And the new primary takes charges.
	if _, err := c.Chat.Complete(ctxTimeout(t, 20*time.Second), connect.NewRequest(&parleyv1.CompleteRequest{
		Model: "sim-small", Messages: userText("One more after the failover."), MaxOutputTokens: 6})); err != nil {
		t.Fatalf("a charge on the promoted standby: %v", err)
	}
}

// The ledger spread over two PostgreSQL clusters (--billing-postgres-url
// with two URLs; here two databases): the usage summary suite through a
// gateway, whose balances, holds and records land on each user's shard.
func TestUsageSummaryLedgerSharded(t *testing.T) {
	main := os.Getenv("PARLEY_TEST_POSTGRES_URL")
	if main == "" {
		t.Skip("PARLEY_TEST_POSTGRES_URL not set (scripts/services.sh up; eval \"$(scripts/services.sh env)\")")
	}
	scaleMode(t)
	t.Setenv("PARLEY_CLICKHOUSE_URL", "") // the records in the ledger's clusters
	t.Setenv("PARLEY_BILLING_POSTGRES_URL", inDatabase(t, main, freshDatabase(t, main))+" "+inDatabase(t, main, freshDatabase(t, main)))
	usageSummarySuite(t, startServer(t, fastAuth...))
}

// A logical ledger shard moved while two gateways charge its user:
// `parley admin move-ledger-shard` moves the user's shard to the other
// cluster between charges through both gateways; the gateways find it
// there by themselves (the old cluster fences the shard), and the balance
// and the usage records add up to exactly the charges the client was told.
func TestMoveLedgerShardThroughGateways(t *testing.T) {
	main := os.Getenv("PARLEY_TEST_POSTGRES_URL")
	if main == "" {
		t.Skip("PARLEY_TEST_POSTGRES_URL not set (scripts/services.sh up; eval \"$(scripts/services.sh env)\")")
	}
	scaleMode(t)
	t.Setenv("PARLEY_CLICKHOUSE_URL", "")
	t.Setenv("PARLEY_BILLING_POSTGRES_URL", inDatabase(t, main, freshDatabase(t, main))+" "+inDatabase(t, main, freshDatabase(t, main)))
	gw := []*server{startServer(t, fastAuth...), startServer(t, fastAuth...)}
	a := gw[0].newAccount(t, "moving@example.com")
	gw[0].topup(t, a, "1")
	var spent int64
	var n int
	charge := func(g *server) {
		t.Helper()
		res, err := g.api(protocols[0], cred{bearer: a.Key}).Chat.Complete(ctxTimeout(t, 20*time.Second), connect.NewRequest(&parleyv1.CompleteRequest{
			Model: "sim-small", Messages: userText(fmt.Sprintf("Charge %d.", n)), MaxOutputTokens: 6}))
		if err != nil {
			t.Fatal(err)
		}
		spent += res.Msg.GetCostNanos()
		n++
	}
	for range 3 {
		charge(gw[0])
		charge(gw[1])
	}
	shard := postgres.LedgerShard(a.User.GetUserId())
	to := 1 - shard*2/postgres.LedgerShards
	out := gw[0].admin(t, "move-ledger-shard", "--shard", fmt.Sprint(shard), "--to", fmt.Sprint(to))
	t.Log(strings.TrimSpace(out))
	if !strings.Contains(out, fmt.Sprintf("moved from cluster %d to %d: accounts: 1,", 1-to, to)) {
		t.Fatalf("move-ledger-shard said %q", out)
	}
	for range 3 {
		charge(gw[0])
		charge(gw[1])
	}
	for _, g := range gw {
		c := g.api(protocols[0], cred{bearer: a.Key})
		bal, err := c.Billing.GetBalance(ctxTimeout(t, 10*time.Second), connect.NewRequest(&parleyv1.GetBalanceRequest{}))
		if err != nil || bal.Msg.GetBalanceNanos() != 1e9-spent || bal.Msg.GetReservedNanos() != 0 {
			t.Fatalf("balance %v (%v), want %d and nothing held", bal, err, int64(1e9)-spent)
		}
		usage, err := c.Billing.ListUsage(ctxTimeout(t, 10*time.Second), connect.NewRequest(&parleyv1.ListUsageRequest{PageSize: 100}))
		if err != nil {
			t.Fatal(err)
		}
		var cost int64
		for _, r := range usage.Msg.GetUsageRecords() {
			cost += r.GetCostNanos()
		}
		if len(usage.Msg.GetUsageRecords()) != n || cost != spent {
			t.Fatalf("%d usage records costing %d, want %d costing %d", len(usage.Msg.GetUsageRecords()), cost, n, spent)
		}
	}
}
