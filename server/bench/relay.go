package bench

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"math"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"text/tabwriter"
	"time"
)

// RelayConfig is one run of the relay benchmark: a mock OpenAI-compatible
// upstream, and in front of it a gateway, each its own process — through a
// worker (openai engine) on the worker path, addressing the mock itself in
// direct mode — with streamed answers driven through the gateway and
// directly against the mock in the same run.
type RelayConfig struct {
	// Bin is the parley binary run as worker and gateway (default: this one).
	Bin string
	// BaselineBin, when set, is a second binary measured in the same run
	// under the same load (e.g. the last release): its own worker and gateway.
	BaselineBin string
	// Paths are the relay paths measured for each binary: PathWorker
	// (gateway → worker → mock) and PathDirect (gateway → mock); default
	// both. A baseline that cannot address the mock directly is measured on
	// the worker path alone. PathProxy adds, once, the floor: a plain
	// reverse proxy in the gateway's place (NewProxy; OpenAI API only).
	Paths []string
	// TokenDelays and Streams are the load runs: every pair is run.
	TokenDelays []time.Duration
	Streams     []int
	// Tokens per answer and Answers per run.
	Tokens, Answers int
	// Trials is how many times each run is repeated; medians are reported.
	Trials int
	// Hold lists open-stream runs: that many streams at one token per
	// HoldDelay held open at once, for HoldFor after the last has opened.
	Hold               []int
	HoldDelay, HoldFor time.Duration
	// HoldOpening bounds the streams waiting for their first token while a
	// hold run opens them.
	HoldOpening int
	// Burst lists burst runs: that many streams opened at BurstRate a
	// second (default 1,000), tokens BurstDelay apart (default 100 ms),
	// on a quiet box and, with BurstBusy, beside that many processes that
	// spin on a CPU each.
	Burst      []int
	BurstRate  float64
	BurstDelay time.Duration
	BurstBusy  int
	// CPUsServers and CPUsLoad pin the worker and gateway, and the mock and
	// this process, to CPU lists (taskset syntax; empty: not pinned).
	CPUsServers, CPUsLoad string
	// WorkerArgs and GatewayArgs are added to the processes' flags;
	// BaselineWorkerArgs and BaselineGatewayArgs to the baseline's (default
	// the same).
	WorkerArgs, GatewayArgs                 []string
	BaselineWorkerArgs, BaselineGatewayArgs []string
	// ProfileDir, when set, receives CPU profiles of the gateway and worker
	// (ProfileSeconds long) taken in each load run's first trial, named by
	// variant, pacing and streams (relay-direct-20ms-c50-gateway.pprof),
	// and what each allocated over the same seconds (…-allocs.pprof); and
	// in hold runs the gateway's heap and goroutines while the streams are
	// held (hold-relay-direct-2000-gateway-heap.pprof).
	ProfileDir     string
	ProfileSeconds int
	// API is what the load client streams from a gateway: "openai"
	// (/v1/chat/completions, the default), "connect" (the gateway's own
	// ChatService.CompleteStream over the Connect protocol, as the SDKs
	// stream) or "grpc-web" (the same over gRPC-Web, as the web app does).
	API string
	// LearnedAdmission gives the workers and direct upstreams no slot
	// count (no --max-batch): they are admitted to as an upstream without
	// load metrics is by default, by the limit learned from its queueing.
	// Streams refused (503) are then counted as failures, and reported.
	LearnedAdmission bool
	// MaxErrorRate is the share of requests that may fail before RunRelay
	// fails (0: none may).
	MaxErrorRate float64
	// Progress receives a line per phase (nil: none).
	Progress io.Writer
}

// relayGatewayArgs come before GatewayArgs on every gateway the benchmark
// starts (which may override them): the relay is measured, not the
// request-rate limit a pro account meets at 600 a minute, burst 20.
var relayGatewayArgs = []string{"--rate-limits", "off"}

// knowsFlag reports whether bin's command has the flag name (an older
// release measured as the baseline may not).
func knowsFlag(ctx context.Context, bin, command, name string) bool {
	out, _ := exec.CommandContext(ctx, bin, command, "--help").CombinedOutput()
	return regexp.MustCompile(`(?m)^\s+--?` + regexp.QuoteMeta(name) + `\b`).Match(out)
}

// maxStreams is the most streams any run opens at once: the workers the
// benchmark starts get it as --max-batch, since the mock upstream reports no
// slot count and a worker without one is admitted to by measured queueing
// (an AIMD limit on its time to first token), which under a burst on a
// saturated box queues streams in the gateway for a second or more — a
// figure of the admission policy, not of the relay.
func (r *relay) maxStreams() int {
	n := 1
	for _, s := range slices.Concat(r.cfg.Streams, r.cfg.Hold, r.cfg.Burst) {
		n = max(n, s)
	}
	return n
}

// The relay paths RelayConfig.Paths names.
const (
	PathWorker = "worker"
	PathDirect = "direct"
	PathProxy  = "proxy"
)

// variant is a parley binary under test on one path, with its gateway and,
// on the worker path, its worker.
type variant struct {
	name    string
	bin     string
	base    bool  // the baseline binary
	direct  bool  // the gateway addresses the mock itself: no worker
	proxy   bool  // a plain reverse proxy (NewProxy) stands in for the gateway
	worker  *proc // nil in direct mode
	gateway *proc
	key     string
	dir     string
	wDebug  string // debug-listen addresses (profiling)
	gDebug  string
}

// RunRelay runs the benchmark cfg describes and writes its tables to out.
func RunRelay(ctx context.Context, cfg RelayConfig, out io.Writer) error {
	self, err := os.Executable()
	if err != nil {
		return err
	}
	if cfg.Bin == "" {
		cfg.Bin = self
	}
	if cfg.Trials <= 0 {
		cfg.Trials = 1
	}
	if len(cfg.Paths) == 0 {
		cfg.Paths = []string{PathWorker, PathDirect}
	}
	for _, p := range cfg.Paths {
		if p != PathWorker && p != PathDirect && p != PathProxy {
			return fmt.Errorf("bench relay: path %q: want %s, %s or %s", p, PathWorker, PathDirect, PathProxy)
		}
	}
	switch cfg.API {
	case "":
		cfg.API = "openai"
	case "openai", "connect", "grpc-web":
	default:
		return fmt.Errorf("bench relay: --api %q: want openai, connect or grpc-web", cfg.API)
	}
	if cfg.Tokens <= 0 {
		cfg.Tokens = 50
	}
	if cfg.HoldOpening <= 0 {
		cfg.HoldOpening = 1000
	}
	if cfg.ProfileSeconds <= 0 {
		cfg.ProfileSeconds = 10
	}
	if cfg.BaselineWorkerArgs == nil {
		cfg.BaselineWorkerArgs = cfg.WorkerArgs
	}
	if cfg.BaselineGatewayArgs == nil {
		cfg.BaselineGatewayArgs = cfg.GatewayArgs
	}
	if err := pinSelf(cfg.CPUsLoad); err != nil {
		return err
	}
	// Open streams are open files in every process: raise the limit the
	// processes inherit as far as allowed (a hold run of 50,000 streams
	// needs over 100,000 in the worker).
	raiseFileLimit()
	r := &relay{cfg: cfg, out: out, self: self}
	tmp, err := os.MkdirTemp("", "parley-bench-")
	if err != nil {
		return err
	}
	r.tmp = tmp
	defer os.RemoveAll(tmp)
	client := "/v1/chat/completions (SSE)"
	switch cfg.API {
	case "connect":
		client = "ChatService.CompleteStream (Connect) to the gateways, /v1/chat/completions (SSE) to the mock"
	case "grpc-web":
		client = "ChatService.CompleteStream (gRPC-Web) to the gateways, /v1/chat/completions (SSE) to the mock"
	}
	fmt.Fprintf(out, "parley bench relay: client over %s → parley serve → [parley worker (openai engine) →] mock upstream; paths %s (relay: through a worker; relay[direct]: the gateway addresses the mock",
		client, strings.Join(cfg.Paths, ", "))
	if slices.Contains(cfg.Paths, PathProxy) {
		fmt.Fprint(out, "; proxy: a process that only relays, in the gateway's place: the floor of a relay, its CPU under gateway")
	}
	fmt.Fprint(out, ")\n")
	fmt.Fprintf(out, "binary %s", cfg.Bin)
	if cfg.BaselineBin != "" {
		fmt.Fprintf(out, ", baseline %s", cfg.BaselineBin)
	}
	fmt.Fprintf(out, "; %d tokens per answer, %d answers per run, medians of %d trials; %d CPUs; pinned servers %q load %q\n",
		cfg.Tokens, cfg.Answers, cfg.Trials, cpuCount(), cfg.CPUsServers, cfg.CPUsLoad)
	if cfg.LearnedAdmission {
		fmt.Fprint(out, "workers and direct upstreams given no max-batch (default admission: a limit learned from the upstream's queueing, since the mock reports no slots)")
	} else {
		fmt.Fprintf(out, "workers started with --max-batch %d, direct upstreams given max-batch=%[1]d (the mock reports no slots: the relay is measured, not the admission of an engine of unknown size)", r.maxStreams())
	}
	if len(cfg.WorkerArgs) > 0 {
		fmt.Fprintf(out, " then %s", strings.Join(cfg.WorkerArgs, " "))
	}
	fmt.Fprintf(out, "\ngateways started with %s (request-rate limits off: the relay is measured, not the limits)", strings.Join(relayGatewayArgs, " "))
	if len(cfg.GatewayArgs) > 0 {
		fmt.Fprintf(out, " then %s", strings.Join(cfg.GatewayArgs, " "))
	}
	fmt.Fprint(out, "\n\n")

	err = r.runs(ctx)
	fmt.Fprintf(out, "all runs: %d requests, %d ok, %d failed\n", r.requests, r.requests-r.errs.total, r.errs.total)
	writeKinds(out, "", r.errs.list(), r.errs.total, r.requests)
	if err != nil {
		return err
	}
	return CheckErrors(r.errs.list(), r.errs.total, r.requests, cfg.MaxErrorRate)
}

func (r *relay) runs(ctx context.Context) error {
	for _, n := range r.cfg.Hold {
		if err := r.holdRun(ctx, n); err != nil {
			return err
		}
	}
	for _, n := range r.cfg.Burst {
		if err := r.burstRun(ctx, n); err != nil {
			return err
		}
	}
	if len(r.cfg.TokenDelays) == 0 || len(r.cfg.Streams) == 0 || r.cfg.Answers <= 0 {
		return nil
	}
	return r.loadRuns(ctx)
}

// count adds a load's requests and failures to the run's totals.
func (r *relay) count(st *streamStats) *streamStats {
	r.requests += st.answers
	r.errs.merge(&st.errs)
	return st
}

type relay struct {
	cfg  RelayConfig
	self string // this binary: it runs the mock
	out  io.Writer
	tmp  string
	seq  int
	// requests and errs are every request of the run (warm-ups too) and
	// the failed ones by kind.
	requests int
	errs     errorTally
}

func (r *relay) progress(format string, args ...any) {
	if r.cfg.Progress != nil {
		fmt.Fprintf(r.cfg.Progress, time.Now().Format("15:04:05 ")+format+"\n", args...)
	}
}

// variants are the binaries under test on each path, the baseline first.
func (r *relay) variants(ctx context.Context) []*variant {
	var vs []*variant
	add := func(bin string, base bool) {
		for _, p := range r.cfg.Paths {
			if p == PathProxy {
				continue
			}
			v := &variant{name: "relay", bin: bin, base: base, direct: p == PathDirect}
			var tags []string
			if base {
				tags = append(tags, "baseline")
			}
			if v.direct {
				if !knowsDirect(ctx, bin) {
					continue
				}
				tags = append(tags, "direct")
			}
			if len(tags) > 0 {
				v.name += "[" + strings.Join(tags, ",") + "]"
			}
			vs = append(vs, v)
		}
	}
	if r.cfg.BaselineBin != "" {
		add(r.cfg.BaselineBin, true)
	}
	add(r.cfg.Bin, false)
	if slices.Contains(r.cfg.Paths, PathProxy) && r.cfg.API == "openai" {
		vs = append(vs, &variant{name: "proxy", bin: r.cfg.Bin, proxy: true})
	}
	return vs
}

// knowsDirect reports whether bin's gateway can address an inference
// server directly (an older release measured as the baseline may not).
func knowsDirect(ctx context.Context, bin string) bool {
	out, _ := exec.CommandContext(ctx, bin, "serve", "--help").CombinedOutput()
	return bytes.Contains(out, []byte("openai+http://"))
}

// startPath starts a fresh mock and, unless v is nil (the direct path),
// v's processes on it; t is where the path's client connects.
func (r *relay) startPath(ctx context.Context, v *variant) (mock *proc, t streamTarget, err error) {
	if mock, err = r.startMock(ctx); err != nil {
		return nil, t, err
	}
	if v == nil {
		return mock, streamTarget{url: mock.url, model: "mock"}, nil
	}
	if err := r.start(ctx, v, mock); err != nil {
		mock.stop()
		return nil, t, err
	}
	return mock, r.gatewayTarget(v), nil
}

// gatewayTarget is where the client connects on v's gateway.
func (r *relay) gatewayTarget(v *variant) streamTarget {
	if v.proxy {
		return streamTarget{url: v.gateway.url, model: "mock"}
	}
	return streamTarget{url: v.gateway.url, apiKey: v.key, model: "mock", connect: r.cfg.API != "openai", grpcWeb: r.cfg.API == "grpc-web"}
}

func (r *relay) startMock(ctx context.Context) (*proc, error) {
	return startProc(ctx, "mock", r.cfg.CPUsLoad, r.self, "bench", "mock", "--listen", "127.0.0.1:0", "--tokens", fmt.Sprint(r.cfg.Tokens))
}

// start runs v's worker (on mock) and gateway, with an account and API key
// made with parley admin on the gateway's data directory.
func (r *relay) start(ctx context.Context, v *variant, mock *proc) (err error) {
	if v.proxy {
		v.gateway, err = startProc(ctx, v.name, r.cfg.CPUsServers, v.bin, "bench", "proxy", "--listen", "127.0.0.1:0", "--upstream", mock.url)
		return err
	}
	r.seq++
	v.dir = filepath.Join(r.tmp, fmt.Sprintf("gw%d", r.seq))
	if err := os.MkdirAll(v.dir, 0o700); err != nil {
		return err
	}
	models := filepath.Join(v.dir, "models.yaml")
	if err := os.WriteFile(models, []byte(mockCatalog), 0o600); err != nil {
		return err
	}
	base, wargs, gargs := v.base, r.cfg.WorkerArgs, r.cfg.GatewayArgs
	if base {
		wargs, gargs = r.cfg.BaselineWorkerArgs, r.cfg.BaselineGatewayArgs
	}
	// The gateway's --workers: the worker, or the mock itself.
	workers := "openai+" + mock.url + "/v1?model=mock"
	if !r.cfg.LearnedAdmission {
		workers += "&max-batch=" + strconv.Itoa(r.maxStreams())
	}
	if !v.direct {
		args := []string{"worker", "--listen", "127.0.0.1:0", "--engine", "openai", "--upstream", mock.url + "/v1", "--models", "mock"}
		if r.cfg.ProfileDir != "" && !base {
			v.wDebug = freeAddr()
			args = append(args, "--debug-listen", v.wDebug)
		}
		if !r.cfg.LearnedAdmission && knowsFlag(ctx, v.bin, "worker", "max-batch") {
			args = append(args, "--max-batch", strconv.Itoa(r.maxStreams()))
		}
		var err error
		if v.worker, err = startProc(ctx, v.name+" worker", r.cfg.CPUsServers, v.bin, append(args, wargs...)...); err != nil {
			return err
		}
		workers = v.worker.addr()
	}
	const email, password = "bench@parley.invalid", "a long bench password"
	store := []string{"--data-dir", v.dir}
	for _, a := range [][]string{
		{"admin", "create-user", "--email", email, "--password", password, "--tier", "pro"},
		{"admin", "topup", "--email", email, "--usd", "1000000"},
	} {
		if out, err := exec.CommandContext(ctx, v.bin, append(a, store...)...).CombinedOutput(); err != nil {
			return fmt.Errorf("parley %s: %v: %s", strings.Join(a[:2], " "), err, out)
		}
	}
	key, err := exec.CommandContext(ctx, v.bin, "admin", "create-key", "--email", email, "--data-dir", v.dir).Output()
	if err != nil {
		return fmt.Errorf("parley admin create-key: %v", err)
	}
	v.key = strings.TrimSpace(string(key))
	args := []string{"serve", "--listen", "127.0.0.1:0", "--data-dir", v.dir, "--workers", workers, "--models-file", models}
	if knowsFlag(ctx, v.bin, "serve", "rate-limits") {
		// A release from before the request-rate limits has none to turn off.
		args = append(args, relayGatewayArgs...)
	}
	if r.cfg.ProfileDir != "" && !base {
		v.gDebug = freeAddr()
		args = append(args, "--debug-listen", v.gDebug)
	}
	if v.gateway, err = startProc(ctx, v.name+" gateway", r.cfg.CPUsServers, v.bin, append(args, gargs...)...); err != nil {
		return err
	}
	// Ready once the worker's load stream is up.
	deadline := time.Now().Add(30 * time.Second)
	for {
		res, err := http.Get(v.gateway.url + "/readyz")
		if err == nil {
			res.Body.Close()
			if res.StatusCode == http.StatusOK {
				return nil
			}
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("%s gateway not ready after 30 s\n%s", v.name, v.gateway.Logs())
		}
		time.Sleep(50 * time.Millisecond)
	}
}

func (v *variant) stop() {
	if v.gateway != nil {
		v.gateway.stop()
	}
	if v.worker != nil {
		v.worker.stop()
	}
}

// mockMaxOutput is mockCatalog's max_output_tokens.
const mockMaxOutput = 8192

// mockCatalog is the gateway's catalog: the mock's one model, priced so
// billing does its real work.
const mockCatalog = `models:
  - id: mock
    display_name: Mock upstream
    description: The relay benchmark's mock OpenAI-compatible upstream.
    context_window: 131072
    max_output_tokens: 8192 # mockMaxOutput
    input_price_nanos_per_million: 150000000
    output_price_nanos_per_million: 600000000
`

func raiseFileLimit() {
	var lim syscall.Rlimit
	if syscall.Getrlimit(syscall.RLIMIT_NOFILE, &lim) != nil {
		return
	}
	for _, n := range []uint64{1 << 20, 1 << 19, 1 << 18, lim.Max} {
		if n < lim.Cur {
			continue
		}
		if syscall.Setrlimit(syscall.RLIMIT_NOFILE, &syscall.Rlimit{Cur: n, Max: max(n, lim.Max)}) == nil {
			return
		}
	}
}

func freeAddr() string {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "127.0.0.1:0"
	}
	defer ln.Close()
	return ln.Addr().String()
}

func cpuCount() int {
	b, err := os.ReadFile("/proc/cpuinfo")
	if err != nil {
		return 0
	}
	return bytes.Count(b, []byte("\nprocessor")) + boolInt(bytes.HasPrefix(b, []byte("processor")))
}

func boolInt(b bool) int {
	if b {
		return 1
	}
	return 0
}

// pace is the prompt carrying a mock-pace directive.
func pace(delay time.Duration, tokens int) string {
	return fmt.Sprintf("Tell me about the rabbit. mock-pace delay=%s tokens=%d", delay, tokens)
}

// loadSample is one trial of one path (direct or a variant's relay).
type loadSample struct {
	answers, errors       int // answers: every request; ok = answers - errors
	firstErr              string
	errs                  errorTally
	ttft50, ttft99        time.Duration
	gap50, gap99          time.Duration
	cpuGateway, cpuWorker float64 // CPU seconds per 1,000 answers
	cpuMock, cpuClient    float64
	elapsed               time.Duration
}

// measure runs one load against target, taking the CPU time of the
// processes it uses.
func (r *relay) measure(ctx context.Context, client *loadClient, t streamTarget, body []byte, streams int, mock *proc, v *variant, profile string) loadSample {
	type pc struct {
		pid int
		dst *float64
	}
	var s loadSample
	ps := []pc{{mock.pid(), &s.cpuMock}, {0, &s.cpuClient}}
	if v != nil {
		ps = append(ps, pc{v.gateway.pid(), &s.cpuGateway})
	}
	if v != nil && v.worker != nil {
		ps = append(ps, pc{v.worker.pid(), &s.cpuWorker})
	}
	before := make([]float64, len(ps))
	for i, p := range ps {
		before[i], _ = cpuSeconds(p.pid)
	}
	var profiles sync.WaitGroup
	if profile != "" && v != nil && v.gDebug != "" {
		for _, dp := range []struct{ addr, name string }{{v.gDebug, "gateway"}, {v.wDebug, "worker"}} {
			if dp.addr == "" {
				continue
			}
			for _, kind := range []struct{ path, suffix string }{{"profile", ".pprof"}, {"allocs", "-allocs.pprof"}} {
				profiles.Go(func() {
					if err := fetchProfile(ctx, dp.addr, kind.path, r.cfg.ProfileSeconds, filepath.Join(r.cfg.ProfileDir, profile+"-"+dp.name+kind.suffix)); err != nil {
						r.progress("%s profile of the %s: %v", kind.path, dp.name, err)
					}
				})
			}
		}
	}
	st := r.count(client.load(ctx, t, body, streams, r.cfg.Answers))
	for i, p := range ps {
		after, _ := cpuSeconds(p.pid)
		// Per 1,000 successful answers (NaN, shown as "-", when none).
		*p.dst = (after - before[i]) / float64(st.answers-st.errors) * 1000
	}
	profiles.Wait()
	s.answers, s.errors, s.firstErr, s.elapsed, s.errs = st.answers, st.errors, st.firstErr, st.elapsed, st.errs
	s.ttft50, s.ttft99 = percentile(st.ttft, 0.5), percentile(st.ttft, 0.99)
	s.gap50, s.gap99 = percentile(st.gaps, 0.5), percentile(st.gaps, 0.99)
	return s
}

// fetchProfile writes a pprof profile of kind ("profile": CPU; "allocs":
// what was allocated over the same seconds, a delta; with seconds 0, a
// snapshot: "heap", "goroutine") to path.
func fetchProfile(ctx context.Context, addr, kind string, seconds int, path string) error {
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return err
	}
	url := fmt.Sprintf("http://%s/debug/pprof/%s", addr, kind)
	if seconds > 0 {
		url += fmt.Sprintf("?seconds=%d", seconds)
	}
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		return err
	}
	defer res.Body.Close()
	if res.StatusCode != http.StatusOK {
		return fmt.Errorf("HTTP %d", res.StatusCode)
	}
	data, err := io.ReadAll(res.Body)
	if err != nil {
		return err
	}
	return os.WriteFile(path, data, 0o644)
}

func (r *relay) loadRuns(ctx context.Context) error {
	mock, err := r.startMock(ctx)
	if err != nil {
		return err
	}
	defer mock.stop()
	vs := r.variants(ctx)
	defer func() {
		for _, v := range vs {
			v.stop()
		}
	}()
	for _, v := range vs {
		if err := r.start(ctx, v, mock); err != nil {
			return err
		}
	}
	maxStreams := slices.Max(r.cfg.Streams)
	client := newLoadClient(maxStreams, 1)
	defer client.close()
	direct := streamTarget{url: mock.url, model: "mock"}
	// Warm up every path: connections, caches, the heap.
	r.progress("warming up")
	for _, t := range append([]streamTarget{direct}, r.targets(vs)...) {
		r.count(client.load(ctx, t, t.body(pace(0, r.cfg.Tokens), r.cfg.Tokens+16), maxStreams, 4*maxStreams))
	}
	for _, delay := range r.cfg.TokenDelays {
		for _, streams := range r.cfg.Streams {
			body := direct.body(pace(delay, r.cfg.Tokens), r.cfg.Tokens+16)
			rows := map[string][]loadSample{}
			for trial := range r.cfg.Trials {
				if ctx.Err() != nil {
					return ctx.Err()
				}
				r.progress("tokens %v apart, %d streams, trial %d: direct", delay, streams, trial+1)
				rows["direct"] = append(rows["direct"], r.measure(ctx, client, direct, body, streams, mock, nil, ""))
				for _, v := range vs {
					profile := ""
					if trial == 0 && r.cfg.ProfileDir != "" {
						profile = fmt.Sprintf("%s-%v-c%d", profileName(v.name), delay, streams)
					}
					r.progress("tokens %v apart, %d streams, trial %d: %s", delay, streams, trial+1, v.name)
					t := r.gatewayTarget(v)
					rows[v.name] = append(rows[v.name], r.measure(ctx, client, t, t.body(pace(delay, r.cfg.Tokens), r.cfg.Tokens+16), streams, mock, v, profile))
				}
			}
			r.loadTable(delay, streams, vs, rows)
		}
	}
	return nil
}

func (r *relay) targets(vs []*variant) []streamTarget {
	var out []streamTarget
	for _, v := range vs {
		out = append(out, r.gatewayTarget(v))
	}
	return out
}

func medianOf[T int | float64 | time.Duration](samples []loadSample, f func(loadSample) T) T {
	v := make([]T, len(samples))
	for i, s := range samples {
		v[i] = f(s)
	}
	slices.Sort(v)
	return v[len(v)/2]
}

func (r *relay) loadTable(delay time.Duration, streams int, vs []*variant, rows map[string][]loadSample) {
	fmt.Fprintf(r.out, "tokens %v apart, %d streams, %d answers of %d tokens (ok and errors: all %d trials together; the figures: medians of the trials', each of its ok answers)\n", delay, streams, r.cfg.Answers, r.cfg.Tokens, r.cfg.Trials)
	for _, name := range append([]string{"direct"}, names(vs)...) {
		var all errorTally
		n := 0
		for _, s := range rows[name] {
			all.merge(&s.errs)
			n += s.answers
		}
		writeKinds(r.out, "  "+name+": ", all.list(), all.total, n)
	}
	tw := tabwriter.NewWriter(r.out, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "path\tok\terrors\tTTFT p50\tTTFT p99\tgap p50\tgap p99\tCPU-s/1k gateway\tworker\tgw+worker\tmock\tclient\t")
	d := rows["direct"]
	ms, plus := fmtMS, plusMS
	line := func(name string, s []loadSample, direct bool) {
		gw, wk := medianOf(s, func(x loadSample) float64 { return x.cpuGateway }), medianOf(s, func(x loadSample) float64 { return x.cpuWorker })
		cpu := func(x float64) string {
			if math.IsNaN(x) || math.IsInf(x, 0) {
				return "-"
			}
			return fmt.Sprintf("%.2f", x)
		}
		ok, errs := 0, 0
		for _, x := range s {
			ok, errs = ok+x.answers-x.errors, errs+x.errors
		}
		g, w, sum := cpu(gw), cpu(wk), cpu(medianOf(s, func(x loadSample) float64 { return x.cpuGateway + x.cpuWorker }))
		if name == "direct" {
			g, w, sum = "-", "-", "-"
		}
		if direct {
			w = "-"
		}
		if ok == 0 { // no figure without a success behind it
			fmt.Fprintf(tw, "%s\t%d\t%d\t-\t-\t-\t-\t-\t-\t-\t-\t-\t\n", name, ok, errs)
			return
		}
		fmt.Fprintf(tw, "%s\t%d\t%d\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t\n", name, ok, errs,
			ms(medianOf(s, func(x loadSample) time.Duration { return x.ttft50 })), ms(medianOf(s, func(x loadSample) time.Duration { return x.ttft99 })),
			ms(medianOf(s, func(x loadSample) time.Duration { return x.gap50 })), ms(medianOf(s, func(x loadSample) time.Duration { return x.gap99 })),
			g, w, sum, cpu(medianOf(s, func(x loadSample) float64 { return x.cpuMock })), cpu(medianOf(s, func(x loadSample) float64 { return x.cpuClient })))
	}
	line("direct", d, false)
	for _, v := range vs {
		line(v.name, rows[v.name], v.worker == nil)
	}
	okAll := func(s []loadSample) bool {
		for _, x := range s {
			if x.answers == x.errors {
				return false
			}
		}
		return true
	}
	for _, v := range vs {
		s := rows[v.name]
		if !okAll(s) || !okAll(d) {
			fmt.Fprintf(tw, "%s added\t\t\t-\t-\t\t-\t\t\t\t\t\t\n", v.name)
			continue
		}
		// Added latency: each trial's relay against the same trial's direct run.
		added := func(f func(loadSample) time.Duration) time.Duration {
			diff := make([]time.Duration, len(s))
			for i := range s {
				diff[i] = f(s[i]) - f(d[i])
			}
			slices.Sort(diff)
			return diff[len(diff)/2]
		}
		fmt.Fprintf(tw, "%s added (from the ok above)\t\t\t%s\t%s\t\t%s\t\t\t\t\t\t\n", v.name,
			plus(added(func(x loadSample) time.Duration { return x.ttft50 })), plus(added(func(x loadSample) time.Duration { return x.ttft99 })),
			plus(added(func(x loadSample) time.Duration { return x.gap99 })))
	}
	_ = tw.Flush()
	fmt.Fprintln(r.out)
}

func names(vs []*variant) []string {
	var out []string
	for _, v := range vs {
		out = append(out, v.name)
	}
	return out
}

// holdRun opens n streams at once at one token per HoldDelay, directly
// against a fresh mock and then through each variant's fresh worker and
// gateway, and reports the memory each process grew by per open stream.
func (r *relay) holdRun(ctx context.Context, n int) error {
	delay, holdFor := r.cfg.HoldDelay, r.cfg.HoldFor
	if delay <= 0 {
		delay = time.Second
	}
	if holdFor <= 0 {
		holdFor = 10 * time.Second
	}
	spread := 1
	if n > 10000 {
		spread = (n + 9999) / 10000 // 10,000 connections per source address
	}
	// Long enough to outlast the hold (the client closes them), within the
	// catalog's max_output_tokens, which the gateway holds a request to.
	tokens := min(int((time.Hour+holdFor)/delay), mockMaxOutput)
	type row struct {
		name                      string
		opened, errors            int
		firstErr                  string
		openTime                  time.Duration
		gap50, gap99, gapMax      time.Duration
		rssMock, rssWorker, rssGw float64 // bytes per stream
		stacksGw                  float64 // of rssGw, the goroutine stacks' bytes per stream (NaN: unread)
		noWorker                  bool
		thrWorker, thrGw          int
		errs                      errorTally
	}
	var rows []row
	paths := append([]*variant{nil}, r.variants(ctx)...)
	for _, v := range paths {
		name := "direct"
		if v != nil {
			name = v.name
		}
		r.progress("hold %d streams: %s", n, name)
		mock, t, err := r.startPath(ctx, v)
		if err != nil {
			return err
		}
		client := newLoadClient(n, spread)
		// A short warm-up, so the baseline memory is that of a process that
		// has served.
		r.count(client.load(ctx, t, t.body(pace(0, r.cfg.Tokens), r.cfg.Tokens+16), 16, 64))
		type pr struct {
			pid  int
			base int64
			dst  *float64
		}
		rw := row{name: name, noWorker: v == nil || v.worker == nil, stacksGw: math.NaN()}
		ps := []*pr{{pid: mock.pid(), dst: &rw.rssMock}}
		if v != nil {
			ps = append(ps, &pr{pid: v.gateway.pid(), dst: &rw.rssGw})
		}
		if v != nil && v.worker != nil {
			ps = append(ps, &pr{pid: v.worker.pid(), dst: &rw.rssWorker})
		}
		time.Sleep(time.Second)
		for _, p := range ps {
			p.base, _ = rssBytes(p.pid)
		}
		var stacksBase float64
		stacksErr := errors.New("no gateway")
		if v != nil {
			stacksBase, stacksErr = stackBytes(ctx, v.gateway.url)
		}
		body := t.body(pace(delay, tokens), tokens)
		res := client.hold(ctx, t, body, n, r.cfg.HoldOpening, func(open int) {
			r.progress("hold %d streams: %s: %d open; holding %v", n, name, open, holdFor)
			sleep(ctx, holdFor)
			for _, p := range ps {
				rss, _ := rssBytes(p.pid)
				*p.dst = float64(rss-p.base) / float64(max(open, 1))
			}
			if v != nil {
				rw.thrGw = threads(v.gateway.pid())
			}
			if stacksErr == nil {
				if b, err := stackBytes(ctx, v.gateway.url); err == nil {
					rw.stacksGw = (b - stacksBase) / float64(max(open, 1))
				} else {
					r.progress("the gateway's stacks: %v", err)
				}
			}
			if v != nil && v.worker != nil {
				rw.thrWorker = threads(v.worker.pid())
			}
			if v != nil && v.gDebug != "" {
				// What the held streams keep: the live heap and the
				// goroutines, while they are open.
				for _, kind := range []string{"heap", "goroutine"} {
					path := filepath.Join(r.cfg.ProfileDir, fmt.Sprintf("hold-%s-%d-gateway-%s.pprof", profileName(name), n, kind))
					query := kind
					if kind == "heap" {
						query += "?gc=1" // what is live now, not at the last collection
					}
					if err := fetchProfile(ctx, v.gDebug, query, 0, path); err != nil {
						r.progress("%s profile of the gateway: %v", kind, err)
					}
				}
				// A collection shrinks the stacks that use under a quarter
				// of their size: what they keep after one.
				if b, err := stackBytes(ctx, v.gateway.url); err == nil && stacksErr == nil {
					r.progress("hold %d streams: %s: the gateway's stacks after a collection: %.1f KB a stream", n, name, (b-stacksBase)/float64(max(open, 1))/1024)
				}
			}
		})
		client.close()
		r.requests += n
		r.errs.merge(&res.errs)
		rw.errs = res.errs
		rw.opened, rw.errors, rw.firstErr, rw.openTime = res.opened, res.errors, res.firstErr, res.openTime
		rw.gap50, rw.gap99 = percentile(res.gaps, 0.5), percentile(res.gaps, 0.99)
		if len(res.gaps) > 0 {
			rw.gapMax = res.gaps[len(res.gaps)-1]
		}
		rows = append(rows, rw)
		if v != nil {
			v.stop()
		}
		mock.stop()
	}
	fmt.Fprintf(r.out, "%d streams open at once, one token every %v, held %v after the last opened (figures of the open streams)\n", n, delay, holdFor)
	for _, rw := range rows {
		writeKinds(r.out, "  "+rw.name+": ", rw.errs.list(), rw.errs.total, n)
	}
	tw := tabwriter.NewWriter(r.out, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "path\topen\terrors\topening took\tgap p50\tgap p99\tgap max\tgap p99 added\tRSS/stream gateway\tof it stacks\tworker\tmock\tthreads gw/worker\t")
	kb := func(b float64) string {
		if math.IsNaN(b) {
			return "-"
		}
		return fmt.Sprintf("%.1f KB", b/1024)
	}
	for _, rw := range rows {
		if rw.opened == 0 { // no figure without an open stream behind it
			fmt.Fprintf(tw, "%s\t0\t%d\t-\t-\t-\t-\t-\t-\t-\t-\t-\t-\t\n", rw.name, rw.errors)
			continue
		}
		added, gw, stacks, wk, thr := "", "-", "-", "-", "-"
		if rw.name != "direct" {
			added = fmt.Sprintf("%+.1fms", float64(rw.gap99-rows[0].gap99)/1e6)
			gw, stacks, wk, thr = kb(rw.rssGw), kb(rw.stacksGw), kb(rw.rssWorker), fmt.Sprintf("%d/%d", rw.thrGw, rw.thrWorker)
			if rw.noWorker {
				wk, thr = "-", fmt.Sprintf("%d/-", rw.thrGw)
			}
		}
		fmt.Fprintf(tw, "%s\t%d\t%d\t%.1fs\t%.1fms\t%.1fms\t%.1fms\t%s\t%s\t%s\t%s\t%s\t%s\t\n", rw.name, rw.opened, rw.errors, rw.openTime.Seconds(),
			float64(rw.gap50)/1e6, float64(rw.gap99)/1e6, float64(rw.gapMax)/1e6, added, gw, stacks, wk, kb(rw.rssMock), thr)
	}
	_ = tw.Flush()
	fmt.Fprintln(r.out)
	if ctx.Err() != nil {
		return errors.Join(ctx.Err())
	}
	return nil
}

// profileName is a variant's name as it reads in a file name
// (relay[direct] → relay-direct).
func profileName(variant string) string {
	return strings.NewReplacer("[", "-", "]", "", ",", "-").Replace(variant)
}
