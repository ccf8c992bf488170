package main

import (
	"context"
	"fmt"
	"io"

	"github.com/parleyhq/parley/server/config"
)

// migrate applies every pending schema migration to the configured stores.
func migrate(ctx context.Context, args []string, stdout io.Writer) error {
	fs := newFlagSet("migrate")
	cfg := config.StoresFlags(fs)
	if err := parseFlags(fs, nil, args, stdout); err != nil {
		return err
	}
	s, err := openStores(ctx, cfg)
	if err != nil {
		return err
	}
	defer s.Close()
	fmt.Fprintln(stdout, "migrations applied")
	return nil
}
