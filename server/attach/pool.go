package attach

import (
	"context"
	"errors"
	"sync"
)

// Pool bounds the expensive preparation of attachments — image decodes and
// document extractions — to a fixed number at once across the gateway, with
// a per-user share: one user holds at most PerUser slots and queues at most
// Queue more, so a user who sends many large files at once waits on their
// own share (or is refused) while everyone else's go ahead. Work of no
// named user ("", callers that do not say whose it is) is bounded by the
// pool's size alone.
type Pool struct {
	size, perUser, queue int

	mu      sync.Mutex
	running int
	users   map[string]*share // users with running or waiting work
	waiting []*waiter         // FIFO
}

type share struct{ running, waiting int }

type waiter struct {
	user  string
	ready chan struct{} // closed when the slot is granted
}

// ErrBusy is returned by Acquire when the user's queue is full.
var ErrBusy = errors.New("attach: too many attachments are being prepared for this user at once")

// NewPool makes a pool of size slots, perUser of which one user may hold,
// with queue waiting places per user (at least one each).
func NewPool(size, perUser, queue int) *Pool {
	size = max(size, 1)
	perUser = min(max(perUser, 1), size)
	return &Pool{size: size, perUser: perUser, queue: max(queue, 1), users: map[string]*share{}}
}

// Size and PerUser report the pool's bounds.
func (p *Pool) Size() int    { return p.size }
func (p *Pool) PerUser() int { return p.perUser }

// Acquire waits for a slot for user, or until ctx ends; it returns ErrBusy
// at once when the user already has a full queue. release gives the slot
// back and must be called exactly once.
func (p *Pool) Acquire(ctx context.Context, user string) (release func(), err error) {
	p.mu.Lock()
	s := p.users[user]
	if s == nil {
		s = &share{}
		p.users[user] = s
	}
	if p.running < p.size && s.running < p.share(user) && !p.queuedAhead(user) {
		p.running++
		s.running++
		p.mu.Unlock()
		return p.releaser(user), nil
	}
	if s.waiting >= p.queue && user != "" {
		p.forget(user, s)
		p.mu.Unlock()
		return nil, ErrBusy
	}
	w := &waiter{user: user, ready: make(chan struct{})}
	s.waiting++
	p.waiting = append(p.waiting, w)
	p.mu.Unlock()

	select {
	case <-w.ready:
		return p.releaser(user), nil
	case <-ctx.Done():
		p.mu.Lock()
		defer p.mu.Unlock()
		select {
		case <-w.ready: // granted meanwhile: hand it on
			p.release(user)
		default:
			for i, x := range p.waiting {
				if x == w {
					p.waiting = append(p.waiting[:i], p.waiting[i+1:]...)
					break
				}
			}
			s := p.users[user]
			s.waiting--
			p.forget(user, s)
		}
		return nil, ctx.Err()
	}
}

// queuedAhead says whether a waiter of user is already queued (so a new
// call does not overtake it).
func (p *Pool) queuedAhead(user string) bool {
	return p.users[user].waiting > 0
}

func (p *Pool) releaser(user string) func() {
	var once sync.Once
	return func() {
		once.Do(func() {
			p.mu.Lock()
			p.release(user)
			p.mu.Unlock()
		})
	}
}

// release frees one of user's slots and grants freed slots to the oldest
// waiters whose user has room. Called with mu held.
func (p *Pool) release(user string) {
	s := p.users[user]
	s.running--
	p.running--
	p.forget(user, s)
	for i := 0; i < len(p.waiting) && p.running < p.size; {
		w := p.waiting[i]
		ws := p.users[w.user]
		if ws.running >= p.share(w.user) {
			i++
			continue
		}
		p.waiting = append(p.waiting[:i], p.waiting[i+1:]...)
		ws.waiting--
		ws.running++
		p.running++
		close(w.ready)
	}
}

// share is how many slots user may hold.
func (p *Pool) share(user string) int {
	if user == "" {
		return p.size
	}
	return p.perUser
}

func (p *Pool) forget(user string, s *share) {
	if s.running == 0 && s.waiting == 0 {
		delete(p.users, user)
	}
}

// Stats reports the slots in use and the calls waiting.
func (p *Pool) Stats() (running, waiting int) {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.running, len(p.waiting)
}
