package region

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"time"
)

// Bird applies routes to a BIRD 2 daemon. The route is a small include
// file of two constants that the edge's bird.conf reads in its export
// filter (deploy/README.md has the filter):
//
//	define PARLEY_ANNOUNCE = 1;
//	define PARLEY_PREPEND = 2;
//
// Apply rewrites the file (atomically) and asks BIRD over its control
// socket to `configure`: BIRD re-reads its configuration, sees the export
// filter changed and re-exports the prefix without restarting the BGP
// session. The file, not BIRD's memory, holds the state, so a BIRD that
// restarts comes back with the last decision. If BIRD refuses the new
// configuration the previous file is put back.
type Bird struct {
	// Socket is BIRD's control socket (birdc -s).
	Socket string
	// Include is the file the edge's bird.conf includes.
	Include string
	// Timeout bounds one exchange with BIRD (default 5s).
	Timeout time.Duration
	// Now stamps the file (time.Now when nil).
	Now func() time.Time
}

var defineRE = regexp.MustCompile(`(?m)^define (PARLEY_ANNOUNCE|PARLEY_PREPEND) = (\d+);`)

// Read returns the route the include file holds; ok is false when there is
// no file yet.
func (b *Bird) Read() (r Route, ok bool, err error) {
	data, err := os.ReadFile(b.Include)
	if errors.Is(err, os.ErrNotExist) {
		return Route{}, false, nil
	}
	if err != nil {
		return Route{}, false, err
	}
	found := 0
	for _, m := range defineRE.FindAllStringSubmatch(string(data), -1) {
		n, _ := strconv.Atoi(m[2])
		found++
		if m[1] == "PARLEY_ANNOUNCE" {
			r.Announced = n != 0
		} else {
			r.Prepend = n
		}
	}
	if found != 2 {
		return Route{}, false, fmt.Errorf("%s: want PARLEY_ANNOUNCE and PARLEY_PREPEND defines", b.Include)
	}
	return r, true, nil
}

// Render is the include file for r.
func (b *Bird) Render(r Route, reasons []string) []byte {
	now := time.Now
	if b.Now != nil {
		now = b.Now
	}
	announce := 0
	if r.Announced {
		announce = 1
	}
	var s strings.Builder
	fmt.Fprintf(&s, "# Written by `parley region-health` at %s; do not edit: it is rewritten on every change.\n", now().UTC().Format(time.RFC3339))
	fmt.Fprintf(&s, "# %s", r)
	if len(reasons) > 0 {
		// Reasons come from metrics and addresses; keep them on comment lines.
		fmt.Fprintf(&s, ": %s", strings.NewReplacer("\n", " ", "\r", " ").Replace(strings.Join(reasons, "; ")))
	}
	fmt.Fprintf(&s, "\ndefine PARLEY_ANNOUNCE = %d;\ndefine PARLEY_PREPEND = %d;\n", announce, r.Prepend)
	return []byte(s.String())
}

// Apply writes r and makes BIRD take it. On any error the file is put
// back as it was, so it always holds what BIRD was last made to announce
// (and what a restarting BIRD reads), and the route stays as it was. (A
// first file, with none before it, is kept: BIRD needs it to start.)
func (b *Bird) Apply(ctx context.Context, r Route, reasons []string) error {
	previous, readErr := os.ReadFile(b.Include)
	if err := writeAtomic(b.Include, b.Render(r, reasons)); err != nil {
		return fmt.Errorf("writing %s: %w", b.Include, err)
	}
	reply, err := b.Command(ctx, "configure")
	if err == nil {
		return nil
	}
	if readErr == nil { // with no file before, BIRD cannot start without this one: keep it
		_ = writeAtomic(b.Include, previous)
	}
	if reply = strings.TrimSpace(reply); reply != "" {
		return fmt.Errorf("bird configure: %w (%s)", err, reply)
	}
	return fmt.Errorf("bird configure: %w", err)
}

// BirdError is an error reply from BIRD (a code of 8000 and up).
type BirdError struct {
	Code int
	Text string
}

func (e *BirdError) Error() string { return fmt.Sprintf("bird answered %04d %s", e.Code, e.Text) }

// Command sends one command over the control socket and returns BIRD's
// reply text. Each reply line starts with a four-digit code, then '-' when
// more lines follow or ' ' on the last; continuation lines start with a
// space. Codes 8000 and up are errors.
func (b *Bird) Command(ctx context.Context, cmd string) (string, error) {
	timeout := b.Timeout
	if timeout <= 0 {
		timeout = 5 * time.Second
	}
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	conn, err := (&net.Dialer{}).DialContext(ctx, "unix", b.Socket)
	if err != nil {
		return "", fmt.Errorf("bird control socket: %w", err)
	}
	defer conn.Close()
	deadline, _ := ctx.Deadline()
	_ = conn.SetDeadline(deadline)
	rd := bufio.NewReader(conn)
	if _, _, err := readReply(rd); err != nil { // the greeting: 0001 BIRD x ready.
		return "", fmt.Errorf("bird greeting: %w", err)
	}
	if _, err := conn.Write([]byte(cmd + "\n")); err != nil {
		return "", fmt.Errorf("bird control socket: %w", err)
	}
	code, text, err := readReply(rd)
	if err != nil {
		return text, fmt.Errorf("bird reply: %w", err)
	}
	if code >= 8000 {
		last := text
		if i := strings.LastIndex(strings.TrimSpace(text), "\n"); i >= 0 {
			last = strings.TrimSpace(text)[i+1:]
		}
		return text, &BirdError{Code: code, Text: strings.TrimSpace(last)}
	}
	return text, nil
}

// readReply reads lines up to the last one of a reply and returns its code.
func readReply(rd *bufio.Reader) (int, string, error) {
	var text strings.Builder
	for range 100_000 {
		line, err := rd.ReadString('\n')
		if err != nil {
			return 0, text.String(), err
		}
		line = strings.TrimRight(line, "\n")
		if len(line) >= 5 && isDigits(line[:4]) {
			text.WriteString(line[5:] + "\n")
			if line[4] == ' ' {
				code, _ := strconv.Atoi(line[:4])
				return code, text.String(), nil
			}
			continue
		}
		text.WriteString(strings.TrimPrefix(line, " ") + "\n")
	}
	return 0, text.String(), errors.New("reply too long")
}

func isDigits(s string) bool {
	for _, c := range s {
		if c < '0' || c > '9' {
			return false
		}
	}
	return true
}

// writeAtomic replaces path with data, so BIRD never reads half a file.
func writeAtomic(path string, data []byte) error {
	f, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+".*")
	if err != nil {
		return err
	}
	defer os.Remove(f.Name())
	if _, err := f.Write(data); err != nil {
		f.Close()
		return err
	}
	if err := f.Chmod(0o644); err != nil {
		f.Close()
		return err
	}
	if err := f.Close(); err != nil {
		return err
	}
	return os.Rename(f.Name(), path)
}
