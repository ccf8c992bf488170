package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"runtime/debug"

	"github.com/parleyhq/parley/server/config"
)

// version is the build's version when set at link time
// (-ldflags "-X main.version=v1.2.3"); empty: the module's, from the build
// info.
var version string

// buildVersion is the build's version: the link-time one, else the main
// module's version, else the VCS revision the binary was built from.
func buildVersion() string {
	if version != "" {
		return version
	}
	bi, ok := debug.ReadBuildInfo()
	if !ok {
		return "unknown"
	}
	v := bi.Main.Version
	if v != "" && v != "(devel)" {
		return v
	}
	var rev, dirty string
	for _, s := range bi.Settings {
		switch s.Key {
		case "vcs.revision":
			rev = s.Value
		case "vcs.modified":
			if s.Value == "true" {
				dirty = "+dirty"
			}
		}
	}
	if rev == "" {
		return "(devel)"
	}
	return "devel-" + rev[:min(12, len(rev))] + dirty
}

// errUsage marks an error in how a command was called (exit status 2).
var errUsage = errors.New("usage")

// newFlagSet is a command's flag set: errors are returned, not printed, and
// help is written by parseFlags.
func newFlagSet(name string) *flag.FlagSet {
	fs := flag.NewFlagSet(name, flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	fs.Usage = func() {}
	return fs
}

// parseFlags parses a command's flags (config.Parse: flags, then PARLEY_*
// variables, then --config's file). Asked for help (-h, --help, or
// --help-all with the hidden testing-only flags too), it writes the
// command's flags by group to stdout and returns flag.ErrHelp, which run
// answers with exit status 0. groups may be nil: the flags are one group.
func parseFlags(fs *flag.FlagSet, groups config.Groups, args []string, stdout io.Writer) error {
	config.AddConfigFlag(fs)
	line := "parley " + fs.Name() + " [flags]"
	for _, a := range args {
		if a == "--" {
			break
		}
		switch a {
		case "-help-all", "--help-all":
			config.Usage(stdout, fs, groups, line, true)
			return flag.ErrHelp
		case "-help-markdown", "--help-markdown": // docs/config.md
			config.Markdown(stdout, fs, groups)
			return flag.ErrHelp
		}
	}
	err := config.Parse(fs, args, os.Getenv)
	if errors.Is(err, flag.ErrHelp) {
		config.Usage(stdout, fs, groups, line, false)
		return err
	}
	if err != nil {
		return fmt.Errorf("%w (run 'parley %s --help' for the flags)", err, fs.Name())
	}
	return nil
}
