// Package cql is the scale-mode store.Messages on ScyllaDB or Apache
// Cassandra (CQL), over gocqlx/v2 and ScyllaDB's gocql fork (go.mod replaces
// github.com/gocql/gocql with github.com/scylladb/gocql at an exact version:
// the module proxy refuses version lists for github.com/scylladb/*).
//
// Messages are one partition per conversation (partition key conv_id),
// clustered by creation time then message ID (docs/architecture.md), so a
// conversation's history is one sequential read of one partition. Every
// statement is prepared (gocql prepares statements with bound values and
// caches them), routed token-aware to a replica, at LOCAL_QUORUM.
package cql

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/gocql/gocql"
	"github.com/scylladb/gocqlx/v2"

	"github.com/parleyhq/parley/server/store"
)

// Config says where the cluster is.
type Config struct {
	// Hosts are host:port contact points.
	Hosts []string
	// Keyspace holds the tables; it is created if missing with
	// ReplicationFactor (SimpleStrategy) — create it yourself with
	// NetworkTopologyStrategy for a multi-datacenter cluster.
	Keyspace string
	// ReplicationFactor for a keyspace created here; zero means 1.
	ReplicationFactor int
	// Username and Password, if the cluster requires authentication.
	Username, Password string
	// Timeout of each statement; zero means 5 s.
	Timeout time.Duration
}

// DB is an open CQL message store.
type DB struct {
	s gocqlx.Session
}

var (
	_ store.Messages = (*DB)(nil)
	_ store.Pinger   = (*DB)(nil)
)

func cluster(cfg Config, keyspace string) *gocql.ClusterConfig {
	c := gocql.NewCluster(cfg.Hosts...)
	c.Keyspace = keyspace
	c.Consistency = gocql.LocalQuorum
	c.PoolConfig.HostSelectionPolicy = gocql.TokenAwareHostPolicy(gocql.RoundRobinHostPolicy())
	c.Timeout = cfg.Timeout
	if c.Timeout <= 0 {
		c.Timeout = 5 * time.Second
	}
	c.ConnectTimeout = c.Timeout
	if cfg.Username != "" {
		c.Authenticator = gocql.PasswordAuthenticator{Username: cfg.Username, Password: cfg.Password}
	}
	return c
}

func validName(s string) bool {
	if s == "" || len(s) > 48 {
		return false
	}
	for i, r := range s {
		if !(r == '_' || r >= 'a' && r <= 'z' || i > 0 && r >= '0' && r <= '9') {
			return false
		}
	}
	return true
}

// Open connects, creates the keyspace and table if missing, and returns the
// store.
func Open(ctx context.Context, cfg Config) (*DB, error) {
	if len(cfg.Hosts) == 0 {
		return nil, errors.New("cql: no hosts given")
	}
	if !validName(cfg.Keyspace) {
		return nil, fmt.Errorf("cql: invalid keyspace name %q", cfg.Keyspace)
	}
	rf := cfg.ReplicationFactor
	if rf <= 0 {
		rf = 1
	}
	// Schema first, on a session without a keyspace; tried again on the
	// errors gateways starting together can meet (store.CreateSchema).
	if err := store.CreateSchema(ctx, schemaRetryable, func() error { return createSchema(ctx, cfg, rf) }); err != nil {
		return nil, fmt.Errorf("cql: schema: %w", err)
	}
	// A node that has not yet heard of a keyspace just made elsewhere
	// refuses a session in it: tried again the same way.
	var s gocqlx.Session
	err := store.CreateSchema(ctx, schemaRetryable, func() (err error) {
		s, err = gocqlx.WrapSession(cluster(cfg, cfg.Keyspace).CreateSession())
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("cql: connect: %w", err)
	}
	return &DB{s: s}, nil
}

// createSchema makes the keyspace and the messages table unless they exist,
// and adds the columns an older table lacks. Every statement is idempotent.
// Gateways starting at once run it at once: on one node the server applies
// their schema changes one at a time, but across nodes two coordinators can
// race (one answers "already exists", or the driver times out waiting for
// the nodes to agree on the schema), and a second try finds the work done.
func createSchema(ctx context.Context, cfg Config, rf int) error {
	admin, err := gocqlx.WrapSession(cluster(cfg, "").CreateSession())
	if err != nil {
		return fmt.Errorf("connect: %w", err)
	}
	defer admin.Close()
	err = admin.ContextQuery(ctx, `CREATE KEYSPACE IF NOT EXISTS `+cfg.Keyspace+
		` WITH replication = {'class': 'SimpleStrategy', 'replication_factor': `+strconv.Itoa(rf)+`}`, nil).ExecRelease()
	if err == nil {
		err = admin.ContextQuery(ctx, `CREATE TABLE IF NOT EXISTS `+cfg.Keyspace+`.messages (
			conv_id       text,
			created_at    bigint,
			id            text,
			role          text,
			parts         text,
			model         text,
			tokens        bigint,
			finish_reason text,
			PRIMARY KEY ((conv_id), created_at, id)
		) WITH CLUSTERING ORDER BY (created_at ASC, id ASC)`, nil).ExecRelease()
	}
	if err == nil {
		err = addColumns(ctx, admin, cfg.Keyspace, "messages", map[string]string{"parent_id": "text", "status": "text"})
	}
	return err
}

// schemaRetryable says whether createSchema's error may pass on a second
// try: not a statement the server cannot parse, nor refused credentials or
// rights, nor a configuration it refuses.
func schemaRetryable(err error) bool {
	var re gocql.RequestError
	if errors.As(err, &re) {
		switch re.Code() {
		case gocql.ErrCodeSyntax, gocql.ErrCodeUnauthorized, gocql.ErrCodeCredentials, gocql.ErrCodeConfig:
			return false
		}
	}
	return true
}

// addColumns adds the columns a table created by an older version lacks
// (CQL has no ADD COLUMN IF NOT EXISTS): the message tree's parent_id and
// status. Rows written before read them as null: a null parent_id is a
// message of the chain that was, whose parent is the message before it.
func addColumns(ctx context.Context, admin gocqlx.Session, keyspace, table string, cols map[string]string) error {
	var have []string
	if err := admin.ContextQuery(ctx, `SELECT column_name FROM system_schema.columns WHERE keyspace_name = ? AND table_name = ?`, nil).
		Bind(keyspace, table).SelectRelease(&have); err != nil {
		return err
	}
	for _, name := range slices.Sorted(maps.Keys(cols)) {
		if slices.Contains(have, name) {
			continue
		}
		err := admin.ContextQuery(ctx, `ALTER TABLE `+keyspace+`.`+table+` ADD `+name+` `+cols[name], nil).ExecRelease()
		if err != nil && !strings.Contains(err.Error(), "conflicts with an existing column") && !strings.Contains(err.Error(), "already exist") {
			return err // (another process adding it at the same time is fine)
		}
	}
	// A column another process is adding can be listed before the nodes
	// serve it: wait (at most 10 s) until a read of the columns is taken.
	if err := admin.AwaitSchemaAgreement(ctx); err != nil {
		return err
	}
	names := strings.Join(slices.Sorted(maps.Keys(cols)), ", ")
	for deadline := time.Now().Add(10 * time.Second); ; {
		err := admin.ContextQuery(ctx, `SELECT `+names+` FROM `+keyspace+`.`+table+` LIMIT 1`, nil).ExecRelease()
		if err == nil || !strings.Contains(err.Error(), "Undefined column") || time.Now().After(deadline) {
			return err
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(50 * time.Millisecond):
		}
	}
}

// DropKeyspace drops a keyspace (tests).
func DropKeyspace(ctx context.Context, cfg Config) error {
	if !validName(cfg.Keyspace) {
		return fmt.Errorf("cql: invalid keyspace name %q", cfg.Keyspace)
	}
	admin, err := gocqlx.WrapSession(cluster(cfg, "").CreateSession())
	if err != nil {
		return err
	}
	defer admin.Close()
	return admin.ContextQuery(ctx, `DROP KEYSPACE IF EXISTS `+cfg.Keyspace, nil).ExecRelease()
}

// Close closes the session.
func (db *DB) Close() error {
	db.s.Close()
	return nil
}

// Ping checks that the cluster answers, for /readyz.
func (db *DB) Ping(ctx context.Context) error {
	var v string
	if err := db.s.ContextQuery(ctx, `SELECT release_version FROM system.local`, nil).Scan(&v); err != nil {
		return fmt.Errorf("cql: ping: %w", err)
	}
	return nil
}

// Append implements store.Messages. Re-appending a message (same
// conversation, time and ID) rewrites the same row: a no-op.
func (db *DB) Append(ctx context.Context, m store.Message) error { return db.Put(ctx, m) }

// Put implements store.Messages: an insert rewrites the row with the same
// key.
func (db *DB) Put(ctx context.Context, m store.Message) error {
	parts := m.Parts
	if parts == nil {
		parts = []store.Part{}
	}
	js, err := json.Marshal(parts)
	if err != nil {
		return fmt.Errorf("cql: encode message parts: %w", err)
	}
	err = db.s.ContextQuery(ctx, `INSERT INTO messages (conv_id, created_at, id, role, parts, model, tokens, finish_reason, parent_id, status)
		VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`, nil).
		Bind(m.ConversationID, m.CreatedAt.UnixNano(), m.ID, m.Role, string(js), m.Model, m.Tokens, m.FinishReason, m.ParentID, m.Status).ExecRelease()
	if err != nil {
		return fmt.Errorf("cql: append: %w", err)
	}
	return nil
}

// MarkInterrupted implements store.Messages with a lightweight transaction
// (a conditional update): it is rare (after a gateway died mid-answer), and
// a concurrent Put of the finished answer must win.
func (db *DB) MarkInterrupted(ctx context.Context, conversationID string, key store.MessageKey) error {
	_, err := db.s.ContextQuery(ctx, `UPDATE messages SET status = ? WHERE conv_id = ? AND created_at = ? AND id = ? IF status = ?`, nil).
		Bind(store.MessageInterrupted, conversationID, key.CreatedAt.UnixNano(), key.ID, store.MessageInProgress).
		ExecCASRelease()
	if err != nil {
		return fmt.Errorf("cql: mark interrupted: %w", err)
	}
	return nil
}

type row struct {
	ConvID       string `db:"conv_id"`
	CreatedAt    int64  `db:"created_at"`
	ID           string `db:"id"`
	Role         string `db:"role"`
	Parts        string `db:"parts"`
	Model        string `db:"model"`
	Tokens       int64  `db:"tokens"`
	FinishReason string `db:"finish_reason"`
	// ParentID is null in rows written before the message tree.
	ParentID *string `db:"parent_id"`
	Status   *string `db:"status"`
}

// List implements store.Messages: oldest first, one partition slice.
func (db *DB) List(ctx context.Context, conversationID string, p store.PageRequest) ([]store.Message, string, error) {
	limit := p.Limit()
	stmt := `SELECT conv_id, created_at, id, role, parts, model, tokens, finish_reason, parent_id, status FROM messages WHERE conv_id = ?`
	args := []any{conversationID}
	prev := "" // the message before this page's first: a legacy row's parent
	if p.Cursor != "" {
		at, id, err := store.DecodeCursor(p.Cursor)
		if err != nil {
			return nil, "", err
		}
		prev = id
		stmt += ` AND (created_at, id) > (?, ?)`
		args = append(args, at, id)
	}
	stmt += ` LIMIT ?`
	args = append(args, limit+1)
	var rows []row
	if err := db.s.ContextQuery(ctx, stmt, nil).Bind(args...).SelectRelease(&rows); err != nil {
		return nil, "", fmt.Errorf("cql: list: %w", err)
	}
	out := make([]store.Message, 0, len(rows))
	for _, r := range rows {
		m := store.Message{ID: r.ID, ConversationID: r.ConvID, Role: r.Role, Model: r.Model, Tokens: r.Tokens,
			FinishReason: r.FinishReason, CreatedAt: time.Unix(0, r.CreatedAt).UTC(), ParentID: prev}
		if r.ParentID != nil {
			m.ParentID = *r.ParentID
		}
		if r.Status != nil {
			m.Status = *r.Status
		}
		prev = r.ID
		if err := json.Unmarshal([]byte(r.Parts), &m.Parts); err != nil {
			return nil, "", fmt.Errorf("cql: decode parts of message %s: %w", r.ID, err)
		}
		out = append(out, m)
	}
	if len(out) <= limit {
		return out, "", nil
	}
	out = out[:limit]
	last := out[limit-1]
	return out, store.EncodeCursor(last.CreatedAt.UnixNano(), last.ID), nil
}

// Delete implements store.Messages: one unlogged batch of row deletes, all
// in the conversation's partition.
func (db *DB) Delete(ctx context.Context, conversationID string, keys []store.MessageKey) error {
	if len(keys) == 0 {
		return nil
	}
	b := db.s.Session.NewBatch(gocql.UnloggedBatch).WithContext(ctx)
	for _, k := range keys {
		b.Query(`DELETE FROM messages WHERE conv_id = ? AND created_at = ? AND id = ?`, conversationID, k.CreatedAt.UnixNano(), k.ID)
	}
	if err := db.s.Session.ExecuteBatch(b); err != nil {
		return fmt.Errorf("cql: delete messages: %w", err)
	}
	return nil
}

// DeleteConversation implements store.Messages: one partition delete.
func (db *DB) DeleteConversation(ctx context.Context, conversationID string) error {
	if err := db.s.ContextQuery(ctx, `DELETE FROM messages WHERE conv_id = ?`, nil).Bind(conversationID).ExecRelease(); err != nil {
		return fmt.Errorf("cql: delete conversation: %w", err)
	}
	return nil
}

// HostsFlag splits a comma-separated --cassandra-hosts value.
func HostsFlag(s string) []string {
	var hosts []string
	for _, h := range strings.Split(s, ",") {
		if h = strings.TrimSpace(h); h != "" {
			hosts = append(hosts, h)
		}
	}
	return hosts
}
