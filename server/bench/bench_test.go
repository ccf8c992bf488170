package bench

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"connectrpc.com/connect"

	parleyv1 "github.com/parleyhq/parley/gen/parley/v1"
	"github.com/parleyhq/parley/gen/parley/v1/parleyv1connect"
)

// A timed run's end cancels its calls on the client; it is not a deadline
// sent with each call, which the server would enforce itself and answer
// with an error a moment before the client's own context ended (a call cut
// by the run's end counted as a failure).
func TestRunForEndsWithoutADeadline(t *testing.T) {
	timeouts := make(chan string, 1)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		timeouts <- r.Header.Get("Connect-Timeout-Ms")
		http.Error(w, "not here", http.StatusNotFound)
	}))
	defer srv.Close()
	client := parleyv1connect.NewAuthServiceClient(srv.Client(), srv.URL)
	login := func(ctx context.Context) string {
		_, _ = client.Login(ctx, connect.NewRequest(&parleyv1.LoginRequest{}))
		return <-timeouts
	}
	deadline, cancelDeadline := context.WithTimeout(context.Background(), time.Minute)
	defer cancelDeadline()
	if login(deadline) == "" {
		t.Fatal("a call under a deadline sent no Connect-Timeout-Ms: the check below would prove nothing")
	}
	ctx, cancel := runFor(context.Background(), 200*time.Millisecond)
	defer cancel()
	if h := login(ctx); h != "" {
		t.Errorf("a call of a timed run sent Connect-Timeout-Ms %s", h)
	}
	select {
	case <-ctx.Done():
	case <-time.After(5 * time.Second):
		t.Fatal("the run did not end")
	}
	if !errors.Is(ctx.Err(), context.Canceled) {
		t.Errorf("the run ended with %v, want canceled", ctx.Err())
	}
}
