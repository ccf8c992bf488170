package e2e

import (
	"testing"
	"time"

	"connectrpc.com/connect"

	parleyv1 "github.com/parleyhq/parley/gen/parley/v1"
)

// An admin adjusts balances (never below zero) and sees the workers.
func TestAdminBalanceAndWorkers(t *testing.T) {
	w := startWorker(t, "--engine", "sim")
	s := startServer(t, append(fastAuth, "--workers", w.Addr())...)
	s.admin(t, "create-user", "--email", "ops@example.com", "--password", "ops password", "--admin")
	user := s.newAccount(t, "payer@example.com")
	ctx := ctxTimeout(t, 20*time.Second)
	in, err := s.clients(protocols[0], cred{}).Auth.Login(ctx, connect.NewRequest(&parleyv1.LoginRequest{Email: "ops@example.com", Password: "ops password"}))
	if err != nil {
		t.Fatal(err)
	}
	ops := s.clients(protocols[0], cred{cookie: sessionCookie(t, in.Header())})

	res, err := ops.Admin.AdjustBalance(ctx, connect.NewRequest(&parleyv1.AdjustBalanceRequest{Email: user.Email, DeltaNanos: 2_500_000_000, Reason: "welcome credit"}))
	if err != nil || res.Msg.GetBalanceNanos() != 2_500_000_000 {
		t.Fatalf("top-up: %v %v", res, err)
	}
	_, err = ops.Admin.AdjustBalance(ctx, connect.NewRequest(&parleyv1.AdjustBalanceRequest{UserId: user.User.GetUserId(), DeltaNanos: -3_000_000_000}))
	wantCode(t, "deduction below zero", err, connect.CodeFailedPrecondition)
	_, err = ops.Admin.AdjustBalance(ctx, connect.NewRequest(&parleyv1.AdjustBalanceRequest{Email: user.Email}))
	wantCode(t, "zero delta", err, connect.CodeInvalidArgument)
	bal, err := s.api(protocols[0], cred{bearer: user.Key}).Billing.GetBalance(ctx, connect.NewRequest(&parleyv1.GetBalanceRequest{}))
	if err != nil || bal.Msg.GetBalanceNanos() != 2_500_000_000 {
		t.Fatalf("balance %v %v", bal, err)
	}

	deadline := time.Now().Add(10 * time.Second)
	for {
		ws, err := ops.Admin.ListWorkers(ctx, connect.NewRequest(&parleyv1.ListWorkersRequest{}))
		if err != nil {
			t.Fatal(err)
		}
		if len(ws.Msg.GetWorkers()) == 1 && ws.Msg.GetWorkers()[0].GetState() == parleyv1.WorkerState_WORKER_STATE_READY {
			wk := ws.Msg.GetWorkers()[0]
			if wk.GetAddress() != w.Addr() || len(wk.GetModels()) == 0 || wk.GetLoad().GetMaxBatch() == 0 {
				t.Fatalf("worker %v", wk)
			}
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("workers %v", ws.Msg.GetWorkers())
		}
		time.Sleep(50 * time.Millisecond)
	}
	_, err = s.clients(protocols[0], cred{bearer: user.Key}).Admin.ListWorkers(ctx, connect.NewRequest(&parleyv1.ListWorkersRequest{}))
	wantCode(t, "ListWorkers as a user", err, connect.CodePermissionDenied)
}
