package scheduler

import (
	"slices"
	"time"

	"github.com/parleyhq/parley/server/worker"
)

// member is one worker as the scheduler sees it. Its fields are guarded by the
// scheduler's lock.
type member struct {
	name   string // host:port, or the name given to AddWorker
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
	inflight     int // generations this gateway runs on it now
	failures     int
	ejectedUntil int64 // Unix nanoseconds; the worker is out until then
	everLive     bool  // it has been connected at least once
	added        int64 // Unix nanoseconds; jobs may wait for its first connection for ConnectGrace
	assumed      bool  // the log says what capacity was assumed for it
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
	// Load is the worker's last report; InFlight this gateway's generations on it.
	Load     worker.LoadReport
	InFlight int
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
			Address: m.name, Target: m.target, Models: slices.Clone(m.models), Load: m.report,
			InFlight: m.inflight, ConsecutiveFailures: m.failures, State: StateReady,
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

// add registers m and follows its load.
func (s *Scheduler) add(m *member) {
	m.hash = mix64(hashString(m.name))
	m.stop, m.done = make(chan struct{}), make(chan struct{})
	s.mu.Lock()
	m.added = s.cfg.Now().UnixNano()
	s.members = append(s.members, m)
	s.observeLocked(m)
	s.mu.Unlock()
	s.logger.Info("worker added", "worker", m.name)
	// Jobs queued for its first connection give up once the grace is over.
	time.AfterFunc(s.cfg.ConnectGrace, s.dispatch)
	go s.follow(m)
}

// follow reads m's load on every change until m is removed.
func (s *Scheduler) follow(m *member) {
	defer close(m.done)
	for {
		changed := m.engine.LoadChanged()
		s.mu.Lock()
		s.observeLocked(m)
		s.dispatchLocked()
		s.mu.Unlock()
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
	m.capacity = m.report.MaxBatch
	if m.capacity <= 0 {
		m.capacity = s.cfg.DefaultCapacity
	}
	if m.capacity <= 0 {
		// No batch size known: no cap from a guess. Admit while the engine
		// queues nothing; once it reports requests waiting, its slots are
		// what it runs, and more jobs wait here, in priority order.
		m.capacity = unknownCapacity
		if m.report.Waiting > 0 {
			m.capacity = max(m.report.Running, 1)
		}
		if m.live && !m.assumed {
			m.assumed = true
			s.logger.Info("worker reports no batch size: admitting without a fixed cap until it reports requests waiting (set --max-batch on the worker to cap it)",
				"worker", m.name)
		}
	}
	m.capacity += s.cfg.WorkerQueue
}

// unknownCapacity is the admission cap of a worker whose batch size is not
// known and that queues nothing: none, in effect. Its load is scored
// against scoreSlots slots.
const (
	unknownCapacity = 1 << 30
	scoreSlots      = 1024
)
