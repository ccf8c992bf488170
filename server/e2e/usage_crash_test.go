package e2e

import (
	"context"
	"database/sql"
	"fmt"
	"math/rand/v2"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"connectrpc.com/connect"
	"github.com/jackc/pgx/v5"

	parleyv1 "github.com/parleyhq/parley/gen/parley/v1"
	"github.com/parleyhq/parley/gen/parley/v1/parleyv1connect"
)

// No charge without its usage record (docs/architecture.md, Data): the gateway is killed
// with SIGKILL at random moments in a stream of concurrent completions
// (streamed and unary chat, embeddings, web generations), restarted on the
// same data each time; once the sweeper has released the holds the dead
// gateways left, the ledger and the usage records agree to the nano-USD.

// crashFlags make holds of killed requests expire soon after a restart.
var crashFlags = append([]string{"--sim-time-scale", "0.2", "--hold-ttl", "2s", "--sweep-interval", "100ms"}, fastAuth...)

// ledgerState is what the relational store says, read directly.
type ledgerState struct {
	Held         int64 // reservations still held
	Charged      int64 // nano-USD charged by settled reservations
	ChargedCount int64 // settled reservations that charged something
	Outbox       int64 // usage records waiting for the relay
}

// acked is what clients saw finish: each request's ID and what it was told
// it cost. Every one must have its record.
type acked struct {
	mu  sync.Mutex
	api map[string]int64
	web map[string]bool
	n   int
}

func newAcked() *acked { return &acked{api: map[string]int64{}, web: map[string]bool{}} }

func (a *acked) addAPI(id string, cost int64) {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.api[id] = cost
	a.n++
}

func (a *acked) addWeb(id string) {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.web[id] = true
	a.n++
}

func (a *acked) count() int {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.n
}

// drive runs completions of every kind against s from concurrent clients
// until stop is closed or s dies, recording what finished in ack.
func drive(t *testing.T, s *server, a *account, ack *acked, stop <-chan struct{}) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go func() {
		select {
		case <-stop:
		case <-s.done:
		}
		cancel()
	}()
	over := func() bool { return ctx.Err() != nil }
	pause := func() {
		select {
		case <-ctx.Done():
		case <-time.After(20 * time.Millisecond):
		}
	}
	var wg sync.WaitGroup
	loop := func(n int, one func(r *rand.Rand)) {
		for i := range n {
			wg.Go(func() {
				r := rand.New(rand.NewPCG(uint64(time.Now().UnixNano()), uint64(i)))
				for !over() {
					one(r)
				}
			})
		}
	}
	streamed := s.api(protocols[0], cred{bearer: a.Key})
	unary := s.api(protocols[1], cred{bearer: a.Key})
	web := s.api(protocols[0], cred{cookie: a.Cookie})
	hc := protocols[0].client()
	hc.Transport = credTransport{base: hc.Transport, c: cred{bearer: a.Key}}
	emb := parleyv1connect.NewEmbeddingServiceClient(hc, s.BaseURL)

	loop(12, func(r *rand.Rand) { // streamed chat over Connect
		st, err := streamed.Chat.CompleteStream(ctx, connect.NewRequest(&parleyv1.CompleteStreamRequest{
			Model: "sim-small", Messages: userText("Tell me about the rabbit."), MaxOutputTokens: 3 + r.Int64N(30)}))
		if err != nil {
			pause()
			return
		}
		id := ""
		for st.Receive() {
			ev := st.Msg().GetEvent()
			if s := ev.GetStarted(); s != nil {
				id = s.GetRequestId()
			}
			if f := ev.GetFinished(); f != nil && id != "" {
				ack.addAPI(id, f.GetCostNanos())
			}
		}
		st.Close()
	})
	loop(4, func(r *rand.Rand) { // unary chat over gRPC
		res, err := unary.Chat.Complete(ctx, connect.NewRequest(&parleyv1.CompleteRequest{
			Model: "sim-small", Messages: userText("Where is the watch?"), MaxOutputTokens: 3 + r.Int64N(30)}))
		if err != nil {
			pause()
			return
		}
		ack.addAPI(res.Msg.GetRequestId(), res.Msg.GetCostNanos())
	})
	loop(2, func(r *rand.Rand) { // embeddings
		res, err := emb.Embed(ctx, connect.NewRequest(&parleyv1.EmbedRequest{Model: "sim-embed",
			Inputs: []string{"the white rabbit", strings.Repeat("late ", 1+r.IntN(20))}}))
		if err != nil {
			pause()
			return
		}
		ack.addAPI(res.Msg.GetRequestId(), res.Msg.GetCostNanos())
	})
	loop(2, func(r *rand.Rand) { // web generations (tier limits, no charge)
		st, err := web.Conv.SendMessage(ctx, connect.NewRequest(&parleyv1.SendMessageRequest{
			Model: "sim-small", Parts: textPart("Who is late?"), MaxOutputTokens: 3 + r.Int64N(20)}))
		if err != nil {
			pause()
			return
		}
		id := ""
		for st.Receive() {
			ev := st.Msg().GetEvent()
			if s := ev.GetStarted(); s != nil {
				id = s.GetRequestId()
			}
			if ev.GetFinished() != nil && id != "" {
				ack.addWeb(id)
			}
		}
		if st.Err() != nil {
			pause() // refused by the tier's limits, or the gateway died
		}
		st.Close()
	})
	wg.Wait()
}

// killUnderLoad drives s and kills it with SIGKILL at a random moment,
// after at least a few completions finished.
func killUnderLoad(t *testing.T, s *server, a *account, ack *acked) time.Duration {
	t.Helper()
	before := ack.count()
	delay := time.Duration(200+rand.IntN(1200)) * time.Millisecond
	done := make(chan struct{})
	go func() { defer close(done); drive(t, s, a, ack, nil) }()
	start := time.Now()
	for time.Since(start) < delay || ack.count() < before+5 {
		if time.Since(start) > 20*time.Second {
			t.Fatalf("only %d completions in 20 s", ack.count()-before)
		}
		time.Sleep(time.Millisecond)
	}
	s.Signal(syscall.SIGKILL)
	if _, err := s.Wait(5 * time.Second); err != nil {
		t.Fatal(err)
	}
	<-done
	return time.Since(start)
}

// checkAgree waits until no money is held and the outbox is empty, then
// checks that the ledger and the usage records agree exactly: the balance
// spent is the sum of the records' costs, every completion a client saw
// finish has its record at the cost it was told, and the store's settled
// reservations charged what the records say.
func checkAgree(t *testing.T, s *server, a *account, initial int64, ack *acked, ledger func() ledgerState) {
	t.Helper()
	c := s.api(protocols[0], cred{bearer: a.Key})
	start := time.Now()
	var bal *parleyv1.GetBalanceResponse
	var st ledgerState
	for {
		res, err := c.Billing.GetBalance(ctxTimeout(t, 5*time.Second), connect.NewRequest(&parleyv1.GetBalanceRequest{}))
		if err != nil {
			t.Fatal(err)
		}
		bal, st = res.Msg, ledger()
		if bal.GetReservedNanos() == 0 && st.Held == 0 && st.Outbox == 0 {
			break
		}
		if time.Since(start) > 60*time.Second {
			t.Fatalf("60 s after the last restart: reserved %d, %+v", bal.GetReservedNanos(), st)
		}
		time.Sleep(50 * time.Millisecond)
	}
	t.Logf("holds released and outbox empty %v after the last restart", time.Since(start).Round(time.Millisecond))

	var records []*parleyv1.UsageRecord
	token := ""
	for {
		res, err := c.Billing.ListUsage(ctxTimeout(t, 10*time.Second), connect.NewRequest(&parleyv1.ListUsageRequest{PageSize: 200, PageToken: token}))
		if err != nil {
			t.Fatal(err)
		}
		records = append(records, res.Msg.GetUsageRecords()...)
		if token = res.Msg.GetNextPageToken(); token == "" {
			break
		}
	}
	byID := map[string]*parleyv1.UsageRecord{}
	var sum, apiRecords, charged int64
	for _, r := range records {
		if byID[r.GetRequestId()] != nil {
			t.Fatalf("request %s recorded twice", r.GetRequestId())
		}
		byID[r.GetRequestId()] = r
		if r.GetChannel() == parleyv1.AuthChannel_AUTH_CHANNEL_API_KEY {
			sum += r.GetCostNanos()
			apiRecords++
			if r.GetCostNanos() > 0 {
				charged++
			}
		} else if r.GetCostNanos() != 0 {
			t.Fatalf("web record %s costs %d", r.GetRequestId(), r.GetCostNanos())
		}
	}
	ack.mu.Lock()
	defer ack.mu.Unlock()
	for id, cost := range ack.api {
		r := byID[id]
		if r == nil {
			t.Fatalf("request %s finished (cost %d) but has no usage record", id, cost)
		}
		if r.GetCostNanos() != cost {
			t.Fatalf("request %s: the client was told %d, the record says %d", id, cost, r.GetCostNanos())
		}
	}
	for id := range ack.web {
		if byID[id] == nil {
			t.Fatalf("web generation %s finished but has no usage record", id)
		}
	}
	spent := initial - bal.GetBalanceNanos()
	t.Logf("%d completions acknowledged (%d API, %d web); %d records (%d API); spent %d nano-USD; store: %+v",
		len(ack.api)+len(ack.web), len(ack.api), len(ack.web), len(records), apiRecords, spent, st)
	if spent != sum {
		t.Fatalf("the balance went down by %d, the usage records cost %d", spent, sum)
	}
	if st.Charged != sum || st.ChargedCount != charged {
		t.Fatalf("settled reservations charged %d in %d, the records say %d in %d", st.Charged, st.ChargedCount, sum, charged)
	}
	if len(ack.api) == 0 || len(ack.web) == 0 || int64(len(ack.api)) > apiRecords {
		t.Fatalf("%d API and %d web completions acknowledged, %d API records", len(ack.api), len(ack.web), apiRecords)
	}
}

// sqliteLedger reads the embedded database of a stopped or running gateway.
func sqliteLedger(t *testing.T, dataDir string) func() ledgerState {
	return func() ledgerState {
		db, err := sql.Open("sqlite", filepath.Join(dataDir, "parley.db")+"?_pragma=busy_timeout(5000)")
		if err != nil {
			t.Fatal(err)
		}
		defer db.Close()
		var st ledgerState
		err = db.QueryRow(`SELECT (SELECT count(*) FROM reservations WHERE status = 'held'),
			(SELECT coalesce(sum(charged_nanos), 0) FROM reservations WHERE status = 'settled'),
			(SELECT count(*) FROM reservations WHERE status = 'settled' AND charged_nanos > 0),
			(SELECT count(*) FROM usage_outbox)`).Scan(&st.Held, &st.Charged, &st.ChargedCount, &st.Outbox)
		if err != nil {
			t.Fatal(err)
		}
		return st
	}
}

// postgresLedger reads the scale-mode database the gateways share.
func postgresLedger(t *testing.T) func() ledgerState {
	return func() ledgerState {
		ctx := ctxTimeout(t, 10*time.Second)
		conn, err := pgx.Connect(ctx, os.Getenv("PARLEY_POSTGRES_URL"))
		if err != nil {
			t.Fatal(err)
		}
		defer conn.Close(ctx)
		var st ledgerState
		err = conn.QueryRow(ctx, `SELECT (SELECT count(*) FROM reservations WHERE status = 'held'),
			(SELECT coalesce(sum(charged_nanos), 0)::bigint FROM reservations WHERE status = 'settled'),
			(SELECT count(*) FROM reservations WHERE status = 'settled' AND charged_nanos > 0),
			(SELECT count(*) FROM usage_outbox)`).Scan(&st.Held, &st.Charged, &st.ChargedCount, &st.Outbox)
		if err != nil {
			t.Fatal(err)
		}
		return st
	}
}

// crashRounds kills a gateway under load rounds times, restarting it each
// time with start, then checks that the ledger and the records agree.
func crashRounds(t *testing.T, rounds int, start func() *server, ledger func() ledgerState) {
	s := start()
	a := s.newAccount(t, "crash-usage@example.com")
	s.topup(t, a, "100")
	const initial = 100_000_000_000
	ack := newAcked()
	for round := range rounds {
		n := ack.count()
		d := killUnderLoad(t, s, a, ack)
		t.Logf("round %d: SIGKILL after %v, %d completions acknowledged", round, d.Round(time.Millisecond), ack.count()-n)
		s = start()
	}
	checkAgree(t, s, a, initial, ack, ledger)
}

// Embedded: SQLite holds the ledger and the usage records, written in one
// transaction.
func TestKillNineLosesNoUsageRecord(t *testing.T) {
	dataDir := t.TempDir()
	start := func() *server { return startServer(t, append([]string{"--data-dir", dataDir}, crashFlags...)...) }
	crashRounds(t, 4, start, sqliteLedger(t, dataDir))
}

// Scale: PostgreSQL holds the ledger and the outbox, ClickHouse the usage
// records, copied by the relay.
func TestScaleKillNineLosesNoUsageRecord(t *testing.T) {
	if os.Getenv("PARLEY_TEST_CLICKHOUSE_URL") == "" {
		t.Skip("PARLEY_TEST_CLICKHOUSE_URL not set (scripts/services.sh up; eval \"$(scripts/services.sh env)\")")
	}
	scaleMode(t)
	start := func() *server { return startServer(t, crashFlags...) }
	crashRounds(t, 3, start, postgresLedger(t))
}

// A ClickHouse outage: completions go on (each record waits in the outbox,
// parley_usage_outbox_backlog shows them), the gateway is killed during the
// outage; once ClickHouse is back the relay of the restarted gateway ships
// the backlog and the records agree with the ledger.
func TestScaleClickHouseOutageLosesNoUsageRecord(t *testing.T) {
	if os.Getenv("PARLEY_TEST_CLICKHOUSE_URL") == "" {
		t.Skip("PARLEY_TEST_CLICKHOUSE_URL not set (scripts/services.sh up; eval \"$(scripts/services.sh env)\")")
	}
	scaleMode(t)
	url, stopCH, startCH := privateClickHouse(t)
	t.Setenv("PARLEY_CLICKHOUSE_URL", url)
	start := func() *server { return startServer(t, crashFlags...) }
	s := start()
	a := s.newAccount(t, "ch-outage@example.com")
	s.topup(t, a, "100")
	const initial = 100_000_000_000
	ack := newAcked()
	burst := func(d time.Duration) int {
		n := ack.count()
		stop := make(chan struct{})
		time.AfterFunc(d, func() { close(stop) })
		drive(t, s, a, ack, stop)
		return ack.count() - n
	}
	t.Logf("before the outage: %d completions", burst(500*time.Millisecond))

	stopCH()
	downAt := time.Now()
	n := burst(time.Second)
	if n < 10 {
		t.Fatalf("only %d completions in 1 s with ClickHouse down: settling must not need it", n)
	}
	t.Logf("ClickHouse down: %d completions", n)
	c := s.api(protocols[0], cred{bearer: a.Key})
	if _, err := c.Billing.ListUsage(ctxTimeout(t, 10*time.Second), connect.NewRequest(&parleyv1.ListUsageRequest{})); err == nil {
		t.Fatal("ListUsage answered with ClickHouse down: is it down?")
	}
	backlog := waitMetric(t, s, "parley_usage_outbox_backlog", func(v float64) bool { return v > 0 })
	t.Logf("backlog metric %v", backlog)
	d := killUnderLoad(t, s, a, ack)
	t.Logf("gateway killed during the outage after %v", d.Round(time.Millisecond))
	if st := postgresLedger(t)(); st.Outbox == 0 {
		t.Fatal("nothing waits in the outbox after the outage")
	} else {
		t.Logf("outbox after the kill: %d records", st.Outbox)
	}

	startCH()
	t.Logf("ClickHouse back after %v", time.Since(downAt).Round(time.Millisecond))
	s = start()
	checkAgree(t, s, a, initial, ack, postgresLedger(t))
	waitMetric(t, s, "parley_usage_outbox_backlog", func(v float64) bool { return v == 0 })
}

// privateClickHouse runs a clickhouse-server of this test's own (the
// packaged config with every path under a temporary directory and free
// loopback ports, as scripts/services.sh does), so that it can be stopped
// without disturbing other tests; it returns its URL and functions that
// stop it (SIGKILL, like a crash) and start it again on the same data.
func privateClickHouse(t *testing.T) (url string, stop, start func()) {
	t.Helper()
	bin, err := exec.LookPath("clickhouse-server")
	if err != nil {
		t.Skip("clickhouse-server not installed (scripts/services.sh up installs it)")
	}
	conf, err := os.ReadFile("/etc/clickhouse-server/config.xml")
	if err != nil {
		t.Skipf("no packaged ClickHouse config: %v", err)
	}
	users, err := os.ReadFile("/etc/clickhouse-server/users.xml")
	if err != nil {
		t.Skipf("no packaged ClickHouse users: %v", err)
	}
	dir := t.TempDir()
	for _, d := range []string{"data", "tmp", "user_files", "format_schemas", "log"} {
		if err := os.MkdirAll(filepath.Join(dir, d), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	port := func() int {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		defer l.Close()
		return l.Addr().(*net.TCPAddr).Port
	}
	tcp, httpPort := port(), port()
	c := strings.NewReplacer(
		"/var/lib/clickhouse/tmp/", dir+"/tmp/",
		"/var/lib/clickhouse/user_files/", dir+"/user_files/",
		"/var/lib/clickhouse/format_schemas/", dir+"/format_schemas/",
		"/var/lib/clickhouse/", dir+"/data/",
		"/var/log/clickhouse-server/", dir+"/log/",
		"<http_port>8123</http_port>", fmt.Sprintf("<http_port>%d</http_port>", httpPort),
		"<tcp_port>9000</tcp_port>", fmt.Sprintf("<tcp_port>%d</tcp_port>", tcp),
		"<interserver_http_port>9009</interserver_http_port>", "",
		"<listen_host>::1</listen_host>", "",
	).Replace(string(conf))
	if err := os.WriteFile(filepath.Join(dir, "config.xml"), []byte(c), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "users.xml"), users, 0o644); err != nil {
		t.Fatal(err)
	}
	var cmd *exec.Cmd
	start = func() {
		t.Helper()
		cmd = exec.Command(bin, "--config-file="+filepath.Join(dir, "config.xml"))
		cmd.Dir = dir
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		began := time.Now()
		for {
			res, err := http.Get(fmt.Sprintf("http://127.0.0.1:%d/ping", httpPort))
			if err == nil {
				res.Body.Close()
				if res.StatusCode == http.StatusOK {
					t.Logf("private ClickHouse (pid %d) up in %v", cmd.Process.Pid, time.Since(began).Round(time.Millisecond))
					return
				}
			}
			if time.Since(began) > 60*time.Second {
				log, _ := os.ReadFile(filepath.Join(dir, "log", "clickhouse-server.err.log"))
				t.Fatalf("clickhouse-server not up after 60 s: %v\n%s", err, log)
			}
			time.Sleep(50 * time.Millisecond)
		}
	}
	stop = func() {
		if cmd != nil && cmd.Process != nil {
			_ = cmd.Process.Kill() // only the process this test started
			_ = cmd.Wait()
			cmd = nil
		}
	}
	start()
	t.Cleanup(stop)
	return fmt.Sprintf("clickhouse://127.0.0.1:%d/default", tcp), stop, start
}
