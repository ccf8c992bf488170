package e2e

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"image"
	"image/png"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"connectrpc.com/connect"
	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	parleyv1 "github.com/parleyhq/parley/gen/parley/v1"
	"github.com/parleyhq/parley/server/apierr"
	"github.com/parleyhq/parley/server/store/cql"
)

// scaleMode points every parley process this test starts (gateways and
// `parley admin`) at shared scale backends through PARLEY_* variables: a
// fresh PostgreSQL database, Redis, ClickHouse when available, and one
// secret. It skips unless scripts/services.sh's env is set.
func scaleMode(t *testing.T) {
	t.Helper()
	pgURL, redisURL := os.Getenv("PARLEY_TEST_POSTGRES_URL"), os.Getenv("PARLEY_TEST_REDIS_URL")
	if pgURL == "" || redisURL == "" {
		t.Skip("PARLEY_TEST_POSTGRES_URL and PARLEY_TEST_REDIS_URL not set (scripts/services.sh up; eval \"$(scripts/services.sh env)\")")
	}
	name := freshDatabase(t, pgURL)
	t.Setenv("PARLEY_POSTGRES_URL", inDatabase(t, pgURL, name))
	t.Setenv("PARLEY_REDIS_URL", redisURL)
	setSecret(t)
	if ch := os.Getenv("PARLEY_TEST_CLICKHOUSE_URL"); ch != "" {
		t.Setenv("PARLEY_CLICKHOUSE_URL", ch)
	}
	if hosts := os.Getenv("PARLEY_TEST_CASSANDRA_HOSTS"); hosts != "" {
		t.Setenv("PARLEY_CASSANDRA_HOSTS", hosts)
		t.Setenv("PARLEY_CASSANDRA_KEYSPACE", name)
		t.Cleanup(func() {
			ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
			defer cancel()
			_ = cql.DropKeyspace(ctx, cql.Config{Hosts: cql.HostsFlag(hosts), Keyspace: name})
		})
	}
	if ep := os.Getenv("PARLEY_TEST_S3_ENDPOINT"); ep != "" {
		t.Setenv("PARLEY_S3_ENDPOINT", ep)
		t.Setenv("PARLEY_S3_BUCKET", "e2e-"+name[4:24])
		t.Setenv("PARLEY_S3_ACCESS_KEY", os.Getenv("PARLEY_TEST_S3_ACCESS_KEY"))
		t.Setenv("PARLEY_S3_SECRET_KEY", os.Getenv("PARLEY_TEST_S3_SECRET_KEY"))
	}
}

// An attachment uploaded through one gateway's presigned S3 URL is completed
// and downloaded through the other: the bytes never pass through a gateway.
func TestScaleAttachmentsThroughS3(t *testing.T) {
	if os.Getenv("PARLEY_TEST_S3_ENDPOINT") == "" {
		t.Skip("PARLEY_TEST_S3_ENDPOINT not set (PARLEY_SERVICES_S3=1 scripts/services.sh up)")
	}
	scaleMode(t)
	gw := []*server{startServer(t, fastAuth...), startServer(t, fastAuth...)}
	a := gw[0].newAccount(t, "s3-pics@example.com")
	img := image.NewRGBA(image.Rect(0, 0, 64, 32))
	for i := range img.Pix {
		img.Pix[i] = byte(i * 7)
	}
	var buf bytes.Buffer
	if err := png.Encode(&buf, img); err != nil {
		t.Fatal(err)
	}
	data := buf.Bytes()
	c0, c1 := gw[0].attachments(protocols[0], cred{cookie: a.Cookie}), gw[1].attachments(protocols[0], cred{cookie: a.Cookie})
	up := createUpload(t, c0, "pic.png", "image/png", data)
	if !strings.HasPrefix(up.GetUploadUrl(), os.Getenv("PARLEY_TEST_S3_ENDPOINT")) {
		t.Fatalf("upload URL %q is not the S3 server's", up.GetUploadUrl())
	}
	if code := gw[0].put(t, up, data, nil); code != http.StatusOK {
		t.Fatalf("PUT to S3: %d", code)
	}
	at := complete(t, c1, up.GetAttachmentId())
	if at.GetStatus() != parleyv1.AttachmentStatus_ATTACHMENT_STATUS_READY {
		t.Fatalf("attachment %v", at)
	}
	got, err := c1.GetAttachment(ctxTimeout(t, 10*time.Second), connect.NewRequest(&parleyv1.GetAttachmentRequest{AttachmentId: up.GetAttachmentId()}))
	if err != nil {
		t.Fatal(err)
	}
	res, err := http.Get(got.Msg.GetDownloadUrl())
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(res.Body)
	res.Body.Close()
	if res.StatusCode != http.StatusOK || !bytes.Equal(body, data) {
		t.Fatalf("download from S3: %s, %d bytes", res.Status, len(body))
	}
}

// Two gateways share PostgreSQL: concurrent API requests spread over both
// serve exactly what the balance covers, never more.
func TestScaleTwoGatewaysShareTheBalance(t *testing.T) {
	scaleMode(t)
	shareTheBalance(t)
}

// shareTheBalance starts two gateways on the scale backends set in the
// environment and checks that concurrent requests spread over both serve
// exactly what the balance covers; it returns the gateways and the account.
func shareTheBalance(t *testing.T) ([]*server, *account) {
	gw := []*server{startServer(t, fastAuth...), startServer(t, fastAuth...)}
	ctx := ctxTimeout(t, 90*time.Second)
	msgs := userText("Tell me about the rabbit, at length, please.")
	probe := gw[0].newAccount(t, "probe@example.com")
	gw[0].topup(t, probe, "1")
	pres, err := gw[1].api(protocols[0], cred{bearer: probe.Key}).Chat.Complete(ctx, connect.NewRequest(&parleyv1.CompleteRequest{Model: "sim-small", Messages: msgs, MaxOutputTokens: 6}))
	if err != nil || pres.Msg.GetFinishReason() != parleyv1.FinishReason_FINISH_REASON_LENGTH {
		t.Fatalf("probe (key made on gateway 0, used on gateway 1): %v %v", err, pres)
	}
	cost := pres.Msg.GetCostNanos() // max_output reached, so cost == hold

	const covered, requests = 30, 120
	a := gw[1].newAccount(t, "shared-balance@example.com")
	gw[0].topup(t, a, nanosToUSD(covered*cost+cost-1))
	clients := []apiClients{gw[0].api(protocols[0], cred{bearer: a.Key}), gw[1].api(protocols[0], cred{bearer: a.Key})}

	var wg sync.WaitGroup
	var mu sync.Mutex
	ok, short := [2]int{}, 0
	start := make(chan struct{})
	for i := range requests {
		wg.Go(func() {
			<-start
			_, err := clients[i%2].Chat.Complete(ctx, connect.NewRequest(&parleyv1.CompleteRequest{Model: "sim-small", Messages: msgs, MaxOutputTokens: 6}))
			mu.Lock()
			defer mu.Unlock()
			switch {
			case err == nil:
				ok[i%2]++
			case apierr.Detail(err, &parleyv1.InsufficientBalance{}):
				short++
			default:
				t.Errorf("unexpected: %v", err)
			}
		})
	}
	close(start)
	wg.Wait()
	// (Which gateway wins the last units is a race; half the requests went
	// to each.)
	t.Logf("served %d on gateway 0, %d on gateway 1; %d refused", ok[0], ok[1], short)
	if ok[0]+ok[1] != covered || short != requests-covered {
		t.Fatalf("served %d+%d, refused %d for balance; want %d served in all", ok[0], ok[1], short, covered)
	}
	for i, c := range clients {
		bal, err := c.Billing.GetBalance(ctx, connect.NewRequest(&parleyv1.GetBalanceRequest{}))
		if err != nil {
			t.Fatal(err)
		}
		if bal.Msg.GetReservedNanos() != 0 || bal.Msg.GetBalanceNanos() != cost-1 {
			t.Fatalf("gateway %d sees balance %v, want %d available and nothing reserved", i, bal.Msg, cost-1)
		}
	}
	return gw, a
}

// scaleModeHA is scaleMode on the elastic stage's data tier (docs/scaling.md)
// (scripts/services.sh with PARLEY_SERVICES_PGHA=1 and
// PARLEY_SERVICES_REDIS_CLUSTER=1): PostgreSQL through PgBouncer in
// transaction mode with a streaming replica for listings, and a
// three-master Redis Cluster. Usage records stay in PostgreSQL.
func scaleModeHA(t *testing.T) (replica string) {
	t.Helper()
	primary, bouncer, replicaURL, cluster := os.Getenv("PARLEY_TEST_PGHA_PRIMARY_URL"), os.Getenv("PARLEY_TEST_PGBOUNCER_URL"),
		os.Getenv("PARLEY_TEST_POSTGRES_REPLICA_URL"), os.Getenv("PARLEY_TEST_REDIS_CLUSTER_URL")
	if primary == "" || bouncer == "" || replicaURL == "" || cluster == "" {
		t.Skip("PARLEY_TEST_PGHA_PRIMARY_URL, PARLEY_TEST_PGBOUNCER_URL, PARLEY_TEST_POSTGRES_REPLICA_URL or PARLEY_TEST_REDIS_CLUSTER_URL not set (PARLEY_SERVICES_PGHA=1 PARLEY_SERVICES_REDIS_CLUSTER=1 scripts/services.sh up)")
	}
	name := freshDatabase(t, primary)
	readURL := inDatabase(t, replicaURL, name)
	t.Setenv("PARLEY_POSTGRES_URL", inDatabase(t, bouncer, name))
	t.Setenv("PARLEY_POSTGRES_PGBOUNCER", "true")
	t.Setenv("PARLEY_POSTGRES_READ_URLS", readURL)
	t.Setenv("PARLEY_REDIS_URL", cluster)
	setSecret(t)
	u, _ := url.Parse(readURL)
	return u.Host
}

// freshDatabase creates an empty database of its own on the PostgreSQL
// server at adminURL, dropped when the test ends, and returns its name.
func freshDatabase(t *testing.T, adminURL string) string {
	t.Helper()
	ctx := ctxTimeout(t, 30*time.Second)
	conn, err := pgx.Connect(ctx, adminURL)
	if err != nil {
		t.Fatal(err)
	}
	name := "e2e_" + strings.ReplaceAll(uuid.NewString(), "-", "")
	if _, err := conn.Exec(ctx, "CREATE DATABASE "+name); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		_, _ = conn.Exec(ctx, "DROP DATABASE IF EXISTS "+name+" WITH (FORCE)")
		conn.Close(ctx)
	})
	return name
}

// inDatabase is serverURL with its database replaced by name.
func inDatabase(t *testing.T, serverURL, name string) string {
	t.Helper()
	u, err := url.Parse(serverURL)
	if err != nil {
		t.Fatal(err)
	}
	u.Path = "/" + name
	return u.String()
}

// setSecret gives the servers the test starts a fresh PARLEY_SECRET.
func setSecret(t *testing.T) {
	secret := make([]byte, 32)
	_, _ = rand.Read(secret)
	t.Setenv("PARLEY_SECRET", hex.EncodeToString(secret))
}

// The stage-three data tier runs the shared-balance workload: the ledger's
// holds go through PgBouncer to the primary, the tier limits and live
// generations through the Redis Cluster, and the usage listing is served by
// the replica (the gateway's metrics say which server answered).
func TestScaleStageThreeDataTier(t *testing.T) {
	replica := scaleModeHA(t)
	gw, a := shareTheBalance(t)
	c := gw[0].api(protocols[0], cred{bearer: a.Key})
	deadline := time.Now().Add(20 * time.Second)
	for {
		res, err := c.Billing.ListUsage(ctxTimeout(t, 5*time.Second), connect.NewRequest(&parleyv1.ListUsageRequest{PageSize: 200}))
		if err != nil {
			t.Fatal(err)
		}
		if len(res.Msg.GetUsageRecords()) == 30 && strings.Contains(gw[0].metricsText(t), `parley_postgres_stale_reads_total{server="`+replica+`"}`) {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("usage listing: %d records; replica %s never served one:\n%s", len(res.Msg.GetUsageRecords()), replica, gw[0].metricsText(t))
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// metricsText is the gateway's /metrics, the parley_postgres families only.
func (s *server) metricsText(t *testing.T) string {
	t.Helper()
	var out []string
	for _, l := range strings.Split(metricsBody(t, s.BaseURL), "\n") {
		if strings.HasPrefix(l, "parley_postgres_") {
			out = append(out, l)
		}
	}
	return strings.Join(out, "\n")
}

// Two gateways share Redis: a tier's request limit holds across both.
func TestScaleTwoGatewaysShareTierLimits(t *testing.T) {
	scaleMode(t)
	file := filepath.Join(t.TempDir(), "models.yaml")
	const limit, requests = 5, 16
	if err := os.WriteFile(file, []byte(fmt.Sprintf(`models:
- id: tiny
  display_name: Tiny (simulated)
  simulated: true
  context_window: 4096
  max_output_tokens: 10
  tier_limits:
    free: {requests: %d, input_tokens: 100000, output_tokens: 1000, window: 1h}
`, limit)), 0o600); err != nil {
		t.Fatal(err)
	}
	args := append(append([]string{}, fastAuth...), "--models-file", file)
	gw := []*server{startServer(t, args...), startServer(t, args...)}
	a := gw[0].newAccount(t, "shared-limits@example.com")
	ctx := ctxTimeout(t, 60*time.Second)
	// The session made on gateway 0 works on gateway 1 (PostgreSQL).
	clients := []apiClients{gw[0].api(protocols[0], cred{cookie: a.Cookie}), gw[1].api(protocols[0], cred{cookie: a.Cookie})}

	var wg sync.WaitGroup
	var mu sync.Mutex
	ok, limited := [2]int{}, 0
	for i := range requests {
		wg.Go(func() {
			stream, err := clients[i%2].Conv.SendMessage(ctx, connect.NewRequest(&parleyv1.SendMessageRequest{Model: "tiny", Parts: textPart(fmt.Sprintf("hi %d", i))}))
			if err == nil {
				for stream.Receive() {
				}
				err = stream.Err()
				stream.Close()
			}
			mu.Lock()
			defer mu.Unlock()
			var le parleyv1.LimitExceeded
			switch {
			case err == nil:
				ok[i%2]++
			case connect.CodeOf(err) == connect.CodeResourceExhausted && apierr.Detail(err, &le):
				limited++
			default:
				t.Errorf("unexpected: %v", err)
			}
		})
	}
	wg.Wait()
	if ok[0]+ok[1] != limit || limited != requests-limit {
		t.Fatalf("served %d+%d, limited %d; want %d served in all", ok[0], ok[1], limited, limit)
	}
	for i, c := range clients {
		lim, err := c.Billing.GetLimits(ctx, connect.NewRequest(&parleyv1.GetLimitsRequest{Model: "tiny"}))
		if err != nil {
			t.Fatal(err)
		}
		for _, l := range lim.Msg.GetLimits() {
			if l.GetKind() == parleyv1.LimitKind_LIMIT_KIND_REQUESTS && (l.GetUsed() != limit || l.GetRemaining() != 0) {
				t.Fatalf("gateway %d reports requests %v", i, l)
			}
		}
	}
}

// untilRefused polls call until it fails with Unauthenticated and returns how
// long that took, failing the test after limit.
func untilRefused(t *testing.T, what string, limit time.Duration, call func() error) time.Duration {
	t.Helper()
	start := time.Now()
	for {
		err := call()
		if connect.CodeOf(err) == connect.CodeUnauthenticated {
			return time.Since(start)
		}
		if err != nil {
			t.Fatalf("%s: %v", what, err)
		}
		if time.Since(start) > limit {
			t.Fatalf("%s: still accepted after %v", what, limit)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// Logout and key revocation on one gateway take effect on the other within a
// second (Redis pub/sub), not the credential cache's TTL.
func TestScaleLogoutAndRevocationReachEveryGateway(t *testing.T) {
	scaleMode(t)
	gw := []*server{startServer(t, fastAuth...), startServer(t, fastAuth...)}
	a := gw[0].newAccount(t, "everywhere@example.com")
	ctx := ctxTimeout(t, 30*time.Second)
	on1 := gw[1].clients(protocols[0], cred{cookie: a.Cookie})
	key1 := gw[1].api(protocols[0], cred{bearer: a.Key})
	// Both credentials are now cached on gateway 1.
	if _, err := on1.Auth.GetMe(ctx, connect.NewRequest(&parleyv1.GetMeRequest{})); err != nil {
		t.Fatal(err)
	}
	if _, err := key1.Billing.GetBalance(ctx, connect.NewRequest(&parleyv1.GetBalanceRequest{})); err != nil {
		t.Fatal(err)
	}

	on0 := gw[0].clients(protocols[0], cred{cookie: a.Cookie})
	if _, err := on0.Keys.RevokeApiKey(ctx, connect.NewRequest(&parleyv1.RevokeApiKeyRequest{KeyId: a.KeyID})); err != nil {
		t.Fatal(err)
	}
	d := untilRefused(t, "revoked key on gateway 1", time.Second, func() error {
		_, err := key1.Billing.GetBalance(ctx, connect.NewRequest(&parleyv1.GetBalanceRequest{}))
		return err
	})
	t.Logf("revocation reached gateway 1 in %v", d)

	if _, err := on0.Auth.Logout(ctx, connect.NewRequest(&parleyv1.LogoutRequest{})); err != nil {
		t.Fatal(err)
	}
	d = untilRefused(t, "logged-out session on gateway 1", time.Second, func() error {
		_, err := on1.Auth.GetMe(ctx, connect.NewRequest(&parleyv1.GetMeRequest{}))
		return err
	})
	t.Logf("logout reached gateway 1 in %v", d)
}

// privateRedis starts a redis-server of this test's own on a free port, so
// that it can be stopped without disturbing other tests; it returns its URL
// and functions that stop and restart it (same port, same data: none).
func privateRedis(t *testing.T) (url string, stop, start func()) {
	t.Helper()
	bin, err := exec.LookPath("redis-server")
	if err != nil {
		t.Skip("redis-server not installed (scripts/services.sh up installs it)")
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	port := l.Addr().(*net.TCPAddr).Port
	l.Close()
	dir := t.TempDir()
	var cmd *exec.Cmd
	start = func() {
		cmd = exec.Command(bin, "--bind", "127.0.0.1", "--port", fmt.Sprint(port), "--dir", dir, "--save", "", "--appendonly", "no")
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		for i := 0; ; i++ {
			c, err := net.Dial("tcp", fmt.Sprintf("127.0.0.1:%d", port))
			if err == nil {
				c.Close()
				return
			}
			if i > 100 {
				t.Fatalf("redis-server not up: %v", err)
			}
			time.Sleep(20 * time.Millisecond)
		}
	}
	stop = func() {
		if cmd != nil && cmd.Process != nil {
			_ = cmd.Process.Kill()
			_ = cmd.Wait()
			cmd = nil
		}
	}
	start()
	t.Cleanup(stop)
	return fmt.Sprintf("redis://127.0.0.1:%d/0", port), stop, start
}

// While Redis is down the gateway answers unavailable with a retry time
// (limits cannot be checked, so nothing is served unchecked) and /readyz
// says so; once Redis is back it recovers by itself.
func TestScaleRedisOutageIsUnavailableThenRecovers(t *testing.T) {
	scaleMode(t)
	url, stop, start := privateRedis(t)
	t.Setenv("PARLEY_REDIS_URL", url)
	s := startServer(t, fastAuth...)
	a := s.newAccount(t, "outage@example.com")
	c := s.api(protocols[0], cred{cookie: a.Cookie})
	ctx := ctxTimeout(t, 30*time.Second)
	limits := func() error {
		_, err := c.Billing.GetLimits(ctx, connect.NewRequest(&parleyv1.GetLimitsRequest{Model: "sim-small"}))
		return err
	}
	ready := func() int {
		res, err := http.Get(s.BaseURL + "/readyz")
		if err != nil {
			t.Fatal(err)
		}
		res.Body.Close()
		return res.StatusCode
	}
	if err := limits(); err != nil || ready() != http.StatusOK {
		t.Fatalf("before: %v, readyz %d", err, ready())
	}
	stop()
	err := limits()
	if connect.CodeOf(err) != connect.CodeUnavailable {
		t.Fatalf("with Redis down: %v, want unavailable", err)
	}
	if d, ok := apierr.RetryAfter(err); !ok || d <= 0 {
		t.Fatalf("no retry time: %v", err)
	}
	if code := ready(); code != http.StatusServiceUnavailable {
		t.Fatalf("readyz %d with Redis down", code)
	}
	start()
	deadline := time.Now().Add(10 * time.Second)
	for {
		err := limits()
		if err == nil && ready() == http.StatusOK {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("not recovered 10 s after Redis came back: %v", err)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// privatePostgres runs a PostgreSQL cluster of this test's own on a free
// port (as the postgres user when the test runs as root) and returns its URL
// and functions that stop (immediately, like a crash) and restart it.
func privatePostgres(t *testing.T) (url string, stop, start func()) {
	t.Helper()
	bins, _ := filepath.Glob("/usr/lib/postgresql/*/bin/initdb")
	if len(bins) == 0 {
		t.Skip("PostgreSQL server not installed (scripts/services.sh up installs it)")
	}
	bin := filepath.Dir(bins[len(bins)-1])
	dir, err := os.MkdirTemp("", "parley-pg-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	if err := os.Chmod(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	data := filepath.Join(dir, "data")
	run := func(args ...string) {
		t.Helper()
		if os.Geteuid() == 0 {
			args = append([]string{"runuser", "-u", "postgres", "--"}, args...)
		}
		out, err := exec.Command(args[0], args[1:]...).CombinedOutput()
		if err != nil {
			t.Fatalf("%v: %v\n%s", args, err, out)
		}
	}
	if os.Geteuid() == 0 {
		if out, err := exec.Command("chown", "postgres:postgres", dir).CombinedOutput(); err != nil {
			t.Fatalf("chown: %v %s", err, out)
		}
	}
	run(filepath.Join(bin, "initdb"), "-D", data, "-U", "postgres", "-A", "trust", "--no-locale", "-E", "UTF8")
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	port := l.Addr().(*net.TCPAddr).Port
	l.Close()
	start = func() {
		run(filepath.Join(bin, "pg_ctl"), "-D", data, "-l", filepath.Join(dir, "log"), "-w", "start",
			"-o", fmt.Sprintf("-p %d -k %s -c listen_addresses=127.0.0.1 -c fsync=off", port, dir))
	}
	stop = func() { run(filepath.Join(bin, "pg_ctl"), "-D", data, "-m", "immediate", "-w", "stop") }
	start()
	t.Cleanup(func() {
		_ = exec.Command("runuser", "-u", "postgres", "--", filepath.Join(bin, "pg_ctl"), "-D", data, "-m", "immediate", "stop").Run()
	})
	return fmt.Sprintf("postgres://postgres@127.0.0.1:%d/postgres?sslmode=disable", port), stop, start
}

// While PostgreSQL is down (killed, then restarted) the gateway answers
// unavailable with a retry time and fails /readyz; it reconnects by itself
// and nothing held is lost: the balance is whole afterwards.
func TestScalePostgresOutageIsUnavailableThenRecovers(t *testing.T) {
	scaleMode(t)
	if os.Geteuid() == 0 {
		if _, err := exec.LookPath("runuser"); err != nil {
			t.Skip("runuser not found")
		}
	}
	url, stop, start := privatePostgres(t)
	t.Setenv("PARLEY_POSTGRES_URL", url)
	s := startServer(t, fastAuth...)
	a := s.newAccount(t, "pg-outage@example.com")
	s.topup(t, a, "1")
	c := s.api(protocols[0], cred{bearer: a.Key})
	ctx := ctxTimeout(t, 60*time.Second)
	balance := func() (*parleyv1.GetBalanceResponse, error) {
		res, err := c.Billing.GetBalance(ctx, connect.NewRequest(&parleyv1.GetBalanceRequest{}))
		if err != nil {
			return nil, err
		}
		return res.Msg, nil
	}
	before, err := balance()
	if err != nil {
		t.Fatal(err)
	}
	stop()
	_, err = balance()
	if connect.CodeOf(err) != connect.CodeUnavailable {
		t.Fatalf("with PostgreSQL down: %v, want unavailable", err)
	}
	if d, ok := apierr.RetryAfter(err); !ok || d <= 0 {
		t.Fatalf("no retry time: %v", err)
	}
	// The OpenAI-compatible surface says the same: 503 with Retry-After.
	req, _ := http.NewRequest("POST", s.BaseURL+"/v1/chat/completions", strings.NewReader(`{"model":"sim-small","messages":[{"role":"user","content":"hi"}]}`))
	req.Header.Set("Authorization", "Bearer "+a.Key)
	v1, err := h1Client().Do(req)
	if err != nil {
		t.Fatal(err)
	}
	v1.Body.Close()
	if v1.StatusCode != http.StatusServiceUnavailable || v1.Header.Get("Retry-After") == "" {
		t.Fatalf("/v1 with PostgreSQL down: %d, Retry-After %q", v1.StatusCode, v1.Header.Get("Retry-After"))
	}
	res, err := http.Get(s.BaseURL + "/readyz")
	if err != nil {
		t.Fatal(err)
	}
	res.Body.Close()
	if res.StatusCode != http.StatusServiceUnavailable {
		t.Fatalf("readyz %d with PostgreSQL down", res.StatusCode)
	}
	start()
	deadline := time.Now().Add(15 * time.Second)
	for {
		after, err := balance()
		if err == nil {
			if after.GetBalanceNanos() != before.GetBalanceNanos() || after.GetReservedNanos() != 0 {
				t.Fatalf("balance %v after the outage, %v before", after, before)
			}
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("not recovered 15 s after PostgreSQL came back: %v", err)
		}
		time.Sleep(100 * time.Millisecond)
	}
}
