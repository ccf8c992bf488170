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
