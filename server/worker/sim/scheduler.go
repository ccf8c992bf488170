package sim

import (
	"slices"
	"time"
)

// enqueue puts s at the back of the waiting queue and makes sure the scheduler
// runs.
func (e *Engine) enqueue(s *seq) {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.waiting = append(e.waiting, s)
	e.loadChangedLocked()
	if !e.busy {
		e.busy = true
		e.deadline = e.cfg.Clock.Now()
		go e.schedule()
	}
}

// schedule is the continuous-batching loop. Each step drops cancelled sequences,
// admits waiting ones into free slots, prefills the admitted (less their cached
// prefix), then moves every running sequence one token; its cost is the prefill
// plus StepBase + StepPerSeq × running. It returns when there is nothing to do.
func (e *Engine) schedule() {
	for {
		admitted, cost, ok := e.beginStep()
		if !ok {
			return
		}
		e.wait(cost)
		e.endStep(admitted)
	}
}

func (e *Engine) beginStep() (admitted []*seq, cost time.Duration, ok bool) {
	e.mu.Lock()
	defer e.mu.Unlock()
	changed := false
	e.running = slices.DeleteFunc(e.running, func(s *seq) bool {
		if s.cancelled {
			changed = true
		}
		return s.cancelled
	})
	prefill := 0
	for len(e.running) < e.cfg.MaxBatch && len(e.waiting) > 0 {
		s := e.waiting[0]
		e.waiting = slices.Delete(e.waiting, 0, 1)
		s.cached = e.cache.lookup(s.blocks) * e.cfg.BlockTokens
		e.running = append(e.running, s)
		admitted = append(admitted, s)
		prefill += s.promptTokens - s.cached
		changed = true
	}
	if changed {
		e.loadChangedLocked()
	}
	if len(e.running) == 0 {
		e.busy = false
		return nil, 0, false
	}
	cost = time.Duration(float64(prefill)/e.cfg.PrefillRate*float64(time.Second)) +
		e.cfg.StepBase + e.cfg.StepPerSeq*time.Duration(len(e.running))
	return admitted, cost, true
}

// wait lets a step's cost pass on the clock, scaled by TimeScale. Steps are
// paced against a running deadline so the scheduler's own overhead does not
// slow the simulated GPU down.
func (e *Engine) wait(cost time.Duration) {
	if e.cfg.TimeScale == 0 {
		return
	}
	e.deadline = e.deadline.Add(time.Duration(float64(cost) * e.cfg.TimeScale))
	if d := e.deadline.Sub(e.cfg.Clock.Now()); d > 0 {
		<-e.cfg.Clock.After(d)
	} else if d < -time.Second {
		e.deadline = e.cfg.Clock.Now() // fell far behind: do not race to catch up
	}
}

func (e *Engine) endStep(admitted []*seq) {
	e.mu.Lock()
	defer e.mu.Unlock()
	for _, s := range admitted {
		if !s.cancelled {
			e.cache.insert(s.blocks, e.activeTokensLocked(), e.cfg.KVCapacityTokens)
		}
	}
	changed := false
	e.running = slices.DeleteFunc(e.running, func(s *seq) bool {
		if s.cancelled {
			return false // dropped at the next step, as a real engine would
		}
		s.steps++
		s.produced.Store(int64(min(s.steps, s.plan.tokens())))
		if s.steps >= s.plan.steps {
			close(s.done)
			select {
			case s.notify <- struct{}{}:
			default:
			}
			changed = true
			return true
		}
		select {
		case s.notify <- struct{}{}:
		default:
		}
		return false
	})
	if changed {
		e.loadChangedLocked()
	}
}

// activeTokensLocked returns the KV tokens the running sequences hold outside the
// prefix cache: the tail of the prompt past its last full block, and the output.
func (e *Engine) activeTokensLocked() int64 {
	var n int64
	for _, s := range e.running {
		n += int64(s.promptTokens-len(s.blocks)*e.cfg.BlockTokens) + s.produced.Load()
	}
	return n
}
