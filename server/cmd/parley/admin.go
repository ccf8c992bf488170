package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"math"
	"os"
	"strings"
	"time"

	"github.com/google/uuid"

	"github.com/parleyhq/parley/server/auth"
	"github.com/parleyhq/parley/server/config"
	"github.com/parleyhq/parley/server/org"
	"github.com/parleyhq/parley/server/store"
	"github.com/parleyhq/parley/server/store/memlimit"
	"github.com/parleyhq/parley/server/store/postgres"
)

// adminTasks are the tasks of parley admin, in the order its help lists them.
var adminTasks = []subcommand{
	{"create-user", "create a user: --email E --password P [--tier free|plus|pro|max] [--admin]"},
	{"topup", "add to (or deduct from) a user's balance: --email E --usd N"},
	{"org-topup", "add to (or deduct from) an organisation's balance: --org ID --usd N"},
	{"org-sso", "give an organisation its email domain for single sign-on (its people join it at their first sign-in): --org ID --domain D (empty clears it)"},
	{"create-key", "create an API key, printing the secret once: --email E [--ttl D] [--name N] [--response-cache on|off]"},
	{"usage", "a user's usage records, newest first, one line each: --email E [--end-user U] [--limit N]"},
	{"create-invite", "issue a sign-up invitation (for --signup invite), printing its code once: [--uses N] [--ttl D] [--note S]"},
	{"list-invites", "the sign-up invitations, newest first, one line each: [--limit N]"},
	{"revoke-invite", "revoke a sign-up invitation: --id ID"},
	{"move-ledger-shard", "move a logical ledger shard to another billing cluster while gateways run (its users' writes pause): --shard 0-31 --to N (N: the cluster's place in --billing-postgres-url, from 0)"},
	{"move-data-shard", "move a logical shard of the users' data to another data cluster while gateways run (its users' statements pause): --shard 0-63 --to N (N: the cluster's place in --postgres-url, from 0)"},
}

// userTasks are the tasks that act on an existing user, named by --email.
var userTasks = map[string]bool{"topup": true, "create-key": true, "usage": true}

func adminSubcommands() []subcommand { return adminTasks }

func adminUsage() string {
	var b strings.Builder
	b.WriteString("usage: parley admin <task> [flags]\n\ntasks:\n")
	for _, t := range adminTasks {
		fmt.Fprintf(&b, "  %-14s %s\n", t.name, t.summary)
	}
	b.WriteString("\nEach task takes the store flags (where the data lives) and its own; 'parley admin <task> --help' lists them.\n")
	return b.String()
}

// admin runs one operator task against the same stores as serve. A task
// takes the store flags and its own, nothing of serve's.
func admin(ctx context.Context, args []string, stdout, _ io.Writer) error {
	if len(args) == 0 {
		return fmt.Errorf("%w: give a task\n%s", errUsage, adminUsage())
	}
	task, args := args[0], args[1:]
	switch task {
	case "-h", "-help", "--help", "help":
		fmt.Fprint(stdout, adminUsage())
		return nil
	}
	fs := newFlagSet("admin " + task)
	var groups config.Groups
	var cfg *config.Stores
	groups.Add(fs, config.GroupStores, false, func(fs *flag.FlagSet) { cfg = config.StoresFlags(fs) })
	var email *string
	var run func(context.Context, *stores, store.User) error
	own := func(fs *flag.FlagSet) {
		if task == "create-user" || userTasks[task] {
			email = fs.String("email", "", "the user's email")
		}
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
				return topup(ctx, s, stdout, u, *usd)
			}
		case "org-topup":
			orgID := fs.String("org", "", "the organisation's id (OrganizationService.ListOrganizations)")
			usd := fs.Float64("usd", 0, "amount in US dollars to add (negative to deduct)")
			run = func(ctx context.Context, s *stores, _ store.User) error {
				return orgTopup(ctx, s, stdout, *orgID, *usd)
			}
		case "org-sso":
			orgID := fs.String("org", "", "the organisation's id (OrganizationService.ListOrganizations)")
			domain := fs.String("domain", "", "the email domain, e.g. example.com; empty clears it")
			run = func(ctx context.Context, s *stores, _ store.User) error {
				return orgSSO(ctx, s, stdout, *orgID, *domain)
			}
		case "create-key":
			ttl := fs.Duration("ttl", auth.MaxAPIKeyTTL, "how long the key lives (at most 720h)")
			name := fs.String("name", "admin", "a name to recognise the key by")
			cache := fs.String("response-cache", "", "the key's response cache default: on, off (unset: the server's)")
			run = func(ctx context.Context, s *stores, u store.User) error {
				return createKey(ctx, s, stdout, u, *name, *ttl, store.ResponseCacheMode(*cache))
			}
		case "usage":
			endUser := fs.String("end-user", "", "only the records of this end user (the API's `user` field)")
			limit := fs.Int("limit", 50, "the most records to print (newest first)")
			run = func(ctx context.Context, s *stores, u store.User) error {
				return listUsage(ctx, s, stdout, u, *endUser, *limit)
			}
		case "create-invite":
			uses := fs.Int64("uses", 1, "how many accounts the code may create (1–10000)")
			ttl := fs.Duration("ttl", auth.DefaultInvitationTTL, "how long the code lives (at most 8760h)")
			note := fs.String("note", "", "a label, e.g. whom it is for (at most 200 characters)")
			run = func(ctx context.Context, s *stores, _ store.User) error {
				return createInvite(ctx, s, stdout, *uses, *ttl, *note)
			}
		case "list-invites":
			limit := fs.Int("limit", 50, "the most invitations to print (newest first)")
			run = func(ctx context.Context, s *stores, _ store.User) error {
				return listInvites(ctx, s, stdout, *limit)
			}
		case "move-ledger-shard":
			shard := fs.Int("shard", -1, "the logical shard, 0–31")
			to := fs.Int("to", -1, "the billing cluster to move it to: its place in --billing-postgres-url, from 0")
			run = func(ctx context.Context, s *stores, _ store.User) error {
				if s.moveLedgerShard == nil {
					return errors.New("move-ledger-shard needs --billing-postgres-url with two clusters or more")
				}
				return moveShard(ctx, stdout, "ledger", s.moveLedgerShard, *shard, *to)
			}
		case "move-data-shard":
			shard := fs.Int("shard", -1, "the logical shard, 0–63")
			to := fs.Int("to", -1, "the data cluster to move it to: its place in --postgres-url, from 0")
			run = func(ctx context.Context, s *stores, _ store.User) error {
				if s.moveDataShard == nil {
					return errors.New("move-data-shard needs --postgres-url with two clusters or more")
				}
				return moveShard(ctx, stdout, "data", s.moveDataShard, *shard, *to)
			}
		case "revoke-invite":
			id := fs.String("id", "", "the invitation's id (as create-invite and list-invites print it)")
			run = func(ctx context.Context, s *stores, _ store.User) error {
				return revokeInvite(ctx, s, stdout, *id)
			}
		}
	}
	groups.Add(fs, "task", false, own)
	if run == nil {
		return fmt.Errorf("%w: unknown task %q\n%s", errUsage, task, adminUsage())
	}
	if err := parseFlags(fs, groups, args, stdout); err != nil {
		return err
	}
	s, err := openStores(ctx, cfg)
	if err != nil {
		return err
	}
	defer s.Close()
	var u store.User
	if userTasks[task] {
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

// topup adds usd to u's balance (negative: deducts it), audited as
// AdminService.AdjustBalance audits, by "cli".
func topup(ctx context.Context, s *stores, stdout io.Writer, u store.User, usd float64) error {
	if math.IsNaN(usd) || math.Abs(usd) > 1e9 || usd == 0 {
		return errors.New("--usd: give a non-zero amount of at most 1e9")
	}
	delta := int64(math.Round(usd * 1e9))
	balance, err := s.Ledger.Adjust(ctx, store.Adjustment{
		UserID: u.ID, DeltaNanos: delta, Reason: "admin topup", At: time.Now(),
	})
	if err != nil {
		return err
	}
	auth.New(s.Accounts, s.Audit, memlimit.New(0), time.Now, auth.Config{}).
		RecordBalanceAdjusted(ctx, u.ID, "cli", delta, balance, "admin topup", auth.Client{IP: "cli", UserAgent: "parley admin"})
	fmt.Fprintf(stdout, "balance of %s: %d nano-USD ($%.9f)\n", u.Email, balance, float64(balance)/1e9)
	return nil
}

// orgTopup adds usd to an organisation's balance (negative: deducts it),
// in its audit log as by the operator.
func orgTopup(ctx context.Context, s *stores, stdout io.Writer, orgID string, usd float64) error {
	if math.IsNaN(usd) || math.Abs(usd) > 1e9 || usd == 0 {
		return errors.New("--usd: give a non-zero amount of at most 1e9")
	}
	if s.Organizations == nil {
		return errors.New("this store keeps no organisations")
	}
	svc := &org.Service{Orgs: s.Organizations, Ledger: s.Ledger, Audit: s.Audit, Logger: slog.Default(), Now: time.Now}
	balance, err := svc.TopUp(ctx, orgID, int64(math.Round(usd*1e9)), "admin topup")
	if errors.Is(err, store.ErrNotFound) {
		return fmt.Errorf("--org: no organisation %q", orgID)
	}
	if err != nil {
		return err
	}
	fmt.Fprintf(stdout, "balance of organisation %s: %d nano-USD ($%.9f)\n", orgID, balance, float64(balance)/1e9)
	return nil
}

// orgSSO sets an organisation's SSO domain, in its audit log as by the
// operator.
func orgSSO(ctx context.Context, s *stores, stdout io.Writer, orgID, domain string) error {
	if s.Organizations == nil {
		return errors.New("this store keeps no organisations")
	}
	svc := &org.Service{Orgs: s.Organizations, Audit: s.Audit, Logger: slog.Default(), Now: time.Now}
	o, err := svc.SetSSODomain(ctx, orgID, domain)
	if errors.Is(err, store.ErrNotFound) {
		return fmt.Errorf("--org: no organisation %q", orgID)
	}
	if err != nil {
		return err
	}
	if o.SSODomain == "" {
		fmt.Fprintf(stdout, "organisation %s has no SSO domain now\n", o.ID)
		return nil
	}
	fmt.Fprintf(stdout, "organisation %s: people of @%s who sign in through the identity provider with a verified address join it\n", o.ID, o.SSODomain)
	return nil
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

// cliClient is the command line as the audit log and the auth layer see it.
var cliClient = auth.Client{IP: "cli", UserAgent: "parley admin"}

// createInvite issues an invitation, printing its code alone on stdout (for
// scripts) and what it is on stderr.
func createInvite(ctx context.Context, s *stores, stdout io.Writer, uses int64, ttl time.Duration, note string) error {
	if uses < 1 || uses > auth.MaxInvitationUses {
		return fmt.Errorf("--uses: give 1–%d", auth.MaxInvitationUses)
	}
	if ttl <= 0 || ttl > auth.MaxInvitationTTL {
		return errors.New("--ttl: must be positive and at most 8760h (365 days)")
	}
	if len([]rune(note)) > auth.MaxInvitationNote {
		return fmt.Errorf("--note: at most %d characters", auth.MaxInvitationNote)
	}
	authn := auth.New(s.Accounts, s.Audit, memlimit.New(0), time.Now, auth.Config{})
	inv, code, err := authn.CreateInvitation(ctx, "cli", note, uses, ttl, cliClient)
	if err != nil {
		return err
	}
	fmt.Fprintf(os.Stderr, "created invitation %s (%s) for %d sign-up(s), expires %s\n", inv.ID, inv.Prefix, inv.MaxUses, inv.ExpiresAt.Format(time.RFC3339))
	fmt.Fprintln(stdout, code)
	return nil
}

// listInvites prints the newest invitations, one line each: id, prefix,
// uses/max, state (usable, used up, expired or revoked), created and
// expiry times, and the note (quoted).
func listInvites(ctx context.Context, s *stores, stdout io.Writer, limit int) error {
	if limit < 1 || limit > 100_000 {
		return errors.New("--limit: give 1–100000")
	}
	now := time.Now()
	cursor := ""
	for left := limit; left > 0; {
		list, next, err := s.Accounts.ListInvitations(ctx, store.PageRequest{Size: min(left, store.MaxPageSize), Cursor: cursor})
		if err != nil {
			return err
		}
		for _, inv := range list {
			state := inv.Unusable(now)
			if state == "" {
				state = "usable"
			}
			fmt.Fprintf(stdout, "%s %s %d/%d %-7s created %s expires %s %q\n", inv.ID, inv.Prefix, inv.Uses, inv.MaxUses, state,
				inv.CreatedAt.Format(time.RFC3339), inv.ExpiresAt.Format(time.RFC3339), inv.Note)
		}
		left -= len(list)
		if next == "" {
			break
		}
		cursor = next
	}
	return nil
}

// revokeInvite revokes an invitation by id.
func revokeInvite(ctx context.Context, s *stores, stdout io.Writer, id string) error {
	if id == "" {
		return errors.New("--id: give the invitation's id (parley admin list-invites prints them)")
	}
	inv, err := s.Accounts.RevokeInvitation(ctx, "", id, time.Now().UTC())
	if errors.Is(err, store.ErrNotFound) {
		return fmt.Errorf("--id: no invitation %s", id)
	}
	if err != nil {
		return err
	}
	fmt.Fprintf(stdout, "revoked invitation %s (%s), %d/%d used\n", inv.ID, inv.Prefix, inv.Uses, inv.MaxUses)
	return nil
}

// moveShard moves a logical shard of kind ("ledger" or "data") with move
// and prints what moved.
func moveShard(ctx context.Context, stdout io.Writer, kind string, move func(ctx context.Context, shard, to int) (postgres.ShardMove, error), shard, to int) error {
	m, err := move(ctx, shard, to)
	if err != nil {
		return err
	}
	if m.From == m.To {
		fmt.Fprintf(stdout, "%s shard %d is on cluster %d already\n", kind, m.Shard, m.To)
		return nil
	}
	who := "users"
	if kind == "ledger" {
		who = "accounts"
	}
	fmt.Fprintf(stdout, "%s shard %d moved from cluster %d to %d: %s: %d, rows: %d; its writes paused %v\n",
		kind, m.Shard, m.From, m.To, who, m.Users, m.Rows, m.Paused.Round(time.Millisecond))
	return nil
}
