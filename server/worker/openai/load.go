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

// upstreamLoad is what the upstream says of its load: its Prometheus
// metrics, and llama.cpp's /slots.
type upstreamLoad struct {
	running, waiting int
	kvUsage          float64 // fraction of the KV cache in use; <0 unknown
	// kvUsed and kvCapacity are the KV cache in tokens, where the server
	// tells its size (0 capacity: unknown).
	kvUsed, kvCapacity int64
	// slots is the sequences the server runs at once, where its metrics or
	// /slots tell (0: unknown).
	slots int
	at    time.Time
}

// The gauges read, by server (vLLM, SGLang, llama.cpp). Requests are summed
// over label sets (one per model or engine); KV-cache use is the highest.
var (
	runningGauges = []string{"vllm:num_requests_running", "sglang:num_running_reqs", "llamacpp:requests_processing"}
	waitingGauges = []string{"vllm:num_requests_waiting", "sglang:num_queue_reqs", "llamacpp:requests_deferred"}
	kvGauges      = []string{"vllm:kv_cache_usage_perc", "vllm:gpu_cache_usage_perc", "sglang:token_usage"}
	// KV-cache size in tokens: SGLang's pool; vLLM's is the product of two
	// labels of its cache_config_info.
	kvCapacityGauges = []string{"sglang:max_total_num_tokens"}
	slotGauges       = []string{"sglang:max_running_requests"}
)

const vllmCacheInfo = "vllm:cache_config_info"

// kvBasisPoints is the KV capacity reported when only the fraction in use is
// known: KV use then reads in basis points.
const kvBasisPoints = 10000

// Load reports the upstream's running and waiting requests from its metrics
// (and llama.cpp's /slots) when they are fresh, else this engine's own
// in-flight requests: running up to MaxBatch, waiting beyond it. MaxBatch
// is --max-batch, else what the upstream told of its slots.
func (e *Engine) Load() worker.LoadReport {
	e.mu.Lock()
	defer e.mu.Unlock()
	r := worker.LoadReport{MaxBatch: e.maxBatch, InFlight: e.inFlight, Running: e.inFlight}
	for _, m := range e.models {
		r.Models = append(r.Models, m.ID)
	}
	u := e.upstream
	if r.MaxBatch == 0 && u != nil {
		r.MaxBatch = u.slots // what the upstream last told
	}
	if r.MaxBatch > 0 && r.Running > r.MaxBatch {
		// Past its slots the upstream queues what this engine sent.
		r.Running, r.Waiting = r.MaxBatch, r.Running-r.MaxBatch
	}
	if u != nil && time.Since(u.at) < 3*e.cfg.MetricsInterval {
		r.Running, r.Waiting = u.running, u.waiting
		switch {
		case u.kvCapacity > 0 && u.kvUsage < 0:
			r.KVCapacityTokens, r.KVUsedTokens = u.kvCapacity, u.kvUsed
		case u.kvCapacity > 0:
			r.KVCapacityTokens, r.KVUsedTokens = u.kvCapacity, int64(u.kvUsage*float64(u.kvCapacity))
		case u.kvUsage >= 0:
			r.KVCapacityTokens, r.KVUsedTokens = kvBasisPoints, int64(u.kvUsage*kvBasisPoints)
		}
	}
	return r
}

// logLearned says, once, what the first reading told of the upstream's
// size, and what is assumed where it told nothing.
func (e *Engine) logLearned(u *upstreamLoad) {
	switch {
	case e.cfg.MaxBatch > 0:
	case u.slots > 0:
		e.cfg.Logger.Info("upstream slots learned from its metrics", "slots", u.slots)
	default:
		e.cfg.Logger.Info("upstream metrics tell no slot count: reporting none (MaxBatch 0), so gateways admit until it reports requests waiting (set --max-batch to cap)")
	}
	if u.kvCapacity > 0 {
		e.cfg.Logger.Info("upstream KV cache size learned", "tokens", u.kvCapacity)
	} else if u.kvUsage >= 0 {
		e.cfg.Logger.Info("upstream tells its KV cache use as a fraction only: reporting it in basis points of 10000")
	}
}

func (e *Engine) get(ctx context.Context, url string) (*http.Response, error) {
	ctx, cancel := context.WithTimeout(ctx, e.cfg.MetricsInterval)
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		cancel()
		return nil, err
	}
	e.authorize(req)
	resp, err := e.cfg.HTTPClient.Do(req)
	if err != nil {
		cancel()
		return nil, err
	}
	resp.Body = cancelOnClose{resp.Body, cancel}
	return resp, nil
}

type cancelOnClose struct {
	io.ReadCloser
	cancel context.CancelFunc
}

func (c cancelOnClose) Close() error {
	err := c.ReadCloser.Close()
	c.cancel()
	return err
}

// unsupported is a status that says the server has no such endpoint (or has
// it turned off: llama.cpp answers 501 without --slots or --metrics).
func unsupported(status int) bool {
	return status == http.StatusNotFound || status == http.StatusNotImplemented
}

func (e *Engine) readMetrics(ctx context.Context, u *upstreamLoad) (supported bool, err error) {
	resp, err := e.get(ctx, e.cfg.MetricsURL)
	if err != nil {
		return true, err
	}
	defer resp.Body.Close()
	if unsupported(resp.StatusCode) {
		return false, nil
	}
	if resp.StatusCode != http.StatusOK {
		return true, &worker.UpstreamError{Status: resp.StatusCode}
	}
	if !parseMetrics(io.LimitReader(resp.Body, 8<<20), u) {
		return false, nil
	}
	return true, nil
}

// llamaSlot is one entry of llama.cpp's GET /slots.
type llamaSlot struct {
	NCtx          int64 `json:"n_ctx"`
	IsProcessing  bool  `json:"is_processing"`
	NPromptTokens int64 `json:"n_prompt_tokens"`
	NextToken     []struct {
		NDecoded int64 `json:"n_decoded"`
	} `json:"next_token"`
}

// readSlots reads llama.cpp's /slots (served with --slots): the slot count,
// the slots processing, and the KV cache in tokens (each slot's context;
// in use, the processing slots' prompt and output so far). It overrides the
// running count read from /metrics, which lags. A server run with
// --kv-unified gives every slot the whole cache as its n_ctx, so its
// capacity then reads slots times too large.
func (e *Engine) readSlots(ctx context.Context, u *upstreamLoad) (supported bool, err error) {
	resp, err := e.get(ctx, strings.TrimSuffix(e.cfg.BaseURL, "/v1")+"/slots")
	if err != nil {
		return true, err
	}
	defer resp.Body.Close()
	if unsupported(resp.StatusCode) {
		return false, nil
	}
	if resp.StatusCode != http.StatusOK {
		return true, &worker.UpstreamError{Status: resp.StatusCode}
	}
	var slots []llamaSlot
	if err := json.NewDecoder(io.LimitReader(resp.Body, 8<<20)).Decode(&slots); err != nil || len(slots) == 0 {
		return false, nil // not llama.cpp's shape: another server's /slots, or none
	}
	applySlots(u, slots)
	return true, nil
}

func applySlots(u *upstreamLoad, slots []llamaSlot) {
	u.slots = len(slots)
	u.running = 0
	u.kvCapacity, u.kvUsed, u.kvUsage = 0, 0, -1
	for _, s := range slots {
		u.kvCapacity += s.NCtx
		if s.IsProcessing {
			u.running++
			u.kvUsed += s.NPromptTokens
			if len(s.NextToken) > 0 {
				u.kvUsed += s.NextToken[0].NDecoded
			}
		}
	}
}

// parseMetrics reads the gauges it knows from the Prometheus text format
// into u; false when there were none.
func parseMetrics(r io.Reader, u *upstreamLoad) bool {
	found := false
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for sc.Scan() {
		line := sc.Text()
		if line == "" || line[0] == '#' {
			continue
		}
		name, labels, rest := line, "", ""
		if i := strings.IndexAny(line, "{ "); i >= 0 {
			name, rest = line[:i], line[i:]
		}
		if strings.HasPrefix(rest, "{") {
			if j := strings.LastIndexByte(rest, '}'); j >= 0 {
				labels, rest = rest[1:j], rest[j+1:]
			}
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
		case contains(kvCapacityGauges, name):
			u.kvCapacity = max(u.kvCapacity, int64(v))
		case contains(slotGauges, name):
			u.slots = max(u.slots, int(v))
		case name == vllmCacheInfo:
			l := parseLabels(labels)
			block, _ := strconv.ParseInt(l["block_size"], 10, 64)
			blocks, _ := strconv.ParseInt(l["num_gpu_blocks"], 10, 64)
			if block > 0 && blocks > 0 {
				u.kvCapacity = max(u.kvCapacity, block*blocks)
			}
			continue // an info gauge: not load by itself
		default:
			continue
		}
		found = true
	}
	return found
}

// parseLabels reads a Prometheus label set (without its braces).
func parseLabels(s string) map[string]string {
	out := map[string]string{}
	for s != "" {
		eq := strings.IndexByte(s, '=')
		if eq < 0 || eq+1 >= len(s) || s[eq+1] != '"' {
			break
		}
		key := strings.TrimSpace(s[:eq])
		s = s[eq+2:]
		var val strings.Builder
		i := 0
		for ; i < len(s) && s[i] != '"'; i++ {
			if s[i] == '\\' && i+1 < len(s) {
				i++
			}
			val.WriteByte(s[i])
		}
		out[key] = val.String()
		if i >= len(s) {
			break
		}
		s = strings.TrimLeft(s[i+1:], ", ")
	}
	return out
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
