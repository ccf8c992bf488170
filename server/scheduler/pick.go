package scheduler

import "fmt"

// Policy names a scheduling profile: its filters, scorers and picker.
type Policy string

// The profiles.
const (
	// PolicyAffinity: prefix affinity bounded by load (the default).
	PolicyAffinity Policy = "affinity"
	// PolicyLeastLoaded: the least loaded worker, ties broken at random.
	PolicyLeastLoaded Policy = "least_loaded"
	// PolicyRoundRobin: each worker in turn; a baseline for comparison.
	PolicyRoundRobin Policy = "round_robin"
)

// pickReason says why a worker was chosen; it labels the picks metric.
type pickReason int

const (
	reasonAffinity pickReason = iota
	reasonSpill
	reasonLeastLoaded
	reasonRoundRobin
	numReasons
)

var reasonNames = [numReasons]string{"affinity", "spill", "least_loaded", "round_robin"}

// pickJob is what the pipeline knows of a job.
type pickJob struct {
	model  string
	key    uint64
	hasKey bool
	now    int64 // Unix nanoseconds, as member.ejectedUntil
	tried  [maxAttempts]*member
	ntried int
	// spill is set once the job has waited SpillWait: it may go to any pool.
	spill bool
	// idle is set for a job that runs on idle capacity only
	// (llm.PriorityIdle): it takes a worker only past its reserve.
	idle bool
	// waitPool is the pool the job waits for, when it waits.
	waitPool *pool
}

// candidate is a worker that passed the filters, with its load read once.
type candidate struct {
	m              *member
	load, capacity int
}

// picker chooses among candidates given their weighted scores.
type picker func(p *pipeline, j *pickJob, cands []candidate, total []float64) (int, pickReason)

// pipeline is one scheduling profile and its scratch space; it is used under
// the scheduler's lock, so a pick allocates nothing.
type pipeline struct {
	filters []filter
	scorers []scorer
	pick    picker

	// The SGLang-style guard of the affinity picker: the affinity target is
	// kept unless its load exceeds the least loaded candidate's by more than
	// balanceAbs and by a factor of more than balanceRel.
	balanceAbs int
	balanceRel float64

	rng   uint64 // xorshift state for the two random choices
	rr    uint64 // round-robin position
	cands []candidate
	score []float64
	total []float64
}

func newPipeline(policy Policy, balanceAbs int, balanceRel float64) (*pipeline, error) {
	p := &pipeline{
		filters:    []filter{servesModel, healthy, hasCapacity},
		balanceAbs: balanceAbs,
		balanceRel: balanceRel,
		rng:        0x9e3779b97f4a7c15,
	}
	switch policy {
	case PolicyAffinity, "":
		p.scorers = []scorer{{"affinity", 2, affinityScore}, {"load", 1, loadScore}}
		p.pick = boundedAffinity
	case PolicyLeastLoaded:
		p.scorers = []scorer{{"load", 1, loadScore}}
		p.pick = highestScore
	case PolicyRoundRobin:
		p.pick = roundRobin
	default:
		return nil, fmt.Errorf("scheduler: unknown policy %q", policy)
	}
	return p, nil
}

// run filters members, scores the candidates and picks one; nil when none is
// fit.
func (p *pipeline) run(j *pickJob, members []*member) (*member, pickReason) {
	cands := p.cands[:0]
	for _, m := range members {
		cands = append(cands, candidate{m: m, load: m.load(), capacity: m.capacity})
	}
	p.cands = cands
	for _, f := range p.filters {
		cands = f(j, cands)
	}
	if len(cands) == 0 {
		return nil, 0
	}
	if cap(p.total) < len(cands) {
		p.score = make([]float64, len(cands), 2*len(cands))
		p.total = make([]float64, len(cands), 2*len(cands))
	}
	score, total := p.score[:len(cands)], p.total[:len(cands)]
	clear(total)
	for _, s := range p.scorers {
		s.score(j, cands, score)
		for i, v := range score {
			total[i] += s.weight * v
		}
	}
	i, reason := p.pick(p, j, cands, total)
	return cands[i].m, reason
}

// boundedAffinity takes the highest weighted score (with the default weights,
// the affinity target), unless the job has no key — then the less loaded of
// two random candidates — or the target is loaded past the guard's bounds over
// the least loaded candidate — then the same, as a spill. Two random choices
// rather than the single least loaded one keep a burst of spills from all
// landing on one idle worker.
func boundedAffinity(p *pipeline, j *pickJob, cands []candidate, total []float64) (int, pickReason) {
	if !j.hasKey {
		return p.twoChoices(cands), reasonLeastLoaded
	}
	best := argmax(total)
	minLoad := cands[0].load
	for _, c := range cands[1:] {
		minLoad = min(minLoad, c.load)
	}
	l := cands[best].load
	if l-minLoad > p.balanceAbs && float64(l) > float64(minLoad)*p.balanceRel {
		return p.twoChoices(cands), reasonSpill
	}
	return best, reasonAffinity
}

// highestScore takes the highest weighted score, ties broken at random.
func highestScore(p *pipeline, _ *pickJob, cands []candidate, total []float64) (int, pickReason) {
	start := int(p.next() % uint64(len(cands)))
	best := start
	for k := 1; k < len(cands); k++ {
		if i := (start + k) % len(cands); total[i] > total[best] {
			best = i
		}
	}
	return best, reasonLeastLoaded
}

// roundRobin takes each candidate in turn.
func roundRobin(p *pipeline, _ *pickJob, cands []candidate, _ []float64) (int, pickReason) {
	p.rr++
	return int(p.rr % uint64(len(cands))), reasonRoundRobin
}

// twoChoices returns the less loaded of two random candidates.
func (p *pipeline) twoChoices(cands []candidate) int {
	if len(cands) == 1 {
		return 0
	}
	a := int(p.next() % uint64(len(cands)))
	b := int(p.next() % uint64(len(cands)-1))
	if b >= a {
		b++
	}
	if cands[b].load < cands[a].load {
		return b
	}
	return a
}

func (p *pipeline) next() uint64 {
	p.rng ^= p.rng << 13
	p.rng ^= p.rng >> 7
	p.rng ^= p.rng << 17
	return p.rng
}

func argmax(v []float64) int {
	best := 0
	for i := range v {
		if v[i] > v[best] {
			best = i
		}
	}
	return best
}
