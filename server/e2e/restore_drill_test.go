package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"connectrpc.com/connect"
	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	parleyv1 "github.com/parleyhq/parley/gen/parley/v1"
)

// drillTables are the tables whose every row the restore must bring back:
// accounts, conversations and messages, the ledger and its usage records,
// attachments.
var drillTables = []string{"users", "conversations", "messages", "billing_accounts", "ledger_adjustments",
	"reservations", "usage_records", "attachments"}

// The restore drill (docs/backup.md), on scripts/services.sh's backed-up
// PostgreSQL (PARLEY_SERVICES_PGBACKUP=1: pgBackRest to versitygw, WAL
// streamed synchronously by pg_receivewal): a gateway writes chats, API
// charges and uploads; deploy/backup/pg.sh takes a base backup; the gateway
// writes more; the primary is stopped at once and its data directory
// deleted; pg.sh restores it to the latest point. Every row committed before
// the disaster is back (RPO 0), the same gateway serves again, and the
// figures go to test-artifacts/restore-drill.json.
func TestRestoreDrill(t *testing.T) {
	adminURL := os.Getenv("PARLEY_TEST_PGBACKUP_URL")
	if adminURL == "" {
		t.Skip("PARLEY_TEST_PGBACKUP_URL not set (PARLEY_SERVICES_S3=1 PARLEY_SERVICES_PGBACKUP=1 scripts/services.sh up)")
	}
	name := "e2e_" + strings.ReplaceAll(uuid.NewString(), "-", "")
	pgExec(t, adminURL, "CREATE DATABASE "+name)
	t.Cleanup(func() { pgExec(t, adminURL, "DROP DATABASE IF EXISTS "+name+" WITH (FORCE)") })
	dbURL := inDatabase(t, adminURL, name)
	t.Setenv("PARLEY_POSTGRES_URL", dbURL)
	setSecret(t)
	gw := startServer(t, fastAuth...)
	a := gw.newAccount(t, "drill@example.com")
	gw.topup(t, a, "5")
	web, api := gw.api(protocols[0], cred{cookie: a.Cookie}), gw.api(protocols[0], cred{bearer: a.Key})
	at := gw.attachments(protocols[0], cred{cookie: a.Cookie})

	round := 0
	write := func(n int) error {
		for range n {
			round++
			ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
			stream, err := web.Conv.SendMessage(ctx, connect.NewRequest(&parleyv1.SendMessageRequest{Model: "sim-small", Parts: textPart(fmt.Sprintf("Drill message %d: what is new?", round)), MaxOutputTokens: 12}))
			if err == nil {
				for stream.Receive() {
				}
				err = stream.Err()
			}
			if err == nil {
				_, err = api.Chat.Complete(ctx, connect.NewRequest(&parleyv1.CompleteRequest{Model: "sim-small", Messages: userText(fmt.Sprintf("Drill request %d", round)), MaxOutputTokens: 8}))
			}
			cancel()
			if err != nil {
				return err
			}
		}
		return nil
	}
	if err := write(4); err != nil {
		t.Fatal(err)
	}
	gw.upload(t, at, "before.txt", "text/plain", []byte("written before the base backup"))

	backupStart := time.Now()
	pgBackup(t, "deploy/backup/pg.sh", "backup", "full")
	backupTook := time.Since(backupStart)

	// Written after the base backup: only the WAL (archived, and streamed up
	// to the last commit) holds these.
	if err := write(4); err != nil {
		t.Fatal(err)
	}
	gw.upload(t, at, "after.txt", "text/plain", []byte("written after the base backup"))
	before := drillSnapshot(t, dbURL)
	// The last commits are in a WAL segment not archived yet: only the
	// stream holds them, so a restore that brings them back used it.
	var current, archived string
	func() {
		conn, err := pgx.Connect(ctxTimeout(t, 10*time.Second), dbURL)
		if err != nil {
			t.Fatal(err)
		}
		defer conn.Close(context.Background())
		if err := conn.QueryRow(ctxTimeout(t, 10*time.Second), `SELECT pg_walfile_name(pg_current_wal_lsn()), coalesce(last_archived_wal, '') FROM pg_stat_archiver`).Scan(&current, &archived); err != nil {
			t.Fatal(err)
		}
	}()
	if current[8:] <= archived[min(8, len(archived)):] {
		t.Fatalf("the current WAL segment %s is archived already (last archived %s): the drill would not need the stream", current, archived)
	}

	// The disaster, and the restore to the latest point.
	disaster := time.Now()
	pgBackup(t, "scripts/services.sh", "pgbackup-crash")
	pgBackup(t, "deploy/backup/pg.sh", "restore")
	restored := time.Since(disaster)
	pgBackup(t, "scripts/services.sh", "up")
	rto := time.Since(disaster)

	after := drillSnapshot(t, dbURL)
	lost := 0
	for _, table := range drillTables {
		if before[table] != after[table] {
			lost++
			t.Errorf("%s: before the disaster %s, restored %s", table, before[table], after[table])
		}
	}
	// The gateway that lost its database serves again once it is back.
	var again error
	waitFor(t, 30*time.Second, "the gateway serving after the restore", func() bool {
		again = write(1)
		return again == nil
	})

	figures := map[string]any{
		"tables_compared":        len(drillTables),
		"tables_differing":       lost,
		"rows":                   before,
		"rpo_lost_transactions":  0,
		"base_backup_seconds":    backupTook.Seconds(),
		"restore_seconds":        restored.Seconds(),
		"rto_seconds":            rto.Seconds(),
		"rto_includes":           "pgbackrest restore from S3, recovery through the archived and streamed WAL, start, the WAL stream's return",
		"wal_archive_timeout_s":  30,
		"wal_stream_synchronous": true,
		"last_commit_segment":    current,
		"last_archived_segment":  archived,
	}
	if lost > 0 {
		figures["rpo_lost_transactions"] = "unknown: rows differ"
	}
	out, _ := json.MarshalIndent(figures, "", "  ")
	t.Logf("restore drill: %s", out)
	root, _ := filepath.Abs("../..")
	dir := filepath.Join(root, "test-artifacts")
	_ = os.MkdirAll(dir, 0o755)
	_ = os.WriteFile(filepath.Join(dir, "restore-drill.json"), out, 0o644)
}

// pgExec runs one statement on its own connection.
func pgExec(t *testing.T, url, sql string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	conn, err := pgx.Connect(ctx, url)
	if err != nil {
		t.Error(err)
		return
	}
	defer conn.Close(ctx)
	if _, err := conn.Exec(ctx, sql); err != nil {
		t.Error(err)
	}
}

// drillSnapshot is, per table, its row count and a digest of every row,
// read once nothing changes between two reads.
func drillSnapshot(t *testing.T, url string) map[string]string {
	t.Helper()
	ctx := ctxTimeout(t, 60*time.Second)
	conn, err := pgx.Connect(ctx, url)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	read := func() map[string]string {
		out := map[string]string{}
		for _, table := range drillTables {
			var n int
			var digest string
			q := fmt.Sprintf(`SELECT count(*), md5(coalesce(string_agg(r::text, '|' ORDER BY r::text), '')) FROM %s r`, table)
			if err := conn.QueryRow(ctx, q).Scan(&n, &digest); err != nil {
				t.Fatalf("%s: %v", table, err)
			}
			out[table] = fmt.Sprintf("%d rows, md5 %s", n, digest)
		}
		return out
	}
	prev := read()
	for range 20 {
		time.Sleep(300 * time.Millisecond)
		next := read()
		if fmt.Sprint(next) == fmt.Sprint(prev) {
			return next
		}
		prev = next
	}
	t.Fatal("the database kept changing with nothing sent")
	return nil
}

// pgBackup runs one of the repository's backup commands with the backed-up
// cluster's configuration (scripts/services.sh pgbackup-env).
func pgBackup(t *testing.T, script string, args ...string) {
	t.Helper()
	root, _ := filepath.Abs("../..")
	cmd := exec.Command("bash", append([]string{"-c", `eval "$(scripts/services.sh pgbackup-env)" && "$0" "$@"`, script}, args...)...)
	cmd.Dir = root
	cmd.Env = append(os.Environ(), "PARLEY_SERVICES_PGBACKUP=1")
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("%s %s: %v\n%s", script, strings.Join(args, " "), err, out)
	}
}
