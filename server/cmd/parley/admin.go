package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"math"
	"os"
	"time"

	"github.com/google/uuid"

	"github.com/parleyhq/parley/server/auth"
	"github.com/parleyhq/parley/server/config"
	"github.com/parleyhq/parley/server/store"
	"github.com/parleyhq/parley/server/store/memlimit"
)

const adminUsage = `usage: parley admin <task> [flags]

tasks:
  create-user --email E --password P [--tier free|plus|pro|max] [--admin]
  topup       --email E --usd N
  create-key  --email E [--ttl D] [--name N]   (prints the secret once)
`

// admin runs one operator task against the same stores as serve.
func admin(ctx context.Context, args []string, stdout io.Writer) error {
	if len(args) == 0 {
		return errors.New(adminUsage)
	}
	task, args := args[0], args[1:]
	fs := flag.NewFlagSet("admin "+task, flag.ContinueOnError)
	cfg := config.ServeFlags(fs)
	email := fs.String("email", "", "the user's email")
	var run func(context.Context, *stores, store.User) error
	switch task {
	case "create-user":
		password := fs.String("password", "", "the user's password (10–256 bytes)")
		tier := fs.String("tier", "free", "tier: free, plus, pro or max")
		isAdmin := fs.Bool("admin", false, "grant the AdminService")
		run = func(ctx context.Context, s *stores, _ store.User) error {
			return createUser(ctx, s, stdout, *email, *password, store.Tier(*tier), *isAdmin)
		}
	case "topup":
		usd := fs.Float64("usd", 0, "amount in US dollars to add (negative to deduct)")
		run = func(ctx context.Context, s *stores, u store.User) error {
			if math.IsNaN(*usd) || math.Abs(*usd) > 1e9 || *usd == 0 {
				return errors.New("--usd: give a non-zero amount of at most 1e9")
			}
			balance, err := s.Ledger.Adjust(ctx, store.Adjustment{
				UserID: u.ID, DeltaNanos: int64(math.Round(*usd * 1e9)), Reason: "admin topup", At: time.Now(),
			})
			if err != nil {
				return err
			}
			fmt.Fprintf(stdout, "balance of %s: %d nano-USD ($%.9f)\n", u.Email, balance, float64(balance)/1e9)
			return nil
		}
	case "create-key":
		ttl := fs.Duration("ttl", auth.MaxAPIKeyTTL, "how long the key lives (at most 720h)")
		name := fs.String("name", "admin", "a name to recognise the key by")
		run = func(ctx context.Context, s *stores, u store.User) error {
			return createKey(ctx, s, stdout, u, *name, *ttl)
		}
	default:
		return fmt.Errorf("unknown task %q\n%s", task, adminUsage)
	}
	if err := config.Parse(fs, args, os.Getenv); err != nil {
		return err
	}
	s, err := openStores(ctx, cfg)
	if err != nil {
		return err
	}
	defer s.Close()
	var u store.User
	if task != "create-user" {
		norm, err := auth.NormalizeEmail(*email)
		if err != nil {
			return fmt.Errorf("--email: %w", err)
		}
		if u, err = s.Accounts.GetUserByEmail(ctx, norm); err != nil {
			if errors.Is(err, store.ErrNotFound) {
				return fmt.Errorf("--email: no user %s", norm)
			}
			return err
		}
	}
	return run(ctx, s, u)
}

func createUser(ctx context.Context, s *stores, stdout io.Writer, email, password string, tier store.Tier, isAdmin bool) error {
	norm, err := auth.NormalizeEmail(email)
	if err != nil {
		return fmt.Errorf("--email: %w", err)
	}
	if len(password) < 10 || len(password) > 256 {
		return errors.New("--password: must be 10–256 bytes")
	}
	if !tier.Valid() {
		return fmt.Errorf("--tier: %q is not one of free, plus, pro, max", tier)
	}
	hash, err := auth.HashPassword(password, auth.DefaultPasswordParams)
	if err != nil {
		return err
	}
	u := store.User{
		ID: uuid.Must(uuid.NewV7()).String(), Email: norm, PasswordHash: hash,
		Tier: tier, Admin: isAdmin, CreatedAt: time.Now().UTC(),
	}
	if err := s.Accounts.CreateUser(ctx, u); err != nil {
		if errors.Is(err, store.ErrConflict) {
			return fmt.Errorf("--email: %s is already registered", norm)
		}
		return err
	}
	fmt.Fprintf(stdout, "created user %s (%s, tier %s, admin %v)\n", u.ID, u.Email, u.Tier, u.Admin)
	return nil
}

func createKey(ctx context.Context, s *stores, stdout io.Writer, u store.User, name string, ttl time.Duration) error {
	if name == "" || len(name) > 100 {
		return errors.New("--name: give 1–100 characters")
	}
	if ttl <= 0 || ttl > auth.MaxAPIKeyTTL {
		return errors.New("--ttl: must be positive and at most 720h (30 days)")
	}
	authn := auth.New(s.Accounts, s.Audit, memlimit.New(0), time.Now, auth.Config{})
	p := auth.Principal{UserID: u.ID, Email: u.Email, Tier: u.Tier, Admin: u.Admin}
	k, secret, err := authn.CreateAPIKey(ctx, p, name, ttl, auth.Client{IP: "cli", UserAgent: "parley admin"})
	if err != nil {
		return err
	}
	fmt.Fprintf(os.Stderr, "created API key %s (%s) for %s, expires %s\n", k.ID, k.Prefix, u.Email, k.ExpiresAt.Format(time.RFC3339))
	fmt.Fprintln(stdout, secret)
	return nil
}
