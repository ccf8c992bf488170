package store

import "context"

type staleKey struct{}

// AllowStale marks ctx for reads that may be served a little behind the
// latest write: by a read replica whose lag is within the deployment's bound
// (PostgreSQL's --postgres-read-urls). Only listings a person looks at take
// it (conversation and message lists, usage, API keys, audit); whatever must
// be fresh (auth, balances, holds, the history a prompt is built from, a
// read after the caller's own write) never does, and is read from the
// primary.
func AllowStale(ctx context.Context) context.Context {
	return context.WithValue(ctx, staleKey{}, true)
}

// StaleAllowed says whether ctx was marked by AllowStale.
func StaleAllowed(ctx context.Context) bool {
	v, _ := ctx.Value(staleKey{}).(bool)
	return v
}
