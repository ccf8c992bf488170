// Command parley is the whole of Parley in one binary: the gateway (serve),
// the GPU-side worker (worker), schema migration (migrate), operator tasks
// (admin) and the load generator (bench).
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"strings"
	"syscall"

	"github.com/parleyhq/parley/server/gateway"
)

// command is one of parley's commands.
type command struct {
	name, summary string
	run           func(ctx context.Context, args []string, stdout, stderr io.Writer) error
	// subcommands are listed under the command in parley --help.
	subcommands []subcommand
}

type subcommand struct{ name, summary string }

// commands are parley's commands, in the order parley --help lists them.
var commands = []command{
	{name: "serve", summary: "run the gateway (embedded default: SQLite and one in-process sim worker)",
		run: func(ctx context.Context, args []string, stdout, stderr io.Writer) error {
			return serve(ctx, args, stdout, stderr)
		}},
	{name: "worker", summary: "run a worker beside an inference engine",
		run: func(ctx context.Context, args []string, stdout, stderr io.Writer) error {
			return runWorker(ctx, args, stdout, stderr)
		}},
	{name: "migrate", summary: "apply the schema migrations to the configured stores",
		run: func(ctx context.Context, args []string, stdout, _ io.Writer) error { return migrate(ctx, args, stdout) }},
	{name: "admin", summary: "operator tasks against the stores", run: admin, subcommands: adminSubcommands()},
	{name: "bench", summary: "load generator against a gateway or a worker", run: benchCmd, subcommands: []subcommand{
		{"relay", "the relay benchmark: its own mock upstream, worker and gateway"},
		{"mock", "the relay benchmark's mock OpenAI-compatible upstream"},
		{"proxy", "the relay benchmark's floor: a relay that only relays"},
		{"users", "the users profile: people signing in, reading and chatting with think time"},
	}},
	{name: "models", summary: "a running gateway's models, with the workers and pools serving each",
		run: func(ctx context.Context, args []string, stdout, _ io.Writer) error {
			return modelsCmd(ctx, args, stdout)
		}},
	{name: "workers", summary: "a running gateway's workers, with their pools, states and load",
		run: func(ctx context.Context, args []string, stdout, _ io.Writer) error {
			return workersCmd(ctx, args, stdout)
		}},
	{name: "region-health", summary: "the region's health checker: drives the anycast route through BIRD", run: regionHealth},
	{name: "version", summary: "print this build's version",
		run: func(_ context.Context, _ []string, stdout, _ io.Writer) error {
			fmt.Fprintln(stdout, "parley", buildVersion())
			return nil
		}},
}

// usageText is parley --help: every command, with its subcommands.
func usageText() string {
	var b strings.Builder
	b.WriteString("usage: parley <command> [flags]\n\ncommands:\n")
	for _, c := range commands {
		fmt.Fprintf(&b, "  %-14s %s\n", c.name, c.summary)
		for _, s := range c.subcommands {
			fmt.Fprintf(&b, "    %-12s %s\n", s.name, s.summary)
		}
	}
	b.WriteString(`
Every flag can also be set as PARLEY_<FLAG> in the environment or in a YAML
file given with --config. Run 'parley <command> --help' for a command's flags
(--help-all adds the testing-only ones); 'parley --version' prints the version.
`)
	return b.String()
}

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	gateway.Version = buildVersion()
	os.Exit(run(ctx, os.Args[1:], os.Stdout, os.Stderr))
}

// run dispatches to a command and returns the process exit code: 0 for
// help asked for, 2 for an unknown command, 1 for a failed one.
func run(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	if len(args) == 0 {
		fmt.Fprint(stderr, usageText())
		return 2
	}
	switch args[0] {
	case "-h", "-help", "--help", "help":
		fmt.Fprint(stdout, usageText())
		return 0
	case "-version", "--version":
		args = []string{"version"}
	}
	for _, c := range commands {
		if c.name != args[0] {
			continue
		}
		err := c.run(ctx, args[1:], stdout, stderr)
		switch {
		case err == nil, errors.Is(err, flag.ErrHelp):
			return 0
		case errors.Is(err, errUsage):
			fmt.Fprintf(stderr, "parley %s: %v\n", args[0], err)
			return 2
		}
		fmt.Fprintf(stderr, "parley %s: %v\n", args[0], err)
		return 1
	}
	fmt.Fprintf(stderr, "parley: unknown command %q\n\n%s", args[0], usageText())
	return 2
}
