package store

import (
	"context"
	"errors"
	"sync/atomic"
	"time"
)

// KeepClaim holds a claim given under a lease (a file's ingestion, a
// batch): it calls renew every third of lease while the claimed work runs
// under the returned context, and cancels that context when renew reports
// the claim gone (ErrNotFound: lapsed and given to another, or the work
// removed). report hears of the loss (lost) and of renewals that failed
// otherwise while the work runs (they are tried again). release stops the
// renewals and says whether the claim was lost.
func KeepClaim(ctx context.Context, lease time.Duration, renew func(ctx context.Context) error, report func(lost bool, err error)) (work context.Context, release func() (lost bool)) {
	work, cancel := context.WithCancel(ctx)
	var gone atomic.Bool
	done := make(chan struct{})
	go func() {
		defer close(done)
		t := time.NewTicker(max(lease/3, time.Millisecond))
		defer t.Stop()
		for {
			select {
			case <-work.Done():
				return
			case <-t.C:
			}
			switch err := renew(work); {
			case errors.Is(err, ErrNotFound):
				gone.Store(true)
				cancel()
				report(true, err)
				return
			case err != nil && work.Err() == nil:
				report(false, err)
			}
		}
	}()
	return work, func() bool {
		cancel()
		<-done
		return gone.Load()
	}
}
