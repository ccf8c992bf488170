package scheduler

import (
	"fmt"
	"testing"
)

// pickBench is a scheduler over n idle-ish workers serving two models, and
// affinity keys to pick with.
func pickBench(t testing.TB, n int, policy Policy) (*Scheduler, []*pickJob) {
	return pickBenchLoaded(t, n, policy, func(i int) int { return i % 7 })
}

// pickBenchLoaded is pickBench with worker i reporting running(i) sequences.
// The load is set before the workers are added: their reports arrive on
// their own goroutines and would overwrite a later change.
func pickBenchLoaded(t testing.TB, n int, policy Policy, running func(int) int) (*Scheduler, []*pickJob) {
	ws := make([]*fakeEngine, n)
	for i := range ws {
		ws[i] = newFake(32, "m", "m2")
		ws[i].load.Running = running(i)
	}
	s, err := New(Config{Policy: policy}, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(s.Close)
	for i, w := range ws {
		s.AddWorker(fmt.Sprintf("10.0.%d.%d:7000", i/256, i%256), w)
	}
	jobs := make([]*pickJob, 1024)
	for i := range jobs {
		jobs[i] = &pickJob{model: "m", key: hashString(fmt.Sprint("conversation-", i)), hasKey: true}
	}
	return s, jobs
}

// pickOnce picks for j and hands the slot straight back, as a generation of
// zero length would.
func (s *Scheduler) pickOnce(j *pickJob) *member {
	s.mu.Lock()
	defer s.mu.Unlock()
	m := s.pickLocked(j)
	if m != nil {
		m.inflight--
	}
	return m
}

func TestPickDoesNotAllocate(t *testing.T) {
	for _, p := range []Policy{PolicyAffinity, PolicyLeastLoaded, PolicyRoundRobin} {
		s, jobs := pickBench(t, 64, p)
		i := 0
		allocs := testing.AllocsPerRun(1000, func() {
			if s.pickOnce(jobs[i%len(jobs)]) == nil {
				t.Fatal("no pick")
			}
			i++
		})
		if allocs != 0 {
			t.Errorf("%s: %v allocations per pick, want 0", p, allocs)
		}
	}
}

func TestRendezvousMovesOnlyTheLostWorkersKeys(t *testing.T) {
	s, jobs := pickBenchLoaded(t, 16, PolicyAffinity, func(int) int { return 0 }) // no spills: affinity alone decides
	before := make([]*member, len(jobs))
	for i, j := range jobs {
		before[i] = s.pickOnce(j)
	}
	gone := s.members[5]
	s.mu.Lock()
	gone.live = false
	s.mu.Unlock()
	for i, j := range jobs {
		after := s.pickOnce(j)
		if before[i] != gone && after != before[i] {
			t.Fatalf("key %d moved from %s to %s though its worker stayed", i, before[i].name, after.name)
		}
	}
}

func BenchmarkPick(b *testing.B) {
	for _, p := range []Policy{PolicyAffinity, PolicyLeastLoaded, PolicyRoundRobin} {
		b.Run(fmt.Sprintf("%s/64workers", p), func(b *testing.B) {
			s, jobs := pickBench(b, 64, p)
			b.ReportAllocs()
			i := 0
			for b.Loop() {
				s.pickOnce(jobs[i&1023])
				i++
			}
		})
	}
}
