package clickhouse_test

import (
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/parleyhq/parley/server/store"
	"github.com/parleyhq/parley/server/store/clickhouse"
)

// deploy/backup/clickhouse.sh on the ClickHouse in CI (18.16: no BACKUP
// statement): records written, a backup (FREEZE, the parts to the S3
// server), more records, the table lost and made again, the backup
// restored: every record of the backup is back, exactly once, and restoring
// it again into the live table (a replica brought back over rows it still
// has) counts nothing twice.
func TestBackupRestoreThroughS3(t *testing.T) {
	httpURL, dataDir, s3 := os.Getenv("PARLEY_TEST_CLICKHOUSE_HTTP"), os.Getenv("PARLEY_TEST_CLICKHOUSE_DATA"), os.Getenv("PARLEY_TEST_S3_ENDPOINT")
	if httpURL == "" || dataDir == "" || s3 == "" {
		t.Skip("PARLEY_TEST_CLICKHOUSE_HTTP, PARLEY_TEST_CLICKHOUSE_DATA or PARLEY_TEST_S3_ENDPOINT not set (PARLEY_SERVICES_S3=1 scripts/services.sh up)")
	}
	ctx := t.Context()
	url, name := freshDB(t, nil)
	db, err := clickhouse.Open(ctx, url)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { db.Close() }()
	// Two months, so the backup holds parts of two partitions.
	at := time.Date(2026, 11, 28, 12, 0, 0, 0, time.UTC)
	batch := func(from, n int) []store.UsageRecord {
		var rs []store.UsageRecord
		for i := from; i < from+n; i++ {
			rs = append(rs, store.UsageRecord{RequestID: fmt.Sprintf("req-%04d", i), UserID: "u1", Channel: store.ChannelAPI, Model: "m",
				PromptTokens: int64(i), CompletionTokens: 1, CostNanos: int64(1000 + i), FinishReason: "stop", CreatedAt: at.Add(time.Duration(i) * 2 * time.Hour)})
		}
		return rs
	}
	for _, b := range [][]store.UsageRecord{batch(0, 30), batch(30, 30)} { // two inserts: two parts per partition
		if err := db.Record(ctx, b); err != nil {
			t.Fatal(err)
		}
	}
	root, _ := filepath.Abs("../../..")
	script := func(args ...string) string {
		cmd := exec.Command(filepath.Join(root, "deploy/backup/clickhouse.sh"), args...)
		cmd.Env = append(os.Environ(), "PARLEY_CH_HTTP="+httpURL, "PARLEY_CH_DATA="+dataDir, "PARLEY_CH_DATABASE="+name,
			"PARLEY_BACKUP_S3_URL="+s3+"/parley-backups", "PARLEY_BACKUP_S3_ACCESS_KEY="+os.Getenv("PARLEY_TEST_S3_ACCESS_KEY"),
			"PARLEY_BACKUP_S3_SECRET_KEY="+os.Getenv("PARLEY_TEST_S3_SECRET_KEY"))
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("clickhouse.sh %v: %v\n%s", args, err, out)
		}
		return string(out)
	}
	script("backup", "drill")
	if err := db.Record(ctx, batch(60, 10)); err != nil {
		t.Fatal(err)
	}

	// The table is lost; the gateway's Open makes it again, empty.
	if err := db.Exec(ctx, "DROP TABLE "+name+".usage_records"); err != nil {
		t.Fatal(err)
	}
	db.Close()
	if db, err = clickhouse.Open(ctx, url); err != nil {
		t.Fatal(err)
	}
	// Counted as the usage pages read: FINAL, one row per request.
	count := func() (n, cost int64) {
		res, err := http.Post(httpURL, "text/plain", strings.NewReader("SELECT count(), sum(cost_nanos) FROM "+name+".usage_records FINAL FORMAT TSV"))
		if err != nil {
			t.Fatal(err)
		}
		defer res.Body.Close()
		body, _ := io.ReadAll(res.Body)
		if _, err := fmt.Sscan(string(body), &n, &cost); err != nil || res.StatusCode != http.StatusOK {
			t.Fatalf("count: %s %q %v", res.Status, body, err)
		}
		return n, cost
	}
	if n, _ := count(); n != 0 {
		t.Fatalf("%d records in the new table", n)
	}
	script("restore", "drill")
	wantCost := int64(0)
	for _, r := range batch(0, 60) {
		wantCost += r.CostNanos
	}
	if n, cost := count(); n != 60 || cost != wantCost {
		t.Fatalf("restored %d records costing %d, want the backup's 60 costing %d", n, cost, wantCost)
	}
	// Restored again over the rows it already has: nothing counts twice.
	script("restore", "drill")
	if n, cost := count(); n != 60 || cost != wantCost {
		t.Fatalf("after a second restore %d records costing %d, want 60 costing %d", n, cost, wantCost)
	}
	if out := script("list"); !slices.Contains(strings.Split(out, "\n"), "clickhouse/"+name+"/drill.tar") {
		t.Fatalf("list: %q", out)
	}
}
