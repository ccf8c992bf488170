package gateway

import (
	"context"
	"errors"
	"testing"

	"connectrpc.com/connect"
)

func TestStoreOutage(t *testing.T) {
	down := errors.New("connection refused")
	var storeErr error
	o := StoreOutage(map[string]Check{"postgres": func(context.Context) error { return storeErr }})
	call := func(handlerErr error) error {
		_, err := o.WrapUnary(func(context.Context, connect.AnyRequest) (connect.AnyResponse, error) {
			return nil, handlerErr
		})(t.Context(), nil)
		return err
	}
	raw := errors.New("unexpected EOF")
	internal := connect.NewError(connect.CodeInternal, errors.New("internal error"))
	notFound := connect.NewError(connect.CodeNotFound, errors.New("no"))

	// Stores up: errors pass unchanged.
	if err := call(internal); err != internal {
		t.Fatalf("stores up: %v", err)
	}
	storeErr = down
	for _, e := range []error{raw, internal} {
		if err := call(e); connect.CodeOf(err) != connect.CodeUnavailable {
			t.Fatalf("store down, %v became %v", e, err)
		}
	}
	if err := call(notFound); err != notFound {
		t.Fatalf("a client error was rewritten: %v", err)
	}
	if err := call(nil); err != nil {
		t.Fatalf("success rewritten: %v", err)
	}
	err := o.WrapStreamingHandler(func(context.Context, connect.StreamingHandlerConn) error { return raw })(t.Context(), nil)
	if connect.CodeOf(err) != connect.CodeUnavailable {
		t.Fatalf("streaming: %v", err)
	}
}

// A call whose own context ended and that failed as a server fault is
// answered with why it ended; a client error, or a call still live, keeps
// its own.
func TestOutageAnswersAnEndedCallWithWhyItEnded(t *testing.T) {
	o := StoreOutage(map[string]Check{"postgres": func(context.Context) error { return nil }})
	storeDown := connect.NewError(connect.CodeUnavailable, errors.New("the database holding this data does not answer"))
	internal := connect.NewError(connect.CodeInternal, errors.New("internal error"))
	notFound := connect.NewError(connect.CodeNotFound, errors.New("no"))
	cancelled, cancel := context.WithCancel(t.Context())
	cancel()
	expired, cancelExpired := context.WithTimeout(t.Context(), -1)
	defer cancelExpired()
	for _, c := range []struct {
		name string
		ctx  context.Context
		err  error
		want connect.Code
	}{
		{"deadline passed, store error", expired, storeDown, connect.CodeDeadlineExceeded},
		{"deadline passed, internal", expired, internal, connect.CodeDeadlineExceeded},
		{"deadline passed, raw", expired, errors.New("unexpected EOF"), connect.CodeDeadlineExceeded},
		{"client left, store error", cancelled, storeDown, connect.CodeCanceled},
		{"client left, not found", cancelled, notFound, connect.CodeNotFound},
		{"live, store error", t.Context(), storeDown, connect.CodeUnavailable},
		{"live, internal", t.Context(), internal, connect.CodeInternal},
	} {
		if got := connect.CodeOf(o.Fix(c.ctx, c.err)); got != c.want {
			t.Errorf("%s: %v, want %v", c.name, got, c.want)
		}
	}
}
