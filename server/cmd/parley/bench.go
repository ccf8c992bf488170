package main

import (
	"context"
	"fmt"
	"io"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/parleyhq/parley/server/bench"
	"github.com/parleyhq/parley/server/obs"
)

// benchCmd runs the load generator against a gateway or a worker, or
// (bench relay) the relay benchmark, or (bench mock) its mock upstream, or
// (bench users) the users profile, or (bench proxy) the relay benchmark's
// floor.
func benchCmd(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	if len(args) > 0 {
		switch args[0] {
		case "relay":
			return benchRelay(ctx, args[1:], stdout, stderr)
		case "mock":
			return benchMock(ctx, args[1:], stdout, stderr)
		case "proxy":
			return benchProxy(ctx, args[1:], stdout, stderr)
		case "users":
			return benchUsers(ctx, args[1:], stdout, stderr)
		}
	}
	fs := newFlagSet("bench")
	var cfg bench.Config
	fs.StringVar(&cfg.URL, "url", "http://127.0.0.1:8080", "base URL of the gateway or worker")
	fs.StringVar(&cfg.Protocol, "protocol", "connect", "connect, grpc, grpc-web or openai-sse")
	fs.StringVar(&cfg.Target, "target", "gateway", "gateway, or worker to measure a worker directly (the floor)")
	fs.IntVar(&cfg.Concurrency, "concurrency", 10, "requests in flight at once")
	fs.IntVar(&cfg.Requests, "requests", 1000, "requests in all (0: until --duration)")
	fs.DurationVar(&cfg.Duration, "duration", time.Minute, "cap on the run's length")
	fs.BoolVar(&cfg.Stream, "stream", true, "stream responses")
	fs.StringVar(&cfg.APIKey, "api-key", "", "API key for a gateway, or the worker token with --target worker (or PARLEY_API_KEY)")
	fs.StringVar(&cfg.Model, "model", "sim-small", "model to ask for")
	fs.IntVar(&cfg.MaxTokens, "max-tokens", 50, "max output tokens per request")
	fs.StringVar(&cfg.Prompt, "prompt", "Tell me a story about a rabbit with a pocket watch.", "the user message")
	quiet := fs.Bool("quiet", false, "no progress line")
	maxErrors := fs.Float64("max-error-rate", 0, "share of requests that may fail (0 to 1) before bench exits non-zero")
	if err := parseFlags(fs, nil, args, stdout); err != nil {
		return err
	}
	cfg.URL = strings.TrimRight(cfg.URL, "/")
	if !*quiet {
		cfg.Progress = stderr
	}
	report, err := bench.Run(ctx, cfg)
	if err != nil {
		return err
	}
	fmt.Fprintf(stdout, "parley bench: %s %s %s, concurrency %d, stream %v, max tokens %d\n%s\n",
		cfg.Target, cfg.URL, cfg.Protocol, cfg.Concurrency, cfg.Stream, cfg.MaxTokens, report)
	return report.Check(*maxErrors)
}

// benchRelay runs the relay benchmark: its own mock upstream, worker and
// gateway processes, streams through them and directly, one table per run.
func benchRelay(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := newFlagSet("bench relay")
	var cfg bench.RelayConfig
	fs.Func("token-delay", "comma-separated delays between the mock's tokens, one load run each (default 20ms)", durationList(&cfg.TokenDelays))
	fs.Func("streams", "comma-separated numbers of streams in flight, one load run each (default 50)", intList(&cfg.Streams))
	fs.IntVar(&cfg.Tokens, "tokens", 50, "tokens per answer")
	fs.IntVar(&cfg.Answers, "answers", 1000, "answers per load run (0: no load runs)")
	fs.IntVar(&cfg.Trials, "trials", 3, "trials of each run; medians are reported")
	fs.Func("hold", "comma-separated numbers of streams to hold open at once (RSS per open stream)", intList(&cfg.Hold))
	fs.DurationVar(&cfg.HoldDelay, "hold-delay", time.Second, "delay between the tokens of held streams")
	fs.DurationVar(&cfg.HoldFor, "hold-for", 10*time.Second, "how long held streams stay open after the last has opened")
	fs.IntVar(&cfg.HoldOpening, "hold-opening", 1000, "held streams waiting for their first token at once while opening")
	fs.Func("burst", "comma-separated numbers of streams to open in a burst (time to first token while they open)", intList(&cfg.Burst))
	fs.Float64Var(&cfg.BurstRate, "burst-rate", 1000, "streams opened a second in a burst")
	fs.DurationVar(&cfg.BurstDelay, "burst-delay", 100*time.Millisecond, "delay between the tokens of a burst's streams")
	fs.IntVar(&cfg.BurstBusy, "burst-busy", 0, "also run each burst beside this many processes spinning on a CPU each (other work on the box)")
	fs.StringVar(&cfg.Bin, "bin", "", "parley binary run as worker and gateway (default: this one)")
	fs.StringVar(&cfg.BaselineBin, "baseline-bin", "", "a second parley binary measured in the same run, e.g. the previous release")
	fs.Func("paths", "comma-separated relay paths to measure: worker (gateway → worker → mock), direct (gateway → mock) (default both); proxy adds the floor: a plain reverse proxy → mock", func(v string) error {
		cfg.Paths = nil
		for _, p := range strings.Split(v, ",") {
			if p = strings.TrimSpace(p); p != "" {
				cfg.Paths = append(cfg.Paths, p)
			}
		}
		return nil
	})
	fs.StringVar(&cfg.CPUsServers, "cpus-servers", "", "pin worker and gateway to these CPUs (taskset list, e.g. 1)")
	fs.StringVar(&cfg.CPUsLoad, "cpus-load", "", "pin the mock and the load client to these CPUs (e.g. 0)")
	fs.Func("worker-args", "extra flags for the worker, space-separated", fieldsOf(&cfg.WorkerArgs))
	fs.Func("gateway-args", "extra flags for the gateway, space-separated", fieldsOf(&cfg.GatewayArgs))
	fs.Func("baseline-worker-args", "extra flags for the baseline's worker (default: --worker-args)", fieldsOf(&cfg.BaselineWorkerArgs))
	fs.Func("baseline-gateway-args", "extra flags for the baseline's gateway (default: --gateway-args)", fieldsOf(&cfg.BaselineGatewayArgs))
	fs.StringVar(&cfg.ProfileDir, "profile", "", "directory for CPU and allocation profiles of gateway and worker, taken in each load run's first trial, and of the gateway's heap and goroutines while streams are held")
	fs.IntVar(&cfg.ProfileSeconds, "profile-seconds", 10, "length of each CPU profile")
	fs.StringVar(&cfg.API, "api", "openai", "what the client streams from the gateways: openai (/v1/chat/completions, SSE), connect (ChatService.CompleteStream over the Connect protocol, as the SDKs) or grpc-web (the same over gRPC-Web, as the web app)")
	fs.BoolVar(&cfg.LearnedAdmission, "learned-admission", false, "give workers and direct upstreams no max-batch: admission by the limit learned from queueing, the default for an upstream without load metrics")
	fs.Float64Var(&cfg.MaxErrorRate, "max-error-rate", 0, "share of requests that may fail (0 to 1) before bench relay exits non-zero")
	quiet := fs.Bool("quiet", false, "no progress lines")
	if err := parseFlags(fs, nil, args, stdout); err != nil {
		return err
	}
	if len(cfg.TokenDelays) == 0 {
		cfg.TokenDelays = []time.Duration{20 * time.Millisecond}
	}
	if len(cfg.Streams) == 0 {
		cfg.Streams = []int{50}
	}
	if !*quiet {
		cfg.Progress = stderr
	}
	return bench.RunRelay(ctx, cfg, stdout)
}

// benchUsers runs the users profile: simulated people signing in, reading
// their conversations and chatting with think time, against the gateways.
func benchUsers(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := newFlagSet("bench users")
	var cfg bench.UsersConfig
	urls := fs.String("url", "http://127.0.0.1:8080", "comma-separated base URLs of the gateways (user i keeps to the i-th, modulo)")
	fs.IntVar(&cfg.Users, "users", 100, "people simulated at once")
	fs.DurationVar(&cfg.Ramp, "ramp", 30*time.Second, "their sign-ins spread evenly over this long")
	fs.DurationVar(&cfg.Duration, "duration", 2*time.Minute, "the run's length")
	fs.DurationVar(&cfg.Think, "think", 20*time.Second, "mean time a person takes between an answer and their next message")
	fs.StringVar(&cfg.Model, "model", "sim-small", "model to ask for")
	fs.IntVar(&cfg.MaxTokens, "max-tokens", 60, "max output tokens per message")
	fs.IntVar(&cfg.AttachEvery, "attach-every", 10, "every Nth message of a person carries a small text document (0: never)")
	fs.IntVar(&cfg.NewChatEvery, "new-chat-every", 5, "messages per conversation before a person starts a new one")
	fs.StringVar(&cfg.Domain, "domain", "bench.example", "accounts are user1@DOMAIN … userN@DOMAIN (signed up when missing)")
	fs.StringVar(&cfg.Password, "password", "bench-password-0", "the accounts' password")
	quiet := fs.Bool("quiet", false, "no progress line")
	maxErrors := fs.Float64("max-error-rate", 0, "share of calls that may fail (0 to 1) before bench users exits non-zero")
	if err := parseFlags(fs, nil, args, stdout); err != nil {
		return err
	}
	for _, u := range strings.Split(*urls, ",") {
		if u = strings.TrimRight(strings.TrimSpace(u), "/"); u != "" {
			cfg.URLs = append(cfg.URLs, u)
		}
	}
	if !*quiet {
		cfg.Progress = stderr
	}
	report, err := bench.RunUsers(ctx, cfg)
	if err != nil {
		return err
	}
	fmt.Fprintf(stdout, "parley bench users: %d gateways, think %s, max tokens %d, a document every %d messages\n%s\n",
		len(cfg.URLs), cfg.Think, cfg.MaxTokens, cfg.AttachEvery, report)
	return report.Check(*maxErrors)
}

// benchMock serves the relay benchmark's mock OpenAI-compatible upstream.
func benchMock(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := newFlagSet("bench mock")
	var cfg bench.MockConfig
	listen := fs.String("listen", "127.0.0.1:0", "address to listen on")
	fs.StringVar(&cfg.Model, "model", "mock", "the model served")
	fs.DurationVar(&cfg.TokenDelay, "token-delay", 20*time.Millisecond, "delay before each token (a prompt's \"mock-pace delay=D tokens=N\" overrides it)")
	fs.IntVar(&cfg.Tokens, "tokens", 50, "tokens per answer")
	if err := parseFlags(fs, nil, args, stdout); err != nil {
		return err
	}
	return bench.RunMock(ctx, *listen, cfg, obs.NewLogger(stderr, "info"))
}

// benchProxy serves the relay benchmark's floor: a plain reverse proxy.
func benchProxy(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := newFlagSet("bench proxy")
	listen := fs.String("listen", "127.0.0.1:0", "address to listen on")
	upstream := fs.String("upstream", "", "base URL every request is passed to (e.g. the mock's http://127.0.0.1:PORT)")
	if err := parseFlags(fs, nil, args, stdout); err != nil {
		return err
	}
	u, err := url.Parse(*upstream)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return fmt.Errorf("bench proxy: --upstream %q: want an http:// or https:// URL", *upstream)
	}
	return bench.RunProxy(ctx, *listen, u, obs.NewLogger(stderr, "info"))
}

func durationList(dst *[]time.Duration) func(string) error {
	return func(s string) error {
		*dst = nil
		for _, f := range strings.Split(s, ",") {
			d, err := time.ParseDuration(strings.TrimSpace(f))
			if err != nil {
				return err
			}
			*dst = append(*dst, d)
		}
		return nil
	}
}

func intList(dst *[]int) func(string) error {
	return func(s string) error {
		*dst = nil
		for _, f := range strings.Split(s, ",") {
			n, err := strconv.Atoi(strings.TrimSpace(f))
			if err != nil || n <= 0 {
				return fmt.Errorf("want positive integers, got %q", f)
			}
			*dst = append(*dst, n)
		}
		return nil
	}
}

func fieldsOf(dst *[]string) func(string) error {
	return func(s string) error {
		*dst = append([]string{}, strings.Fields(s)...)
		return nil
	}
}
