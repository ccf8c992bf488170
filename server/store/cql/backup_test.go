package cql_test

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/gocql/gocql"
	"github.com/google/uuid"

	"github.com/parleyhq/parley/server/store/cql"
)

// deploy/backup/cassandra.sh on the test node: messages written, a snapshot
// (nodetool snapshot, the SSTables to the S3 server), more messages, the
// table's data lost (TRUNCATE), the snapshot restored with nodetool import:
// every message of the snapshot is back with its text, and restoring it
// again adds no row.
func TestSnapshotRestoreThroughS3(t *testing.T) {
	hosts, data, s3 := os.Getenv(EnvHosts), os.Getenv("PARLEY_TEST_CASSANDRA_DATA"), os.Getenv("PARLEY_TEST_S3_ENDPOINT")
	if hosts == "" || data == "" || s3 == "" {
		t.Skip("PARLEY_TEST_CASSANDRA_HOSTS, PARLEY_TEST_CASSANDRA_DATA or PARLEY_TEST_S3_ENDPOINT not set (PARLEY_SERVICES_S3=1 PARLEY_SERVICES_CQL=1 scripts/services.sh up)")
	}
	cfg := cql.Config{Hosts: cql.HostsFlag(hosts), Keyspace: "t_" + strings.ReplaceAll(uuid.NewString(), "-", "")[:24]}
	db, err := cql.Open(t.Context(), cfg) // the keyspace and its tables, as a gateway makes them
	if err != nil {
		t.Fatal(err)
	}
	db.Close()
	t.Cleanup(func() { _ = cql.DropKeyspace(context.Background(), cfg) })
	c := gocql.NewCluster(cql.HostsFlag(hosts)...)
	c.Timeout, c.ConnectTimeout = 20*time.Second, 10*time.Second
	sess, err := c.CreateSession()
	if err != nil {
		t.Fatal(err)
	}
	defer sess.Close()
	conv := uuid.NewString()
	insert := func(from, n int) {
		for i := from; i < from+n; i++ {
			if err := sess.Query(`INSERT INTO `+cfg.Keyspace+`.messages (conv_id, created_at, id, role, parts, model, tokens, finish_reason)
				VALUES (?, ?, ?, 'user', ?, 'm', 1, 'stop')`, conv, int64(1000+i), fmt.Sprintf("m%03d", i), fmt.Sprintf(`[{"text":"message %d"}]`, i)).
				WithContext(t.Context()).Exec(); err != nil {
				t.Fatal(err)
			}
		}
	}
	texts := func() []string {
		var out []string
		it := sess.Query(`SELECT parts FROM `+cfg.Keyspace+`.messages WHERE conv_id = ?`, conv).WithContext(t.Context()).Iter()
		var p string
		for it.Scan(&p) {
			out = append(out, p)
		}
		if err := it.Close(); err != nil {
			t.Fatal(err)
		}
		return out
	}
	insert(0, 40)
	want := texts()
	root, _ := filepath.Abs("../../..")
	script := func(args ...string) string {
		cmd := exec.Command(filepath.Join(root, "deploy/backup/cassandra.sh"), args...)
		cmd.Env = append(os.Environ(), "PARLEY_NODETOOL="+filepath.Join(root, "scripts/services.sh")+" nodetool", "PARLEY_CASSANDRA_DATA="+data,
			"PARLEY_BACKUP_NODE=test-node", "PARLEY_BACKUP_S3_URL="+s3+"/parley-backups",
			"PARLEY_BACKUP_S3_ACCESS_KEY="+os.Getenv("PARLEY_TEST_S3_ACCESS_KEY"), "PARLEY_BACKUP_S3_SECRET_KEY="+os.Getenv("PARLEY_TEST_S3_SECRET_KEY"))
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("cassandra.sh %v: %v\n%s", args, err, out)
		}
		return string(out)
	}
	script("snapshot", cfg.Keyspace, "drill")
	insert(40, 10)
	if err := sess.Query(`TRUNCATE ` + cfg.Keyspace + `.messages`).WithContext(t.Context()).Exec(); err != nil {
		t.Fatal(err)
	}
	if n := len(texts()); n != 0 {
		t.Fatalf("%d messages after the loss", n)
	}
	script("restore", cfg.Keyspace, "drill")
	if got := texts(); !slices.Equal(got, want) {
		t.Fatalf("restored %d messages, want the snapshot's %d:\n%v", len(got), len(want), got)
	}
	script("restore", cfg.Keyspace, "drill")
	if got := texts(); len(got) != len(want) {
		t.Fatalf("after a second restore %d messages, want %d", len(got), len(want))
	}
	if out := script("list", cfg.Keyspace); !slices.Contains(strings.Split(out, "\n"), "cassandra/test-node/"+cfg.Keyspace+"/drill.tar") {
		t.Fatalf("list: %q", out)
	}
}
