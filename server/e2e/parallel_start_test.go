package e2e

import (
	"context"
	"net/http"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/parleyhq/parley/server/store/clickhouse"
)

// Five gateways started at the same instant on an empty PostgreSQL
// database, an empty ClickHouse database and a CQL keyspace that does not
// exist yet (when those servers are configured) all come up ready and stay
// up, round after round: what each creates at start (migrations, audit
// partitions, tables, keyspace) is made once and found by the others, as
// when a Deployment of several replicas starts.
func TestGatewaysStartTogether(t *testing.T) {
	for round := range 3 {
		t.Run("round"+string(rune('1'+round)), func(t *testing.T) {
			scaleMode(t) // fresh PostgreSQL database and CQL keyspace
			if url := os.Getenv("PARLEY_TEST_CLICKHOUSE_URL"); url != "" {
				t.Setenv("PARLEY_CLICKHOUSE_URL", freshClickHouse(t, url))
			}
			gateways := make([]*server, 5)
			for i := range gateways {
				gateways[i] = spawnServer(t)
			}
			for _, g := range gateways {
				g.waitListening(90 * time.Second)
			}
			for i, g := range gateways {
				waitReady(t, g, i)
			}
			// None exits after being ready (a store step that failed late).
			time.Sleep(time.Second)
			for i, g := range gateways {
				select {
				case <-g.done:
					t.Errorf("gateway %d exited: %v\n%s", i, g.err, g.Logs())
				default:
				}
			}
		})
	}
}

// waitReady waits until the gateway's /readyz answers 200 (every store
// answers) and /healthz answers 200.
func waitReady(t *testing.T, g *server, i int) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		ready, healthy := status(g.BaseURL+"/readyz"), status(g.BaseURL+"/healthz")
		if ready == http.StatusOK && healthy == http.StatusOK {
			return
		}
		select {
		case <-g.done:
			t.Fatalf("gateway %d exited: %v\n%s", i, g.err, g.Logs())
		default:
		}
		if time.Now().After(deadline) {
			t.Fatalf("gateway %d: /readyz %d, /healthz %d after 30 s\n%s", i, ready, healthy, g.Logs())
		}
		time.Sleep(100 * time.Millisecond)
	}
}

func status(url string) int {
	res, err := http.Get(url)
	if err != nil {
		return 0
	}
	res.Body.Close()
	return res.StatusCode
}

// freshClickHouse creates an empty database on the ClickHouse server at
// serverURL (clickhouse://host:port/db), dropped when the test ends, and
// returns its URL.
func freshClickHouse(t *testing.T, serverURL string) string {
	t.Helper()
	ctx := ctxTimeout(t, 30*time.Second)
	admin, err := clickhouse.Open(ctx, serverURL)
	if err != nil {
		t.Fatal(err)
	}
	name := "e2e_" + strings.ReplaceAll(uuid.NewString(), "-", "")
	if err := admin.Exec(ctx, "CREATE DATABASE "+name); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		_ = admin.Exec(ctx, "DROP DATABASE IF EXISTS "+name)
		admin.Close()
	})
	return inDatabase(t, serverURL, name)
}
