package config

import (
	"flag"
	"fmt"
	"io"
	"slices"
	"strconv"
	"strings"
	"time"
)

// Group is a titled set of a command's flags, for its help and for
// docs/config.md.
type Group struct {
	Title string
	// Hidden groups (testing-only knobs) are left out of --help and shown
	// by --help-all; their flags work as any other.
	Hidden bool
	// Flags are the flag names, sorted.
	Flags []string
}

// Groups are a command's flag groups in the order help lists them.
type Groups []Group

// Add runs each register on fs and records the flags they registered as
// one group titled title.
func (g *Groups) Add(fs *flag.FlagSet, title string, hidden bool, register ...func(*flag.FlagSet)) {
	before := map[string]bool{}
	fs.VisitAll(func(f *flag.Flag) { before[f.Name] = true })
	for _, r := range register {
		r(fs)
	}
	grp := Group{Title: title, Hidden: hidden}
	fs.VisitAll(func(f *flag.Flag) {
		if !before[f.Name] {
			grp.Flags = append(grp.Flags, f.Name)
		}
	})
	*g = append(*g, grp)
}

// all puts every flag of fs that no group names into a last, untitled one:
// a command without groups has its flags listed as one.
func (g Groups) all(fs *flag.FlagSet) Groups {
	named := map[string]bool{}
	for _, grp := range g {
		for _, n := range grp.Flags {
			named[n] = true
		}
	}
	var rest Group
	fs.VisitAll(func(f *flag.Flag) {
		if !named[f.Name] {
			rest.Flags = append(rest.Flags, f.Name)
		}
	})
	if len(rest.Flags) > 0 {
		if len(g) > 0 {
			rest.Title = "other"
		}
		g = append(slices.Clip(g), rest)
	}
	return g
}

// Usage writes the help of a command: its usage line, then its flags by
// group, each with its help and its default as a person reads it. Hidden
// groups are left out unless all.
func Usage(w io.Writer, fs *flag.FlagSet, g Groups, usageLine string, all bool) {
	fmt.Fprintf(w, "usage: %s\n", usageLine)
	hidden := 0
	for _, grp := range g.all(fs) {
		if grp.Hidden && !all {
			hidden += len(grp.Flags)
			continue
		}
		if len(grp.Flags) == 0 {
			continue
		}
		fmt.Fprintln(w)
		if grp.Title != "" {
			fmt.Fprintf(w, "%s:\n", grp.Title)
		} else {
			fmt.Fprintln(w, "flags:")
		}
		for _, name := range grp.Flags {
			f := fs.Lookup(name)
			kind, help := unquoteUsage(f)
			line := "  --" + f.Name
			if kind != "" {
				line += " " + kind
			}
			fmt.Fprintf(w, "%s\n      %s\n", line, help+shownDefault(f))
		}
	}
	if hidden > 0 {
		fmt.Fprintf(w, "\n(%d testing-only flags not shown: --help-all lists them)\n", hidden)
	}
	fmt.Fprintln(w, "\nEvery flag can also be set as PARLEY_<FLAG> in the environment or in the YAML file of --config.")
}

// Markdown writes a command's flags as docs/config.md lists them: a table
// per group, hidden groups included and marked.
func Markdown(w io.Writer, fs *flag.FlagSet, g Groups) {
	for _, grp := range g.all(fs) {
		if len(grp.Flags) == 0 {
			continue
		}
		if grp.Title != "" {
			fmt.Fprintf(w, "**%s**\n\n", grp.Title)
		}
		fmt.Fprintln(w, "| flag | default | meaning |")
		fmt.Fprintln(w, "|---|---|---|")
		for _, name := range grp.Flags {
			f := fs.Lookup(name)
			kind, help := unquoteUsage(f)
			flagCell := "`--" + f.Name
			if kind != "" {
				flagCell += " " + kind
			}
			flagCell += "`"
			def := strings.TrimSuffix(strings.TrimPrefix(shownDefault(f), " (default "), ")")
			if def != "" {
				def = "`" + def + "`"
			}
			fmt.Fprintf(w, "| %s | %s | %s |\n", flagCell, def, strings.ReplaceAll(help, "|", `\|`))
		}
		fmt.Fprintln(w)
	}
}

// shownDefault is " (default X)" with X as a person reads it (durations
// without trailing zero units, byte sizes in KiB, MiB or GiB), or "" where
// the default is the zero value or the help already says what unset means.
func shownDefault(f *flag.Flag) string {
	if strings.Contains(f.Usage, "(default") || strings.Contains(f.Usage, "(unset") || strings.Contains(f.Usage, "(empty") {
		return ""
	}
	v := f.DefValue
	switch v {
	case "", "0", "false", "[]", "0s":
		return ""
	}
	if d, err := time.ParseDuration(v); err == nil && strings.HasSuffix(v, "s") {
		v = humanDuration(d)
	} else if n, err := strconv.ParseInt(v, 10, 64); err == nil && strings.HasSuffix(f.Name, "bytes") {
		v = humanBytes(n)
	} else if strings.ContainsAny(v, " ,") {
		v = strconv.Quote(v)
	}
	return " (default " + v + ")"
}

// unquoteUsage is flag.UnquoteUsage with "list" for the kind of a Func
// flag (comma-separated or repeated values) rather than "value".
func unquoteUsage(f *flag.Flag) (kind, help string) {
	kind, help = flag.UnquoteUsage(f)
	if kind == "value" {
		kind = "list"
	}
	return kind, help
}

func humanDuration(d time.Duration) string {
	s := d.String()
	if strings.HasSuffix(s, "m0s") {
		s = strings.TrimSuffix(s, "0s")
	}
	if strings.HasSuffix(s, "h0m") {
		s = strings.TrimSuffix(s, "0m")
	}
	return s
}

func humanBytes(n int64) string {
	for _, u := range []struct {
		name string
		size int64
	}{{"GiB", 1 << 30}, {"MiB", 1 << 20}, {"KiB", 1 << 10}} {
		if n >= u.size && n%u.size == 0 {
			return fmt.Sprintf("%d %s", n/u.size, u.name)
		}
	}
	if n >= 1_000_000_000 && n%1_000_000_000 == 0 {
		return fmt.Sprintf("%d GB", n/1_000_000_000)
	}
	if n >= 1_000_000 && n%1_000_000 == 0 {
		return fmt.Sprintf("%d MB", n/1_000_000)
	}
	return strconv.FormatInt(n, 10)
}
