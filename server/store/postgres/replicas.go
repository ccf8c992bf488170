package postgres

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/parleyhq/parley/server/store"
)

// Read replicas. A read made with a context marked store.AllowStale goes,
// round-robin, to a replica that answers and is at most MaxReplicaLag
// behind the primary; every other statement goes to the primary. A
// checker samples the primary's WAL position every ReplicaCheckEvery and
// asks each replica how far it has replayed: a replica is as fresh as the
// newest primary sample its replay position has reached (so an idle
// primary does not make a caught-up replica look old, which
// pg_last_xact_replay_timestamp alone would). A replica that fails a check
// or a read is skipped until a check succeeds again; a read it failed is
// retried on the primary.

// Defaults of Options.MaxReplicaLag and Options.ReplicaCheckEvery.
const (
	DefaultMaxReplicaLag     = 2 * time.Second
	DefaultReplicaCheckEvery = 250 * time.Millisecond
)

// replica is one read replica and what the checker last learned of it.
type replica struct {
	name string // host:port, the metrics' label
	pool *pgxpool.Pool
	// up is whether the last check (or read) succeeded; freshAt is the
	// time (unix ns) of the newest primary WAL sample it has replayed.
	up      atomic.Bool
	freshAt atomic.Int64
}

// walSample is the primary's WAL write position at a time.
type walSample struct {
	at  time.Time
	lsn int64
}

// replicaSet routes stale-tolerant reads over the replicas.
type replicaSet struct {
	primary  *pgxpool.Pool
	list     []*replica
	maxLag   time.Duration
	every    time.Duration
	next     atomic.Uint64
	samples  []walSample // the checker's only
	stop     context.CancelFunc
	done     sync.WaitGroup
	reads    *prometheus.CounterVec
	skipped  *prometheus.CounterVec
	upGauge  *prometheus.GaugeVec
	lagGauge *prometheus.GaugeVec
}

func newReplicaSet(primary *pgxpool.Pool, maxLag, every time.Duration) *replicaSet {
	if maxLag <= 0 {
		maxLag = DefaultMaxReplicaLag
	}
	if every <= 0 {
		// At least four checks within the bound, or a caught-up replica
		// would look as old as the check interval.
		every = min(DefaultReplicaCheckEvery, maxLag/4)
	}
	return &replicaSet{
		primary: primary, maxLag: maxLag, every: every,
		reads: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "parley_postgres_stale_reads_total",
			Help: "Reads that tolerate replica lag (listings), by the server that answered: primary or a replica's host:port.",
		}, []string{"server"}),
		skipped: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "parley_postgres_replica_skipped_total",
			Help: "Times a read replica was passed over for a read, by replica and reason (lag: further behind than the bound; down: its last check failed; error: the read failed and went to the primary).",
		}, []string{"replica", "reason"}),
		upGauge: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "parley_postgres_replica_up",
			Help: "1 when the read replica answered its last check, 0 when it did not.",
		}, []string{"replica"}),
		lagGauge: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "parley_postgres_replica_lag_seconds",
			Help: "How far the read replica is behind the primary, to within the check interval, as of its last successful check.",
		}, []string{"replica"}),
	}
}

// collectors are the replica metrics' families.
func (rs *replicaSet) collectors() []prometheus.Collector {
	return []prometheus.Collector{rs.reads, rs.skipped, rs.upGauge, rs.lagGauge}
}

// start checks every replica once, then keeps checking until close.
func (rs *replicaSet) start(ctx context.Context) {
	rs.check(ctx)
	ctx, rs.stop = context.WithCancel(context.WithoutCancel(ctx))
	rs.done.Go(func() {
		t := time.NewTicker(rs.every)
		defer t.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case <-t.C:
				rs.check(ctx)
			}
		}
	})
}

func (rs *replicaSet) close() {
	if rs.stop != nil {
		rs.stop()
		rs.done.Wait()
	}
	for _, r := range rs.list {
		r.pool.Close()
	}
}

// check samples the primary's WAL position, then each replica's replay
// position, each within one check interval.
func (rs *replicaSet) check(ctx context.Context) {
	now := time.Now()
	var lsn int64
	pctx, cancel := context.WithTimeout(ctx, rs.every)
	err := rs.primary.QueryRow(pctx, `SELECT (pg_current_wal_lsn() - '0/0')::bigint`).Scan(&lsn)
	cancel()
	if err == nil {
		rs.samples = append(rs.samples, walSample{at: now, lsn: lsn})
	}
	// Keep the samples a replica within the bound could be at, and one.
	keep := 0
	for keep < len(rs.samples)-1 && now.Sub(rs.samples[keep].at) > rs.maxLag+2*rs.every {
		keep++
	}
	rs.samples = rs.samples[keep:]
	for _, r := range rs.list {
		var standby bool
		var replayed int64
		rctx, cancel := context.WithTimeout(ctx, rs.every)
		err := r.pool.QueryRow(rctx, `SELECT pg_is_in_recovery(), (coalesce(pg_last_wal_replay_lsn(), '0/0') - '0/0')::bigint`).Scan(&standby, &replayed)
		cancel()
		if err != nil {
			if ctx.Err() != nil {
				return
			}
			r.up.Store(false)
			rs.upGauge.WithLabelValues(r.name).Set(0)
			continue
		}
		r.up.Store(true)
		rs.upGauge.WithLabelValues(r.name).Set(1)
		fresh := r.freshAt.Load()
		if !standby {
			// Not in recovery: the primary itself, or a promoted standby.
			fresh = now.UnixNano()
		}
		for i := len(rs.samples) - 1; i >= 0; i-- {
			if rs.samples[i].lsn <= replayed {
				fresh = max(fresh, rs.samples[i].at.UnixNano())
				break
			}
		}
		r.freshAt.Store(fresh)
		rs.lagGauge.WithLabelValues(r.name).Set(time.Since(time.Unix(0, fresh)).Seconds())
	}
}

// pick returns the next usable replica, round-robin, or nil for the
// primary; it counts the replicas it passes over.
func (rs *replicaSet) pick() *replica {
	n := uint64(len(rs.list))
	start := rs.next.Add(1)
	for i := range n {
		r := rs.list[(start+i)%n]
		switch {
		case !r.up.Load():
			rs.skipped.WithLabelValues(r.name, "down").Inc()
		case time.Since(time.Unix(0, r.freshAt.Load())) > rs.maxLag:
			rs.skipped.WithLabelValues(r.name, "lag").Inc()
		default:
			return r
		}
	}
	return nil
}

// readRows runs the query q and collects its rows with fn: on a replica
// when ctx allows stale reads and one is usable (falling back to the
// primary if that replica fails), else on the primary.
func readRows[T any](ctx context.Context, db *DB, q string, args []any, fn func(pgx.Rows) (T, error)) ([]T, error) {
	run := func(conn querier) ([]T, error) {
		rows, err := conn.Query(ctx, q, args...)
		if err != nil {
			return nil, mapErr(err)
		}
		return collectRows(rows, fn)
	}
	rs := db.replicas
	if rs == nil || !store.StaleAllowed(ctx) {
		return run(db.conn())
	}
	if r := rs.pick(); r != nil {
		var conn querier = r.pool
		if fc, ok := db.q.(fencedConn); ok {
			conn = fc.onReplica(r.pool) // a data shard's: fenced there too
		}
		out, err := run(conn)
		if err == nil {
			rs.reads.WithLabelValues(r.name).Inc()
			return out, nil
		}
		if ctx.Err() != nil || errShardMoved(err) {
			return nil, err // a moved shard: the caller reads the map again
		}
		// Down, or a query canceled by a recovery conflict: the primary
		// answers this one, and the checker decides when to come back.
		r.up.Store(false)
		rs.skipped.WithLabelValues(r.name, "error").Inc()
	}
	rs.reads.WithLabelValues("primary").Inc()
	return run(db.conn())
}

// openReplica makes the pool of one read replica (connecting lazily: a
// replica that is down at start is skipped until it answers).
func openReplica(url string, opts Options) (*replica, error) {
	cfg, err := poolConfig(url, opts)
	if err != nil {
		return nil, fmt.Errorf("postgres: read URL: %w", err)
	}
	pool, err := pgxpool.NewWithConfig(context.Background(), cfg)
	if err != nil {
		return nil, fmt.Errorf("postgres: read URL: %w", err)
	}
	return &replica{name: fmt.Sprintf("%s:%d", cfg.ConnConfig.Host, cfg.ConnConfig.Port), pool: pool}, nil
}
