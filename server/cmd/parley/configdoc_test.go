package main

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"strings"
)

const configDocHead = `# Configuration

<!-- Generated from the flag sets by ` + "`make docs-config`" + ` (go test ./server/cmd/parley -run TestConfigDoc -update); a test fails when it differs. Do not edit by hand. -->

Every setting of every ` + "`parley`" + ` command is a flag. Each can also be given as
an environment variable, ` + "`PARLEY_`" + ` and the flag name in upper case with dashes
as underscores (` + "`--max-queue-wait`" + ` is ` + "`PARLEY_MAX_QUEUE_WAIT`" + `), or as a key of
the YAML file named by ` + "`--config`" + ` (or ` + "`PARLEY_CONFIG`" + `); keys are flag names:

` + "```yaml" + `
listen: 0.0.0.0:8080
postgres-url: postgres://parley@db/parley
web-origins: [https://chat.example.com]
max-queue-wait: 10s
` + "```" + `

Precedence: the command line, then the environment, then the file, then the
default. The admin tasks and ` + "`migrate`" + ` take the store flags only (where the data
lives); they read serve's file, using its store settings and skipping the rest.
` + "`parley <command> --help`" + ` lists a command's flags; ` + "`--help-all`" + ` adds the hidden ones.

**Flags and the file.** Every knob stays a flag: scripts, tests and the e2e
harness set them, and a flag is also a file key and a variable, so nothing is
lost by keeping them. What is left out of ` + "`--help`" + ` (and marked "hidden" below)
is only what no operator should set in production: ` + "`--test-fault-file`" + `, which
slows down and fails answers on purpose for the region health checker's tests.
Put the tuning knobs (queue, pool spill and scaling bounds, budgets, cache
sizes) in the YAML file rather than on a command line: they change rarely and
together.

Byte sizes are shown in KiB/MiB/GiB (1024-based) or MB/GB (1000-based), as the
default is; the flags take plain numbers of bytes.
`

// docCommands are the commands docs/config.md lists, in its order.
var docCommands = [][]string{
	{"serve"}, {"worker"}, {"migrate"},
	{"admin", "create-user"}, {"admin", "topup"}, {"admin", "create-key"}, {"admin", "usage"},
	{"bench"}, {"bench", "relay"}, {"bench", "mock"}, {"bench", "proxy"}, {"bench", "users"},
	{"models"}, {"workers"}, {"region-health"},
}

// writeConfigDoc writes docs/config.md: every command's flags, by group,
// from the flag sets themselves (--help-markdown).
func writeConfigDoc(w io.Writer) error {
	fmt.Fprint(w, configDocHead)
	summaries := map[string]string{}
	for _, c := range commands {
		summaries[c.name] = c.summary
		for _, s := range c.subcommands {
			summaries[c.name+" "+s.name] = s.summary
		}
	}
	for _, args := range docCommands {
		name := strings.Join(args, " ")
		var out, errOut bytes.Buffer
		if code := run(context.Background(), append(args, "--help-markdown"), &out, &errOut); code != 0 {
			return fmt.Errorf("parley %s --help-markdown: exit %d: %s", name, code, errOut.String())
		}
		fmt.Fprintf(w, "\n## parley %s\n\n%s.\n\n", name, strings.TrimSuffix(summaries[name], "."))
		w.Write(bytes.TrimRight(out.Bytes(), "\n"))
		fmt.Fprintln(w)
	}
	return nil
}
