package openai

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"net/http"
	"time"

	"github.com/parleyhq/parley/server/llm"
	"github.com/parleyhq/parley/server/worker"
)

// Open returns an engine for cfg at once, as a gateway's direct upstream
// (`--workers openai+http://HOST:PORT/v1`): it does not wait for the
// upstream. It learns the upstream's models (unless cfg names them) and
// slots in the background, asking again with back-off until the upstream
// answers, and reports itself live (worker.Liveness) while the upstream
// answers its polls, so the scheduler routes around an upstream that is down
// as it does around a worker whose load stream broke. Close stops it.
func Open(cfg Config) (*Engine, error) {
	e, err := newEngine(cfg)
	if err != nil {
		return nil, err
	}
	e.direct = true
	if len(e.cfg.Models) > 0 {
		e.setModels(e.cfg.Models)
	}
	e.start()
	return e, nil
}

var _ worker.Liveness = (*Engine)(nil)

// Live reports whether the upstream answers: always, for an engine from New
// (its worker's health is its own); for one from Open, since its last poll
// answered, until a connection is refused or three polls in a row fail.
func (e *Engine) Live() bool {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.live
}

// LastError is why an engine from Open is not live, or nil.
func (e *Engine) LastError() error {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.liveErr
}

// deadAfter is how many polls in a row may fail (time out, or answer a
// server error) before an upstream is taken for down; a refused connection
// takes it down at once.
const deadAfter = 3

// watch follows the upstream every MetricsInterval until ctx ends: its
// Prometheus metrics and llama.cpp's /slots, for its load (an endpoint the
// server lacks — 404, 501, or none of the known gauges — is asked no more).
// An engine from New stops when the upstream has neither; one from Open
// first learns the models and slots, then goes on with the cheapest call
// every server has (GET /models) as its heartbeat, and keeps its liveness.
func (e *Engine) watch(ctx context.Context) {
	defer close(e.done)
	if e.direct && !e.discover(ctx) {
		return
	}
	t := time.NewTicker(e.cfg.MetricsInterval)
	defer t.Stop()
	metricsOn, slotsOn := e.cfg.MetricsURL != "-", e.cfg.MetricsURL != "-"
	logged, failures := false, 0
	for {
		if !metricsOn && !slotsOn && !e.direct {
			break
		}
		u := &upstreamLoad{kvUsage: -1}
		fresh, answered := false, false
		var lastErr error
		if metricsOn {
			supported, err := e.readMetrics(ctx, u)
			metricsOn = supported
			fresh = supported && err == nil
			answered, lastErr = answered || !failed(err), err
		}
		if slotsOn {
			supported, err := e.readSlots(ctx, u)
			slotsOn = supported
			fresh = fresh || (supported && err == nil)
			if answered = answered || !failed(err); err != nil {
				lastErr = err
			}
		}
		if e.direct && !metricsOn && !slotsOn && !answered {
			err := e.heartbeat(ctx)
			answered, lastErr = !failed(err), err
		}
		if fresh {
			u.at = time.Now()
			e.mu.Lock()
			if old := e.upstream; old == nil || old.running != u.running || old.waiting != u.waiting ||
				old.kvUsage != u.kvUsage || old.kvUsed != u.kvUsed || old.slots != u.slots {
				e.notifyLocked()
			}
			e.upstream = u
			e.mu.Unlock()
			if !logged {
				logged = true
				e.logLearned(u)
			}
		}
		if ctx.Err() != nil {
			return
		}
		switch {
		case !e.direct:
		case answered:
			failures = 0
			e.setLive(true, nil)
		case llm.LocalFault(lastErr):
			// This process could not make the poll (out of descriptors):
			// nothing was learnt about the upstream.
			e.cfg.Logger.Warn("upstream not polled: this process is short of resources", "err", lastErr)
		default:
			if failures++; failures >= deadAfter || refused(lastErr) {
				e.setLive(false, lastErr)
			}
		}
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
	e.cfg.Logger.Info("upstream exposes no vLLM, SGLang or llama.cpp load metrics nor llama.cpp /slots; reporting in-flight requests", "url", e.cfg.MetricsURL)
}

// discover asks the upstream for its models (unless configured) and slots,
// again with jittered back-off (100 ms doubling to 5 s) until it answers;
// false when ctx ended first.
func (e *Engine) discover(ctx context.Context) bool {
	backoff := 100 * time.Millisecond
	for {
		var err error
		if len(e.Models()) == 0 {
			var ids []string
			if ids, err = e.listModels(ctx); err == nil {
				e.setModels(ids)
			}
		} else {
			err = e.heartbeat(ctx)
		}
		if ctx.Err() != nil {
			return false
		}
		if err == nil {
			e.learnMaxBatch(ctx)
			e.setLive(true, nil)
			return true
		}
		e.setLive(false, err)
		select {
		case <-ctx.Done():
			return false
		case <-time.After(backoff/2 + rand.N(backoff/2+1)):
		}
		backoff = min(2*backoff, 5*time.Second)
	}
}

// heartbeat is GET {BaseURL}/models: any answer but a server error is one.
func (e *Engine) heartbeat(ctx context.Context) error {
	resp, err := e.get(ctx, e.cfg.BaseURL+"/models")
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 1<<20))
	if resp.StatusCode >= http.StatusInternalServerError {
		return &worker.UpstreamError{Status: resp.StatusCode}
	}
	return nil
}

// failed says whether a poll's error means the upstream did not answer
// well: no answer at all, or a server error.
func failed(err error) bool {
	if err == nil {
		return false
	}
	var ue *worker.UpstreamError
	return !errors.As(err, &ue) || ue.Status >= http.StatusInternalServerError
}

// refused says whether err is a failure to connect: nothing listens there.
func refused(err error) bool {
	var op *net.OpError
	return errors.As(err, &op) && op.Op == "dial"
}

// setLive records the upstream's liveness, logging and telling the
// scheduler when it changes.
func (e *Engine) setLive(live bool, err error) {
	e.mu.Lock()
	was := e.live
	e.live, e.liveErr = live, err
	if was != live {
		e.notifyLocked()
	}
	e.mu.Unlock()
	switch {
	case live && !was:
		e.cfg.Logger.Info("upstream connected", "models", fmt.Sprint(modelIDs(e.Models())))
	case !live && was:
		e.cfg.Logger.Warn("upstream lost", "err", err)
	}
}

func modelIDs(models []worker.ModelInfo) []string {
	ids := make([]string, len(models))
	for i, m := range models {
		ids[i] = m.ID
	}
	return ids
}
