package store

import (
	"context"
	"time"
)

// SchemaAttempts is how many times a backend tries its start-up schema step
// (CreateSchema) before giving up.
const SchemaAttempts = 6

// CreateSchema runs create, a backend's start-up schema step (create what is
// missing, add what an older schema lacks), until it succeeds: at most
// SchemaAttempts times, 100 ms apart and doubling up to 2 s, while
// retryable says its error may pass (nil: every error) and ctx lasts. The
// step must be idempotent. Several gateways starting at once run it at
// once, and a server may refuse one of two concurrent schema changes (a
// lock taken, schema versions not yet agreed, a table being created by the
// other) where a second try finds the work done. It returns create's last
// error.
func CreateSchema(ctx context.Context, retryable func(error) bool, create func() error) error {
	wait := 100 * time.Millisecond
	for attempt := 1; ; attempt++ {
		err := create()
		if err == nil || attempt == SchemaAttempts || ctx.Err() != nil || retryable != nil && !retryable(err) {
			return err
		}
		select {
		case <-ctx.Done():
			return err
		case <-time.After(wait):
		}
		wait = min(2*wait, 2*time.Second)
	}
}
