package postgres

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"hash/fnv"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	lru "github.com/hashicorp/golang-lru/v2"
	"github.com/jackc/pgx/v5"

	"github.com/parleyhq/parley/server/store"
)

// DataShards is the number of logical shards of the users' data: a user's
// conversations, messages, chat settings, attachments, shares, projects,
// memories, ratings, saved prompts, audit events and vector stores live on
// logical shard DataShard(user), and the logical shards are spread over
// the data clusters (WithDataShards), in contiguous ranges until moved
// (MoveDataShard). Fixed (hash(user_id) % 64,
// as docs/scaling.md has it), so that a cluster added later takes whole
// logical shards and never rehashes a user.
const DataShards = 64

// DataShard returns the logical data shard of a user: FNV-1a of the ID
// modulo DataShards.
func DataShard(userID string) int {
	h := fnv.New32a()
	_, _ = h.Write([]byte(userID))
	return int(h.Sum32() % DataShards)
}

// shareTags names the logical shards in a share's ID: its first character
// is the base64url digit of the shard, so that a share link, which comes
// with no user, reaches its cluster with no lookup.
const shareTags = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_"

// dataSet is where the users' data lives when it is spread over several
// clusters. dbs[0] is also the accounts cluster: users, sessions, API keys,
// identities, organisations, invitations, batches, webhooks and the vector
// index stay there, so every lookup that arrives without a user (session,
// key, email, identity) is one indexed read on it, as with one cluster.
type dataSet struct {
	dbs []*DB
	// set places the logical shards on dbs (data_shard_map), and fences
	// each statement so that a shard can move (MoveDataShard).
	set *shardSet
	// owners remembers the logical shard of a conversation ("c"+id) or an
	// attachment ("a"+id), for the calls that name one without its user
	// (a conversation's messages, an upload's status); on a miss every
	// cluster is asked once, in parallel.
	owners *lru.Cache[string, int]
	// turn rotates the cluster a sweep's claim starts at.
	turn atomic.Uint32
}

// ownersKept bounds the owners cache (about 100 bytes an entry).
const ownersKept = 1 << 16

// WithDataShards spreads the users' data over clusters: dbs[0] must be db,
// the accounts cluster, which also holds the first range of logical
// shards (two clusters: 0–31 on db, 32–63 on dbs[1]) until shards are
// moved. Each cluster is migrated alike; a user's rows all live on one, so
// every query stays one cluster's, as with one. Call LoadDataShards before
// use.
func (db *DB) WithDataShards(dbs []*DB) {
	owners, _ := lru.New[string, int](ownersKept)
	for _, d := range dbs {
		d.sharded = len(dbs) > 1
	}
	db.data = &dataSet{dbs: dbs, set: newShardSet("data", DataShards, DataShard, dbs, db), owners: owners}
}

// LoadDataShards checks the data clusters and reads where each logical
// shard lives (data_shard_map): shardSet.load says what it checks.
func (db *DB) LoadDataShards(ctx context.Context) error {
	if db.data == nil {
		return nil
	}
	if db.data.dbs[0] != db {
		return errors.New("postgres: the first data cluster must be the accounts cluster")
	}
	return db.data.set.load(ctx, "--postgres-url")
}

// onShard runs f with the database of the logical shard, every statement
// fenced, where the shard is now (a move's pause waited out); listings
// that tolerate lag go to the cluster's read replicas, fenced there too.
func onShard[T any](ctx context.Context, d *dataSet, shard int, f func(db *DB) (T, error)) (T, error) {
	var out T
	err := d.set.retry(ctx, shard, func(db *DB) error {
		var err error
		out, err = f(&DB{pool: db.pool, replicas: db.replicas, q: d.set.conn(db, shard)})
		return err
	})
	return out, err
}

// onUser is onShard for the user's shard.
func onUser[T any](ctx context.Context, d *dataSet, userID string, f func(db *DB) (T, error)) (T, error) {
	return onShard(ctx, d, DataShard(userID), f)
}

// do is onUser for a call that returns only an error.
func (d *dataSet) do(ctx context.Context, userID string, f func(db *DB) error) error {
	return d.doShard(ctx, DataShard(userID), f)
}

// doShard is onShard for a call that returns only an error.
func (d *dataSet) doShard(ctx context.Context, shard int, f func(db *DB) error) error {
	_, err := onShard(ctx, d, shard, func(db *DB) (struct{}, error) { return struct{}{}, f(db) })
	return err
}

// remember notes the logical shard of the row key (kind+id) of the user.
func (d *dataSet) remember(kind, id, userID string) { d.owners.Add(kind+id, DataShard(userID)) }

// owner finds the logical shard of the row id of table (kind "c":
// conversations, "a": attachments): the cache, else every cluster asked
// at once for the row's user. It returns -1 when none holds it.
func (d *dataSet) owner(ctx context.Context, kind, table, id string) (int, error) {
	if shard, ok := d.owners.Get(kind + id); ok {
		return shard, nil
	}
	users := make([]string, len(d.dbs))
	errs := make([]error, len(d.dbs))
	var wg sync.WaitGroup
	for i, db := range d.dbs {
		wg.Go(func() {
			err := db.pool.QueryRow(ctx, `SELECT user_id FROM `+table+` WHERE id = $1`, id).Scan(&users[i])
			if !errors.Is(err, pgx.ErrNoRows) {
				errs[i] = err
			}
		})
	}
	wg.Wait()
	if i := slices.IndexFunc(users, func(u string) bool { return u != "" }); i >= 0 {
		d.remember(kind, id, users[i])
		return DataShard(users[i]), nil
	}
	if err := errors.Join(errs...); err != nil {
		return -1, mapErr(err)
	}
	return -1, nil
}

// each runs f on every cluster at once and joins the results in the
// clusters' order; any failure fails the call.
func each[T any](d *dataSet, f func(db *DB) ([]T, error)) ([]T, error) {
	parts := make([][]T, len(d.dbs))
	errs := make([]error, len(d.dbs))
	var wg sync.WaitGroup
	for i, db := range d.dbs {
		wg.Go(func() { parts[i], errs[i] = f(db) })
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	return slices.Concat(parts...), nil
}

// eachErr runs f on every cluster at once.
func eachErr(d *dataSet, f func(db *DB) error) error {
	_, err := each(d, func(db *DB) ([]struct{}, error) { return nil, f(db) })
	return err
}

type shardedConversations struct{ d *dataSet }

func (s shardedConversations) Create(ctx context.Context, c store.Conversation) error {
	if err := s.d.do(ctx, c.UserID, func(db *DB) error { return conversations{db}.Create(ctx, c) }); err != nil {
		return err
	}
	s.d.remember("c", c.ID, c.UserID)
	return nil
}

func (s shardedConversations) Get(ctx context.Context, userID, id string) (store.Conversation, error) {
	c, err := onUser(ctx, s.d, userID, func(db *DB) (store.Conversation, error) { return conversations{db}.Get(ctx, userID, id) })
	if err == nil {
		s.d.remember("c", id, userID)
	}
	return c, err
}

func (s shardedConversations) List(ctx context.Context, userID string, f store.ConversationFilter, p store.PageRequest) (list []store.Conversation, next string, err error) {
	err = s.d.do(ctx, userID, func(db *DB) error {
		list, next, err = conversations{db}.List(ctx, userID, f, p)
		return err
	})
	return list, next, err
}

func (s shardedConversations) Update(ctx context.Context, userID, id string, patch store.ConversationPatch, now time.Time) (store.Conversation, error) {
	return onUser(ctx, s.d, userID, func(db *DB) (store.Conversation, error) { return conversations{db}.Update(ctx, userID, id, patch, now) })
}

func (s shardedConversations) Touch(ctx context.Context, userID, id string, now time.Time, titleIfEmpty string) error {
	return s.d.do(ctx, userID, func(db *DB) error { return conversations{db}.Touch(ctx, userID, id, now, titleIfEmpty) })
}

func (s shardedConversations) SetLeaf(ctx context.Context, userID, id, leafID string) error {
	return s.d.do(ctx, userID, func(db *DB) error { return conversations{db}.SetLeaf(ctx, userID, id, leafID) })
}

func (s shardedConversations) Instructions(ctx context.Context, userID string) (string, error) {
	return onUser(ctx, s.d, userID, func(db *DB) (string, error) { return conversations{db}.Instructions(ctx, userID) })
}

func (s shardedConversations) SetInstructions(ctx context.Context, userID, instructions string, now time.Time) error {
	return s.d.do(ctx, userID, func(db *DB) error { return conversations{db}.SetInstructions(ctx, userID, instructions, now) })
}

func (s shardedConversations) Delete(ctx context.Context, userID, id string) error {
	return s.d.do(ctx, userID, func(db *DB) error { return conversations{db}.Delete(ctx, userID, id) })
}

func (s shardedConversations) SetGeneratedTitle(ctx context.Context, userID, id, replaces, title string) (bool, error) {
	return onUser(ctx, s.d, userID, func(db *DB) (bool, error) {
		return conversations{db}.SetGeneratedTitle(ctx, userID, id, replaces, title)
	})
}

// shardedMessages keeps a conversation's messages on its conversation's
// cluster, found by the conversation's ID (the callers have read the
// conversation, as its user's, just before).
type shardedMessages struct{ d *dataSet }

// on runs f on the conversation's shard, fenced; a conversation no
// cluster holds (deleted, or never made) runs f on every cluster when all
// is set (a delete, which must leave nothing behind) and on the first
// otherwise.
func (s shardedMessages) on(ctx context.Context, conversationID string, all bool, f func(messages) error) error {
	shard, err := s.d.owner(ctx, "c", "conversations", conversationID)
	switch {
	case err != nil:
		return err
	case shard >= 0:
		return s.d.doShard(ctx, shard, func(db *DB) error { return f(messages{db}) })
	case all:
		return eachErr(s.d, func(db *DB) error { return f(messages{db}) })
	default:
		return f(messages{s.d.dbs[0]})
	}
}

func (s shardedMessages) Append(ctx context.Context, m store.Message) error {
	return s.on(ctx, m.ConversationID, false, func(ms messages) error { return ms.Append(ctx, m) })
}

func (s shardedMessages) Put(ctx context.Context, m store.Message) error {
	return s.on(ctx, m.ConversationID, false, func(ms messages) error { return ms.Put(ctx, m) })
}

func (s shardedMessages) MarkInterrupted(ctx context.Context, conversationID string, key store.MessageKey) error {
	return s.on(ctx, conversationID, false, func(ms messages) error { return ms.MarkInterrupted(ctx, conversationID, key) })
}

func (s shardedMessages) List(ctx context.Context, conversationID string, p store.PageRequest) (list []store.Message, next string, err error) {
	err = s.on(ctx, conversationID, false, func(ms messages) error {
		list, next, err = ms.List(ctx, conversationID, p)
		return err
	})
	return list, next, err
}

func (s shardedMessages) Delete(ctx context.Context, conversationID string, keys []store.MessageKey) error {
	return s.on(ctx, conversationID, true, func(ms messages) error { return ms.Delete(ctx, conversationID, keys) })
}

func (s shardedMessages) DeleteConversation(ctx context.Context, conversationID string) error {
	return s.on(ctx, conversationID, true, func(ms messages) error { return ms.DeleteConversation(ctx, conversationID) })
}

type shardedAttachments struct{ d *dataSet }

func (s shardedAttachments) Create(ctx context.Context, a store.Attachment, quotaBytes int64) error {
	if err := s.d.do(ctx, a.UserID, func(db *DB) error { return attachments{db}.Create(ctx, a, quotaBytes) }); err != nil {
		return err
	}
	s.d.remember("a", a.ID, a.UserID)
	return nil
}

func (s shardedAttachments) Get(ctx context.Context, userID, id string) (store.Attachment, error) {
	return onUser(ctx, s.d, userID, func(db *DB) (store.Attachment, error) { return attachments{db}.Get(ctx, userID, id) })
}

func (s shardedAttachments) SetStatus(ctx context.Context, id string, r store.AttachmentResult) (store.Attachment, error) {
	shard, err := s.d.owner(ctx, "a", "attachments", id)
	switch {
	case err != nil:
		return store.Attachment{}, err
	case shard < 0:
		return attachments{s.d.dbs[0]}.SetStatus(ctx, id, r) // not found
	}
	return onShard(ctx, s.d, shard, func(db *DB) (store.Attachment, error) { return attachments{db}.SetStatus(ctx, id, r) })
}

func (s shardedAttachments) Delete(ctx context.Context, userID, id string) error {
	return s.d.do(ctx, userID, func(db *DB) error { return attachments{db}.Delete(ctx, userID, id) })
}

func (s shardedAttachments) ExpireUploads(ctx context.Context, now time.Time) ([]store.Attachment, error) {
	return each(s.d, func(db *DB) ([]store.Attachment, error) { return attachments{db}.ExpireUploads(ctx, now) })
}

func (s shardedAttachments) Reference(ctx context.Context, userID string, ids []string, at time.Time) error {
	return s.d.do(ctx, userID, func(db *DB) error { return attachments{db}.Reference(ctx, userID, ids, at) })
}

func (s shardedAttachments) ListFiles(ctx context.Context, userID string, q store.FileQuery) ([]store.Attachment, error) {
	return onUser(ctx, s.d, userID, func(db *DB) ([]store.Attachment, error) { return attachments{db}.ListFiles(ctx, userID, q) })
}

func (s shardedAttachments) ClaimUnreferenced(ctx context.Context, now, createdBefore, reclaimBefore time.Time, limit int) ([]store.Attachment, error) {
	return claimUpTo(s.d, limit, func(db *DB, n int) ([]store.Attachment, error) {
		return attachments{db}.ClaimUnreferenced(ctx, now, createdBefore, reclaimBefore, n)
	})
}

func (s shardedAttachments) ClaimExpired(ctx context.Context, now, reclaimBefore time.Time, limit int) ([]store.Attachment, error) {
	return claimUpTo(s.d, limit, func(db *DB, n int) ([]store.Attachment, error) {
		return attachments{db}.ClaimExpired(ctx, now, reclaimBefore, n)
	})
}

// claimUpTo claims at most limit rows in all, asking one cluster after
// another what is left, starting each call at the next cluster so that no
// cluster's backlog waits behind another's. A cluster that fails is passed
// over; the failure is returned only when nothing was claimed, so that
// what was claimed is deleted now rather than after its lease.
func claimUpTo[T any](d *dataSet, limit int, claim func(db *DB, n int) ([]T, error)) ([]T, error) {
	if limit <= 0 {
		return claim(d.dbs[0], limit) // the store names the bad limit
	}
	start := int(d.turn.Add(1)) % len(d.dbs)
	var got []T
	var errs []error
	for k := range d.dbs {
		if len(got) >= limit {
			break
		}
		part, err := claim(d.dbs[(start+k)%len(d.dbs)], limit-len(got))
		if err != nil {
			errs = append(errs, err)
			continue
		}
		got = append(got, part...)
	}
	if len(got) == 0 {
		return nil, errors.Join(errs...)
	}
	return got, nil
}

func (s shardedAttachments) Purge(ctx context.Context, id string) error {
	shard, err := s.d.owner(ctx, "a", "attachments", id)
	switch {
	case err != nil:
		return err
	case shard < 0:
		return nil // purged already
	}
	if err := s.d.doShard(ctx, shard, func(db *DB) error { return attachments{db}.Purge(ctx, id) }); err != nil {
		return err
	}
	s.d.owners.Remove("a" + id)
	return nil
}

type shardedAudit struct{ d *dataSet }

func (s shardedAudit) Append(ctx context.Context, e store.AuditEvent) error {
	return s.d.do(ctx, e.UserID, func(db *DB) error { return audit{db}.Append(ctx, e) })
}

func (s shardedAudit) List(ctx context.Context, userID string, p store.PageRequest) (list []store.AuditEvent, next string, err error) {
	err = s.d.do(ctx, userID, func(db *DB) error {
		list, next, err = audit{db}.List(ctx, userID, p)
		return err
	})
	return list, next, err
}

type shardedSearch struct{ d *dataSet }

func (s shardedSearch) Search(ctx context.Context, userID string, terms []string, p store.PageRequest) (list []store.SearchHit, next string, err error) {
	err = s.d.do(ctx, userID, func(db *DB) error {
		list, next, err = search{db}.Search(ctx, userID, terms, p)
		return err
	})
	return list, next, err
}

// shardedShares names the user's logical shard in each share's ID (its
// first character, out of 22 random base64url ones, leaving 126 random
// bits), so that Get goes straight to the share's cluster.
type shardedShares struct{ d *dataSet }

func (s shardedShares) Put(ctx context.Context, v store.Share) (store.Share, error) {
	if v.ID != "" {
		v.ID = string(shareTags[DataShard(v.UserID)]) + v.ID[1:]
	}
	return onUser(ctx, s.d, v.UserID, func(db *DB) (store.Share, error) { return shares{db}.Put(ctx, v) })
}

func (s shardedShares) Get(ctx context.Context, id string) (store.Share, error) {
	shard := -1
	if id != "" {
		shard = strings.IndexByte(shareTags, id[0])
	}
	if shard < 0 {
		return store.Share{}, fmt.Errorf("%w: share", store.ErrNotFound)
	}
	return onShard(ctx, s.d, shard, func(db *DB) (store.Share, error) { return shares{db}.Get(ctx, id) })
}

func (s shardedShares) Delete(ctx context.Context, userID, conversationID string) (bool, error) {
	return onUser(ctx, s.d, userID, func(db *DB) (bool, error) { return shares{db}.Delete(ctx, userID, conversationID) })
}

type shardedProjects struct{ d *dataSet }

func (s shardedProjects) Create(ctx context.Context, p store.Project, max int) error {
	return s.d.do(ctx, p.UserID, func(db *DB) error { return projects{db}.Create(ctx, p, max) })
}

func (s shardedProjects) Get(ctx context.Context, userID, id string) (store.Project, error) {
	return onUser(ctx, s.d, userID, func(db *DB) (store.Project, error) { return projects{db}.Get(ctx, userID, id) })
}

func (s shardedProjects) List(ctx context.Context, userID string, p store.PageRequest) (list []store.Project, next string, err error) {
	err = s.d.do(ctx, userID, func(db *DB) error {
		list, next, err = projects{db}.List(ctx, userID, p)
		return err
	})
	return list, next, err
}

func (s shardedProjects) Update(ctx context.Context, userID, id string, patch store.ProjectPatch, now time.Time) (store.Project, error) {
	return onUser(ctx, s.d, userID, func(db *DB) (store.Project, error) { return projects{db}.Update(ctx, userID, id, patch, now) })
}

func (s shardedProjects) Delete(ctx context.Context, userID, id string) error {
	return s.d.do(ctx, userID, func(db *DB) error { return projects{db}.Delete(ctx, userID, id) })
}

type shardedMemories struct{ d *dataSet }

func (s shardedMemories) Create(ctx context.Context, m store.Memory, max int) error {
	return s.d.do(ctx, m.UserID, func(db *DB) error { return memories{db}.Create(ctx, m, max) })
}

func (s shardedMemories) List(ctx context.Context, userID string, p store.PageRequest) (list []store.Memory, next string, err error) {
	err = s.d.do(ctx, userID, func(db *DB) error {
		list, next, err = memories{db}.List(ctx, userID, p)
		return err
	})
	return list, next, err
}

func (s shardedMemories) Update(ctx context.Context, userID, id, text string, now time.Time) (store.Memory, error) {
	return onUser(ctx, s.d, userID, func(db *DB) (store.Memory, error) { return memories{db}.Update(ctx, userID, id, text, now) })
}

func (s shardedMemories) Delete(ctx context.Context, userID, id string) error {
	return s.d.do(ctx, userID, func(db *DB) error { return memories{db}.Delete(ctx, userID, id) })
}

func (s shardedMemories) Enabled(ctx context.Context, userID string) (bool, error) {
	return onUser(ctx, s.d, userID, func(db *DB) (bool, error) { return memories{db}.Enabled(ctx, userID) })
}

func (s shardedMemories) SetEnabled(ctx context.Context, userID string, on bool, now time.Time) error {
	return s.d.do(ctx, userID, func(db *DB) error { return memories{db}.SetEnabled(ctx, userID, on, now) })
}

type shardedPrompts struct{ d *dataSet }

func (s shardedPrompts) ListPrompts(ctx context.Context, userID string) ([]store.SavedPrompt, error) {
	return onUser(ctx, s.d, userID, func(db *DB) ([]store.SavedPrompt, error) { return prompts{db}.ListPrompts(ctx, userID) })
}

func (s shardedPrompts) CreatePrompt(ctx context.Context, p store.SavedPrompt) error {
	return s.d.do(ctx, p.UserID, func(db *DB) error { return prompts{db}.CreatePrompt(ctx, p) })
}

func (s shardedPrompts) UpdatePrompt(ctx context.Context, p store.SavedPrompt) error {
	return s.d.do(ctx, p.UserID, func(db *DB) error { return prompts{db}.UpdatePrompt(ctx, p) })
}

func (s shardedPrompts) DeletePrompt(ctx context.Context, userID, id string) error {
	return s.d.do(ctx, userID, func(db *DB) error { return prompts{db}.DeletePrompt(ctx, userID, id) })
}

type shardedFeedback struct{ d *dataSet }

func (s shardedFeedback) PutRating(ctx context.Context, r store.Rating) error {
	return s.d.do(ctx, r.UserID, func(db *DB) error { return feedback{db}.PutRating(ctx, r) })
}

func (s shardedFeedback) DeleteRating(ctx context.Context, userID, messageID string) error {
	return s.d.do(ctx, userID, func(db *DB) error { return feedback{db}.DeleteRating(ctx, userID, messageID) })
}

func (s shardedFeedback) ListRatings(ctx context.Context, userID, conversationID string) ([]store.Rating, error) {
	return onUser(ctx, s.d, userID, func(db *DB) ([]store.Rating, error) { return feedback{db}.ListRatings(ctx, userID, conversationID) })
}

// CountRatings sums each cluster's counts per model, in the order one
// cluster gives them (most ratings first, then by model).
func (s shardedFeedback) CountRatings(ctx context.Context, from, to time.Time) ([]store.FeedbackCount, error) {
	all, err := each(s.d, func(db *DB) ([]store.FeedbackCount, error) { return feedback{db}.CountRatings(ctx, from, to) })
	if err != nil {
		return nil, err
	}
	at := map[string]int{}
	var out []store.FeedbackCount
	for _, c := range all {
		if i, ok := at[c.Model]; ok {
			out[i].Good, out[i].Bad = out[i].Good+c.Good, out[i].Bad+c.Bad
			continue
		}
		at[c.Model] = len(out)
		out = append(out, c)
	}
	slices.SortFunc(out, func(a, b store.FeedbackCount) int {
		return cmp.Or(cmp.Compare(b.Good+b.Bad, a.Good+a.Bad), cmp.Compare(a.Model, b.Model))
	})
	return out, nil
}

// RatingNotes merges each cluster's newest notes.
func (s shardedFeedback) RatingNotes(ctx context.Context, from, to time.Time, limit int) ([]store.Rating, error) {
	all, err := each(s.d, func(db *DB) ([]store.Rating, error) { return feedback{db}.RatingNotes(ctx, from, to, limit) })
	if err != nil {
		return nil, err
	}
	slices.SortStableFunc(all, func(a, b store.Rating) int { return b.UpdatedAt.Compare(a.UpdatedAt) })
	return all[:min(len(all), limit)], nil
}

// shardedVectorStores keeps a user's vector stores and their files' rows
// on the user's cluster, beside the projects that name them; the vector
// index (Vectors) stays on the accounts cluster, keyed by store.
type shardedVectorStores struct{ d *dataSet }

func (s shardedVectorStores) CreateVectorStore(ctx context.Context, v store.VectorStore, files []store.VectorStoreFile) error {
	return s.d.do(ctx, v.UserID, func(db *DB) error { return vectorStores{db}.CreateVectorStore(ctx, v, files) })
}

func (s shardedVectorStores) GetVectorStore(ctx context.Context, userID, id string) (store.VectorStore, error) {
	return onUser(ctx, s.d, userID, func(db *DB) (store.VectorStore, error) { return vectorStores{db}.GetVectorStore(ctx, userID, id) })
}

func (s shardedVectorStores) ListVectorStores(ctx context.Context, userID string, p store.PageRequest) (list []store.VectorStore, next string, err error) {
	err = s.d.do(ctx, userID, func(db *DB) error {
		list, next, err = vectorStores{db}.ListVectorStores(ctx, userID, p)
		return err
	})
	return list, next, err
}

func (s shardedVectorStores) UpdateVectorStore(ctx context.Context, userID, id string, name *string, metadata map[string]string, expiresAfter *time.Duration, now time.Time) (store.VectorStore, error) {
	return onUser(ctx, s.d, userID, func(db *DB) (store.VectorStore, error) {
		return vectorStores{db}.UpdateVectorStore(ctx, userID, id, name, metadata, expiresAfter, now)
	})
}

func (s shardedVectorStores) TouchVectorStore(ctx context.Context, userID, id string, now time.Time) error {
	return s.d.do(ctx, userID, func(db *DB) error { return vectorStores{db}.TouchVectorStore(ctx, userID, id, now) })
}

func (s shardedVectorStores) DeleteVectorStore(ctx context.Context, userID, id string) error {
	return s.d.do(ctx, userID, func(db *DB) error { return vectorStores{db}.DeleteVectorStore(ctx, userID, id) })
}

// ExpiredVectorStores lists up to limit over all clusters (claimUpTo).
func (s shardedVectorStores) ExpiredVectorStores(ctx context.Context, now time.Time, limit int) ([]store.VectorStore, error) {
	return claimUpTo(s.d, limit, func(db *DB, n int) ([]store.VectorStore, error) {
		return vectorStores{db}.ExpiredVectorStores(ctx, now, n)
	})
}

func (s shardedVectorStores) AddVectorStoreFile(ctx context.Context, f store.VectorStoreFile) error {
	return s.d.do(ctx, f.UserID, func(db *DB) error { return vectorStores{db}.AddVectorStoreFile(ctx, f) })
}

func (s shardedVectorStores) GetVectorStoreFile(ctx context.Context, userID, storeID, fileID string) (store.VectorStoreFile, error) {
	return onUser(ctx, s.d, userID, func(db *DB) (store.VectorStoreFile, error) {
		return vectorStores{db}.GetVectorStoreFile(ctx, userID, storeID, fileID)
	})
}

func (s shardedVectorStores) ListVectorStoreFiles(ctx context.Context, userID, storeID string, filter store.VectorStoreFilter, p store.PageRequest) (list []store.VectorStoreFile, next string, err error) {
	err = s.d.do(ctx, userID, func(db *DB) error {
		list, next, err = vectorStores{db}.ListVectorStoreFiles(ctx, userID, storeID, filter, p)
		return err
	})
	return list, next, err
}

func (s shardedVectorStores) SetVectorStoreFileAttributes(ctx context.Context, userID, storeID, fileID string, attrs map[string]any) (store.VectorStoreFile, error) {
	return onUser(ctx, s.d, userID, func(db *DB) (store.VectorStoreFile, error) {
		return vectorStores{db}.SetVectorStoreFileAttributes(ctx, userID, storeID, fileID, attrs)
	})
}

func (s shardedVectorStores) RemoveVectorStoreFile(ctx context.Context, userID, storeID, fileID string) error {
	return s.d.do(ctx, userID, func(db *DB) error { return vectorStores{db}.RemoveVectorStoreFile(ctx, userID, storeID, fileID) })
}

func (s shardedVectorStores) VectorStoresOfFile(ctx context.Context, userID, fileID string) ([]string, error) {
	return onUser(ctx, s.d, userID, func(db *DB) ([]string, error) { return vectorStores{db}.VectorStoresOfFile(ctx, userID, fileID) })
}

func (s shardedVectorStores) CancelVectorStoreFiles(ctx context.Context, userID, storeID, batchID string) (int, error) {
	return onUser(ctx, s.d, userID, func(db *DB) (int, error) {
		return vectorStores{db}.CancelVectorStoreFiles(ctx, userID, storeID, batchID)
	})
}

// ClaimIngestion claims up to limit over all clusters (claimUpTo), oldest
// first on each.
func (s shardedVectorStores) ClaimIngestion(ctx context.Context, now time.Time, lease time.Duration, limit int) ([]store.IngestionClaim, error) {
	return claimUpTo(s.d, limit, func(db *DB, n int) ([]store.IngestionClaim, error) {
		return vectorStores{db}.ClaimIngestion(ctx, now, lease, n)
	})
}

func (s shardedVectorStores) RenewIngestion(ctx context.Context, c store.IngestionClaim, now time.Time, lease time.Duration) (store.IngestionClaim, error) {
	return onUser(ctx, s.d, c.File.UserID, func(db *DB) (store.IngestionClaim, error) {
		return vectorStores{db}.RenewIngestion(ctx, c, now, lease)
	})
}

func (s shardedVectorStores) FinishIngestion(ctx context.Context, c store.IngestionClaim, status, lastError string, chunks int, usageBytes int64) error {
	return s.d.do(ctx, c.File.UserID, func(db *DB) error {
		return vectorStores{db}.FinishIngestion(ctx, c, status, lastError, chunks, usageBytes)
	})
}
