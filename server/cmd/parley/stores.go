package main

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
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
	checks  map[string]gateway.Check
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

// Secret returns the key that signs page tokens and blob URLs: --secret
// (hex, shared by every gateway in scale mode) or, embedded, a random key
// kept in the data directory so tokens survive restarts.
func (s *stores) Secret(cfg *config.Serve) ([]byte, error) {
	if cfg.Secret != "" {
		k, err := hex.DecodeString(cfg.Secret)
		if err != nil || len(k) < 16 {
			return nil, errors.New("--secret: give at least 32 hex digits")
		}
		return k, nil
	}
	path := filepath.Join(cfg.DataDir, "secret.key")
	if k, err := os.ReadFile(path); err == nil && len(k) == 32 {
		return k, nil
	}
	k := make([]byte, 32)
	if _, err := rand.Read(k); err != nil {
		return nil, err
	}
	if err := os.WriteFile(path, k, 0o600); err != nil {
		return nil, fmt.Errorf("secret: %w", err)
	}
	return k, nil
}
