// Package config reads Parley's settings from flags, PARLEY_* environment
// variables and an optional YAML file, in that order of precedence, over the
// embedded defaults that let a fresh clone run with nothing else installed.
package config

import (
	"errors"
	"flag"
	"fmt"
	"net/netip"
	"os"
	"strings"
	"sync"
	"time"

	"gopkg.in/yaml.v3"

	"github.com/parleyhq/parley/server/attach"
	"github.com/parleyhq/parley/server/auth"
	"github.com/parleyhq/parley/server/batch"
	"github.com/parleyhq/parley/server/billing"
	"github.com/parleyhq/parley/server/chat"
	"github.com/parleyhq/parley/server/knowledge"
	"github.com/parleyhq/parley/server/limits"
	"github.com/parleyhq/parley/server/models"
	"github.com/parleyhq/parley/server/obs"
	"github.com/parleyhq/parley/server/respcache"
	"github.com/parleyhq/parley/server/scheduler"
	"github.com/parleyhq/parley/server/sso"
	"github.com/parleyhq/parley/server/webhook"
)

// Serve holds the settings of `parley serve`: its own (network, workers'
// token, observability) beside the configuration each package owns and
// registers (scheduler, models, auth, billing, limits, chat, attach,
// respcache, obs), composed here so there is one home for every flag.
type Serve struct {
	// Stores are where the data lives (shared with migrate and admin).
	Stores

	// Listen is the address the gateway listens on.
	Listen string
	// WebOrigins are the browser origins allowed to call with credentials (CORS, CSRF).
	WebOrigins []string
	// TrustedProxies are the reverse proxies whose X-Forwarded-For names
	// the client (gateway.RealIP); empty: the TCP peer is the client.
	TrustedProxies []netip.Prefix
	// InsecureCookies drops the Secure attribute from cookies, for plain-HTTP development.
	InsecureCookies bool
	// HSTSMaxAge, when positive, sends Strict-Transport-Security on the web
	// app's pages (deployments served over TLS).
	HSTSMaxAge int
	// MaxBodyBytes bounds every request body; larger ones are refused unread.
	MaxBodyBytes int64
	// MaxPublicBodyBytes bounds the messages of the procedures open to anyone.
	MaxPublicBodyBytes int64
	// MaxRequestElements bounds the values one request body may decode into.
	MaxRequestElements int
	// ReadHeaderTimeout bounds the time to send a request's headers, and
	// BodyReadTimeout the time to send its body (lifted once it is read, so
	// response streams run as long as they need).
	ReadHeaderTimeout, BodyReadTimeout time.Duration
	// ShutdownGrace is how long open streams may run on after SIGTERM.
	ShutdownGrace time.Duration
	// PingInterval is the keep-alive interval of quiet SSE streams.
	PingInterval time.Duration
	// OpenAIUnsupported is what is done with OpenAI request fields Parley
	// cannot honour: refuse or drop.
	OpenAIUnsupported string
	// Secret (hex) signs page tokens and blob URLs; every gateway sharing
	// stores needs the same one. Empty: a key kept in the data directory.
	Secret string

	// Scheduler places requests on the workers; no worker address means one
	// in-process sim worker.
	Scheduler scheduler.Config
	// WorkerToken is the secret sent to the workers on every call; they
	// refuse calls without it. WorkerTokenFile names a file holding it
	// instead (see ReadToken).
	WorkerToken, WorkerTokenFile string
	// UpstreamAPIKey is sent as a bearer token to the inference servers
	// addressed directly (openai+http:// workers); UpstreamAPIKeyFile names
	// a file holding it instead.
	UpstreamAPIKey, UpstreamAPIKeyFile string
	// SimTimeScale scales the in-process sim worker's delays (1 real pace, 0 none).
	SimTimeScale float64
	// Models is the catalog and its policy for unpriced models.
	Models models.Config

	// Auth holds the login throttle (the rest of auth.Config is wired).
	Auth auth.Config
	// Billing, Limits and Core are the money, the request rates and the
	// budgets of one request.
	Billing billing.Config
	Limits  limits.Config
	Core    chat.Config
	// Attach bounds attachments and their signed URLs.
	Attach attach.Config
	// Knowledge is the vector stores' ingestion.
	Knowledge knowledge.Config
	// Batch is the Batch API's runner.
	Batch batch.Config
	// Webhook is the webhook deliveries'.
	Webhook webhook.Config
	// SSO is the OpenID Connect provider people may sign in through.
	SSO sso.Config
	// Cache is the response cache.
	Cache respcache.Settings

	// OTLPEndpoint turns tracing on, exporting spans over OTLP/HTTP to it.
	OTLPEndpoint string
	// LogLevel is debug, info, warn or error.
	LogLevel string
	// RequestLog is the per-request log line and its bound.
	RequestLog obs.RequestLogConfig
	// DebugListen serves Go's /debug/pprof profiles; empty: off.
	DebugListen string
	// TestFaultFile is the testing-only fault switch (gateway.WatchFault).
	TestFaultFile string

	// Groups are the flags by topic, for help and docs/config.md.
	Groups []Group
}

// Stores are the settings that say where the data lives: what `parley
// serve`, `parley migrate` and every `parley admin` task open.
type Stores struct {
	// DataDir holds everything of the embedded mode: the SQLite database and blobs.
	DataDir string

	// PostgresURL (postgres://…) moves the relational stores (accounts,
	// conversations, messages, ledger, usage, attachments, audit) from the
	// embedded SQLite database to PostgreSQL. Each scale backend below is
	// chosen on its own. Several URLs, separated by spaces, spread the
	// users' data (conversations, messages, chat settings, attachments,
	// shares, projects, memories, ratings, prompts, audit events) in 64
	// logical shards by user over as many clusters in contiguous ranges; the
	// first also keeps users, sessions, keys, organisations, batches,
	// webhooks and vector stores.
	PostgresURL string
	// PostgresPgBouncer says PostgresURL (and the read URLs) name PgBouncer
	// in transaction mode: no named prepared statements.
	PostgresPgBouncer bool
	// PostgresReadURLs are read replicas: listings that tolerate lag go to
	// them round-robin; one further behind than PostgresReplicaMaxLag, or
	// down, is skipped.
	PostgresReadURLs      []string
	PostgresReplicaMaxLag time.Duration
	// BillingPostgresURL, when set, puts the ledger (balances, holds,
	// budgets, usage records or their outbox) on a PostgreSQL cluster of its
	// own; PostgresURL keeps the rest. Several URLs, separated by spaces,
	// spread the ledger's 32 logical shards over as many clusters in
	// contiguous ranges. Needs PostgresURL.
	BillingPostgresURL string
	// RedisURL (redis://…) moves the rate limiter into Redis, shared by
	// every gateway; redis+cluster://host:port,host:port,… names a Redis
	// Cluster (any of its nodes).
	RedisURL string
	// ClickHouseURL (clickhouse://host:9000/db) moves usage records into
	// ClickHouse; with ClickHouseCluster, the URL names one or more nodes
	// (host1:9000,host2:9000) of that cluster, and the records are spread
	// over its shards by user with a replica set per shard.
	ClickHouseURL     string
	ClickHouseCluster string
	// S3Endpoint (http://host:port or https://host) and S3Bucket move
	// attachment blobs into S3; the credentials come from the environment
	// (PARLEY_S3_ACCESS_KEY, PARLEY_S3_SECRET_KEY, optional PARLEY_S3_REGION).
	S3Endpoint, S3Bucket string
	// CassandraHosts (host:port,…) moves messages into ScyllaDB or Apache
	// Cassandra (CQL), keyspace CassandraKeyspace; credentials, if needed,
	// from PARLEY_CASSANDRA_USERNAME and PARLEY_CASSANDRA_PASSWORD.
	CassandraHosts    []string
	CassandraKeyspace string
}

// The titles of serve's flag groups, in the order help lists them.
const (
	GroupNetwork       = "network"
	GroupStores        = "stores"
	GroupWorkers       = "workers and models"
	GroupLimits        = "limits and billing"
	GroupAttachments   = "attachments"
	GroupKnowledge     = "vector stores"
	GroupBatch         = "batches and webhooks"
	GroupCache         = "cache"
	GroupSSO           = "single sign-on"
	GroupRegions       = "regions"
	GroupObservability = "observability"
	GroupTesting       = "testing only (hidden unless --help-all)"
)

// ServeFlags registers the serve settings on fs with their defaults and
// returns the value they fill, its Groups set.
func ServeFlags(fs *flag.FlagSet) *Serve {
	c := &Serve{}
	var g Groups
	g.Add(fs, GroupNetwork, false, func(fs *flag.FlagSet) {
		fs.StringVar(&c.Listen, "listen", "127.0.0.1:8080", "address to listen on")
		fs.Func("web-origins", "comma-separated browser origins allowed to call with credentials", listSetter(&c.WebOrigins))
		fs.Func("trusted-proxies", "comma-separated addresses or CIDR prefixes of the reverse proxies in front of the gateway: from them the client's address is read from X-Forwarded-For (organisation keys' IP allow-lists, the audit log, sign-in throttling and request logs use it); empty: the TCP peer's address", prefixSetter(&c.TrustedProxies))
		fs.BoolVar(&c.InsecureCookies, "insecure-cookies", false, "omit the Secure cookie attribute (plain-HTTP development only)")
		fs.IntVar(&c.HSTSMaxAge, "hsts-max-age", 0, "send Strict-Transport-Security with this max-age in seconds on the web app's pages, where the gateway is served over TLS (0: not sent)")
		fs.Int64Var(&c.MaxBodyBytes, "max-body-bytes", 32<<20, "largest request body accepted")
		fs.Int64Var(&c.MaxPublicBodyBytes, "max-public-body-bytes", 64<<10, "largest message, after decompression, of the procedures open to anyone (SignUp, GetSignUpPolicy, Login, GetSharedConversation, health, reflection)")
		fs.IntVar(&c.MaxRequestElements, "max-request-elements", 100_000, "messages, strings and JSON values one request body may decode into, counted before it is unmarshalled")
		fs.DurationVar(&c.ReadHeaderTimeout, "read-header-timeout", 10*time.Second, "longest a client may take to send a request's headers")
		fs.DurationVar(&c.BodyReadTimeout, "body-read-timeout", 2*time.Minute, "longest a client may take to send a request's body, from the end of its headers (0: no limit); response streams are not cut by it")
		fs.DurationVar(&c.ShutdownGrace, "shutdown-grace", 30*time.Second, "how long open streams may finish after SIGTERM")
		fs.DurationVar(&c.PingInterval, "ping-interval", 10*time.Second, "keep-alive comment interval on quiet SSE streams")
		fs.StringVar(&c.OpenAIUnsupported, "openai-unsupported", "refuse", "OpenAI request fields Parley cannot honour: refuse (400 naming the field) or drop (count in parley_openai_dropped_params_total, log once per field)")
	})
	g.Add(fs, GroupStores, false, c.Stores.RegisterFlags, func(fs *flag.FlagSet) {
		fs.StringVar(&c.Secret, "secret", "", "hex key signing page tokens and blob URLs (scale mode: the same on every gateway; empty: a key kept in the data directory)")
	})
	g.Add(fs, GroupWorkers, false, c.Scheduler.RegisterFlags, c.Models.RegisterFlags, func(fs *flag.FlagSet) {
		fs.StringVar(&c.WorkerToken, "worker-token", "", "shared secret sent to the workers on every call (the workers' --worker-token)")
		fs.StringVar(&c.WorkerTokenFile, "worker-token-file", "", "file holding the worker token (instead of --worker-token)")
		fs.StringVar(&c.UpstreamAPIKey, "upstream-api-key", "", "bearer token sent to the inference servers addressed directly (openai+http:// in --workers or --worker-pool)")
		fs.StringVar(&c.UpstreamAPIKeyFile, "upstream-api-key-file", "", "file holding the upstream API key (instead of --upstream-api-key)")
		fs.Float64Var(&c.SimTimeScale, "sim-time-scale", 1, "time scale of the in-process sim worker (0 = no waiting)")
	})
	g.Add(fs, GroupLimits, false, c.Auth.RegisterFlags, c.Billing.RegisterFlags, c.Limits.RegisterFlags, c.Core.RegisterFlags)
	g.Add(fs, GroupAttachments, false, c.Attach.RegisterFlags)
	g.Add(fs, GroupKnowledge, false, c.Knowledge.RegisterFlags)
	g.Add(fs, GroupBatch, false, c.Batch.RegisterFlags, c.Webhook.RegisterFlags)
	g.Add(fs, GroupCache, false, c.Cache.RegisterFlags)
	g.Add(fs, GroupSSO, false, c.SSO.RegisterFlags)
	g.Add(fs, GroupObservability, false, func(fs *flag.FlagSet) {
		fs.StringVar(&c.OTLPEndpoint, "otlp-endpoint", "", "OTLP/HTTP endpoint for traces (empty: tracing off)")
		fs.StringVar(&c.LogLevel, "log-level", "info", "log level: debug, info, warn, error")
		fs.StringVar(&c.DebugListen, "debug-listen", "", "address for Go's /debug/pprof profiles (empty: off; keep it private)")
	}, c.RequestLog.RegisterFlags)
	g.Add(fs, GroupTesting, true, c.Batch.RegisterTestingFlags, func(fs *flag.FlagSet) {
		fs.StringVar(&c.TestFaultFile, "test-fault-file", "", "TESTING ONLY, never in production: a JSON file ({\"latency\":\"700ms\",\"error_ratio\":0.5}) whose latency and share of 5xx are added to every RPC and /v1 request, re-read on change (the region health checker's tests)")
	})
	g.Add(fs, GroupConfig, false, AddConfigFlag)
	c.Groups = g
	return c
}

// StoresFlags registers the store settings alone on fs (for migrate and the
// admin tasks) and returns the value they fill.
//
// The YAML file of --config may be serve's: its settings that are not the
// stores' are skipped, not refused, so one file serves every command.
func StoresFlags(fs *flag.FlagSet) *Stores {
	s := &Stores{}
	s.RegisterFlags(fs)
	serveKeys := flag.NewFlagSet("serve", flag.ContinueOnError)
	ServeFlags(serveKeys)
	keys := map[string]bool{}
	serveKeys.VisitAll(func(f *flag.Flag) { keys[f.Name] = true })
	otherFileKeys.Store(fs, keys)
	return s
}

// otherFileKeys are, by flag set, the keys its --config file may hold for
// other commands (*flag.FlagSet → map[string]bool).
var otherFileKeys sync.Map

// RegisterFlags registers the store settings with their defaults, filling s.
func (s *Stores) RegisterFlags(fs *flag.FlagSet) {
	fs.StringVar(&s.DataDir, "data-dir", "parley-data", "directory of the embedded store")
	fs.StringVar(&s.PostgresURL, "postgres-url", "", "PostgreSQL URL for the relational stores (empty: embedded SQLite); several URLs separated by spaces spread the users' data (conversations, messages, attachments…) in 64 shards by user over as many clusters, the first keeping the accounts")
	fs.BoolVar(&s.PostgresPgBouncer, "postgres-pgbouncer", false, "--postgres-url (and --postgres-read-urls) name PgBouncer in transaction mode: no named prepared statements")
	fs.Func("postgres-read-urls", "comma-separated PostgreSQL read replica URLs: conversation, message, usage and key listings go to them round-robin (none: all reads on --postgres-url); with several --postgres-url clusters, K=URL is a replica of cluster K (from 0), a bare URL one of the first", listSetter(&s.PostgresReadURLs))
	fs.StringVar(&s.BillingPostgresURL, "billing-postgres-url", "", "PostgreSQL URL of a cluster of the ledger's own: balances, holds, budgets and usage records (or their outbox); several URLs separated by spaces spread its 32 shards by user over as many clusters; empty: --postgres-url keeps them")
	fs.DurationVar(&s.PostgresReplicaMaxLag, "postgres-replica-max-lag", 2*time.Second, "a read replica further behind the primary than this is skipped")
	fs.StringVar(&s.RedisURL, "redis-url", "", "Redis URL for the shared rate limiter (empty: in process); redis+cluster://host:port,host:port,… for a Redis Cluster")
	fs.StringVar(&s.ClickHouseURL, "clickhouse-url", "", "ClickHouse URL (native protocol) for usage records (empty: the relational store); clickhouse://h1:9000,h2:9000/db names several nodes")
	fs.StringVar(&s.ClickHouseCluster, "clickhouse-cluster", "", "the ClickHouse cluster (as the servers' remote_servers name it) to spread usage records over, by user, on replicated tables (empty: one server)")
	fs.StringVar(&s.S3Endpoint, "s3-endpoint", "", "S3 endpoint URL for attachment blobs (empty: the data directory); keys from PARLEY_S3_ACCESS_KEY/PARLEY_S3_SECRET_KEY")
	fs.StringVar(&s.S3Bucket, "s3-bucket", "parley", "S3 bucket for attachment blobs, created if missing")
	fs.Func("cassandra-hosts", "comma-separated CQL (ScyllaDB/Cassandra) host:port contact points for messages, and vector store chunks on Cassandra 5 (none: the relational store keeps both)", listSetter(&s.CassandraHosts))
	fs.StringVar(&s.CassandraKeyspace, "cassandra-keyspace", "parley", "CQL keyspace for messages, created if missing (replication factor 1: make it yourself for production)")
}

func listSetter(dst *[]string) func(string) error {
	return func(s string) error {
		*dst = nil
		for _, part := range strings.Split(s, ",") {
			if part = strings.TrimSpace(part); part != "" {
				*dst = append(*dst, part)
			}
		}
		return nil
	}
}

func prefixSetter(dst *[]netip.Prefix) func(string) error {
	return func(s string) error {
		var list []string
		if err := listSetter(&list)(s); err != nil {
			return err
		}
		ps, err := auth.ParsePrefixes(list)
		*dst = ps
		return err
	}
}

// Parse parses args into fs, then fills every flag not given on the command
// line from the environment (PARLEY_ plus the flag name in upper case with
// dashes as underscores), then from the YAML file named by the "config" flag
// or PARLEY_CONFIG (keys are flag names). Precedence: flag, env, file, default.
func Parse(fs *flag.FlagSet, args []string, getenv func(string) string) error {
	AddConfigFlag(fs)
	if err := fs.Parse(args); err != nil {
		return err
	}
	file := fs.Lookup("config").Value.String()
	set := map[string]bool{}
	fs.Visit(func(f *flag.Flag) { set[f.Name] = true })
	if !set["config"] {
		if v := getenv(EnvName("config")); v != "" {
			file = v
		}
	}
	fileValues := map[string]any{}
	if file != "" {
		data, err := os.ReadFile(file)
		if err != nil {
			return fmt.Errorf("config: %w", err)
		}
		if err := yaml.Unmarshal(data, &fileValues); err != nil {
			return fmt.Errorf("config: %s: %w", file, err)
		}
		other, _ := otherFileKeys.Load(fs)
		skip, _ := other.(map[string]bool)
		for key := range fileValues {
			if fs.Lookup(key) == nil && !skip[key] {
				return fmt.Errorf("config: %s: unknown setting %q", file, key)
			}
		}
	}
	var errs []error
	fs.VisitAll(func(f *flag.Flag) {
		if set[f.Name] || f.Name == "config" {
			return
		}
		if v, ok := lookupEnv(getenv, f.Name); ok {
			if err := f.Value.Set(v); err != nil {
				errs = append(errs, fmt.Errorf("config: %s: %w", EnvName(f.Name), err))
			}
			return
		}
		if v, ok := fileValues[f.Name]; ok {
			if err := f.Value.Set(yamlScalar(v)); err != nil {
				errs = append(errs, fmt.Errorf("config: %s: %s: %w", file, f.Name, err))
			}
		}
	})
	return errors.Join(errs...)
}

func lookupEnv(getenv func(string) string, name string) (string, bool) {
	v := getenv(EnvName(name))
	return v, v != ""
}

// EnvName is the environment variable that sets the flag name.
func EnvName(flagName string) string {
	return "PARLEY_" + strings.ToUpper(strings.ReplaceAll(flagName, "-", "_"))
}

func yamlScalar(v any) string {
	switch v := v.(type) {
	case []any:
		parts := make([]string, len(v))
		for i, p := range v {
			parts[i] = fmt.Sprint(p)
		}
		return strings.Join(parts, ",")
	default:
		return fmt.Sprint(v)
	}
}

// GroupConfig is the group of --config itself.
const GroupConfig = "configuration"

// AddConfigFlag registers --config, the YAML file of settings, on fs unless
// it is there; Parse reads the file it names.
func AddConfigFlag(fs *flag.FlagSet) {
	if fs.Lookup("config") == nil {
		fs.String("config", "", "YAML file of settings (keys are flag names; PARLEY_CONFIG too)")
	}
}

// ReadToken returns a secret given either as the value of the flag name or
// in the file of the flag name+"-file" (its surrounding whitespace trimmed,
// so a file written with a trailing newline works): the worker token, for
// example. Both given, or an empty file, is an error.
func ReadToken(name, value, file string) (string, error) {
	switch {
	case value != "" && file != "":
		return "", fmt.Errorf("--%s and --%s-file: give one, not both", name, name)
	case file == "":
		return value, nil
	}
	data, err := os.ReadFile(file)
	if err != nil {
		return "", fmt.Errorf("--%s-file: %w", name, err)
	}
	token := strings.TrimSpace(string(data))
	if token == "" {
		return "", fmt.Errorf("--%s-file: %s is empty", name, file)
	}
	return token, nil
}
