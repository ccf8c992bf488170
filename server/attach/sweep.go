package attach

import (
	"context"
	"errors"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/parleyhq/parley/server/apierr"
	"github.com/parleyhq/parley/server/store"
)

// DefaultSweepLimit is how many unreferenced uploads one sweep deletes at
// most, unless Service.SweepLimit says otherwise.
const DefaultSweepLimit = 1000

// sweepBatch is how many uploads one claim takes: a sweeper that dies
// strands no more than these until claimLease has passed.
const sweepBatch = 100

// claimLease is how long an upload claimed by a sweep stays its sweep's:
// after that (its gateway died, or a blob could not be deleted) the next
// sweep, on any gateway, claims it again.
const claimLease = 5 * time.Minute

// Metrics counts the uploads the sweeps delete.
type Metrics struct {
	Deleted      prometheus.Counter
	DeletedBytes prometheus.Counter
}

// NewMetrics makes the sweep's counters and registers them on reg.
func NewMetrics(reg prometheus.Registerer) *Metrics {
	m := &Metrics{
		Deleted: prometheus.NewCounter(prometheus.CounterOpts{Name: "parley_attachments_unreferenced_deleted_total",
			Help: "Uploads deleted, bytes and record, because no message referenced them within --attachment-unreferenced-ttl."}),
		DeletedBytes: prometheus.NewCounter(prometheus.CounterOpts{Name: "parley_attachments_unreferenced_deleted_bytes_total",
			Help: "Declared bytes of the uploads deleted because no message referenced them (freed from their owners' quotas)."}),
	}
	reg.MustRegister(m.Deleted, m.DeletedBytes)
	return m
}

// Reference marks the caller's attachments named by parts as referenced by
// a message, so the sweep never deletes them; call it before the message is
// saved. An attachment deleted meanwhile (by its owner, or swept) is
// not_found, and then the message must not be saved.
func (s *Service) Reference(ctx context.Context, userID string, parts []store.Part) error {
	var ids []string
	for _, p := range parts {
		if p.AttachmentID != "" {
			ids = append(ids, p.AttachmentID)
		}
	}
	if len(ids) == 0 {
		return nil
	}
	if s == nil {
		return unavailable()
	}
	err := s.Store.Reference(ctx, userID, ids, s.Now())
	if errors.Is(err, store.ErrNotFound) {
		return apierr.NotFound("attachment")
	} else if err != nil {
		return s.internal(ctx, "referencing attachments", err)
	}
	return nil
}

// SweepResult is what one sweep did.
type SweepResult struct {
	// Expired is how many uploads never completed were failed.
	Expired int
	// Deleted and DeletedBytes are the unreferenced uploads deleted and
	// their declared bytes.
	Deleted      int
	DeletedBytes int64
	// ExpiredFiles and ExpiredFileBytes are the files deleted because their
	// expires_after passed.
	ExpiredFiles     int
	ExpiredFileBytes int64
}

// SweepOnce fails the uploads never completed (freeing their quota and
// deleting any bytes they left), deletes the files whose expires_after has
// passed and, with UnreferencedTTL set, deletes the uploads that are not
// files and that no message referenced within it of their creation, at
// most SweepLimit of each. Each is claimed first, which hides it (it is never
// served without its bytes), then its bytes are deleted, then its record;
// one whose bytes could not be deleted stays claimed and the sweep after
// claimLease takes it again. Any number of gateways may sweep at once: a
// claim is atomic, and deleting twice is harmless.
func (s *Service) SweepOnce(ctx context.Context, now time.Time) (SweepResult, error) {
	var res SweepResult
	expired, err := s.Store.ExpireUploads(ctx, now)
	if err != nil {
		return res, err
	}
	for _, a := range expired {
		s.deleteBlobs(ctx, a)
	}
	res.Expired = len(expired)
	limit := s.SweepLimit
	if limit <= 0 {
		limit = DefaultSweepLimit
	}
	// Files past their expires_after go whatever the TTL.
	n, bytes, err := s.deleteClaimed(ctx, limit, func(n int) ([]store.Attachment, error) {
		return s.Store.ClaimExpired(ctx, now, now.Add(-claimLease), n)
	})
	res.ExpiredFiles, res.ExpiredFileBytes = n, bytes
	if err != nil || s.UnreferencedTTL <= 0 {
		return res, err
	}
	res.Deleted, res.DeletedBytes, err = s.deleteClaimed(ctx, limit, func(n int) ([]store.Attachment, error) {
		return s.Store.ClaimUnreferenced(ctx, now, now.Add(-s.UnreferencedTTL), now.Add(-claimLease), n)
	})
	if s.Metrics != nil {
		s.Metrics.Deleted.Add(float64(res.Deleted))
		s.Metrics.DeletedBytes.Add(float64(res.DeletedBytes))
	}
	return res, err
}

// deleteClaimed claims uploads with claim, a batch at a time, at most limit
// in all, and deletes each one's bytes, then its record; it returns how
// many it deleted and their declared bytes.
func (s *Service) deleteClaimed(ctx context.Context, limit int, claim func(n int) ([]store.Attachment, error)) (int, int64, error) {
	deleted, bytes := 0, int64(0)
	for taken := 0; taken < limit; {
		n := min(sweepBatch, limit-taken)
		claimed, err := claim(n)
		if err != nil {
			return deleted, bytes, err
		}
		taken += len(claimed)
		for _, a := range claimed {
			if !s.deleteBlobs(ctx, a) {
				continue // claimed still, hidden; taken again after claimLease
			}
			if err := s.Store.Purge(ctx, a.ID); err != nil {
				return deleted, bytes, err
			}
			if a.Purpose != "" && s.OnFileDeleted != nil {
				s.OnFileDeleted(ctx, a.UserID, a.ID)
			}
			deleted++
			bytes += a.SizeBytes
		}
		if len(claimed) < n {
			break
		}
	}
	return deleted, bytes, nil
}

// Sweep runs SweepOnce every interval until ctx ends.
func (s *Service) Sweep(ctx context.Context, interval time.Duration) {
	t := time.NewTicker(interval)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		res, err := s.SweepOnce(ctx, s.Now())
		if err != nil && ctx.Err() == nil {
			s.Logger.Error("sweeping attachments", "err", err)
		}
		if res.Expired > 0 {
			s.Logger.Info("expired abandoned uploads", "count", res.Expired)
		}
		if res.ExpiredFiles > 0 {
			s.Logger.Info("deleted expired files", "count", res.ExpiredFiles, "bytes", res.ExpiredFileBytes)
		}
		if res.Deleted > 0 {
			s.Logger.Info("deleted unreferenced uploads", "count", res.Deleted, "bytes", res.DeletedBytes, "ttl", s.UnreferencedTTL)
		}
	}
}
