package e2e

import (
	"context"
	"fmt"
	"testing"
	"time"

	"connectrpc.com/connect"

	parleyv1 "github.com/parleyhq/parley/gen/parley/v1"
)

// idorCase is one attempt by user A, with A's own session or key, to read or
// change user B's data. attempt returns an error when A was refused (any
// code) or a description of what leaked; intact checks, as B, that B's data
// is unchanged. Later issues add a row for each method that takes an id.
type idorCase struct {
	name    string
	attempt func(ctx context.Context, a clients, victim *account) error
	intact  func(ctx context.Context, b clients, victim *account) error
}

// errLeak marks an attempt that succeeded where it must not.
type errLeak string

func (e errLeak) Error() string { return string(e) }

var idorCases = []idorCase{
	{
		name: "ApiKeyService.RevokeApiKey of B's key",
		attempt: func(ctx context.Context, a clients, b *account) error {
			_, err := a.Keys.RevokeApiKey(ctx, connect.NewRequest(&parleyv1.RevokeApiKeyRequest{KeyId: b.KeyID}))
			if err == nil {
				return errLeak("revoked B's key")
			}
			return err
		},
		intact: func(ctx context.Context, b clients, victim *account) error {
			res, err := b.Keys.ListApiKeys(ctx, connect.NewRequest(&parleyv1.ListApiKeysRequest{}))
			if err != nil {
				return err
			}
			for _, k := range res.Msg.GetApiKeys() {
				if k.GetKeyId() == victim.KeyID && k.GetRevokedAt() != nil {
					return errLeak("B's key is revoked")
				}
			}
			return nil
		},
	},
	{
		name: "ApiKeyService.ListApiKeys shows only A's keys",
		attempt: func(ctx context.Context, a clients, b *account) error {
			res, err := a.Keys.ListApiKeys(ctx, connect.NewRequest(&parleyv1.ListApiKeysRequest{}))
			if err != nil {
				return err
			}
			for _, k := range res.Msg.GetApiKeys() {
				if k.GetKeyId() == b.KeyID {
					return errLeak("listed B's key")
				}
			}
			return connect.NewError(connect.CodeNotFound, fmt.Errorf("B's keys not listed")) // refused: nothing of B's seen
		},
	},
	{
		name: "AuthService.GetMe returns A, never B",
		attempt: func(ctx context.Context, a clients, b *account) error {
			res, err := a.Auth.GetMe(ctx, connect.NewRequest(&parleyv1.GetMeRequest{}))
			if err != nil {
				return err
			}
			if res.Msg.GetUser().GetUserId() == b.User.GetUserId() {
				return errLeak("GetMe returned B")
			}
			return connect.NewError(connect.CodeNotFound, fmt.Errorf("only A seen"))
		},
	},
}

func TestIDOR(t *testing.T) {
	s := startServer(t, fastAuth...)
	a := s.newAccount(t, "a@example.com")
	b := s.newAccount(t, "b@example.com")
	asB := s.as(protocols[0], b, "session")
	for _, p := range protocols {
		for _, channel := range []string{"session", "key"} {
			for _, tc := range idorCases {
				t.Run(fmt.Sprintf("%s/%s/%s", p.name, channel, tc.name), func(t *testing.T) {
					ctx := ctxTimeout(t, 10*time.Second)
					err := tc.attempt(ctx, s.as(p, a, channel), b)
					if _, leaked := err.(errLeak); leaked || err == nil {
						t.Fatalf("A reached B's data: %v", err)
					}
					if tc.intact != nil {
						if err := tc.intact(ctx, asB, b); err != nil {
							t.Fatalf("B's data changed: %v", err)
						}
					}
				})
			}
		}
	}
}
