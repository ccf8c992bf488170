// Command parley is the whole of Parley in one binary: the gateway (serve),
// the GPU-side worker (worker), schema migration (migrate), operator tasks
// (admin) and the load generator (bench).
package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"os/signal"
	"syscall"
)

const usageText = `usage: parley <command> [flags]

commands:
  serve     run the gateway (embedded default: SQLite and one in-process sim worker)
  worker    run a worker beside an inference engine
  migrate   apply the schema migrations to the configured stores
  admin     operator tasks: create-user, topup, create-key
  bench     load generator
  models    a running gateway's models, with the workers and pools serving each
  workers   a running gateway's workers, with their pools, states and load
  region-health  the region's health checker: drives the anycast route through BIRD

Every flag can also be set as PARLEY_<FLAG> in the environment or in a YAML
file given with --config. Run 'parley <command> -h' for a command's flags.
`

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	os.Exit(run(ctx, os.Args[1:], os.Stdout, os.Stderr))
}

// run dispatches to a subcommand and returns the process exit code.
func run(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	if len(args) == 0 {
		fmt.Fprint(stderr, usageText)
		return 2
	}
	var err error
	switch args[0] {
	case "serve":
		err = serve(ctx, args[1:], stderr)
	case "worker":
		err = runWorker(ctx, args[1:], stderr)
	case "migrate":
		err = migrate(ctx, args[1:], stdout)
	case "admin":
		err = admin(ctx, args[1:], stdout)
	case "models":
		err = modelsCmd(ctx, args[1:], stdout)
	case "workers":
		err = workersCmd(ctx, args[1:], stdout)
	case "bench":
		err = benchCmd(ctx, args[1:], stdout, stderr)
	case "region-health":
		err = regionHealth(ctx, args[1:], stdout, stderr)
	case "-h", "--help", "help":
		fmt.Fprint(stdout, usageText)
		return 0
	default:
		fmt.Fprintf(stderr, "parley: unknown command %q\n\n%s", args[0], usageText)
		return 2
	}
	if err != nil {
		fmt.Fprintf(stderr, "parley %s: %v\n", args[0], err)
		return 1
	}
	return 0
}
