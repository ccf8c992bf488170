package main

import (
	"fmt"
	"io"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"strings"

	"github.com/parleyhq/parley/server/config"
)

// firstStart is what `parley serve` made on a fresh data directory, said
// once when it is listening: where the web app is, what was created, that
// the engine is simulated, and how to make the first admin. A later start
// (the database and the secret already there) says none of it.
type firstStart struct {
	// URL is the web app's address, once listening.
	URL string
	// DataDir is the data directory, absolute; DataDirCreated says this
	// start made it.
	DataDir        string
	DataDirCreated bool
	// Database is the embedded database, when this start created it.
	Database string
	// SecretFile is the signing key, when this start created it.
	SecretFile string
	// Simulated says the engine is the in-process sim worker.
	Simulated bool
	// AdminCommand creates the first administrator.
	AdminCommand string
}

// noteFirstStart looks at the data directory before serve opens its stores:
// the returned function, called once they are open, says what this start
// created, or nil when it created neither the database nor the secret.
func noteFirstStart(cfg *config.Serve) func() *firstStart {
	exists := func(p string) bool { _, err := os.Stat(p); return err == nil }
	dir := cfg.DataDir
	dirExisted := exists(dir)
	db := filepath.Join(dir, "parley.db")
	dbExisted := cfg.PostgresURL != "" || exists(db) // PostgreSQL: no embedded database
	secret := filepath.Join(dir, "secret.key")
	secretExisted := cfg.Secret != "" || exists(secret) // --secret: no key file
	return func() *firstStart {
		if dbExisted && secretExisted {
			return nil
		}
		abs, err := filepath.Abs(dir)
		if err != nil {
			abs = dir
		}
		f := &firstStart{DataDir: abs, DataDirCreated: !dirExisted, Simulated: cfg.Scheduler.InProcess()}
		if !dbExisted {
			f.Database = filepath.Join(abs, "parley.db")
		}
		if !secretExisted {
			f.SecretFile = filepath.Join(abs, "secret.key")
		}
		f.AdminCommand = adminCommand(cfg)
		return f
	}
}

// adminCommand is the command that creates the first administrator against
// the stores serve runs on.
func adminCommand(cfg *config.Serve) string {
	cmd := "parley admin create-user --admin --email you@example.com --password 'at least 10 characters'"
	if cfg.DataDir != "parley-data" {
		cmd += " --data-dir " + shellQuote(cfg.DataDir)
	}
	st := cfg.Stores
	if st.PostgresURL != "" || st.RedisURL != "" || st.ClickHouseURL != "" || len(st.CassandraHosts) > 0 || st.S3Endpoint != "" {
		// The URLs may hold passwords: not repeated here.
		cmd += "  # with serve's store settings: the same flags or PARLEY_* variables"
	}
	return cmd
}

func shellQuote(s string) string {
	if s != "" && strings.IndexFunc(s, func(r rune) bool {
		return !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || strings.ContainsRune("-_./:@", r))
	}) < 0 {
		return s
	}
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}

// webURL is the URL a browser opens for the listener's address: an
// unspecified host (0.0.0.0, ::) is reached as localhost.
func webURL(addr net.Addr) string {
	host, port, err := net.SplitHostPort(addr.String())
	if err != nil {
		return "http://" + addr.String() + "/"
	}
	if ip := net.ParseIP(host); ip == nil || ip.IsUnspecified() {
		host = "localhost"
	}
	return "http://" + net.JoinHostPort(host, port) + "/"
}

// The real engine, as the first start says it: a worker beside an
// OpenAI-compatible server, and serve pointed at the worker.
const (
	realWorkerCommand = "parley worker --engine openai --upstream http://127.0.0.1:8081/v1"
	realServeFlag     = "--workers 127.0.0.1:7070"
)

// Human writes the first start as a few lines for a person at a terminal.
func (f *firstStart) Human(w io.Writer) {
	var b strings.Builder
	fmt.Fprintf(&b, "\nParley is running: open %s\n\n", f.URL)
	b.WriteString("First start:\n")
	if f.DataDirCreated {
		fmt.Fprintf(&b, "  created the data directory %s\n", f.DataDir)
	} else {
		fmt.Fprintf(&b, "  data directory %s\n", f.DataDir)
	}
	if f.Database != "" {
		fmt.Fprintf(&b, "  created the database %s\n", f.Database)
	}
	if f.SecretFile != "" {
		fmt.Fprintf(&b, "  created the secret %s (signs page tokens and blob URLs; keep it, back it up with the data)\n", f.SecretFile)
	}
	if f.Simulated {
		b.WriteString("  the engine is SIMULATED: the models write made-up text. For a real model, run a worker\n")
		fmt.Fprintf(&b, "  beside an OpenAI-compatible server (llama.cpp's llama-server --port 8081, vLLM, Ollama):\n      %s\n", realWorkerCommand)
		fmt.Fprintf(&b, "  and start serve with %s\n", realServeFlag)
	}
	fmt.Fprintf(&b, "Create the first admin (then sign in on the web app):\n      %s\n\n", f.AdminCommand)
	_, _ = io.WriteString(w, b.String())
}

// Log writes the first start as one structured info record, for logs that
// are not read at a terminal.
func (f *firstStart) Log(logger *slog.Logger) {
	attrs := []any{"url", f.URL, "data_dir", f.DataDir, "data_dir_created", f.DataDirCreated}
	if f.Database != "" {
		attrs = append(attrs, "database_created", f.Database)
	}
	if f.SecretFile != "" {
		attrs = append(attrs, "secret_created", f.SecretFile)
	}
	attrs = append(attrs, "engine", engineName(f.Simulated))
	if f.Simulated {
		attrs = append(attrs, "real_engine", realWorkerCommand+", then serve "+realServeFlag)
	}
	attrs = append(attrs, "first_admin", f.AdminCommand)
	logger.Info("first start", attrs...)
}

func engineName(simulated bool) string {
	if simulated {
		return "simulated"
	}
	return "workers"
}

// isTerminal says whether w is a terminal (a character device: a tty, or
// /dev/null, where nothing is lost either way).
func isTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	if !ok {
		return false
	}
	st, err := f.Stat()
	return err == nil && st.Mode()&os.ModeCharDevice != 0
}

// sayFirstStart says the first start in human lines at a terminal, and as
// one structured record otherwise (the JSON logs are unchanged either way).
func sayFirstStart(f *firstStart, logOut io.Writer, logger *slog.Logger) {
	if f == nil {
		return
	}
	if isTerminal(logOut) {
		f.Human(logOut)
		return
	}
	f.Log(logger)
}
