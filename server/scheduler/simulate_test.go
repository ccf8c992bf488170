package scheduler_test

import (
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/parleyhq/parley/server/llm"
	"github.com/parleyhq/parley/server/scheduler"
	"github.com/parleyhq/parley/server/worker/sim"
)

// TestSimulation compares the scheduling policies on 8 in-process sim workers
// serving multi-turn conversations with skewed lengths: prefix-cache hit rate,
// time to first token and throughput, in simulated time. It is slow, so it runs
// only with PARLEY_SIMULATE=1 (PARLEY_SIMULATE_CONVERSATIONS sets the count,
// default 400).
func TestSimulation(t *testing.T) {
	if os.Getenv("PARLEY_SIMULATE") == "" {
		t.Skip("set PARLEY_SIMULATE=1 to run the scheduling simulation")
	}
	conversations := 400
	if n := os.Getenv("PARLEY_SIMULATE_CONVERSATIONS"); n != "" {
		fmt.Sscan(n, &conversations)
	}
	// PARLEY_SIMULATE_RATE: new conversations per simulated second (default
	// 1: light load; about 20 saturates the 8 workers).
	if r := os.Getenv("PARLEY_SIMULATE_RATE"); r != "" {
		fmt.Sscan(r, &arrivalRate)
	}
	if ts := os.Getenv("PARLEY_SIMULATE_TIME_SCALE"); ts != "" {
		fmt.Sscan(ts, &timeScale)
	}
	policies := []scheduler.Policy{scheduler.PolicyAffinity, scheduler.PolicyRoundRobin, scheduler.PolicyLeastLoaded}
	if p := os.Getenv("PARLEY_SIMULATE_POLICY"); p != "" {
		policies = []scheduler.Policy{scheduler.Policy(p)}
	}
	for _, p := range policies {
		r := simulate(t, p, conversations)
		t.Logf("%-13s hit rate %5.1f%%  TTFT p50 %6.0f ms  p90 %6.0f ms  p99 %6.0f ms  %6.0f tokens/s  (%d requests, %d failed)",
			p, 100*r.hitRate, r.p50, r.p90, r.p99, r.tokensPerSec, r.requests, r.failed)
	}
}

type simResult struct {
	hitRate, p50, p90, p99, tokensPerSec float64
	requests, failed                     int
}

// timeScale: one simulated second is 50 ms of real time by default
// (PARLEY_SIMULATE_TIME_SCALE); arrivalRate: conversations per simulated second.
var timeScale, arrivalRate = 0.05, 1.0

func simulate(t *testing.T, policy scheduler.Policy, conversations int) simResult {
	cfg := scheduler.Config{Policy: policy, MaxQueueWait: time.Minute, QueueLimit: 100000}
	// PARLEY_SIMULATE_BALANCE="abs,rel" tries another affinity guard.
	if b := os.Getenv("PARLEY_SIMULATE_BALANCE"); b != "" {
		fmt.Sscanf(b, "%d,%g", &cfg.BalanceAbs, &cfg.BalanceRel)
	}
	s, err := scheduler.New(cfg, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	for i := range 8 {
		s.AddWorker(fmt.Sprint("sim-", i), sim.New(sim.Config{Models: []string{"sim-small"}, TimeScale: timeScale, KVCapacityTokens: 1 << 18}))
	}
	rng := rand.New(rand.NewPCG(1, 2))
	var (
		mu                 sync.Mutex
		ttfts              []float64
		prompt, cached     int
		completion, failed int
		wg                 sync.WaitGroup
	)
	start := time.Now()
	arrival := time.Duration(0)
	for c := range conversations {
		// Skewed: most conversations are short, a few run long.
		turns := 1 + int(rng.ExpFloat64()*3)
		turns = min(turns, 12)
		arrival += time.Duration(rng.ExpFloat64() * float64(time.Second) * timeScale / arrivalRate) // Poisson arrivals
		at := arrival
		seed := rng.Uint64()
		wg.Add(1)
		go func() {
			defer wg.Done()
			time.Sleep(at)
			crng := rand.New(rand.NewPCG(seed, 7))
			msgs := []llm.ChatMessage{{Role: "system", Parts: []llm.Part{{Text: document(crng, 600)}}}}
			for turn := range turns {
				msgs = append(msgs, llm.ChatMessage{Role: "user", Parts: []llm.Part{{Text: document(crng, 40)}}})
				var answer strings.Builder
				sent := time.Now()
				var first time.Duration
				res, err := s.Generate(context.Background(), &llm.Job{
					Request:     llm.Request{Model: "sim-small", Messages: msgs, MaxTokens: 120, Seed: ptr(int64(turn))},
					AffinityKey: fmt.Sprint("conv-", c),
				}, func(d llm.Delta) error {
					text := d.Text
					if first == 0 {
						first = time.Since(sent)
					}
					answer.WriteString(text)
					return nil
				})
				mu.Lock()
				if err != nil {
					failed++
					mu.Unlock()
					return
				}
				ttfts = append(ttfts, first.Seconds()/timeScale*1000)
				prompt += res.Usage.PromptTokens
				cached += res.Usage.CachedTokens
				completion += res.Usage.CompletionTokens
				mu.Unlock()
				msgs = append(msgs, llm.ChatMessage{Role: "assistant", Parts: []llm.Part{{Text: answer.String()}}})
				time.Sleep(time.Duration(crng.ExpFloat64() * float64(time.Second) * timeScale)) // the person reads and types
			}
		}()
	}
	wg.Wait()
	elapsed := time.Since(start).Seconds() / timeScale
	slices.Sort(ttfts)
	q := func(p float64) float64 { return ttfts[min(len(ttfts)-1, int(p*float64(len(ttfts))))] }
	return simResult{
		hitRate: float64(cached) / float64(max(prompt, 1)), p50: q(0.5), p90: q(0.9), p99: q(0.99),
		tokensPerSec: float64(completion) / elapsed, requests: len(ttfts), failed: failed,
	}
}

var words = strings.Fields(`the a rabbit queen hatter tea party garden door key small large curious
alice said thought went looked again very quite little great time way never much voice head
round long began nothing another moment everything dream court king card white red croquet`)

func document(rng *rand.Rand, n int) string {
	var b strings.Builder
	for i := range n {
		if i > 0 {
			b.WriteByte(' ')
		}
		b.WriteString(words[rng.IntN(len(words))])
	}
	return b.String()
}

func ptr[T any](v T) *T { return &v }
