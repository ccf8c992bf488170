package parley_test

import (
	"context"
	"errors"
	"net/http"
	"os"
	"testing"
	"time"

	"connectrpc.com/connect"
	"google.golang.org/protobuf/types/known/durationpb"

	"github.com/parleyhq/parley/clients/go"
	parleyv1 "github.com/parleyhq/parley/gen/parley/v1"
	"github.com/parleyhq/parley/gen/parley/v1/parleyv1connect"
)

func TestProtocols(t *testing.T) {
	for name, p := range map[string]parley.Protocol{"connect": parley.Connect, "grpc": parley.GRPC, "grpc-web": parley.GRPCWeb} {
		c := parley.New(os.Getenv("PARLEY_URL"), parley.WithAPIKey(os.Getenv("PARLEY_API_KEY")), parley.WithProtocol(p))
		text, fin, err := parley.Collect(c.CompleteStream(context.Background(), parley.Prompt("sim-small", "hi "+name)))
		if err != nil || fin.GetFinishReason() != parleyv1.FinishReason_FINISH_REASON_STOP || text == "" {
			t.Errorf("%s: %q %v %v", name, text, fin, err)
		}
	}
}

func TestBreakClosesTheStream(t *testing.T) {
	c := parley.New(os.Getenv("PARLEY_URL"), parley.WithAPIKey(os.Getenv("PARLEY_API_KEY")))
	n := 0
	for range c.CompleteStream(context.Background(), parley.Prompt("sim-small", "stop early")) {
		if n++; n == 2 {
			break
		}
	}
	if n != 2 {
		t.Fatalf("got %d events", n)
	}
}

func TestRetryAfter(t *testing.T) {
	e := connect.NewError(connect.CodeUnavailable, errors.New("overloaded"))
	e.Meta().Set("Retry-After", "7")
	if d, ok := parley.RetryAfter(e); !ok || d != 7*time.Second {
		t.Errorf("header: %v %v", d, ok)
	}
	d, _ := connect.NewErrorDetail(&parleyv1.RetryInfo{RetryDelay: durationpb.New(1500 * time.Millisecond)})
	e.AddDetail(d)
	if d, ok := parley.RetryAfter(e); !ok || d != 1500*time.Millisecond {
		t.Errorf("detail: %v %v", d, ok)
	}
	if _, ok := parley.RetryAfter(errors.New("plain")); ok {
		t.Error("plain error has a retry-after")
	}
}

// TestStreamingOverhead compares the SDK's iterator with the raw generated
// client on the same streams (sim at full speed) and logs both.
func TestStreamingOverhead(t *testing.T) {
	if testing.Short() {
		t.Skip("measurement")
	}
	ctx := context.Background()
	url, key := os.Getenv("PARLEY_URL"), os.Getenv("PARLEY_API_KEY")
	c := parley.New(url, parley.WithAPIKey(key))
	raw := parleyv1connect.NewChatServiceClient(http.DefaultClient, url)
	const n = 30
	measure := func(f func(i int) int) (time.Duration, int) {
		start, events := time.Now(), 0
		for i := range n {
			events += f(i)
		}
		return time.Since(start), events
	}
	rawD, rawN := measure(func(i int) int {
		req := connect.NewRequest(parley.Prompt("sim-small", "measure"))
		req.Header().Set("Authorization", "Bearer "+key)
		s, err := raw.CompleteStream(ctx, req)
		if err != nil {
			t.Fatal(err)
		}
		k := 0
		for s.Receive() {
			k++
		}
		s.Close()
		return k
	})
	sdkD, sdkN := measure(func(i int) int {
		k := 0
		for _, err := range c.CompleteStream(ctx, parley.Prompt("sim-small", "measure")) {
			if err != nil {
				t.Fatal(err)
			}
			k++
		}
		return k
	})
	if rawN != sdkN {
		t.Errorf("events: raw %d, sdk %d", rawN, sdkN)
	}
	t.Logf("streaming %d answers (%d events): raw generated client %v (%v/event), SDK iterator %v (%v/event)",
		n, rawN, rawD, rawD/time.Duration(rawN), sdkD, sdkD/time.Duration(sdkN))
}
