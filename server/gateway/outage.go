package gateway

import (
	"context"
	"time"

	"connectrpc.com/connect"

	"github.com/parleyhq/parley/server/apierr"
)

// OutageRetry is the retry time given to clients while a store is down.
const OutageRetry = 2 * time.Second

// StoreOutage returns an interceptor that turns a handler's internal (or
// unmapped) error
// into unavailable (with a retry time) when one of the store checks fails at
// that moment: while PostgreSQL or Redis is down, or restarting, clients are
// told to come back rather than that the server is broken. Requests that do
// not touch the failing store are served as usual. The checks are copied;
// pass only the stores' (not the worker pool's, which has its own errors).
func StoreOutage(checks map[string]Check) *Outage {
	o := &Outage{checks: make(map[string]Check, len(checks))}
	for k, v := range checks {
		o.checks[k] = v
	}
	return o
}

// Outage is the store-outage rewrite: a Connect interceptor, and Fix for
// the surfaces that are not Connect (the OpenAI-compatible endpoint).
type Outage struct{ checks map[string]Check }

// Fix rewrites err when it is internal and a store is down now.
func (o *Outage) Fix(ctx context.Context, err error) error {
	// Unknown is a handler's raw (unmapped) error: a server fault too.
	if code := connect.CodeOf(err); err == nil || (code != connect.CodeInternal && code != connect.CodeUnknown) {
		return err
	}
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 500*time.Millisecond)
	defer cancel()
	for name, check := range o.checks {
		if check(ctx) != nil {
			return apierr.Unavailable(name+" is unavailable", OutageRetry)
		}
	}
	return err
}

func (o *Outage) WrapUnary(next connect.UnaryFunc) connect.UnaryFunc {
	return func(ctx context.Context, req connect.AnyRequest) (connect.AnyResponse, error) {
		res, err := next(ctx, req)
		return res, o.Fix(ctx, err)
	}
}

func (o *Outage) WrapStreamingClient(next connect.StreamingClientFunc) connect.StreamingClientFunc {
	return next
}

func (o *Outage) WrapStreamingHandler(next connect.StreamingHandlerFunc) connect.StreamingHandlerFunc {
	return func(ctx context.Context, conn connect.StreamingHandlerConn) error {
		return o.Fix(ctx, next(ctx, conn))
	}
}
