package gateway

import (
	"context"
	"errors"
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

// Fix rewrites err when it is internal and a store is down now. A call
// whose own context has ended (the client left, or its deadline passed)
// and that failed as internal, unknown or unavailable is answered canceled
// or deadline_exceeded: a store reads a context that ended mid-query as a
// database that does not answer, and the client should not be told to
// come back for that.
func (o *Outage) Fix(ctx context.Context, err error) error {
	// Unknown is a handler's raw (unmapped) error: a server fault too.
	code := connect.CodeOf(err)
	if err == nil || (code != connect.CodeInternal && code != connect.CodeUnknown && code != connect.CodeUnavailable) {
		return err
	}
	if ended := ctx.Err(); ended != nil {
		if errors.Is(ended, context.DeadlineExceeded) {
			return connect.NewError(connect.CodeDeadlineExceeded, errors.New("the call's deadline passed"))
		}
		return connect.NewError(connect.CodeCanceled, errors.New("the call was cancelled"))
	}
	if code == connect.CodeUnavailable {
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
