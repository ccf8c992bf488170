package scheduler

import (
	"context"
	"errors"
	"slices"
	"strconv"
	"time"

	"github.com/parleyhq/parley/server/llm"
	"github.com/parleyhq/parley/server/worker"
)

// member is one worker as the scheduler sees it. Its fields are guarded by the
// scheduler's lock.
type member struct {
	name   string // host:port, or the name given to AddWorker
	pool   *pool
	target string // the configured address it was resolved from; "" for AddWorker
	engine worker.Engine
	hash   uint64 // of name, for rendezvous hashing
	stop   chan struct{}
	done   chan struct{}
	dialed bool // the scheduler dialed it and closes it

	live         bool
	models       []string
	report       worker.LoadReport
	capacity     int
	slots        int   // capacity without the WorkerQueue places: what it runs at once
	inflight     int   // generations this gateway runs on it now
	lastBusy     int64 // Unix nanoseconds it last ran something, as far as this gateway saw (scale.go)
	failures     int
	ejectedUntil int64 // Unix nanoseconds; the worker is out until then
	everLive     bool  // it has been connected at least once
	added        int64 // Unix nanoseconds; jobs may wait for its first connection for ConnectGrace
	assumed      bool  // the log says what capacity was assumed for it
	// adaptive is set while the worker reports no batch size (and no
	// DefaultCapacity is configured): its admission limit by measured TTFT.
	adaptive bool
	limit    limiter
}

// mayServe reports whether m serves model, or might: it has not connected
// and said which models it serves yet.
func (m *member) mayServe(model string) bool {
	return slices.Contains(m.models, model) || (!m.live && len(m.models) == 0)
}

// load is the worker's sequences running and waiting, from its last report or
// from this gateway's own count when that is higher: reports lag behind picks.
func (m *member) load() int {
	return max(m.report.Running+m.report.Waiting, m.inflight)
}

func (m *member) close() {
	close(m.stop)
	<-m.done
	if c, ok := m.engine.(interface{ Close() }); ok && m.dialed {
		c.Close()
	}
}

// State is a worker's state as the gateway sees it.
type State string

// The states of a worker.
const (
	StateReady      State = "READY"
	StateEjected    State = "EJECTED"
	StateConnecting State = "CONNECTING"
)

// WorkerStatus is one worker as AdminService.ListWorkers shows it.
type WorkerStatus struct {
	// Address is host:port (or the AddWorker name); Target the configured
	// address or DNS name it came from.
	Address, Target string
	// WorkerID is the id the worker reports for itself, when it has.
	WorkerID string
	Models   []string
	State    State
	// Pool is the worker pool it belongs to.
	Pool string
	// Load is the worker's last report; InFlight this gateway's generations on it.
	Load     worker.LoadReport
	InFlight int
	// AdmissionLimit is the generations this gateway admits to it at once
	// when it reports no batch size and its measured queueing capped it
	// (0: no cap).
	AdmissionLimit int
	// EjectedUntil is set while State is StateEjected.
	EjectedUntil        time.Time
	ConsecutiveFailures int
}

// Workers lists the workers, in the order they were added.
func (s *Scheduler) Workers() []WorkerStatus {
	s.mu.Lock()
	defer s.mu.Unlock()
	now := s.cfg.Now()
	out := make([]WorkerStatus, 0, len(s.members))
	for _, m := range s.members {
		ws := WorkerStatus{
			Address: m.name, Target: m.target, Pool: m.pool.name, Models: slices.Clone(m.models), Load: m.report,
			InFlight: m.inflight, ConsecutiveFailures: m.failures, State: StateReady,
		}
		if m.adaptive {
			ws.AdmissionLimit = m.limit.cap()
		}
		if r, ok := m.engine.(interface{ WorkerID() string }); ok {
			ws.WorkerID = r.WorkerID()
		}
		switch {
		case !m.live:
			ws.State = StateConnecting
		case now.UnixNano() < m.ejectedUntil:
			ws.State, ws.EjectedUntil = StateEjected, time.Unix(0, m.ejectedUntil)
		}
		out = append(out, ws)
	}
	return out
}

// Slots reduces the scheduler's workers to busy and total slots:
// each ready worker that reports its batch size counts it, and as busy the
// sequences it runs and queues (or this gateway's own on it, when more: the
// reports lag), at most the batch.
func Slots(workers []WorkerStatus) (busy, total float64) {
	for _, w := range workers {
		if w.State != StateReady || w.Load.MaxBatch <= 0 {
			continue
		}
		used := max(w.Load.Running+w.Load.Waiting, w.InFlight)
		busy += float64(min(used, w.Load.MaxBatch))
		total += float64(w.Load.MaxBatch)
	}
	return busy, total
}

// add registers m and follows its load.
func (s *Scheduler) add(m *member) {
	m.hash = mix64(hashString(m.name))
	m.stop, m.done = make(chan struct{}), make(chan struct{})
	s.mu.Lock()
	m.added = s.cfg.Now().UnixNano()
	m.lastBusy = m.added
	if m.pool == nil {
		m.pool = s.poolLocked(DefaultPool)
	}
	s.members = append(s.members, m)
	s.regroupLocked()
	s.observeLocked(m)
	s.mu.Unlock()
	s.logger.Info("worker added", "worker", m.name, "pool", m.pool.name)
	// Jobs queued for its first connection give up once the grace is over.
	time.AfterFunc(s.cfg.ConnectGrace, s.dispatch)
	go s.follow(m)
}

// follow reads m's load on every change until m is removed.
func (s *Scheduler) follow(m *member) {
	defer close(m.done)
	var told []string // the models OnModels was last told
	for {
		changed := m.engine.LoadChanged()
		s.mu.Lock()
		s.observeLocked(m)
		s.dispatchLocked()
		learn := len(m.models) > 0 && !slices.Equal(told, m.models)
		if learn {
			told = slices.Clone(m.models)
		}
		s.mu.Unlock()
		if learn && s.cfg.OnModels != nil {
			s.cfg.OnModels(m.name, m.pool.name, slices.Clone(told))
		}
		select {
		case <-changed:
		case <-m.stop:
			return
		}
	}
}

// observeLocked takes m's current load, liveness and models.
func (s *Scheduler) observeLocked(m *member) {
	m.report = m.engine.Load()
	wasLive := m.live
	m.live = true
	if l, ok := m.engine.(worker.Liveness); ok {
		m.live = l.Live()
	}
	m.everLive = m.everLive || m.live
	switch {
	case len(m.report.Models) > 0:
		m.models = m.report.Models
	case len(m.models) == 0 || m.live != wasLive:
		m.models = nil
		for _, info := range m.engine.Models() {
			m.models = append(m.models, info.ID)
		}
	}
	s.capacityLocked(m)
}

// capacityLocked sets m's admission cap: its batch size plus WorkerQueue;
// with none known, by measured queueing (see limiter).
func (s *Scheduler) capacityLocked(m *member) {
	m.capacity = m.report.MaxBatch
	if m.capacity <= 0 {
		m.capacity = s.cfg.DefaultCapacity
	}
	m.adaptive = m.capacity <= 0
	if m.adaptive {
		// No batch size known: no cap from a guess. While the engine
		// reports requests waiting, its slots are what it runs and more
		// jobs wait here, in priority order; otherwise the limit its
		// measured time to first token sets (none until TTFT rises).
		m.capacity = m.limit.cap()
		if m.capacity <= 0 {
			m.capacity = unknownCapacity
		}
		if m.report.Waiting > 0 {
			m.capacity = min(m.capacity, max(m.report.Running, 1))
		}
		if m.live && !m.assumed {
			m.assumed = true
			s.logger.Info("worker reports no batch size: assuming no fixed cap; admitting by measured queueing "+
				"(held at what it runs while it reports requests waiting; an AIMD limit once its time to first token rises over its baseline) "+
				"— set --max-batch on the worker (or ?max-batch=N on an openai+http address) to cap it", "worker", m.name, "pool", m.pool.name)
		}
	}
	m.slots = m.capacity
	m.capacity += s.cfg.WorkerQueue
}

// firstToken feeds a generation's time to first token on m to m's limiter;
// model is the generation's (a probe asks for it).
func (s *Scheduler) firstToken(m *member, model string, ttft time.Duration) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if !m.adaptive {
		return
	}
	before := m.capacity
	switch m.limit.sample(s.cfg.Now().UnixNano(), ttft, m.load(), s.lagFor(m)) {
	case limitLagged:
		s.metrics.lagged.Inc()
	case limitSuspect:
		go s.probe(m, model, ttft)
	}
	s.capacityLocked(m)
	if m.capacity > before {
		s.dispatchLocked()
	}
}

// lagFor is the delay that this gateway's lag, and the lag m reports of
// its own process (a worker relaying many streams on a busy box), add to a
// time to first token measured on m: the two together, since the first
// token passes through both.
func (s *Scheduler) lagFor(m *member) time.Duration {
	return s.cfg.Lag() + m.report.Lag
}

// probeTimeout bounds a probe's wait for its token: one that has none by
// then has waited behind others, which is queueing.
const probeTimeout = 10 * time.Second

// errProbed ends a probe at its first token.
var errProbed = errors.New("scheduler: probe answered")

// probe sends m the most trivial generation there is — one token of "Hi",
// outside the queue and the accounting — and reports its time to first
// token to m's limiter: slow as the requests that raised the suspicion
// (sample, at ttft), it confirms that m queues; fast, it shows the requests
// are slow by themselves.
func (s *Scheduler) probe(m *member, model string, ttft time.Duration) {
	ctx, cancel := context.WithTimeout(context.Background(), probeTimeout)
	defer cancel()
	req := llm.Request{ID: "probe-" + strconv.FormatInt(time.Now().UnixNano(), 36), Model: model, MaxTokens: 1,
		Messages: []llm.ChatMessage{{Role: "user", Parts: []llm.Part{{Text: "Hi"}}}}}
	sent := time.Now()
	var took time.Duration
	_, err := m.engine.Generate(ctx, &req, func(llm.Delta) error {
		took = time.Since(sent)
		return errProbed
	})
	overloaded := errors.Is(err, llm.ErrOverloaded)
	if took == 0 && !overloaded && ctx.Err() != nil {
		took = probeTimeout
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if took == 0 && !overloaded {
		m.limit.probing = false
		s.metrics.probes.WithLabelValues("failed").Inc()
		s.logger.Debug("admission probe told nothing", "worker", m.name, "err", err)
		return
	}
	lag := s.lagFor(m)
	switch m.limit.probed(s.cfg.Now().UnixNano(), took, m.load(), lag, overloaded) {
	case limitLagged:
		s.metrics.probes.WithLabelValues("lagged").Inc()
	case limitCleared:
		s.metrics.probes.WithLabelValues("clear").Inc()
	case limitCut:
		s.metrics.probes.WithLabelValues("queueing").Inc()
		s.logger.Info("worker queueing measured: admission limit lowered", "worker", m.name, "pool", m.pool.name,
			"limit", m.limit.cap(), "ttft", ttft.String(), "probe_ttft", took.String(), "overloaded", overloaded,
			"baseline", m.limit.baseline().String(), "lag", lag.String())
	}
	s.capacityLocked(m)
}

// unknownCapacity is the admission cap of a worker whose batch size is not
// known and that has shown no queueing: none, in effect. Its load is scored
// against scoreSlots slots.
const (
	unknownCapacity = 1 << 30
	scoreSlots      = 1024
)
