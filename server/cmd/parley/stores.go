package main

import (
	"context"
	"fmt"
	"os"
	"path/filepath"

	"github.com/parleyhq/parley/server/config"
	"github.com/parleyhq/parley/server/gateway"
	"github.com/parleyhq/parley/server/store"
	"github.com/parleyhq/parley/server/store/sqlite"
)

// stores is the set of backends the process runs on, chosen from the config:
// the embedded SQLite database unless a scale backend is configured.
type stores struct {
	store.Store
	checks map[string]gateway.Check
	closers []func() error
}

// openStores opens (and migrates, in embedded mode) every configured store.
func openStores(ctx context.Context, cfg *config.Serve) (*stores, error) {
	if err := os.MkdirAll(cfg.DataDir, 0o700); err != nil {
		return nil, fmt.Errorf("data dir: %w", err)
	}
	db, err := sqlite.Open(ctx, filepath.Join(cfg.DataDir, "parley.db"))
	if err != nil {
		return nil, err
	}
	s := &stores{
		Store:   db.Store(),
		checks:  map[string]gateway.Check{"sqlite": db.Ping},
		closers: []func() error{db.Close},
	}
	return s, nil
}

// Checks are the readiness checks of every store, for /readyz.
func (s *stores) Checks() map[string]gateway.Check { return s.checks }

// Close closes every store.
func (s *stores) Close() {
	for i := len(s.closers) - 1; i >= 0; i-- {
		_ = s.closers[i]()
	}
}
