package apierr

import (
	"testing"
	"time"

	"connectrpc.com/connect"

	parleyv1 "github.com/parleyhq/parley/gen/parley/v1"
)

func TestDetailsRoundTrip(t *testing.T) {
	err := InvalidArgument("messages[0].content", "must not be empty")
	var fv parleyv1.FieldViolation
	if !Detail(err, &fv) || fv.Field != "messages[0].content" {
		t.Fatalf("field violation lost: %+v", &fv)
	}
	if err.Message() != "messages[0].content: must not be empty" {
		t.Fatalf("message %q", err.Message())
	}
	rerr := ResourceExhausted("slow down", 1500*time.Millisecond)
	if d, ok := RetryAfter(rerr); !ok || d != 1500*time.Millisecond {
		t.Fatalf("retry after %v %v", d, ok)
	}
	if got := rerr.Meta().Get(RetryAfterHeader); got != "2" {
		t.Fatalf("Retry-After %q, want 2 (rounded up)", got)
	}
	var ib parleyv1.InsufficientBalance
	if !Detail(InsufficientBalance(5, 10), &ib) || ib.RequiredNanos != 10 {
		t.Fatal("insufficient balance detail lost")
	}
	perr := PermissionDeniedField("invitation_code", "no such invitation")
	fv = parleyv1.FieldViolation{}
	if perr.Code() != connect.CodePermissionDenied || !Detail(perr, &fv) || fv.Field != "invitation_code" || perr.Message() != "no such invitation" {
		t.Fatalf("PermissionDeniedField: %v %+v", perr, &fv)
	}
}

func TestUSD(t *testing.T) {
	for nanos, want := range map[int64]string{0: "$0.0", 125000: "$0.000125", 1_500_000_000: "$1.5", -2e9: "-$2.0"} {
		if got := USD(nanos); got != want {
			t.Errorf("USD(%d) = %q, want %q", nanos, got, want)
		}
	}
}
