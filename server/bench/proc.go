package bench

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
)

// proc is one process the relay benchmark started: the mock upstream, the
// worker or the gateway.
type proc struct {
	name string
	cmd  *exec.Cmd
	url  string // from its "listening on" line

	mu   sync.Mutex
	logs bytes.Buffer
	done chan struct{}
	err  error
}

var listeningRE = regexp.MustCompile(`listening on (http://[0-9.:\[\]a-z]+)`)

// startProc runs bin with args (under taskset when cpus is set) and waits
// for its "listening on" line. PARLEY_* variables of the bench's own
// environment are not passed on: each process gets exactly its flags.
func startProc(ctx context.Context, name, cpus, bin string, args ...string) (*proc, error) {
	p := &proc{name: name, done: make(chan struct{})}
	if cpus != "" {
		args = append([]string{"-c", cpus, bin}, args...)
		bin = "taskset"
	}
	p.cmd = exec.Command(bin, args...)
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "PARLEY_") {
			p.cmd.Env = append(p.cmd.Env, kv)
		}
	}
	p.cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	stderr, err := p.cmd.StderrPipe()
	if err != nil {
		return nil, err
	}
	p.cmd.Stdout = io.Discard
	if err := p.cmd.Start(); err != nil {
		return nil, fmt.Errorf("starting %s: %w", name, err)
	}
	ready := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(stderr)
		sc.Buffer(make([]byte, 1<<20), 1<<20)
		for sc.Scan() {
			line := sc.Text()
			p.mu.Lock()
			if p.logs.Len() < 1<<20 {
				p.logs.WriteString(line + "\n")
			}
			p.mu.Unlock()
			if m := listeningRE.FindStringSubmatch(line); m != nil {
				select {
				case ready <- m[1]:
				default:
				}
			}
		}
	}()
	go func() {
		p.err = p.cmd.Wait()
		close(p.done)
	}()
	select {
	case p.url = <-ready:
		return p, nil
	case <-p.done:
		return nil, fmt.Errorf("%s exited before listening: %v\n%s", name, p.err, p.Logs())
	case <-time.After(30 * time.Second):
		p.stop()
		return nil, fmt.Errorf("%s not listening after 30 s\n%s", name, p.Logs())
	case <-ctx.Done():
		p.stop()
		return nil, ctx.Err()
	}
}

// Logs is what the process has written to stderr so far (up to 1 MiB).
func (p *proc) Logs() string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.logs.String()
}

// addr is the process's host:port.
func (p *proc) addr() string { return strings.TrimPrefix(p.url, "http://") }

// stop asks the process to end (SIGTERM), then kills it after 5 s.
func (p *proc) stop() {
	if p == nil || p.cmd.Process == nil {
		return
	}
	_ = p.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-p.done:
	case <-time.After(5 * time.Second):
		_ = p.cmd.Process.Kill()
		<-p.done
	}
}

// pid is the process's id (that of the program itself, taskset having
// exec'd it).
func (p *proc) pid() int { return p.cmd.Process.Pid }

// cpuSeconds is the user+system CPU time of process pid so far (Linux only;
// 0 for self).
func cpuSeconds(pid int) (float64, error) {
	path := "/proc/self/stat"
	if pid > 0 {
		path = fmt.Sprintf("/proc/%d/stat", pid)
	}
	b, err := os.ReadFile(path)
	if err != nil {
		return 0, err
	}
	// The fields after the command name (in parentheses): utime and stime
	// are the 12th and 13th, in clock ticks (100 a second on Linux).
	f := strings.Fields(string(b[bytes.LastIndexByte(b, ')')+2:]))
	if len(f) < 13 {
		return 0, fmt.Errorf("%s: short", path)
	}
	utime, _ := strconv.ParseFloat(f[11], 64)
	stime, _ := strconv.ParseFloat(f[12], 64)
	return (utime + stime) / 100, nil
}

// rssBytes is the resident set size of process pid (0: self).
func rssBytes(pid int) (int64, error) {
	path := "/proc/self/status"
	if pid > 0 {
		path = fmt.Sprintf("/proc/%d/status", pid)
	}
	b, err := os.ReadFile(path)
	if err != nil {
		return 0, err
	}
	for line := range strings.SplitSeq(string(b), "\n") {
		if rest, ok := strings.CutPrefix(line, "VmRSS:"); ok {
			kb, err := strconv.ParseInt(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(rest), "kB")), 10, 64)
			return kb << 10, err
		}
	}
	return 0, fmt.Errorf("%s: no VmRSS", path)
}

// stackBytes is what a Parley process's goroutine stacks hold, read from
// its /metrics (the heap's own figure there counts garbage not yet
// collected, so it says little of what a stream keeps).
func stackBytes(ctx context.Context, baseURL string) (float64, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, baseURL+"/metrics", nil)
	if err != nil {
		return 0, err
	}
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		return 0, err
	}
	defer res.Body.Close()
	if res.StatusCode != http.StatusOK {
		return 0, fmt.Errorf("%s/metrics: %s", baseURL, res.Status)
	}
	parser := expfmt.NewTextParser(model.UTF8Validation)
	families, err := parser.TextToMetricFamilies(res.Body)
	if err != nil {
		return 0, fmt.Errorf("%s/metrics: %w", baseURL, err)
	}
	const name = "go_memstats_stack_inuse_bytes"
	if f := families[name]; f != nil && len(f.GetMetric()) == 1 {
		return f.GetMetric()[0].GetGauge().GetValue(), nil
	}
	return 0, fmt.Errorf("%s/metrics: no %s", baseURL, name)
}

// threads is the number of threads of process pid.
func threads(pid int) int {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0
	}
	for line := range strings.SplitSeq(string(b), "\n") {
		if rest, ok := strings.CutPrefix(line, "Threads:"); ok {
			n, _ := strconv.Atoi(strings.TrimSpace(rest))
			return n
		}
	}
	return 0
}

// pinSelf moves every thread of this process onto cpus (taskset -a).
func pinSelf(cpus string) error {
	if cpus == "" {
		return nil
	}
	out, err := exec.Command("taskset", "-a", "-cp", cpus, strconv.Itoa(os.Getpid())).CombinedOutput()
	if err != nil {
		return fmt.Errorf("taskset: %v: %s", err, out)
	}
	return nil
}
