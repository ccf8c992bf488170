package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"os"
	"strings"
	"time"

	"github.com/parleyhq/parley/server/bench"
	"github.com/parleyhq/parley/server/config"
)

// benchCmd runs the load generator against a gateway or a worker.
func benchCmd(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("bench", flag.ContinueOnError)
	var cfg bench.Config
	fs.StringVar(&cfg.URL, "url", "http://127.0.0.1:8080", "base URL of the gateway or worker")
	fs.StringVar(&cfg.Protocol, "protocol", "connect", "connect, grpc, grpc-web or openai-sse")
	fs.StringVar(&cfg.Target, "target", "gateway", "gateway, or worker to measure a worker directly (the floor)")
	fs.IntVar(&cfg.Concurrency, "concurrency", 10, "requests in flight at once")
	fs.IntVar(&cfg.Requests, "requests", 1000, "requests in all (0: until --duration)")
	fs.DurationVar(&cfg.Duration, "duration", time.Minute, "cap on the run's length")
	fs.BoolVar(&cfg.Stream, "stream", true, "stream responses")
	fs.StringVar(&cfg.APIKey, "api-key", "", "API key for a gateway (or PARLEY_API_KEY)")
	fs.StringVar(&cfg.Model, "model", "sim-small", "model to ask for")
	fs.IntVar(&cfg.MaxTokens, "max-tokens", 50, "max output tokens per request")
	fs.StringVar(&cfg.Prompt, "prompt", "Tell me a story about a rabbit with a pocket watch.", "the user message")
	quiet := fs.Bool("quiet", false, "no progress line")
	if err := config.Parse(fs, args, os.Getenv); err != nil {
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
	return nil
}
