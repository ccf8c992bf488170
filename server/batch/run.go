package batch

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/google/uuid"

	"github.com/parleyhq/parley/server/auth"
	"github.com/parleyhq/parley/server/chat"
	"github.com/parleyhq/parley/server/llm"
	"github.com/parleyhq/parley/server/store"
)

// Start readies the runner's wake-up; call it before Run and Wake.
func (s *Service) Start() { s.wake = make(chan struct{}, 1) }

// Wake makes the runner look for work now.
func (s *Service) Wake() {
	if s.wake == nil {
		return
	}
	select {
	case s.wake <- struct{}{}:
	default:
	}
}

// Run claims and runs batches, up to Parallel at once, until ctx ends:
// each is validated, its lines run, and it is finalized; a batch whose
// claim this gateway loses is left to the gateway that took it.
func (s *Service) Run(ctx context.Context) {
	var wg sync.WaitGroup
	defer wg.Wait()
	for range max(s.Config.Parallel, 1) {
		wg.Go(func() {
			t := time.NewTicker(s.Config.Poll)
			defer t.Stop()
			for {
				for ctx.Err() == nil && s.runNext(ctx) {
				}
				select {
				case <-ctx.Done():
					return
				case <-t.C:
				case <-s.wake: // (kept until a free loop takes it)
				}
			}
		})
	}
}

// runNext claims one batch and runs it as far as it can; false when there
// was none to claim.
func (s *Service) runNext(ctx context.Context) bool {
	c, ok, err := s.Store.ClaimBatch(ctx, s.now(), s.Config.Lease)
	if err != nil {
		if ctx.Err() == nil {
			s.logger().WarnContext(ctx, "claiming a batch", "err", err)
		}
		return false
	}
	if !ok {
		return false
	}
	work, release := s.holdClaim(ctx, c)
	defer func() {
		if !release() {
			_ = s.Store.ReleaseBatch(context.WithoutCancel(ctx), c)
		}
	}()
	if err := s.run(work, c); err != nil && work.Err() == nil {
		s.logger().ErrorContext(ctx, "running a batch", "batch", c.BatchID, "err", err)
	}
	return true
}

// holdClaim renews c every third of the lease until release; work is
// cancelled when the claim is lost (another gateway took it), and release
// reports whether it was.
func (s *Service) holdClaim(ctx context.Context, c store.BatchClaim) (work context.Context, release func() (lost bool)) {
	return store.KeepClaim(ctx, s.Config.Lease, func(ctx context.Context) error {
		renewed, err := s.Store.RenewBatch(ctx, c, s.now(), s.Config.Lease)
		if err == nil {
			c = renewed
		}
		return err
	}, func(lost bool, err error) {
		if lost {
			s.logger().WarnContext(ctx, "a batch's claim was lost; leaving it to the gateway that took it", "batch", c.BatchID)
		} else {
			s.logger().WarnContext(ctx, "renewing a batch's claim", "batch", c.BatchID, "err", err)
		}
	})
}

// run takes a claimed batch from where it is to its end.
func (s *Service) run(ctx context.Context, c store.BatchClaim) error {
	b, err := s.Store.GetBatch(ctx, "", c.BatchID)
	if err != nil {
		return err
	}
	if b.Status == store.BatchValidating {
		if b, err = s.validate(ctx, c, b); err != nil || b.Status == store.BatchFailed {
			return err
		}
	}
	end := ""
	switch b.Status {
	case store.BatchInProgress:
		if end, err = s.runLines(ctx, b); err != nil {
			return err
		}
	case store.BatchFinalizing:
		end = store.BatchCompleted
	case store.BatchCancelling:
		end = store.BatchCancelled
	default:
		return nil
	}
	return s.finalize(ctx, c, b, end)
}

// validate parses the input file; a bad one fails the batch with its
// errors, a good one starts it with its lines.
func (s *Service) validate(ctx context.Context, c store.BatchClaim, b store.Batch) (store.Batch, error) {
	fail := func(errs []store.BatchError) (store.Batch, error) {
		b.Status, b.Errors = store.BatchFailed, errs
		if err := s.Store.UpdateBatch(ctx, c, store.BatchUpdate{Status: store.BatchFailed, At: s.now(), Errors: errs}); err != nil {
			return b, err
		}
		s.notify(ctx, b, store.BatchFailed)
		return b, nil
	}
	_, obj, err := s.Files.OpenFile(ctx, b.UserID, b.InputFileID)
	if err != nil {
		return fail([]store.BatchError{{Code: "invalid_file", Param: "input_file_id", Message: fmt.Sprintf("the input file %s could not be read: %v", b.InputFileID, err)}})
	}
	lines, errs := Parse(obj, b.Endpoint, s.Catalog, s.Config.MaxLines)
	obj.Close()
	if len(errs) > 0 {
		return fail(errs)
	}
	if err := s.Store.StartBatch(ctx, c, lines, s.now()); err != nil {
		return b, err
	}
	b.Status, b.Total = store.BatchInProgress, len(lines)
	return b, nil
}

// runLines runs the batch's lines until none is left (completed), the
// window ends (expired), or the batch is cancelled (cancelled), at most
// Concurrency at once; a line refused for want of idle capacity waits and
// is tried again, with a back-off while the refusals go on, and the lines
// let run at once fall to those running (then grow again line by line).
func (s *Service) runLines(ctx context.Context, b store.Batch) (string, error) {
	var (
		wg      sync.WaitGroup
		mu      sync.Mutex
		running = map[int]bool{}
		pause   atomic.Int64 // Unix nanoseconds: no line starts before
		backoff atomic.Int64
		// active lines, and how many may be: cut to those running when
		// a line finds no idle capacity, grown by one with each line
		// answered (so the batch holds about the spare slots, not a
		// queue of refusals).
		active, limit atomic.Int64
	)
	limit.Store(int64(s.Config.Concurrency))
	defer wg.Wait()
	sem := make(chan struct{}, s.Config.Concurrency)
	window := b.ExpiresAt.Sub(b.CreatedAt)
	cursor, checked := -1, time.Time{}
	for {
		if ctx.Err() != nil {
			return "", ctx.Err()
		}
		now := s.now()
		if now.Sub(checked) >= time.Second {
			cur, err := s.Store.GetBatch(ctx, "", b.ID)
			if err != nil {
				return "", err
			}
			if cur.Status == store.BatchCancelling {
				wg.Wait()
				return store.BatchCancelled, nil
			}
			checked = now
		}
		if !now.Before(b.ExpiresAt) {
			wg.Wait()
			return store.BatchExpired, nil
		}
		if until := time.Unix(0, pause.Load()); now.Before(until) {
			sleep(ctx, min(until.Sub(now), 100*time.Millisecond))
			continue
		}
		lines, err := s.Store.PendingBatchLines(ctx, b.ID, cursor, 64)
		if err != nil {
			return "", err
		}
		if len(lines) == 0 {
			mu.Lock()
			busy := len(running)
			mu.Unlock()
			if cursor == -1 && busy == 0 {
				return store.BatchCompleted, nil
			}
			if cursor == -1 {
				sleep(ctx, 20*time.Millisecond) // only running lines are left
			}
			cursor = -1
			continue
		}
		started := 0
		for _, l := range lines {
			cursor = l.Index
			mu.Lock()
			skip := running[l.Index]
			if !skip {
				running[l.Index] = true
			}
			mu.Unlock()
			if skip {
				continue
			}
			// As the window's last quarter begins the lines queue (below
			// every interactive request) rather than wait for idle slots.
			priority := llm.PriorityIdle
			if s.now().After(b.ExpiresAt.Add(-window / 4)) {
				priority = llm.PriorityBackground
			}
			if priority == llm.PriorityIdle && s.IdleSlots != nil && s.IdleSlots(lineModel(l.Body)) <= 0 {
				// No spare slot now: look again shortly, from this line.
				mu.Lock()
				delete(running, l.Index)
				mu.Unlock()
				cursor = l.Index - 1
				d := min(max(2*time.Duration(backoff.Load()), 25*time.Millisecond), 500*time.Millisecond)
				backoff.Store(int64(d))
				pause.Store(s.now().Add(d).UnixNano())
				break
			}
			if !acquire(ctx, sem, func() bool { return active.Load() < limit.Load() }) {
				// No slot for a while: look at the batch's status again
				// (a cancel, the window's end) before waiting on.
				mu.Lock()
				delete(running, l.Index)
				mu.Unlock()
				cursor = l.Index - 1
				break
			}
			started++
			wg.Add(1)
			active.Add(1)
			go func() {
				defer func() {
					mu.Lock()
					delete(running, l.Index)
					mu.Unlock()
					active.Add(-1)
					<-sem
					wg.Done()
				}()
				if s.runLine(ctx, b, l, priority) {
					backoff.Store(0)
					if n := limit.Load(); n < int64(s.Config.Concurrency) {
						limit.CompareAndSwap(n, n+1)
					}
					return
				}
				limit.Store(max(1, active.Load()))
				d := time.Duration(backoff.Load())
				d = min(max(2*d, 25*time.Millisecond), 500*time.Millisecond)
				backoff.Store(int64(d))
				pause.Store(s.now().Add(d).UnixNano())
			}()
			if time.Unix(0, pause.Load()).After(s.now()) {
				break
			}
		}
		if started == 0 {
			sleep(ctx, 20*time.Millisecond)
		}
	}
}

// runLine runs one line and stores its result; false when it is to be
// tried again later (no idle capacity, the servers busy or stopping).
func (s *Service) runLine(ctx context.Context, b store.Batch, l store.BatchLine, priority int) bool {
	requestID := LineRequestID(b.ID, l.Index)
	p := auth.Principal{UserID: b.UserID, Channel: auth.ChannelAPIKey, KeyID: b.APIKeyID}
	if s.Keys != nil && b.APIKeyID != "" {
		k, err := s.Keys(ctx, b.APIKeyID)
		if err != nil && !errors.Is(err, store.ErrNotFound) {
			return false // tried again later
		}
		p.Org = auth.OrgKeyOf(k)
	}
	lctx := chat.WithBatchLine(auth.WithPrincipal(ctx, p), chat.BatchLine{RequestID: requestID, Priority: priority})
	req, err := http.NewRequestWithContext(lctx, http.MethodPost, b.Endpoint, strings.NewReader(l.Body))
	if err != nil {
		return false
	}
	req.Header.Set("Content-Type", "application/json")
	rec := &recorder{header: http.Header{}}
	s.Exec.ServeHTTP(rec, req)
	if ctx.Err() != nil {
		return false // stopping, or the claim was lost: the line stays pending
	}
	status := rec.status()
	body := bytes.TrimSpace(rec.body.Bytes())
	if retry(status, body) {
		return false
	}
	failed := status < 200 || status > 299
	if !json.Valid(body) {
		body, _ = json.Marshal(map[string]any{"error": map[string]any{"message": string(body), "type": "server_error"}})
	}
	result, _ := json.Marshal(outputLine{ID: lineItemID(requestID), CustomID: l.CustomID,
		Response: &lineResponse{StatusCode: status, RequestID: requestID, Body: body}})
	cost := int64(0)
	if !failed {
		cost = s.lineCost(body)
	}
	if _, err := s.Store.FinishBatchLine(context.WithoutCancel(ctx), b.ID, l.Index, failed, string(result), cost); err != nil {
		s.logger().ErrorContext(ctx, "storing a batch line's result", "batch", b.ID, "line", l.Index, "err", err)
		return false
	}
	return true
}

// retry reports whether a line's response says to try it again later:
// unavailable (no idle capacity, no worker up), a gateway's overload, or a
// rate limit — but not an exhausted balance or organisation budget, which
// fails the line.
func retry(status int, body []byte) bool {
	switch status {
	case http.StatusServiceUnavailable, http.StatusBadGateway, http.StatusGatewayTimeout:
		return true
	case http.StatusTooManyRequests:
		var e struct {
			Error struct {
				Code string `json:"code"`
			} `json:"error"`
		}
		_ = json.Unmarshal(body, &e)
		return e.Error.Code != "insufficient_quota" && e.Error.Code != "budget_exceeded"
	}
	return false
}

// lineModel is the model a line's body names.
func lineModel(body string) string {
	var b struct {
		Model string `json:"model"`
	}
	_ = json.Unmarshal([]byte(body), &b)
	return b.Model
}

// lineCost is what an answered line cost at its model's batch prices, from
// the usage in its response.
func (s *Service) lineCost(body []byte) int64 {
	var r struct {
		Model string `json:"model"`
		Usage struct {
			PromptTokens     int64 `json:"prompt_tokens"`
			CompletionTokens int64 `json:"completion_tokens"`
			InputTokens      int64 `json:"input_tokens"`
			OutputTokens     int64 `json:"output_tokens"`
		} `json:"usage"`
	}
	if json.Unmarshal(body, &r) != nil {
		return 0
	}
	m, ok := s.Catalog.Lookup(r.Model)
	if !ok {
		return 0
	}
	return m.BatchCost(r.Usage.PromptTokens+r.Usage.InputTokens, r.Usage.CompletionTokens+r.Usage.OutputTokens)
}

// lineNamespace makes a line's request id from its batch and index.
var lineNamespace = uuid.MustParse("6f0e5a0c-2b1d-4c7e-9a43-5b8f0d2e7c11")

// LineRequestID is the id of a batch line's generation, hold and usage
// record: the same on every attempt at the line.
func LineRequestID(batchID string, index int) string {
	return uuid.NewSHA1(lineNamespace, []byte(batchID+":"+strconv.Itoa(index))).String()
}

// lineItemID is a line's id in the output and error files: "batch_req_"
// and its request id's hex.
func lineItemID(requestID string) string {
	return "batch_req_" + strings.ReplaceAll(requestID, "-", "")
}

// outputLine is a line of a batch's output or error file, as OpenAI
// writes it.
type outputLine struct {
	ID       string        `json:"id"`
	CustomID string        `json:"custom_id"`
	Response *lineResponse `json:"response"`
	Error    *lineError    `json:"error"`
}

type lineResponse struct {
	StatusCode int             `json:"status_code"`
	RequestID  string          `json:"request_id"`
	Body       json.RawMessage `json:"body"`
}

type lineError struct {
	Code    string `json:"code"`
	Message string `json:"message"`
}

// finalize ends the batch as end: the lines not run fail with the reason
// (expired, cancelled), the output and error files are written from the
// lines in order, and the batch takes its final status with them.
func (s *Service) finalize(ctx context.Context, c store.BatchClaim, b store.Batch, end string) error {
	now := s.now()
	if cur, err := s.Store.GetBatch(ctx, "", b.ID); err == nil && cur.Status == store.BatchCancelling {
		end = store.BatchCancelled // cancelled as its last lines ended: the owner asked first
	}
	if end != store.BatchCancelled {
		err := s.Store.UpdateBatch(ctx, c, store.BatchUpdate{Status: store.BatchFinalizing, At: now})
		if errors.Is(err, store.ErrNotFound) {
			if cur, gerr := s.Store.GetBatch(ctx, "", b.ID); gerr == nil && cur.Status == store.BatchCancelling {
				end, err = store.BatchCancelled, nil // cancelled just now
			}
		}
		if err != nil {
			return err
		}
	}
	reason := map[string]lineError{
		store.BatchExpired:   {"batch_expired", "This request could not be executed before the completion window expired."},
		store.BatchCancelled: {"batch_cancelled", "This request was not executed because the batch was cancelled."},
	}
	if why, ok := reason[end]; ok {
		for {
			pending, err := s.Store.PendingBatchLines(ctx, b.ID, -1, 1000)
			if err != nil {
				return err
			}
			if len(pending) == 0 {
				break
			}
			for _, l := range pending {
				line, _ := json.Marshal(outputLine{ID: lineItemID(LineRequestID(b.ID, l.Index)),
					CustomID: l.CustomID, Error: &why})
				if _, err := s.Store.FinishBatchLine(ctx, b.ID, l.Index, true, string(line), 0); err != nil {
					return err
				}
			}
		}
	}
	var out, errs bytes.Buffer
	expired := false
	for after := -1; ; {
		lines, err := s.Store.BatchLines(ctx, b.ID, after, 1000)
		if err != nil {
			return err
		}
		if len(lines) == 0 {
			break
		}
		for _, l := range lines {
			after = l.Index
			w := &out
			if l.Failed {
				w = &errs
				expired = expired || strings.Contains(l.Result, `"code":"batch_expired"`)
			}
			w.WriteString(l.Result)
			w.WriteByte('\n')
		}
	}
	if end == store.BatchCompleted && expired {
		end = store.BatchExpired // finalizing again after a crash
	}
	u := store.BatchUpdate{Status: end, At: s.now()}
	for _, f := range []struct {
		data    *bytes.Buffer
		name    string
		fileID  *string
		purpose string
	}{{&out, "output", &u.OutputFileID, "batch_output"}, {&errs, "error", &u.ErrorFileID, "batch_output"}} {
		if f.data.Len() == 0 {
			continue
		}
		file, err := s.Files.WriteFile(ctx, b.UserID, fmt.Sprintf("%s_%s.jsonl", b.ID, f.name), f.purpose, f.data.Bytes())
		if err != nil {
			return err
		}
		*f.fileID = file.ID
	}
	if err := s.Store.UpdateBatch(ctx, c, u); err != nil {
		return err
	}
	s.notify(ctx, b, end)
	return nil
}

// notify tells the owner's webhooks that the batch ended with status.
func (s *Service) notify(ctx context.Context, b store.Batch, status string) {
	if s.Events != nil {
		s.Events.Emit(ctx, b.UserID, "batch."+status, b.ID)
	}
}

// acquire takes a slot of sem once may allows it, waiting at most a
// quarter of a second.
func acquire(ctx context.Context, sem chan struct{}, may func() bool) bool {
	deadline := time.Now().Add(250 * time.Millisecond)
	for !may() {
		if time.Now().After(deadline) || ctx.Err() != nil {
			return false
		}
		sleep(ctx, 5*time.Millisecond)
	}
	t := time.NewTimer(time.Until(deadline))
	defer t.Stop()
	select {
	case sem <- struct{}{}:
		return true
	case <-ctx.Done():
	case <-t.C:
	}
	return false
}

func sleep(ctx context.Context, d time.Duration) {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
	case <-t.C:
	}
}

// recorder keeps a line's response in memory.
type recorder struct {
	header http.Header
	code   int
	body   bytes.Buffer
}

func (r *recorder) Header() http.Header { return r.header }
func (r *recorder) WriteHeader(code int) {
	if r.code == 0 {
		r.code = code
	}
}
func (r *recorder) Write(p []byte) (int, error) {
	r.WriteHeader(http.StatusOK)
	return r.body.Write(p)
}
func (r *recorder) status() int {
	if r.code == 0 {
		return http.StatusOK
	}
	return r.code
}
