package scheduler

import (
	"container/heap"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/parleyhq/parley/server/apierr"
	"github.com/parleyhq/parley/server/lag"
	"github.com/parleyhq/parley/server/llm"
	"github.com/parleyhq/parley/server/worker"
)

// maxAttempts bounds the workers one job is tried on: the first and two retries.
const maxAttempts = 3

// Config sets up a Scheduler. Zero fields take the defaults documented on them.
type Config struct {
	// Workers are worker addresses, host:port; a host that is a DNS name is
	// re-resolved every ResolveInterval and each of its addresses is a worker (a
	// Kubernetes headless service). They form one pool, DefaultPool.
	Workers []string
	// Pools are named groups of worker addresses (resolved as Workers are),
	// in order: the first is the primary, filled first; a job goes on to
	// the next when the ones before it cannot take it — down (no worker
	// connected and in rotation), or saturated (a job waited SpillWait for
	// it). Set Workers or Pools, not both.
	Pools []Pool
	// SpillWait is how long a job waits for a busy pool before it may go to
	// the next one, and the bound on queue wait past which a pool counts as
	// saturated (default 500 ms).
	SpillWait time.Duration
	// SpillHold is how long a pool stays saturated after a job waited past
	// SpillWait for it: meanwhile jobs it cannot take at once go straight to
	// the next pool (default 10 s). It still gets first pick of every job.
	SpillHold time.Duration
	// ResolveInterval is how often DNS names are re-resolved (default 10 s).
	ResolveInterval time.Duration
	// Resolve looks up a host's addresses (default net.DefaultResolver.LookupHost).
	Resolve func(ctx context.Context, host string) ([]string, error)
	// Dial reaches the worker at addr, host:port (default worker.Dial over h2c).
	Dial func(addr string) worker.Engine
	// DialUpstream makes the engine for an inference server addressed
	// directly, openai+http://HOST:PORT/v1 among the addresses (the gateway
	// gives it the openai engine, run in process); required when there is
	// one.
	DialUpstream func(Upstream) (worker.Engine, error)
	// UpstreamAPIKey is passed on to DialUpstream.
	UpstreamAPIKey string
	// HTTPClient is the default Dial's client (default worker.H2CClient()).
	HTTPClient *http.Client
	// GatewayID names this gateway in workers' logs.
	GatewayID string
	// WorkerToken is sent on every call to the default Dial's workers
	// (Authorization: Bearer); workers started with a token refuse calls
	// without it.
	WorkerToken string

	// Policy is the scheduling profile (default PolicyAffinity).
	Policy Policy
	// BalanceAbs and BalanceRel bound affinity: the affinity target is passed
	// over when its load (sequences running and waiting) exceeds the least loaded
	// worker's by more than BalanceAbs and by a factor of more than BalanceRel
	// (defaults 8 and 2: in the simulation, tighter bounds spilled so often
	// that lost cache hits cost more than the balance gained — 4 and 1.5 gave
	// a worse TTFT p99 than round robin at 10 conversations/s, 8 and 2 beat
	// it at light, busy and saturated load).
	BalanceAbs int
	BalanceRel float64
	// DefaultCapacity is the slots of a worker that reports no batch size
	// (default 0: no fixed cap; such a worker is admitted to by measured
	// queueing — while it reports requests waiting on its engine it is held
	// at what it runs, and once its time to first token rises over its
	// baseline an AIMD limit caps it, growing again while TTFT stays low;
	// see limiter).
	DefaultCapacity int
	// WorkerQueue is how many jobs past its batch a worker is sent before they
	// wait in the gateway's queue instead, where priority orders them
	// (default 0: the gateway holds them all).
	WorkerQueue int

	// QueueLimit bounds each model's gateway queue (default 256).
	QueueLimit int
	// MaxQueueWait is the longest a job waits for a worker (default 30 s).
	// Jobs wait only for workers that are busy: with no worker for the
	// model connected and in rotation, a job is refused at once with
	// unavailable and RetryAfter, and the jobs already queued are too.
	MaxQueueWait time.Duration
	// ConnectGrace is how long after a worker is added jobs may wait for
	// its first connection (default 5 s): a gateway just started, or a
	// worker just found by DNS, is not yet a dead one.
	ConnectGrace time.Duration
	// RetryAfter is the delay suggested to refused clients (default 2 s).
	RetryAfter time.Duration
	// MaxRetries bounds the retries of a job whose worker failed before the
	// first token (default 2, the most allowed).
	MaxRetries int
	// EjectBase and EjectMax bound the exponential ejection back-off: a worker
	// that failed n times in a row is out for EjectBase×2^(n−1), at most EjectMax
	// (defaults 1 s and 1 min).
	EjectBase, EjectMax time.Duration

	// ScaleWindow, ScaleUpWait and ScaleDownWait set the scaling signal
	// (scale.go): a pool's recommended worker count is its ready workers
	// plus one while a model's recent queue wait (95th percentile over
	// ScaleWindow) is over ScaleUpWait, minus one while every wait is under
	// ScaleDownWait and a worker ran nothing all window (defaults 1 min, 5 s
	// and 1 s: the scaling rule of docs/scaling.md).
	ScaleWindow, ScaleUpWait, ScaleDownWait time.Duration

	// OnModels, when set, is told the models a worker serves each time its
	// list changes (as it connects, or reports new ones), outside the
	// scheduler's lock: the gateway learns its models from its workers.
	OnModels func(worker, pool string, models []string)

	// Lag is how late this process runs what is ready to run, lately
	// (default: a probe timer's lateness, the most over the last two
	// seconds): TTFT samples it explains are not taken for a worker's
	// queueing (limiter). Only the samples of workers admitted by
	// measured queueing (no batch size known) are read against it.
	Lag func() time.Duration
	// Wake, with Lag, is called as a generation is placed on such a
	// worker: a probe behind Lag need measure only then (the default
	// probe ticks for two seconds after each Wake, and sleeps otherwise).
	Wake func()

	// Registerer receives the scheduler's metrics (none when nil).
	Registerer prometheus.Registerer
	// Now is the clock (default time.Now).
	Now func() time.Time
}

func (c Config) withDefaults() Config {
	if c.ResolveInterval <= 0 {
		c.ResolveInterval = 10 * time.Second
	}
	if c.Resolve == nil {
		c.Resolve = net.DefaultResolver.LookupHost
	}
	if c.HTTPClient == nil {
		c.HTTPClient = worker.H2CClient()
	}
	if c.BalanceAbs <= 0 {
		c.BalanceAbs = 8
	}
	if c.BalanceRel <= 0 {
		c.BalanceRel = 2
	}
	if c.QueueLimit <= 0 {
		c.QueueLimit = 256
	}
	if c.MaxQueueWait <= 0 {
		c.MaxQueueWait = 30 * time.Second
	}
	if c.RetryAfter <= 0 {
		c.RetryAfter = 2 * time.Second
	}
	if c.ConnectGrace <= 0 {
		c.ConnectGrace = 5 * time.Second
	}
	if c.MaxRetries <= 0 || c.MaxRetries > maxAttempts-1 {
		c.MaxRetries = maxAttempts - 1
	}
	if c.EjectBase <= 0 {
		c.EjectBase = time.Second
	}
	if c.EjectMax <= 0 {
		c.EjectMax = time.Minute
	}
	if c.Now == nil {
		c.Now = time.Now
	}
	if c.SpillWait <= 0 {
		c.SpillWait = 500 * time.Millisecond
	}
	if c.SpillHold <= 0 {
		c.SpillHold = 10 * time.Second
	}
	if c.ScaleWindow <= 0 {
		c.ScaleWindow = time.Minute
	}
	if c.ScaleUpWait <= 0 {
		c.ScaleUpWait = 5 * time.Second
	}
	if c.ScaleDownWait <= 0 {
		c.ScaleDownWait = time.Second
	}
	return c
}

// Scheduler places generations on workers. It is safe for concurrent use.
type Scheduler struct {
	cfg     Config
	logger  *slog.Logger
	metrics *metrics

	mu      sync.Mutex
	members []*member
	pools   []*pool // in order, the primary first
	spills  map[spillKey]prometheus.Counter
	pipe    *pipeline
	queues  map[string]*queue
	seq     uint64
	waits   map[scaleKey]*waitWindow // recent queue waits, for the scaling signal

	lag     *lag.Probe // nil when Config.Lag was given
	wakeLag func()     // keeps the probe ticking: a generation is placed on an adaptive worker

	stop context.CancelFunc
	wg   sync.WaitGroup
}

// New returns a scheduler over the workers cfg names, resolving their names
// once before it returns (a name that does not resolve yet is retried every
// ResolveInterval). Close stops it.
func New(cfg Config, logger *slog.Logger) (*Scheduler, error) {
	cfg = cfg.withDefaults()
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	if len(cfg.Workers) > 0 && len(cfg.Pools) > 0 {
		return nil, errors.New("scheduler: give workers or worker pools, not both")
	}
	pools := cfg.Pools
	if len(cfg.Workers) > 0 {
		pools = []Pool{{Name: DefaultPool, Workers: cfg.Workers}}
	}
	var targets []target
	seen := map[string]string{} // address → its pool
	named := map[string]bool{}
	for _, p := range pools {
		if p.Name == "" {
			return nil, errors.New("scheduler: a worker pool needs a name")
		}
		if named[p.Name] {
			return nil, fmt.Errorf("scheduler: worker pool %q given twice", p.Name)
		}
		named[p.Name] = true
		ts, err := parseTargets(p.Workers, p.Name)
		if err != nil {
			return nil, err
		}
		for _, t := range ts {
			if t.direct != nil && cfg.DialUpstream == nil {
				return nil, fmt.Errorf("scheduler: %s is an inference server, and this scheduler cannot address one directly (no DialUpstream)", t.addr)
			}
			if other, dup := seen[t.addr]; dup {
				return nil, fmt.Errorf("scheduler: worker %s is in pool %q and in pool %q", t.addr, other, p.Name)
			}
			seen[t.addr] = p.Name
		}
		targets = append(targets, ts...)
	}
	pipe, err := newPipeline(cfg.Policy, cfg.BalanceAbs, cfg.BalanceRel)
	if err != nil {
		return nil, err
	}
	m, err := newMetrics(cfg.Registerer)
	if err != nil {
		return nil, err
	}
	if cfg.Dial == nil {
		client := cfg.HTTPClient
		cfg.Dial = func(addr string) worker.Engine {
			return worker.Dial(client, "http://"+addr, worker.WithGatewayID(cfg.GatewayID), worker.WithDialLogger(logger),
				worker.WithToken(cfg.WorkerToken))
		}
	}
	ctx, stop := context.WithCancel(context.Background())
	s := &Scheduler{cfg: cfg, logger: logger, metrics: m, pipe: pipe, queues: map[string]*queue{}, stop: stop,
		spills: map[spillKey]prometheus.Counter{}, waits: map[scaleKey]*waitWindow{}}
	for _, p := range pools {
		s.poolLocked(p.Name) // fixes the order before any worker connects
	}
	s.wakeLag = s.cfg.Wake
	if s.wakeLag == nil {
		s.wakeLag = func() {}
	}
	if s.cfg.Lag == nil {
		s.lag = lag.Start()
		s.cfg.Lag, s.wakeLag = s.lag.Lag, s.lag.Wake
	}
	if cfg.Registerer != nil {
		lagGauge := prometheus.NewGaugeFunc(prometheus.GaugeOpts{
			Name: "parley_gateway_lag_seconds",
			Help: "How late this gateway ran a timer due every 10 ms, or a read of a loopback datagram sent with it, the most over the last two seconds (measured while generations run on workers admitted by measured queueing, those that report no batch size; 0 otherwise): over a few milliseconds, its CPUs are saturated.",
		}, func() float64 { return s.cfg.Lag().Seconds() })
		for _, c := range []prometheus.Collector{newPoolCollector(s), newScaleCollector(s), lagGauge} {
			if err := cfg.Registerer.Register(c); err != nil {
				stop()
				s.closeLag()
				return nil, err
			}
		}
	}
	if len(targets) > 0 {
		s.resolve(ctx, targets)
		s.wg.Add(1)
		go s.resolveLoop(ctx, targets)
	}
	return s, nil
}

// Close stops following the workers and closes the connections to those the
// scheduler dialed; generations in flight run on.
func (s *Scheduler) Close() {
	s.stop()
	s.wg.Wait()
	s.closeLag()
	s.mu.Lock()
	members := s.members
	s.members = nil
	s.mu.Unlock()
	for _, m := range members {
		m.close()
	}
}

func (s *Scheduler) closeLag() {
	if s.lag != nil {
		s.lag.Close()
		s.lag = nil
	}
}

// AddWorker adds an engine under name (an in-process sim worker, or one the
// caller dialed) to DefaultPool; it is never removed by re-resolution.
func (s *Scheduler) AddWorker(name string, e worker.Engine) {
	s.AddPoolWorker(DefaultPool, name, e)
}

// AddPoolWorker is AddWorker into the named pool, which is appended to the
// pool order when new.
func (s *Scheduler) AddPoolWorker(poolName, name string, e worker.Engine) {
	s.mu.Lock()
	p := s.poolLocked(poolName)
	s.mu.Unlock()
	s.add(&member{name: name, engine: e, pool: p})
}

// Generate places job on a worker and streams its deltas to emit. It waits in
// the model's queue when every worker is full, and retries on another worker
// (at most twice) one that fails before the first token, ejecting it for a
// while. It returns an error only when the generation never started: the
// caller's error (llm.ErrInvalidRequest), the context's, or an
// apierr.Unavailable with a retry-after when no worker could take it. Once
// started, how the generation ended is in the Result: a worker failing midway
// gives FinishError and the usage so far. job is read, never changed.
//
// Like the engines' Generate, its frame is kept small (the attempt's state
// is on the heap, the work around the engine's call in calls of their own):
// every open stream keeps it on its stack while it waits for a token.
func (s *Scheduler) Generate(ctx context.Context, job *llm.Job, emit llm.Emit) (llm.Result, error) {
	a := s.newAttempt(job, emit)
	for {
		m, err := a.acquire(ctx)
		if err != nil {
			return llm.Result{}, err
		}
		res, err := m.engine.Generate(ctx, &job.Request, a.emit)
		if done, err := a.ended(ctx, m, &res, err); done {
			return res, err
		}
	}
}

// attempt is one Generate call's state across its tries.
type attempt struct {
	s       *Scheduler
	j       pickJob
	job     *llm.Job
	out     llm.Emit
	emit    llm.Emit // a.relay, made once
	m       *member  // the worker of the try under way
	sent    time.Time
	started bool
	tries   int
	lastErr error
}

//go:noinline
func (s *Scheduler) newAttempt(job *llm.Job, emit llm.Emit) *attempt {
	a := &attempt{s: s, job: job, out: emit, j: pickJob{model: job.Request.Model}}
	if job.AffinityKey != "" {
		a.j.key, a.j.hasKey = hashString(job.AffinityKey), true
	}
	a.emit = a.relay
	return a
}

// acquire reserves a worker for the next try.
//
//go:noinline
func (a *attempt) acquire(ctx context.Context) (*member, error) {
	m, err := a.s.acquire(ctx, &a.j, a.job.Priority)
	if err != nil {
		if a.lastErr != nil && ctx.Err() == nil {
			a.s.logger.WarnContext(ctx, "generation failed on every worker tried", "model", a.j.model, "err", a.lastErr)
		}
		return nil, err
	}
	a.m, a.sent, a.started = m, time.Now(), false
	return m, nil
}

// relay passes a delta of the try under way on, noting its first token.
func (a *attempt) relay(d llm.Delta) error {
	if !a.started {
		a.started = true
		a.s.firstToken(a.m, a.job.Request.Model, time.Since(a.sent))
	}
	return a.out(d)
}

// ended releases the try's worker m, given how its engine's Generate
// returned: done when Generate returns (*res and the error it returns), or
// not done, to try another worker.
//
//go:noinline
func (a *attempt) ended(ctx context.Context, m *member, res *llm.Result, err error) (bool, error) {
	s := a.s
	if err == nil && (a.started || res.FinishReason != llm.FinishError) {
		s.release(m, res.FinishReason != llm.FinishError, res.Err)
		return true, nil
	}
	if err == nil {
		err = res.Err
		if err == nil {
			err = errors.New("worker: generation failed before its first token")
		}
	}
	*res = llm.Result{}
	switch {
	case ctx.Err() != nil:
		s.release(m, true, nil)
		return true, context.Cause(ctx)
	case llm.CallerFault(err):
		s.release(m, true, nil)
		return true, err
	case llm.LocalFault(err):
		// This process is out of descriptors or memory: the worker is not
		// to blame (no ejection), and another would fail the same way.
		s.release(m, true, nil)
		s.metrics.rejections.WithLabelValues("exhausted").Inc()
		return true, apierr.Unavailable("the gateway is short of resources to reach a worker ("+err.Error()+"); try again shortly", s.cfg.RetryAfter)
	case errors.Is(err, llm.ErrOverloaded), errors.Is(err, llm.ErrUnknownModel):
		// Busy or stale about its models: try another, but it is not broken.
		s.release(m, true, nil)
	default:
		s.release(m, false, err)
	}
	a.lastErr = err
	a.j.tried[a.j.ntried] = m
	a.j.ntried++
	if a.tries >= s.cfg.MaxRetries {
		s.logger.WarnContext(ctx, "generation failed on every worker tried", "model", a.j.model, "attempts", a.tries+1, "err", err)
		s.metrics.rejections.WithLabelValues("failed").Inc()
		return true, apierr.Unavailable("no worker could run the generation", s.cfg.RetryAfter)
	}
	a.tries++
	s.metrics.retries.Inc()
	return false, nil
}

// Embed runs a batch of embeddings on a worker that serves req.Model,
// picked, queued and retried as Generate's are (an embedding batch holds one
// of the worker's slots while it runs).
func (s *Scheduler) Embed(ctx context.Context, req llm.EmbedRequest, priority int) (llm.EmbedResult, error) {
	j := &pickJob{model: req.Model}
	for attempt := 0; ; attempt++ {
		m, err := s.acquire(ctx, j, priority)
		if err != nil {
			return llm.EmbedResult{}, err
		}
		res, err := m.engine.Embed(ctx, req)
		switch {
		case err == nil:
			s.release(m, true, nil)
			return res, nil
		case ctx.Err() != nil:
			s.release(m, true, nil)
			return llm.EmbedResult{}, context.Cause(ctx)
		case llm.CallerFault(err):
			s.release(m, true, nil)
			return llm.EmbedResult{}, err
		case errors.Is(err, llm.ErrOverloaded), errors.Is(err, llm.ErrUnknownModel):
			s.release(m, true, nil)
		default:
			s.release(m, false, err)
		}
		j.tried[j.ntried] = m
		j.ntried++
		if attempt >= s.cfg.MaxRetries {
			s.logger.WarnContext(ctx, "embeddings failed on every worker tried", "model", j.model, "attempts", attempt+1, "err", err)
			s.metrics.rejections.WithLabelValues("failed").Inc()
			return llm.EmbedResult{}, apierr.Unavailable("no worker could embed the inputs", s.cfg.RetryAfter)
		}
		s.metrics.retries.Inc()
	}
}

// acquire reserves a worker for j: at once if one is fit, else after waiting
// in the model's queue.
func (s *Scheduler) acquire(ctx context.Context, j *pickJob, priority int) (*member, error) {
	s.mu.Lock()
	j.now = s.cfg.Now().UnixNano()
	if priority == llm.PriorityIdle {
		// Idle capacity only, in any pool: never ahead of a job waiting
		// for the model, never queued.
		j.idle, j.spill = true, true
		var m *member
		if q := s.queues[j.model]; q == nil || q.Len() == 0 {
			m = s.pickLocked(j)
		}
		s.mu.Unlock()
		if m == nil {
			s.metrics.rejections.WithLabelValues("no_idle_capacity").Inc()
			return nil, errors.Join(llm.ErrNoIdleCapacity, apierr.Unavailable("no idle capacity for work that can wait", s.cfg.RetryAfter))
		}
		return m, nil
	}
	if m := s.pickLocked(j); m != nil {
		s.recordWaitLocked(j.now, m.pool, j.model, 0)
		s.mu.Unlock()
		return m, nil
	}
	if !s.mayServeLocked(j.model) {
		s.mu.Unlock()
		s.metrics.rejections.WithLabelValues("no_worker").Inc()
		return nil, apierr.Unavailable(fmt.Sprintf("no worker serves model %q", j.model), s.cfg.RetryAfter)
	}
	if !s.hopeLocked(j, true) {
		// Every worker for the model is down, ejected or already tried:
		// waiting would hold the caller (and its balance) for nothing.
		s.mu.Unlock()
		s.metrics.rejections.WithLabelValues("no_healthy_worker").Inc()
		return nil, errNoHealthyWorker(j.model, s.cfg.RetryAfter)
	}
	q := s.queues[j.model]
	if q == nil {
		q = &queue{}
		s.queues[j.model] = q
	}
	if q.Len() >= s.cfg.QueueLimit {
		weak := q.weakest(priority)
		if weak == nil {
			s.mu.Unlock()
			s.recordRefusal(j)
			s.metrics.rejections.WithLabelValues("queue_full").Inc()
			return nil, apierr.Unavailable("all workers are busy; try again shortly", s.cfg.RetryAfter)
		}
		q.remove(weak)
		weak.evicted = true
		weak.ready <- nil
	}
	s.seq++
	w := &waiter{job: j, priority: priority, seq: s.seq, since: s.cfg.Now(), ready: make(chan *member, 1)}
	heap.Push(q, w)
	s.metrics.queueDepth.WithLabelValues(j.model).Set(float64(q.Len()))
	s.mu.Unlock()

	timer := time.NewTimer(s.cfg.MaxQueueWait)
	defer timer.Stop()
	// With a pool to spill to, the job waits SpillWait for the pool it is
	// waiting for, then may go on to the next (spill is nil otherwise).
	var spill <-chan time.Time
	if len(s.pools) > 1 && !j.spill {
		st := time.NewTimer(s.cfg.SpillWait)
		defer st.Stop()
		spill = st.C
	}
wait:
	for {
		select {
		case m := <-w.ready:
			if m == nil && w.hopeless {
				s.metrics.rejections.WithLabelValues("no_healthy_worker").Inc()
				return nil, errNoHealthyWorker(j.model, s.cfg.RetryAfter)
			}
			if m == nil {
				s.recordRefusal(j)
				s.metrics.rejections.WithLabelValues("queue_full").Inc()
				return nil, apierr.Unavailable("all workers are busy; try again shortly", s.cfg.RetryAfter)
			}
			waited := s.cfg.Now().Sub(w.since).Seconds()
			s.metrics.queueWait.Observe(waited)
			m.pool.queueWait.Observe(waited)
			return m, nil
		case <-spill:
			spill = nil
			s.mu.Lock()
			if w.granted == nil && !w.evicted {
				j.spill = true
				if p := j.waitPool; p != nil {
					if now := s.cfg.Now(); now.UnixNano() >= p.saturatedUntil {
						s.logger.Warn("worker pool saturated: jobs it cannot take at once go to the next pool",
							"pool", p.name, "queue_wait_over", s.cfg.SpillWait.String(), "for", s.cfg.SpillHold.String())
					}
					p.saturatedUntil = s.cfg.Now().Add(s.cfg.SpillHold).UnixNano()
				}
				s.dispatchLocked()
			}
			s.mu.Unlock()
		case <-ctx.Done():
			break wait
		case <-timer.C:
			break wait
		}
	}
	s.mu.Lock()
	if m := w.granted; m != nil {
		// Granted as we gave up: hand it back.
		s.mu.Unlock()
		s.release(m, true, nil)
	} else if !w.evicted {
		q.remove(w)
		s.metrics.queueDepth.WithLabelValues(j.model).Set(float64(q.Len()))
		s.mu.Unlock()
	} else {
		s.mu.Unlock()
	}
	if ctx.Err() != nil {
		return nil, context.Cause(ctx)
	}
	s.recordRefusal(j)
	s.metrics.rejections.WithLabelValues("queue_timeout").Inc()
	return nil, apierr.Unavailable("no worker was free in time; try again shortly", s.cfg.RetryAfter)
}

// pickLocked runs the pipeline over each pool in order and reserves the
// worker it picks. A job passes over a pool that cannot take it now when
// that pool is down for it, saturated, or the job has waited SpillWait
// already; otherwise it waits for that pool (j.waitPool).
func (s *Scheduler) pickLocked(j *pickJob) *member {
	j.waitPool = nil
	var passed *pool
	reason := ""
	for _, p := range s.pools {
		m, why := s.pipe.run(j, p.members)
		if m != nil {
			m.inflight++
			m.lastBusy = j.now
			if m.adaptive {
				// Its first token will be read against this process's
				// lag: the probe measures from now. (With every worker's
				// size known it sleeps: ticking, it was up to 45 % of a
				// lightly loaded gateway's CPU, docs/perf.md.)
				s.wakeLag()
			}
			s.metrics.picks[why].Inc()
			p.picks.Inc()
			if passed != nil {
				s.countSpill(passed, p, reason)
			}
			return m
		}
		serves, hope := s.poolServes(p, j)
		switch {
		case !serves:
			continue
		case !hope:
			if passed == nil {
				passed, reason = p, spillUnhealthy
			}
			continue
		}
		if j.waitPool == nil {
			j.waitPool = p
		}
		if j.spill || j.now < p.saturatedUntil {
			if passed == nil {
				passed, reason = p, spillSaturated
			}
			continue
		}
		return nil
	}
	return nil
}

// mayServeLocked reports whether any worker serves model, or might once it
// connects.
func (s *Scheduler) mayServeLocked(model string) bool {
	for _, m := range s.members {
		if m.mayServe(model) {
			return true
		}
	}
	return false
}

// hopeLocked reports whether a worker that serves j's model (or might, not
// having connected yet) could take j by waiting: one connected and not
// ejected, however busy, or one still within its first ConnectGrace. With
// tried, the workers j has already failed on do not count.
func (s *Scheduler) hopeLocked(j *pickJob, tried bool) bool {
	grace := s.cfg.ConnectGrace.Nanoseconds()
next:
	for _, m := range s.members {
		if !m.mayServe(j.model) {
			continue
		}
		if tried {
			for _, t := range j.tried[:j.ntried] {
				if t == m {
					continue next
				}
			}
		}
		if (m.live && j.now >= m.ejectedUntil) || (!m.everLive && j.now < m.added+grace) {
			return true
		}
	}
	return false
}

func errNoHealthyWorker(model string, retryAfter time.Duration) error {
	return apierr.Unavailable(fmt.Sprintf("no worker for model %q is up; try again shortly", model), retryAfter)
}

// release returns m's slot; a failed generation ejects m for a back-off that
// doubles with each failure in a row, a good one clears the count.
func (s *Scheduler) release(m *member, ok bool, cause error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	m.inflight--
	m.lastBusy = s.cfg.Now().UnixNano()
	if ok {
		m.failures = 0
	} else {
		m.failures++
		d := s.cfg.EjectBase << min(m.failures-1, 30)
		if d <= 0 || d > s.cfg.EjectMax {
			d = s.cfg.EjectMax
		}
		m.ejectedUntil = s.cfg.Now().Add(d).UnixNano()
		s.metrics.ejections.WithLabelValues(m.name).Inc()
		s.logger.Warn("worker ejected", "worker", m.name, "for", d.String(), "failures", m.failures, "err", cause)
		time.AfterFunc(d, s.dispatch)
	}
	s.dispatchLocked()
}

// dispatch hands free workers to queued jobs.
func (s *Scheduler) dispatch() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.dispatchLocked()
}

func (s *Scheduler) dispatchLocked() {
	now := s.cfg.Now().UnixNano()
	for model, q := range s.queues {
		for q.Len() > 0 {
			w := (*q)[0]
			w.job.now = now
			m := s.pickLocked(w.job)
			if m == nil {
				break
			}
			heap.Pop(q)
			w.granted = m
			w.ready <- m
			s.recordWaitLocked(now, m.pool, model, time.Duration(now-w.since.UnixNano()))
		}
		if q.Len() > 0 && !s.hopeLocked(&pickJob{model: model, now: now}, false) {
			// The last worker for the model went down or was ejected: the
			// jobs waiting for it are refused now, not at the end of their wait.
			for q.Len() > 0 {
				w := heap.Pop(q).(*waiter)
				w.hopeless = true
				w.ready <- nil
			}
		}
		s.metrics.queueDepth.WithLabelValues(model).Set(float64(q.Len()))
	}
}

// Ready reports whether at least one worker is connected and not ejected,
// for /readyz; when none is, it says so for each pool.
func (s *Scheduler) Ready(context.Context) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	now := s.cfg.Now().UnixNano()
	var down []string
	for _, p := range s.pools {
		up, _ := poolUpLocked(p, now)
		if up > 0 {
			return nil
		}
		down = append(down, fmt.Sprintf("%s: 0 of %d workers up", p.name, len(p.members)))
	}
	if len(down) == 0 {
		return errors.New("scheduler: no worker configured")
	}
	return fmt.Errorf("scheduler: no worker ready in any pool (%s)", strings.Join(down, "; "))
}
