package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"os"

	"github.com/parleyhq/parley/server/config"
)

// migrate applies every pending schema migration to the configured stores.
func migrate(ctx context.Context, args []string, stdout io.Writer) error {
	fs := flag.NewFlagSet("migrate", flag.ContinueOnError)
	cfg := config.ServeFlags(fs)
	if err := config.Parse(fs, args, os.Getenv); err != nil {
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
