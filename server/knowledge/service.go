package knowledge

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"connectrpc.com/connect"
	"github.com/google/uuid"

	"github.com/parleyhq/parley/server/apierr"
	"github.com/parleyhq/parley/server/auth"
	"github.com/parleyhq/parley/server/chat"
	"github.com/parleyhq/parley/server/llm"
	"github.com/parleyhq/parley/server/models"
	"github.com/parleyhq/parley/server/store"
	"github.com/parleyhq/parley/server/tokenize"
)

// Files reads the files (attachments) a vector store holds: their records
// and their prepared text. attach.Service is one.
type Files interface {
	Get(ctx context.Context, userID, id string) (store.Attachment, error)
	Part(ctx context.Context, userID, id string) (llm.Part, error)
}

// Embedder embeds texts as the caller in ctx, billed as embeddings are
// (chat.Core is one).
type Embedder interface {
	Embed(ctx context.Context, req chat.EmbedRequest) (*chat.EmbedOutcome, error)
}

// Service keeps vector stores and searches them.
type Service struct {
	Stores store.VectorStores
	Index  store.VectorIndex
	Files  Files
	Embed  Embedder
	// Users gives a web project's owner's tier, which its ingestion counts
	// against (nil: every store's ingestion is charged to the balance).
	Users interface {
		GetUser(ctx context.Context, id string) (store.User, error)
	}
	Catalog *models.Catalog
	Tokens  *tokenize.Tokenizer
	Config  Config
	Logger  *slog.Logger
	Now     func() time.Time

	wake chan struct{}
}

// Config is the knowledge service's settings.
type Config struct {
	// EmbeddingModel is the catalog model new stores embed with ("": the
	// catalog's first embedding model).
	EmbeddingModel string
	// Lease is how long a claim on a file's ingestion lasts; a gateway
	// that dies leaves it to another after that.
	Lease time.Duration
	// Poll is how often the ingester looks for files to ingest when not
	// woken.
	Poll time.Duration
	// BatchInputs is the chunks embedded per request.
	BatchInputs int
	// MaxFileChunks bounds the chunks one file may be cut into.
	MaxFileChunks int
}

func (s *Service) cfg() Config {
	c := s.Config
	if c.Lease <= 0 {
		c.Lease = 5 * time.Minute
	}
	if c.Poll <= 0 {
		c.Poll = time.Second
	}
	if c.BatchInputs <= 0 {
		c.BatchInputs = 64
	}
	if c.MaxFileChunks <= 0 {
		c.MaxFileChunks = 20_000
	}
	return c
}

func (s *Service) now() time.Time {
	if s.Now != nil {
		return s.Now()
	}
	return time.Now()
}

func (s *Service) logger() *slog.Logger {
	if s.Logger != nil {
		return s.Logger
	}
	return slog.New(slog.DiscardHandler)
}

// embeddingModel is the model new stores embed with.
func (s *Service) embeddingModel() (string, error) {
	if m := s.cfg().EmbeddingModel; m != "" {
		return m, nil
	}
	for _, m := range s.Catalog.All() {
		if m.Embeds() {
			return m.ID, nil
		}
	}
	return "", apierr.FailedPrecondition("vector stores need an embedding model in the catalog, and it has none")
}

// Chunking is how a file is cut: AutoChunkTokens/AutoOverlapTokens, or a
// static strategy (CheckChunking).
type Chunking struct{ Tokens, Overlap int }

// Auto is the auto chunking strategy.
var Auto = Chunking{AutoChunkTokens, AutoOverlapTokens}

// NewFile is a file to add to a store: its attachment id, attributes and
// chunking.
type NewFile struct {
	FileID     string
	Attributes map[string]any
	Chunking   Chunking
	BatchID    string
}

// CreateStore makes a vector store of the caller's with files, which then
// wait for ingestion.
func (s *Service) CreateStore(ctx context.Context, userID string, v store.VectorStore, files []NewFile) (store.VectorStore, error) {
	model, err := s.embeddingModel()
	if err != nil {
		return store.VectorStore{}, err
	}
	now := s.now()
	v.ID, v.UserID, v.EmbeddingModel, v.CreatedAt, v.LastActiveAt = uuid.Must(uuid.NewV7()).String(), userID, model, now, now
	rows, err := s.fileRows(ctx, userID, v.ID, files, now)
	if err != nil {
		return store.VectorStore{}, err
	}
	if err := s.Stores.CreateVectorStore(ctx, v, rows); err != nil {
		return store.VectorStore{}, storeErr(err, "file_ids")
	}
	s.Wake()
	return s.Stores.GetVectorStore(ctx, userID, v.ID)
}

// fileRows checks files (the caller's, each once) and makes their rows.
func (s *Service) fileRows(ctx context.Context, userID, storeID string, files []NewFile, now time.Time) ([]store.VectorStoreFile, error) {
	seen := map[string]bool{}
	rows := make([]store.VectorStoreFile, 0, len(files))
	for i, f := range files {
		field := fmt.Sprintf("file_ids[%d]", i)
		if seen[f.FileID] {
			return nil, apierr.InvalidArgument(field, "names a file twice")
		}
		seen[f.FileID] = true
		if _, err := s.Files.Get(ctx, userID, f.FileID); err != nil {
			return nil, err
		}
		if f.Chunking == (Chunking{}) {
			f.Chunking = Auto
		}
		if err := CheckChunking(f.Chunking.Tokens, f.Chunking.Overlap); err != nil {
			return nil, apierr.InvalidArgument("chunking_strategy.static", err.Error())
		}
		if err := store.ValidateAttributes(f.Attributes); err != nil {
			return nil, apierr.InvalidArgument("attributes", errors.Unwrap(err).Error()+trimSentinel(err))
		}
		rows = append(rows, store.VectorStoreFile{StoreID: storeID, FileID: f.FileID, UserID: userID, Status: store.FileInProgress,
			Attributes: f.Attributes, ChunkTokens: f.Chunking.Tokens, OverlapTokens: f.Chunking.Overlap, CreatedAt: now, BatchID: f.BatchID})
	}
	return rows, nil
}

// trimSentinel is err's message without the store's sentinel prefix.
func trimSentinel(err error) string {
	msg := err.Error()
	if u := errors.Unwrap(err); u != nil && len(msg) > len(u.Error())+2 {
		return msg[len(u.Error()):]
	}
	return ""
}

// AddFiles adds files to the caller's store; they then wait for ingestion.
func (s *Service) AddFiles(ctx context.Context, userID, storeID string, files []NewFile) ([]store.VectorStoreFile, error) {
	if _, err := s.Stores.GetVectorStore(ctx, userID, storeID); err != nil {
		return nil, storeErr(err, "vector_store_id")
	}
	rows, err := s.fileRows(ctx, userID, storeID, files, s.now())
	if err != nil {
		return nil, err
	}
	for _, r := range rows {
		if err := s.Stores.AddVectorStoreFile(ctx, r); err != nil {
			return nil, storeErr(err, "file_id")
		}
	}
	s.Wake()
	return rows, nil
}

// RemoveFile takes a file out of the caller's store, and its chunks out of
// the index.
func (s *Service) RemoveFile(ctx context.Context, userID, storeID, fileID string) error {
	if err := s.Stores.RemoveVectorStoreFile(ctx, userID, storeID, fileID); err != nil {
		return storeErr(err, "file_id")
	}
	_, err := s.Index.DeleteFileChunks(ctx, storeID, fileID)
	return err
}

// FileDeleted takes a deleted file out of every store of its owner's that
// holds it, rows and chunks (attach.Service.OnFileDeleted).
func (s *Service) FileDeleted(ctx context.Context, userID, fileID string) {
	ids, err := s.Stores.VectorStoresOfFile(ctx, userID, fileID)
	if err != nil {
		s.logger().ErrorContext(ctx, "finding the vector stores of a deleted file", "file", fileID, "err", err)
		return
	}
	for _, id := range ids {
		if err := s.RemoveFile(ctx, userID, id, fileID); err != nil && connect.CodeOf(err) != connect.CodeNotFound {
			s.logger().ErrorContext(ctx, "taking a deleted file out of a vector store", "store", id, "file", fileID, "err", err)
		}
	}
}

// SetAttributes replaces a file's attributes in the caller's store, and its
// chunks' (a file still being ingested gets them when its chunks are put).
func (s *Service) SetAttributes(ctx context.Context, userID, storeID, fileID string, attrs map[string]any) (store.VectorStoreFile, error) {
	f, err := s.Stores.SetVectorStoreFileAttributes(ctx, userID, storeID, fileID, attrs)
	if err != nil {
		return f, err
	}
	if _, err := s.Index.SetFileAttributes(ctx, storeID, fileID, attrs); err != nil {
		return f, err
	}
	return f, nil
}

// DeleteStore deletes the caller's store and every chunk of it.
func (s *Service) DeleteStore(ctx context.Context, userID, storeID string) error {
	if err := s.Stores.DeleteVectorStore(ctx, userID, storeID); err != nil {
		return storeErr(err, "vector_store_id")
	}
	_, err := s.Index.DeleteStoreChunks(ctx, storeID)
	return err
}

// storeErr is a store error as the API answers it.
func storeErr(err error, field string) error {
	switch {
	case errors.Is(err, store.ErrNotFound):
		return apierr.NotFound("vector store or file")
	case errors.Is(err, store.ErrConflict):
		return apierr.InvalidArgument(field, "the file is already in the vector store")
	case errors.Is(err, store.ErrInvalidArgument):
		return apierr.InvalidArgument(field, trimSentinel(err))
	}
	return err
}

// Wake tells the ingester there is work.
func (s *Service) Wake() {
	if s.wake == nil {
		return
	}
	select {
	case s.wake <- struct{}{}:
	default:
	}
}

// Run ingests files until ctx ends: it claims what waits (its own and
// what a dead gateway left), one file at a time, and sweeps expired
// stores.
func (s *Service) Run(ctx context.Context) {
	cfg := s.cfg()
	t := time.NewTicker(cfg.Poll)
	defer t.Stop()
	for {
		for s.ingestNext(ctx) {
		}
		s.sweepExpired(ctx)
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		case <-s.wake:
		}
	}
}

// Start makes the wake channel; call before Run and Wake are used.
func (s *Service) Start() { s.wake = make(chan struct{}, 1) }

// ingestNext ingests one waiting file and reports whether there was one.
func (s *Service) ingestNext(ctx context.Context) bool {
	cfg := s.cfg()
	claims, err := s.Stores.ClaimIngestion(ctx, s.now(), cfg.Lease, 1)
	if err != nil {
		if ctx.Err() == nil {
			s.logger().ErrorContext(ctx, "claiming files to ingest", "err", err)
		}
		return false
	}
	if len(claims) == 0 {
		return false
	}
	s.Ingest(ctx, claims[0])
	return true
}

// Ingest runs one claimed file's ingestion to its end: completed, or
// failed with the reason the owner sees.
func (s *Service) Ingest(ctx context.Context, claim store.IngestionClaim) {
	f := claim.File
	work, release := s.holdClaim(ctx, claim)
	chunks, bytes, err := s.ingest(work, claim)
	status, lastError := store.FileCompleted, ""
	lost := release()
	if !lost && err != nil {
		if ctx.Err() != nil || connect.CodeOf(err) == connect.CodeUnavailable {
			// The gateway is stopping, or no worker can embed now: the
			// claim lapses and this or another gateway runs it again.
			s.logger().WarnContext(ctx, "a file's ingestion left for later", "store", f.StoreID, "file", f.FileID, "err", err)
			return
		}
		status, lastError = store.FileFailed, failure(err)
		chunks, bytes = 0, 0
		_, _ = s.Index.DeleteFileChunks(ctx, f.StoreID, f.FileID)
	}
	if lost {
		// Another gateway holds the file now, or it was removed, cancelled
		// or finished: this run's result is not the file's.
		err = store.ErrNotFound
	} else {
		err = s.Stores.FinishIngestion(ctx, claim, status, lastError, chunks, bytes)
	}
	switch {
	case errors.Is(err, store.ErrNotFound):
		// The claim is no longer held: the file was removed or cancelled
		// (its chunks go), or the claim lapsed and another ingests it.
		cur, gerr := s.Stores.GetVectorStoreFile(ctx, f.UserID, f.StoreID, f.FileID)
		if errors.Is(gerr, store.ErrNotFound) || (gerr == nil && cur.Status == store.FileCancelled) {
			_, _ = s.Index.DeleteFileChunks(ctx, f.StoreID, f.FileID)
		}
	case err != nil:
		s.logger().ErrorContext(ctx, "finishing a file's ingestion", "store", f.StoreID, "file", f.FileID, "err", err)
	default:
		s.logger().InfoContext(ctx, "ingested a file", "store", f.StoreID, "file", f.FileID, "status", status, "chunks", chunks, "error", lastError)
	}
}

// holdClaim renews claim every third of the lease while the file is
// ingested under the returned context, which it cancels if the claim is
// lost (lapsed and given to another gateway, or the file removed,
// cancelled or finished meanwhile). release stops the renewals and says
// whether the claim was lost.
func (s *Service) holdClaim(ctx context.Context, claim store.IngestionClaim) (work context.Context, release func() (lost bool)) {
	cfg := s.cfg()
	return store.KeepClaim(ctx, cfg.Lease, func(ctx context.Context) error {
		renewed, err := s.Stores.RenewIngestion(ctx, claim, s.now(), cfg.Lease)
		if err == nil {
			claim = renewed
		}
		return err
	}, func(lost bool, err error) {
		if lost {
			s.logger().WarnContext(ctx, "a file's ingestion claim was lost; leaving the file", "store", claim.File.StoreID, "file", claim.File.FileID)
		} else {
			s.logger().WarnContext(ctx, "renewing a file's ingestion claim", "store", claim.File.StoreID, "file", claim.File.FileID, "err", err)
		}
	})
}

// failure is why an ingestion failed, as the owner reads it in last_error.
func failure(err error) string {
	var ce interface{ Message() string }
	if errors.As(err, &ce) {
		return ce.Message()
	}
	return err.Error()
}

// ingest extracts, cuts, embeds and indexes one file, and says how many
// chunks of how many bytes it made.
func (s *Service) ingest(ctx context.Context, claim store.IngestionClaim) (int, int64, error) {
	cfg := s.cfg()
	f := claim.File
	v, err := s.Stores.GetVectorStore(ctx, f.UserID, f.StoreID)
	if err != nil {
		return 0, 0, err
	}
	part, err := s.Files.Part(ctx, f.UserID, f.FileID)
	if err != nil {
		return 0, 0, err
	}
	if part.Document == nil {
		return 0, 0, errors.New("the file is not a document Parley can read text from (PDF, DOCX, PPTX, text, Markdown, CSV)")
	}
	text := part.Document.Text
	spans := s.Tokens.Split(text, f.ChunkTokens, f.OverlapTokens)
	if len(spans) > cfg.MaxFileChunks {
		return 0, 0, fmt.Errorf("the file's text makes %d chunks, over the limit of %d", len(spans), cfg.MaxFileChunks)
	}
	var total int64
	for _, sp := range spans {
		total += int64(sp.End - sp.Start)
	}
	// A run that a crash or a lapsed claim interrupted left chunks that are
	// the same as this run's (the same text, cut and IDs), put a batch at a
	// time in order: ingestion resumes after the whole batches indexed, so
	// they are not embedded, nor charged, again. Should the chunks found
	// not be that prefix (a batch size changed between the runs, or a put
	// failed part-way), the file is indexed again from its start.
	have, err := s.Index.CountChunks(ctx, f.StoreID, f.FileID)
	if err != nil {
		return 0, 0, err
	}
	start := have / cfg.BatchInputs * cfg.BatchInputs
	if have > len(spans) {
		start = 0
	}
	for {
		if start == 0 && have > 0 {
			if _, err := s.Index.DeleteFileChunks(ctx, f.StoreID, f.FileID); err != nil {
				return 0, 0, err
			}
		}
		if err := s.embedSpans(ctx, claim, v, text, spans, start); err != nil {
			return 0, 0, err
		}
		n, err := s.Index.CountChunks(ctx, f.StoreID, f.FileID)
		if err != nil {
			return 0, 0, err
		}
		if n == len(spans) {
			return len(spans), total, nil
		}
		if start == 0 {
			return 0, 0, fmt.Errorf("indexed %d chunks of the file's %d", n, len(spans))
		}
		s.logger().WarnContext(ctx, "a resumed ingestion found other chunks than it left; indexing the file again", "store", f.StoreID, "file", f.FileID, "chunks", n, "want", len(spans))
		start, have = 0, n
	}
}

// embedSpans embeds and indexes spans[from:] of text, a batch at a time,
// below interactive traffic: the owner pays for the embeddings on the API
// channel, or (a web project's store) they count against the owner's tier.
func (s *Service) embedSpans(ctx context.Context, claim store.IngestionClaim, v store.VectorStore, text string, spans []tokenize.Span, from int) error {
	cfg := s.cfg()
	f := claim.File
	model := v.EmbeddingModel
	who := auth.Principal{UserID: f.UserID, Channel: auth.ChannelAPIKey}
	web := v.Web && s.Users != nil
	if web {
		u, err := s.Users.GetUser(ctx, f.UserID)
		if err != nil {
			return err
		}
		who = auth.Principal{UserID: f.UserID, Tier: u.Tier, Channel: auth.ChannelSession}
	}
	owner := auth.WithPrincipal(ctx, who)
	for lo := from; lo < len(spans); lo += cfg.BatchInputs {
		batch := spans[lo:min(lo+cfg.BatchInputs, len(spans))]
		inputs := make([]string, len(batch))
		for i, sp := range batch {
			inputs[i] = text[sp.Start:sp.End]
		}
		out, err := s.Embed.Embed(owner, chat.EmbedRequest{Model: model, Inputs: inputs, Background: true, Web: web})
		if err != nil {
			return err
		}
		chunks := make([]store.Chunk, len(batch))
		for i := range batch {
			ord := lo + i
			chunks[i] = store.Chunk{ID: ChunkID(f.StoreID, f.FileID, ord), StoreID: f.StoreID, FileID: f.FileID, Ordinal: ord,
				Text: inputs[i], Vector: out.Vectors[i], Attributes: f.Attributes}
		}
		if err := s.Index.PutChunks(ctx, chunks); err != nil {
			return err
		}
	}
	return nil
}

// chunkSpace names chunk IDs (UUIDv5 of store, file and place).
var chunkSpace = uuid.MustParse("6f1f4c2e-6a0b-4a57-9a55-6b1d0c0a5e11")

// ChunkID is the ID of a file's ord-th chunk in a store: the same for
// every run of its ingestion.
func ChunkID(storeID, fileID string, ord int) string {
	return uuid.NewSHA1(chunkSpace, fmt.Appendf(nil, "%s/%s/%d", storeID, fileID, ord)).String()
}

// sweepExpired deletes the stores that expired, with their chunks.
func (s *Service) sweepExpired(ctx context.Context) {
	expired, err := s.Stores.ExpiredVectorStores(ctx, s.now(), 100)
	if err != nil {
		if ctx.Err() == nil {
			s.logger().ErrorContext(ctx, "listing expired vector stores", "err", err)
		}
		return
	}
	for _, v := range expired {
		if err := s.DeleteStore(ctx, v.UserID, v.ID); err != nil && !errors.Is(err, store.ErrNotFound) {
			s.logger().ErrorContext(ctx, "deleting an expired vector store", "store", v.ID, "err", err)
			continue
		}
		s.logger().InfoContext(ctx, "deleted an expired vector store", "store", v.ID, "user", v.UserID)
	}
}
