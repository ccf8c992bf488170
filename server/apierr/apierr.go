// Package apierr is Parley's one way of making and reading API errors:
// Connect codes with typed details (which field, when to retry, which limit,
// how much balance), so every surface — Connect, gRPC, gRPC-Web, SSE and the
// OpenAI-compatible endpoint — reports the same error the same way.
package apierr

import (
	"errors"
	"fmt"
	"google.golang.org/protobuf/types/known/timestamppb"
	"math"
	"strconv"
	"time"

	"connectrpc.com/connect"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/durationpb"

	parleyv1 "github.com/parleyhq/parley/gen/parley/v1"
	"github.com/parleyhq/parley/server/store"
)

// RetryAfterHeader is set (in whole seconds, rounded up) on errors that carry
// a retry delay, as HTTP clients and the OpenAI SDKs expect.
const RetryAfterHeader = "Retry-After"

// InvalidArgument reports a bad field: field is its JSON path as the client
// sent it (e.g. "messages[2].content"), reason says why in words.
func InvalidArgument(field, reason string) *connect.Error {
	err := connect.NewError(connect.CodeInvalidArgument, fmt.Errorf("%s: %s", field, reason))
	withDetail(err, &parleyv1.FieldViolation{Field: field, Description: reason})
	return err
}

// NotFound reports that what (e.g. "conversation") does not exist or is not
// the caller's: the two are indistinguishable on purpose.
func NotFound(what string) *connect.Error {
	return connect.NewError(connect.CodeNotFound, fmt.Errorf("%s not found", what))
}

// UnknownModel reports a model id the catalog does not have: not_found, with
// a FieldViolation naming field (as the client sent it) so HTTP surfaces can
// say which parameter was wrong.
func UnknownModel(field, id string) *connect.Error {
	err := connect.NewError(connect.CodeNotFound, fmt.Errorf("%s: unknown model %q", field, id))
	withDetail(err, &parleyv1.FieldViolation{Field: field, Description: fmt.Sprintf("unknown model %q", id)})
	return err
}

// NotFoundModel is UnknownModel with a message saying why the model is not
// offered.
func NotFoundModel(field, id, why string) *connect.Error {
	err := connect.NewError(connect.CodeNotFound, fmt.Errorf("%s: %s", field, why))
	withDetail(err, &parleyv1.FieldViolation{Field: field, Description: why})
	return err
}

// Unauthenticated reports missing or invalid credentials.
func Unauthenticated(msg string) *connect.Error {
	return connect.NewError(connect.CodeUnauthenticated, errors.New(msg))
}

// PermissionDenied reports credentials that are valid but not enough.
func PermissionDenied(msg string) *connect.Error {
	return connect.NewError(connect.CodePermissionDenied, errors.New(msg))
}

// PermissionDeniedField is PermissionDenied for a refusal that one field of
// the request is at fault for (an invitation code the sign-up policy does
// not accept): the field is named in a FieldViolation detail.
func PermissionDeniedField(field, msg string) *connect.Error {
	err := PermissionDenied(msg)
	withDetail(err, &parleyv1.FieldViolation{Field: field, Description: msg})
	return err
}

// AlreadyExists reports that what (e.g. "a team named x") exists.
func AlreadyExists(what string) *connect.Error {
	return connect.NewError(connect.CodeAlreadyExists, fmt.Errorf("%s already exists", what))
}

// FailedPrecondition reports a request the current state does not allow.
func FailedPrecondition(msg string) *connect.Error {
	return connect.NewError(connect.CodeFailedPrecondition, errors.New(msg))
}

// ResourceExhausted reports a limit or throttle hit; the client may retry
// after retryAfter (zero: not by waiting).
func ResourceExhausted(msg string, retryAfter time.Duration) *connect.Error {
	err := connect.NewError(connect.CodeResourceExhausted, errors.New(msg))
	SetRetryAfter(err, retryAfter)
	return err
}

// LimitExceeded reports a tier limit hit, with the limit's state.
func LimitExceeded(msg string, limit *parleyv1.LimitStatus, retryAfter time.Duration) *connect.Error {
	err := ResourceExhausted(msg, retryAfter)
	withDetail(err, &parleyv1.LimitExceeded{Limit: limit})
	return err
}

// BudgetExceeded reports an organisation budget that a request's hold
// would overrun: which one, how much of it the period used, and when it
// resets (the zero time for a total budget: waiting does not help).
func BudgetExceeded(scope, scopeID string, limitNanos, usedNanos, requiredNanos int64, resetsAt, now time.Time) *connect.Error {
	msg := fmt.Sprintf("%s budget exceeded (%s %s): %s of %s used this period, this request needs up to %s", scope, scope, scopeID,
		USD(usedNanos), USD(limitNanos), USD(requiredNanos))
	st := &parleyv1.LimitStatus{Kind: parleyv1.LimitKind_LIMIT_KIND_BUDGET, Limit: limitNanos, Used: usedNanos, Remaining: max(limitNanos-usedNanos, 0),
		NextRequestAmount: requiredNanos}
	var retry time.Duration
	if resetsAt.IsZero() {
		msg += "; it never resets: raise the limit"
	} else {
		msg += "; it resets at " + resetsAt.UTC().Format(time.RFC3339)
		st.ResetsAt, st.NextRequestAt = timestamppb.New(resetsAt), timestamppb.New(resetsAt)
		retry = resetsAt.Sub(now)
	}
	return LimitExceeded(msg, st, retry)
}

// IsBudgetExceeded reports whether err is a BudgetExceeded.
func IsBudgetExceeded(err error) bool {
	var le parleyv1.LimitExceeded
	ce := new(connect.Error)
	return errors.As(err, &ce) && Detail(ce, &le) && le.GetLimit().GetKind() == parleyv1.LimitKind_LIMIT_KIND_BUDGET
}

// InsufficientBalance reports a balance short of what a request needs.
func InsufficientBalance(availableNanos, requiredNanos int64) *connect.Error {
	err := connect.NewError(connect.CodeResourceExhausted, fmt.Errorf(
		"insufficient balance: available %s, required %s", USD(availableNanos), USD(requiredNanos)))
	withDetail(err, &parleyv1.InsufficientBalance{AvailableNanos: availableNanos, RequiredNanos: requiredNanos})
	return err
}

// Unavailable reports overload or no worker; the client should retry after retryAfter.
func Unavailable(msg string, retryAfter time.Duration) *connect.Error {
	err := connect.NewError(connect.CodeUnavailable, errors.New(msg))
	SetRetryAfter(err, retryAfter)
	return err
}

// Internal reports a server fault without leaking its cause to the client.
func Internal() *connect.Error {
	return connect.NewError(connect.CodeInternal, errors.New("internal error"))
}

// storeRetry is when a client is told to come back after a store that did
// not answer: about what a standby's promotion takes.
const storeRetry = 5 * time.Second

// Store reports a failed store call: unavailable with Retry-After when the
// database holding the data does not answer (store.ErrUnavailable: down,
// restarting, failing over; with data clusters, only the users whose
// shard is there see it), internal otherwise.
func Store(err error) *connect.Error {
	if errors.Is(err, store.ErrUnavailable) {
		return Unavailable("the database holding this data does not answer; try again shortly", storeRetry)
	}
	return Internal()
}

// SetRetryAfter attaches a RetryInfo detail and the Retry-After header.
func SetRetryAfter(err *connect.Error, d time.Duration) {
	if d <= 0 {
		return
	}
	withDetail(err, &parleyv1.RetryInfo{RetryDelay: durationpb.New(d)})
	err.Meta().Set(RetryAfterHeader, strconv.FormatInt(int64(math.Ceil(d.Seconds())), 10))
}

// RetryAfter returns the retry delay err carries, if any.
func RetryAfter(err error) (time.Duration, bool) {
	var info parleyv1.RetryInfo
	if Detail(err, &info) {
		return info.GetRetryDelay().AsDuration(), true
	}
	return 0, false
}

// Detail fills msg with the first detail of err of msg's type.
func Detail(err error, msg proto.Message) bool {
	var ce *connect.Error
	if !errors.As(err, &ce) {
		return false
	}
	name := string(msg.ProtoReflect().Descriptor().FullName())
	for _, d := range ce.Details() {
		if d.Type() != name {
			continue
		}
		v, derr := d.Value()
		if derr != nil {
			return false
		}
		proto.Merge(msg, v)
		return true
	}
	return false
}

func withDetail(err *connect.Error, msg proto.Message) {
	if d, derr := connect.NewErrorDetail(msg); derr == nil {
		err.AddDetail(d)
	}
}

// USD formats nano-USD as dollars for messages, e.g. "$0.000125".
func USD(nanos int64) string {
	sign := ""
	if nanos < 0 {
		sign, nanos = "-", -nanos
	}
	s := fmt.Sprintf("%s$%d.%09d", sign, nanos/1e9, nanos%1e9)
	for s[len(s)-1] == '0' && s[len(s)-2] != '.' {
		s = s[:len(s)-1]
	}
	return s
}
