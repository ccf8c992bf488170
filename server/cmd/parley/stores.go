package main

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/parleyhq/parley/server/auth"
	"github.com/parleyhq/parley/server/blob"
	s3blob "github.com/parleyhq/parley/server/blob/s3"
	"github.com/parleyhq/parley/server/config"
	"github.com/parleyhq/parley/server/gateway"
	"github.com/parleyhq/parley/server/limits"
	"github.com/parleyhq/parley/server/respcache"
	"github.com/parleyhq/parley/server/store"
	"github.com/parleyhq/parley/server/store/clickhouse"
	"github.com/parleyhq/parley/server/store/cql"
	"github.com/parleyhq/parley/server/store/memlimit"
	"github.com/parleyhq/parley/server/store/memlive"
	"github.com/parleyhq/parley/server/store/postgres"
	redisstore "github.com/parleyhq/parley/server/store/redis"
	"github.com/parleyhq/parley/server/store/sqlite"
)

// stores is the set of backends the process runs on, chosen from the config,
// each on its own: the embedded SQLite database and in-process limiter unless
// a scale backend is configured (--postgres-url for the relational stores,
// --redis-url for the limiter, --clickhouse-url for usage records,
// --cassandra-hosts for messages, --s3-endpoint for attachment blobs).
type stores struct {
	store.Store
	// Generations is the log of live web generations: in process, or in
	// Redis so any gateway can follow or cancel any generation.
	Generations store.Generations
	// Limiter holds the tier limits and the login throttle: in process, or
	// in Redis so that every gateway shares them.
	Limiter store.Limiter
	// Broadcast and SubscribeEvictions carry logouts, key revocations and
	// tier changes to every gateway (Redis pub/sub); nil without Redis.
	Broadcast          auth.Broadcaster
	SubscribeEvictions func(ctx context.Context, apply func(auth.Eviction), log *slog.Logger) error
	// board shares the gateways' load figures for the request rates in a
	// key (Redis), and ResponseCache is the response cache's shared level;
	// in process (or none) without Redis.
	board         func(key string) limits.LoadBoard
	ResponseCache respcache.Remote

	// moveLedgerShard moves a logical ledger shard between billing
	// clusters (parley admin move-ledger-shard); nil with fewer than two.
	moveLedgerShard func(ctx context.Context, shard, to int) (postgres.ShardMove, error)
	// moveDataShard moves a logical shard of the users' data between data
	// clusters (parley admin move-data-shard); nil with fewer than two.
	moveDataShard func(ctx context.Context, shard, to int) (postgres.ShardMove, error)

	// Blobs is the S3 blob store, or nil for the data directory's.
	Blobs blob.Blobs
	// Vectors keeps the vector stores' chunks: in SQLite embedded; in
	// Cassandra's SAI vector index when Cassandra is configured; else, with
	// PostgreSQL, in PostgreSQL (searched exactly in each gateway over
	// vectors it caches, checked against the store's generation).
	Vectors store.VectorIndex
	// Collectors are the stores' metric families, for the registry.
	Collectors []prometheus.Collector
	checks     map[string]gateway.Check
	closers    []func() error
}

// openStores opens and migrates every configured store.
func openStores(ctx context.Context, cfg *config.Stores) (st *stores, err error) {
	if err := os.MkdirAll(cfg.DataDir, 0o700); err != nil {
		return nil, fmt.Errorf("data dir: %w", err)
	}
	s := &stores{checks: map[string]gateway.Check{}}
	defer func() {
		if err != nil {
			s.Close()
		}
	}()
	if cfg.PostgresURL == "" && (len(cfg.PostgresReadURLs) > 0 || cfg.PostgresPgBouncer || cfg.BillingPostgresURL != "") {
		return nil, errors.New("--postgres-read-urls, --postgres-pgbouncer and --billing-postgres-url need --postgres-url")
	}
	var saver store.LimiterSaver // the embedded database keeps the in-process limiter
	if cfg.PostgresURL != "" {
		urls := strings.Fields(cfg.PostgresURL)
		reads, err := readURLsByCluster(cfg.PostgresReadURLs, len(urls))
		if err != nil {
			return nil, err
		}
		pg, err := postgres.Open(ctx, urls[0], postgres.Options{
			PgBouncer: cfg.PostgresPgBouncer, ReadURLs: reads[0], MaxReplicaLag: cfg.PostgresReplicaMaxLag,
		})
		if err != nil {
			return nil, err
		}
		s.closers = append(s.closers, pg.Close)
		s.Collectors = append(s.Collectors, pg.Collectors()...)
		metricsOf := pg // whose replica metrics the other clusters' share

		if err := pg.Migrate(ctx); err != nil {
			return nil, err
		}
		if len(urls) > 1 {
			// The users' data clusters: the first URL keeps the accounts
			// and the first range of logical shards; each other one its own
			// pool and read replicas, migrated alike.
			data := []*postgres.DB{pg}
			for i, u := range urls[1:] {
				d, err := postgres.Open(ctx, u, postgres.Options{
					PgBouncer: cfg.PostgresPgBouncer, ReadURLs: reads[i+1], MaxReplicaLag: cfg.PostgresReplicaMaxLag,
					ReplicaMetricsOf: metricsOf,
				})
				if err != nil {
					return nil, fmt.Errorf("--postgres-url %d: %w", i+2, err)
				}
				s.closers = append(s.closers, d.Close)
				if len(metricsOf.Collectors()) == 0 {
					metricsOf = d
					s.Collectors = append(s.Collectors, d.Collectors()...)
				}
				if err := d.Migrate(ctx); err != nil {
					return nil, fmt.Errorf("--postgres-url %d: %w", i+2, err)
				}
				s.checks[fmt.Sprintf("postgres-data-%d", i+2)] = d.Ping
				data = append(data, d)
			}
			if len(data) > postgres.DataShards {
				return nil, fmt.Errorf("--postgres-url: %d clusters for %d shards", len(data), postgres.DataShards)
			}
			pg.WithDataShards(data)
			if err := pg.LoadDataShards(ctx); err != nil {
				return nil, err
			}
			s.moveDataShard = pg.MoveDataShard
		}
		if cfg.BillingPostgresURL != "" {
			// The ledger's clusters: each its own pool (through the same
			// PgBouncer setting), migrated alike, no read replicas (every
			// ledger read must be fresh).
			var billing []*postgres.DB
			for i, u := range strings.Fields(cfg.BillingPostgresURL) {
				b, err := postgres.Open(ctx, u, postgres.Options{PgBouncer: cfg.PostgresPgBouncer})
				if err != nil {
					return nil, fmt.Errorf("--billing-postgres-url %d: %w", i+1, err)
				}
				s.closers = append(s.closers, b.Close)
				if err := b.Migrate(ctx); err != nil {
					return nil, fmt.Errorf("--billing-postgres-url %d: %w", i+1, err)
				}
				s.checks[fmt.Sprintf("postgres-billing-%d", i+1)] = b.Ping
				billing = append(billing, b)
			}
			if len(billing) > postgres.LedgerShards {
				return nil, fmt.Errorf("--billing-postgres-url: %d clusters for %d shards", len(billing), postgres.LedgerShards)
			}
			pg.WithBillingShards(billing)
			if err := pg.LoadLedgerMap(ctx); err != nil {
				return nil, fmt.Errorf("the ledger's shard map: %w", err)
			}
			if len(billing) > 1 {
				s.moveLedgerShard = pg.MoveLedgerShard
			}
		}
		s.Store = pg.Store()
		if cfg.ClickHouseURL != "" {
			s.Store = pg.StoreWithOutbox() // usage records wait in PostgreSQL for the relay
		}
		s.Vectors = pg.Vectors() // Cassandra's, when configured, replaces it below
		s.checks["postgres"] = pg.Ping
	} else {
		db, err := sqlite.Open(ctx, filepath.Join(cfg.DataDir, "parley.db"))
		if err != nil {
			return nil, err
		}
		s.closers = append(s.closers, db.Close)
		saver = db
		s.Store = db.Store()
		if cfg.ClickHouseURL != "" {
			s.Store = db.StoreWithOutbox() // usage records wait in SQLite for the relay
		}
		s.Vectors = db.Vectors()
		s.checks["sqlite"] = db.Ping
	}
	if cfg.RedisURL != "" {
		rdb, err := redisstore.Open(ctx, cfg.RedisURL)
		if err != nil {
			return nil, err
		}
		s.closers = append(s.closers, rdb.Close)
		s.Limiter = redisstore.NewLimiter(rdb, "")
		s.Generations = redisstore.NewGenerations(rdb)
		s.ResponseCache = redisstore.NewResponseCache(rdb, "")
		s.board = func(key string) limits.LoadBoard { return redisstore.NewLoadBoard(rdb, key) }
		s.checks["redis"] = func(ctx context.Context) error { return rdb.Ping(ctx).Err() }
		bc := redisstore.NewBroadcaster[auth.Eviction](rdb)
		s.Broadcast, s.SubscribeEvictions = bc, bc.Subscribe
	} else {
		ml := memlimit.New(time.Minute)
		s.Limiter = ml
		if saver != nil {
			// The embedded limiter's buckets survive a restart: saved every
			// second (what a crash can forgive) and at Close.
			pctx, stop := context.WithCancel(context.WithoutCancel(ctx))
			done, err := memlimit.Persist(pctx, ml, saver, time.Second, func(err error) {
				slog.Error("saving the limiter's buckets", "err", err)
			})
			if err != nil {
				stop()
				return nil, err
			}
			s.closers = append(s.closers, func() error { stop(); <-done; return nil })
		}
		s.Generations = memlive.New()
		s.board = func(string) limits.LoadBoard { return memlimit.NewBoard() }
	}
	if cfg.ClickHouseCluster != "" && cfg.ClickHouseURL == "" {
		return nil, errors.New("--clickhouse-cluster needs --clickhouse-url")
	}
	if cfg.ClickHouseURL != "" {
		var chdb *clickhouse.DB
		var err error
		if cfg.ClickHouseCluster != "" {
			chdb, err = clickhouse.OpenCluster(ctx, cfg.ClickHouseURL, cfg.ClickHouseCluster)
		} else {
			chdb, err = clickhouse.Open(ctx, cfg.ClickHouseURL)
		}
		if err != nil {
			return nil, err
		}
		s.closers = append(s.closers, chdb.Close)
		s.Usage = chdb
		s.checks["clickhouse"] = chdb.Ping
	}
	if len(cfg.CassandraHosts) > 0 {
		msgs, err := cql.Open(ctx, cql.Config{
			Hosts: cfg.CassandraHosts, Keyspace: cfg.CassandraKeyspace,
			Username: os.Getenv("PARLEY_CASSANDRA_USERNAME"), Password: os.Getenv("PARLEY_CASSANDRA_PASSWORD"),
		})
		if err != nil {
			return nil, err
		}
		s.closers = append(s.closers, msgs.Close)
		s.Messages = msgs
		s.Vectors = msgs.Vectors()
		s.checks["cql"] = msgs.Ping
	}
	if cfg.S3Endpoint != "" {
		b, err := s3blob.Open(ctx, s3blob.Config{
			Endpoint: cfg.S3Endpoint, Bucket: cfg.S3Bucket, Region: os.Getenv("PARLEY_S3_REGION"),
			AccessKey: os.Getenv("PARLEY_S3_ACCESS_KEY"), SecretKey: os.Getenv("PARLEY_S3_SECRET_KEY"),
		})
		if err != nil {
			return nil, err
		}
		s.Blobs = b
		s.checks["s3"] = b.Ping
	}
	return s, nil
}

// Checks are the readiness checks of every store, for /readyz.
func (s *stores) Checks() map[string]gateway.Check { return s.checks }

// Close closes every store.
func (s *stores) Close() {
	for i := len(s.closers) - 1; i >= 0; i-- {
		_ = s.closers[i]()
	}
}

// Secret returns the key that signs page tokens and blob URLs: --secret
// (hex, shared by every gateway in scale mode) or, embedded, a random key
// kept in the data directory so tokens survive restarts.
func (s *stores) Secret(secret, dataDir string) ([]byte, error) {
	if secret != "" {
		k, err := hex.DecodeString(secret)
		if err != nil || len(k) < 16 {
			return nil, errors.New("--secret: give at least 32 hex digits")
		}
		return k, nil
	}
	path := filepath.Join(dataDir, "secret.key")
	if k, err := os.ReadFile(path); err == nil && len(k) == 32 {
		return k, nil
	}
	k := make([]byte, 32)
	if _, err := rand.Read(k); err != nil {
		return nil, err
	}
	if err := os.WriteFile(path, k, 0o600); err != nil {
		return nil, fmt.Errorf("secret: %w", err)
	}
	return k, nil
}

// readURLsByCluster splits --postgres-read-urls over the clusters of
// --postgres-url: an entry K=URL (K a number) is a replica of cluster K
// (its place in the list, from 0), any other (a URL, a key=value DSN) one
// of the first.
func readURLsByCluster(urls []string, clusters int) ([][]string, error) {
	out := make([][]string, clusters)
	for _, u := range urls {
		k := 0
		if at, rest, ok := strings.Cut(u, "="); ok && at != "" && strings.Trim(at, "0123456789") == "" {
			n, err := strconv.Atoi(at)
			if err != nil || n >= clusters {
				return nil, fmt.Errorf("--postgres-read-urls: %q names cluster %q; --postgres-url has clusters 0–%d", u, at, clusters-1)
			}
			k, u = n, rest
		}
		out[k] = append(out[k], u)
	}
	return out, nil
}
