package scheduler

import (
	"container/heap"
	"time"
)

// waiter is a job waiting in its model's queue for a worker.
type waiter struct {
	job      *pickJob
	priority int
	seq      uint64
	index    int // in the heap; -1 once out of it
	since    time.Time

	// ready receives the worker granted to the job, or nil when the job was
	// pushed out of a full queue by a higher-priority one.
	ready   chan *member
	granted *member
	evicted bool
	// hopeless is set, with a nil on ready, when no worker able to run the
	// job is up any more.
	hopeless bool
}

// queue is one model's waiting jobs: a heap, highest priority first, then
// first come.
type queue []*waiter

func (q queue) Len() int { return len(q) }
func (q queue) Less(i, j int) bool {
	if q[i].priority != q[j].priority {
		return q[i].priority > q[j].priority
	}
	return q[i].seq < q[j].seq
}
func (q queue) Swap(i, j int) {
	q[i], q[j] = q[j], q[i]
	q[i].index, q[j].index = i, j
}
func (q *queue) Push(x any) {
	w := x.(*waiter)
	w.index = len(*q)
	*q = append(*q, w)
}
func (q *queue) Pop() any {
	old := *q
	w := old[len(old)-1]
	old[len(old)-1] = nil
	*q = old[:len(old)-1]
	w.index = -1
	return w
}

// weakest returns the waiter a newcomer of priority would push out of a full
// queue — the lowest priority, latest arrival — or nil when none ranks below it.
func (q queue) weakest(priority int) *waiter {
	var out *waiter
	for _, w := range q {
		if w.priority >= priority {
			continue
		}
		if out == nil || w.priority < out.priority || (w.priority == out.priority && w.seq > out.seq) {
			out = w
		}
	}
	return out
}

func (q *queue) remove(w *waiter) {
	if w.index >= 0 {
		heap.Remove(q, w.index)
	}
}
