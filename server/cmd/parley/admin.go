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
  create-key  --email E [--ttl D] [--name N] [--response-cache on|off]   (prints the secret once)
  usage       --email E [--end-user U] [--limit N]   (newest first, one line each)
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
			delta := int64(math.Round(*usd * 1e9))
			balance, err := s.Ledger.Adjust(ctx, store.Adjustment{
				UserID: u.ID, DeltaNanos: delta, Reason: "admin topup", At: time.Now(),
			})
			if err != nil {
				return err
			}
			// Audited as AdminService.AdjustBalance audits, by "cli".
			auth.New(s.Accounts, s.Audit, memlimit.New(0), time.Now, auth.Config{}).
				RecordBalanceAdjusted(ctx, u.ID, "cli", delta, balance, "admin topup", auth.Client{IP: "cli", UserAgent: "parley admin"})
			fmt.Fprintf(stdout, "balance of %s: %d nano-USD ($%.9f)\n", u.Email, balance, float64(balance)/1e9)
			return nil
		}
	case "create-key":
		ttl := fs.Duration("ttl", auth.MaxAPIKeyTTL, "how long the key lives (at most 720h)")
		name := fs.String("name", "admin", "a name to recognise the key by")
		cache := fs.String("response-cache", "", "the key's response cache default: on, off, or empty for the server's")
		run = func(ctx context.Context, s *stores, u store.User) error {
			return createKey(ctx, s, stdout, u, *name, *ttl, store.ResponseCacheMode(*cache))
		}
	case "usage":
		endUser := fs.String("end-user", "", "only the records of this end user (the API's `user` field)")
		limit := fs.Int("limit", 50, "the most records to print (newest first)")
		run = func(ctx context.Context, s *stores, u store.User) error {
			return listUsage(ctx, s, stdout, u, *endUser, *limit)
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

func createKey(ctx context.Context, s *stores, stdout io.Writer, u store.User, name string, ttl time.Duration, cache store.ResponseCacheMode) error {
	if name == "" || len(name) > 100 {
		return errors.New("--name: give 1–100 characters")
	}
	if ttl <= 0 || ttl > auth.MaxAPIKeyTTL {
		return errors.New("--ttl: must be positive and at most 720h (30 days)")
	}
	if !cache.Valid() {
		return fmt.Errorf("--response-cache: %q: want on, off or empty", cache)
	}
	authn := auth.New(s.Accounts, s.Audit, memlimit.New(0), time.Now, auth.Config{})
	p := auth.Principal{UserID: u.ID, Email: u.Email, Tier: u.Tier, Admin: u.Admin}
	k, secret, err := authn.CreateAPIKey(ctx, p, name, ttl, cache, auth.Client{IP: "cli", UserAgent: "parley admin"})
	if err != nil {
		return err
	}
	fmt.Fprintf(os.Stderr, "created API key %s (%s) for %s, expires %s\n", k.ID, k.Prefix, u.Email, k.ExpiresAt.Format(time.RFC3339))
	fmt.Fprintln(stdout, secret)
	return nil
}

// listUsage prints a user's newest usage records, one line each: time,
// request ID, end user (quoted; "" when none), model, channel, tokens, cost
// in nano-USD and finish reason.
func listUsage(ctx context.Context, s *stores, stdout io.Writer, u store.User, endUser string, limit int) error {
	if len(endUser) > store.MaxEndUserLen {
		return fmt.Errorf("--end-user: at most %d bytes", store.MaxEndUserLen)
	}
	if limit < 1 || limit > 100_000 {
		return errors.New("--limit: give 1–100000")
	}
	filter := store.UsageFilter{EndUser: endUser}
	cursor := ""
	for left := limit; left > 0; {
		records, next, err := s.Usage.List(ctx, u.ID, filter, store.PageRequest{Size: min(left, store.MaxPageSize), Cursor: cursor})
		if err != nil {
			return err
		}
		for _, r := range records {
			est := ""
			if r.Estimated {
				est = " (estimated)"
			}
			fmt.Fprintf(stdout, "%s %s user=%q model=%s channel=%s prompt=%d completion=%d cached=%d%s cost=%d finish=%s\n",
				r.CreatedAt.UTC().Format(time.RFC3339Nano), r.RequestID, r.EndUser, r.Model, r.Channel,
				r.PromptTokens, r.CompletionTokens, r.CachedTokens, est, r.CostNanos, r.FinishReason)
		}
		left -= len(records)
		if next == "" || len(records) == 0 {
			break
		}
		cursor = next
	}
	return nil
}
