package openai

import (
	"bufio"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/parleyhq/parley/server/worker"
)

// upstreamLoad is what the upstream's Prometheus metrics say of its load.
type upstreamLoad struct {
	running, waiting int
	kvUsage          float64 // fraction of the KV cache in use; <0 unknown
	at               time.Time
}

// The gauges read, by server. Requests are summed over label sets (one per
// model); KV-cache use is the highest.
var (
	runningGauges = []string{"vllm:num_requests_running", "sglang:num_running_reqs"}
	waitingGauges = []string{"vllm:num_requests_waiting", "sglang:num_queue_reqs"}
	kvGauges      = []string{"vllm:gpu_cache_usage_perc", "vllm:kv_cache_usage_perc", "sglang:token_usage"}
)

// kvBasisPoints is the KV capacity reported when only the fraction in use is
// known: KV use then reads in basis points.
const kvBasisPoints = 10000

// Load reports the upstream's running and waiting requests from its metrics
// when they are fresh, else this engine's own in-flight count as running.
func (e *Engine) Load() worker.LoadReport {
	e.mu.Lock()
	defer e.mu.Unlock()
	r := worker.LoadReport{MaxBatch: e.cfg.MaxBatch, InFlight: e.inFlight, Running: e.inFlight}
	for _, m := range e.models {
		r.Models = append(r.Models, m.ID)
	}
	if u := e.upstream; u != nil && time.Since(u.at) < 3*e.cfg.MetricsInterval {
		r.Running, r.Waiting = u.running, u.waiting
		if u.kvUsage >= 0 {
			r.KVCapacityTokens, r.KVUsedTokens = kvBasisPoints, int64(u.kvUsage*kvBasisPoints)
		}
	}
	return r
}

// pollMetrics reads the upstream's metrics every interval until ctx ends. A
// server without them (404, or none of the gauges) is asked no more.
func (e *Engine) pollMetrics(ctx context.Context) {
	defer close(e.done)
	t := time.NewTicker(e.cfg.MetricsInterval)
	defer t.Stop()
	for {
		u, supported, err := e.readMetrics(ctx)
		if !supported {
			e.cfg.Logger.Info("upstream exposes no vLLM or SGLang load metrics; reporting in-flight requests", "url", e.cfg.MetricsURL)
			return
		}
		if err == nil {
			e.mu.Lock()
			if old := e.upstream; old == nil || old.running != u.running || old.waiting != u.waiting || old.kvUsage != u.kvUsage {
				e.notifyLocked()
			}
			e.upstream = u
			e.mu.Unlock()
		}
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}

func (e *Engine) readMetrics(ctx context.Context) (u *upstreamLoad, supported bool, err error) {
	ctx, cancel := context.WithTimeout(ctx, e.cfg.MetricsInterval)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, e.cfg.MetricsURL, nil)
	if err != nil {
		return nil, false, err
	}
	e.authorize(req)
	resp, err := e.cfg.HTTPClient.Do(req)
	if err != nil {
		return nil, true, err
	}
	defer resp.Body.Close()
	if resp.StatusCode == http.StatusNotFound {
		return nil, false, nil
	}
	if resp.StatusCode != http.StatusOK {
		return nil, true, &worker.UpstreamError{Status: resp.StatusCode}
	}
	u, found := parseMetrics(io.LimitReader(resp.Body, 8<<20))
	if !found {
		return nil, false, nil
	}
	u.at = time.Now()
	return u, true, nil
}

// parseMetrics reads the gauges it knows from the Prometheus text format.
func parseMetrics(r io.Reader) (*upstreamLoad, bool) {
	u := &upstreamLoad{kvUsage: -1}
	found := false
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for sc.Scan() {
		line := sc.Text()
		if line == "" || line[0] == '#' {
			continue
		}
		name, rest := line, ""
		if i := strings.IndexAny(line, "{ "); i >= 0 {
			name, rest = line[:i], line[i:]
		}
		if j := strings.LastIndexByte(rest, '}'); j >= 0 {
			rest = rest[j+1:]
		}
		fields := strings.Fields(rest)
		if len(fields) == 0 {
			continue
		}
		v, err := strconv.ParseFloat(fields[0], 64)
		if err != nil {
			continue
		}
		switch {
		case contains(runningGauges, name):
			u.running += int(v)
		case contains(waitingGauges, name):
			u.waiting += int(v)
		case contains(kvGauges, name):
			u.kvUsage = max(u.kvUsage, v)
		default:
			continue
		}
		found = true
	}
	return u, found
}

func contains(names []string, name string) bool {
	for _, n := range names {
		if n == name {
			return true
		}
	}
	return false
}

// slotProbe is where a kind of server says how many sequences it runs at
// once: llama.cpp's /props (total_slots), TGI's /info
// (max_concurrent_requests, past which it refuses) and SGLang's
// /get_server_info (max_running_requests, when set). vLLM says it nowhere;
// its metrics' waiting requests tell the gateways when it is full.
var slotProbes = []struct {
	server, path, field string
}{
	{"llama.cpp", "/props", "total_slots"},
	{"TGI", "/info", "max_concurrent_requests"},
	{"SGLang", "/get_server_info", "max_running_requests"},
}

// learnSlots asks the upstream for its sequence slots; 0 when it tells none.
func (e *Engine) learnSlots(ctx context.Context) (slots int, server string) {
	ctx, cancel := context.WithTimeout(ctx, 3*time.Second)
	defer cancel()
	root := strings.TrimSuffix(e.cfg.BaseURL, "/v1")
	for _, p := range slotProbes {
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, root+p.path, nil)
		if err != nil {
			return 0, ""
		}
		e.authorize(req)
		resp, err := e.cfg.HTTPClient.Do(req)
		if err != nil {
			if ctx.Err() != nil {
				return 0, ""
			}
			continue
		}
		var body map[string]any
		if resp.StatusCode == http.StatusOK {
			_ = json.NewDecoder(io.LimitReader(resp.Body, 1<<20)).Decode(&body)
		}
		resp.Body.Close()
		if n, ok := body[p.field].(float64); ok && n >= 1 && n <= 1<<20 {
			return int(n), p.server
		}
	}
	return 0, ""
}
