package scheduler

import "slices"

// filter drops the candidates unfit for a job, compacting cands in place and
// returning what is left. Filters run in order over the whole list, as the
// Gateway API Inference Extension's do.
type filter func(j *pickJob, cands []candidate) []candidate

// servesModel keeps the workers that serve the job's model.
func servesModel(j *pickJob, cands []candidate) []candidate {
	out := cands[:0]
	for _, c := range cands {
		for _, id := range c.m.models {
			if id == j.model {
				out = append(out, c)
				break
			}
		}
	}
	return out
}

// healthy keeps the workers connected, not ejected, and not already tried by
// this job.
func healthy(j *pickJob, cands []candidate) []candidate {
	out := cands[:0]
next:
	for _, c := range cands {
		if !c.m.live || j.now < c.m.ejectedUntil {
			continue
		}
		for _, t := range j.tried[:j.ntried] {
			if t == c.m {
				continue next
			}
		}
		out = append(out, c)
	}
	return out
}

// hasCapacity keeps the workers with a free slot (or worker queue place);
// for a job on idle capacity, a slot it runs at once (never a queue place
// on the worker, where an interactive job would wait behind it) beyond
// the worker's IdleReserve.
func hasCapacity(j *pickJob, cands []candidate) []candidate {
	out := cands[:0]
	for _, c := range cands {
		free := c.capacity - c.load
		if j.idle {
			free = c.m.slots - c.load - IdleReserve(c.m.slots)
		}
		if free > 0 {
			out = append(out, c)
		}
	}
	return out
}

// IdleReserve is how many of a worker's slots work on idle capacity leaves
// free, for interactive requests arriving meanwhile: a quarter of its
// slots, at least one (measured: an eighth let bursts onto a worker's
// reported load, which lags, queue interactive requests behind batch lines).
func IdleReserve(capacity int) int { return max(1, capacity/4) }

// IdleSlots is how many jobs of model at llm.PriorityIdle the workers
// would take now: the slots past each live, unejected worker's
// IdleReserve, none while a job of the model waits. Work on idle capacity
// (a batch) asks before it sends, instead of being refused.
func (s *Scheduler) IdleSlots(model string) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	if q := s.queues[model]; q != nil && q.Len() > 0 {
		return 0
	}
	now := s.cfg.Now().UnixNano()
	n := 0
	for _, m := range s.members {
		if !m.live || now < m.ejectedUntil || !slices.Contains(m.models, model) {
			continue
		}
		n += max(0, m.slots-m.load()-IdleReserve(m.slots))
	}
	return n
}
