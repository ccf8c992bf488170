// Package config reads Parley's settings from flags, PARLEY_* environment
// variables and an optional YAML file, in that order of precedence, over the
// embedded defaults that let a fresh clone run with nothing else installed.
package config

import (
	"errors"
	"flag"
	"fmt"
	"os"
	"strings"
	"time"

	"gopkg.in/yaml.v3"
)

// Serve holds the settings of `parley serve` and of the subcommands that open
// the same stores (migrate, admin).
type Serve struct {
	// Listen is the address the gateway listens on.
	Listen string
	// DataDir holds everything of the embedded mode: the SQLite database and blobs.
	DataDir string
	// WebOrigins are the browser origins allowed to call with credentials (CORS, CSRF).
	WebOrigins []string
	// InsecureCookies drops the Secure attribute from cookies, for plain-HTTP development.
	InsecureCookies bool
	// MaxBodyBytes bounds every request body; larger ones are refused unread.
	MaxBodyBytes int64
	// ReadHeaderTimeout bounds the time to send a request's headers, and
	// BodyReadTimeout the time to send its body (lifted once it is read, so
	// response streams run as long as they need).
	ReadHeaderTimeout, BodyReadTimeout time.Duration
	// ShutdownGrace is how long open streams may run on after SIGTERM.
	ShutdownGrace time.Duration
	// Workers are the worker addresses (host:port); none means one in-process sim worker.
	Workers []string
	// WorkerToken is the secret sent to the workers on every call; they
	// refuse calls without it. WorkerTokenFile names a file holding it
	// instead (see ReadToken).
	WorkerToken, WorkerTokenFile string
	// SimTimeScale scales the in-process sim worker's delays (1 real pace, 0 none).
	SimTimeScale float64
	// OTLPEndpoint turns tracing on, exporting spans over OTLP/HTTP to it.
	OTLPEndpoint string
	// LogLevel is debug, info, warn or error.
	LogLevel string
	// Secret (hex) signs page tokens and blob URLs; every gateway sharing
	// stores needs the same one. Empty: a key kept in the data directory.
	Secret string

	// PostgresURL (postgres://…) moves the relational stores (accounts,
	// conversations, messages, ledger, usage, attachments, audit) from the
	// embedded SQLite database to PostgreSQL. Each scale backend below is
	// chosen on its own.
	PostgresURL string
	// PostgresPgBouncer says PostgresURL (and the read URLs) name PgBouncer
	// in transaction mode: no named prepared statements.
	PostgresPgBouncer bool
	// PostgresReadURLs are read replicas: listings that tolerate lag go to
	// them round-robin; one further behind than PostgresReplicaMaxLag, or
	// down, is skipped.
	PostgresReadURLs      []string
	PostgresReplicaMaxLag time.Duration
	// RedisURL (redis://…) moves the rate limiter into Redis, shared by
	// every gateway; redis+cluster://host:port,host:port,… names a Redis
	// Cluster (any of its nodes).
	RedisURL string
	// ClickHouseURL (clickhouse://host:9000/db) moves usage records into
	// ClickHouse.
	ClickHouseURL string
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

// ServeFlags registers the serve settings on fs with their defaults and
// returns the value they fill.
func ServeFlags(fs *flag.FlagSet) *Serve {
	c := &Serve{}
	fs.StringVar(&c.Listen, "listen", "127.0.0.1:8080", "address to listen on")
	fs.StringVar(&c.DataDir, "data-dir", "parley-data", "directory of the embedded store")
	fs.Func("web-origins", "comma-separated browser origins allowed to call with credentials", listSetter(&c.WebOrigins))
	fs.BoolVar(&c.InsecureCookies, "insecure-cookies", false, "omit the Secure cookie attribute (plain-HTTP development only)")
	fs.Int64Var(&c.MaxBodyBytes, "max-body-bytes", 32<<20, "largest request body accepted")
	fs.DurationVar(&c.ReadHeaderTimeout, "read-header-timeout", 10*time.Second, "longest a client may take to send a request's headers")
	fs.DurationVar(&c.BodyReadTimeout, "body-read-timeout", 2*time.Minute, "longest a client may take to send a request's body, from the end of its headers (0: no limit); response streams are not cut by it")
	fs.DurationVar(&c.ShutdownGrace, "shutdown-grace", 30*time.Second, "how long open streams may finish after SIGTERM")
	fs.Func("workers", "comma-separated worker addresses (none: one in-process sim worker)", listSetter(&c.Workers))
	fs.StringVar(&c.WorkerToken, "worker-token", "", "shared secret sent to the workers on every call (the workers' --worker-token)")
	fs.StringVar(&c.WorkerTokenFile, "worker-token-file", "", "file holding the worker token (instead of --worker-token)")
	fs.Float64Var(&c.SimTimeScale, "sim-time-scale", 1, "time scale of the in-process sim worker (0 = no waiting)")
	fs.StringVar(&c.OTLPEndpoint, "otlp-endpoint", "", "OTLP/HTTP endpoint for traces (empty: tracing off)")
	fs.StringVar(&c.LogLevel, "log-level", "info", "log level: debug, info, warn, error")
	fs.StringVar(&c.Secret, "secret", "", "hex key signing page tokens and blob URLs (scale mode: the same on every gateway)")
	fs.StringVar(&c.PostgresURL, "postgres-url", "", "PostgreSQL URL for the relational stores (empty: embedded SQLite)")
	fs.BoolVar(&c.PostgresPgBouncer, "postgres-pgbouncer", false, "--postgres-url (and --postgres-read-urls) name PgBouncer in transaction mode: no named prepared statements")
	fs.Func("postgres-read-urls", "comma-separated PostgreSQL read replica URLs: conversation, message, usage and key listings go to them round-robin (none: all reads on --postgres-url)", listSetter(&c.PostgresReadURLs))
	fs.DurationVar(&c.PostgresReplicaMaxLag, "postgres-replica-max-lag", 2*time.Second, "a read replica further behind the primary than this is skipped")
	fs.StringVar(&c.RedisURL, "redis-url", "", "Redis URL for the shared rate limiter (empty: in process); redis+cluster://host:port,host:port,… for a Redis Cluster")
	fs.StringVar(&c.ClickHouseURL, "clickhouse-url", "", "ClickHouse URL (native protocol) for usage records (empty: the relational store)")
	fs.StringVar(&c.S3Endpoint, "s3-endpoint", "", "S3 endpoint URL for attachment blobs (empty: the data directory); keys from PARLEY_S3_ACCESS_KEY/PARLEY_S3_SECRET_KEY")
	fs.StringVar(&c.S3Bucket, "s3-bucket", "parley", "S3 bucket for attachment blobs, created if missing")
	fs.Func("cassandra-hosts", "comma-separated CQL (ScyllaDB/Cassandra) host:port contact points for messages (none: the relational store)", listSetter(&c.CassandraHosts))
	fs.StringVar(&c.CassandraKeyspace, "cassandra-keyspace", "parley", "CQL keyspace for messages, created if missing (replication factor 1: make it yourself for production)")
	return c
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

// Parse parses args into fs, then fills every flag not given on the command
// line from the environment (PARLEY_ plus the flag name in upper case with
// dashes as underscores), then from the YAML file named by the "config" flag
// or PARLEY_CONFIG (keys are flag names). Precedence: flag, env, file, default.
func Parse(fs *flag.FlagSet, args []string, getenv func(string) string) error {
	var file string
	if fs.Lookup("config") == nil {
		fs.StringVar(&file, "config", "", "YAML file of settings (keys are flag names)")
	}
	if err := fs.Parse(args); err != nil {
		return err
	}
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
		for key := range fileValues {
			if fs.Lookup(key) == nil {
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
