//go:build linux

package detach

import (
	"errors"
	"log/slog"
	"os"
	"sync"
	"syscall"
)

// poller watches every detached connection with one epoll instance and
// one goroutine, so that an open stream costs no goroutine (and stack) for
// noticing its client leave, and a connection waiting for its next request
// none at all. Registrations are edge-triggered: one event when the
// client's bytes arrive (its next request) and one when it hangs up.
//
// The goroutine waits in Go's own netpoller, on the epoll instance itself
// (readable when it holds events), not in a blocking epoll_wait: a thread
// parked in a system call for good had the runtime's monitor take its
// processor back every 10 ms and wake itself every 20 µs after: about a
// tenth of the gateway's context switches (docs/perf.md, round six).
type poller struct {
	epfd   int
	file   *os.File // epfd, registered with Go's netpoller
	logger *slog.Logger

	mu   sync.Mutex
	byID map[uint64]*response
	next uint64
}

const (
	epollET    = 1 << 31 // syscall.EPOLLET, which does not fit its uint32 field as a constant
	epollWatch = syscall.EPOLLIN | syscall.EPOLLRDHUP | epollET
	epollGone  = syscall.EPOLLRDHUP | syscall.EPOLLHUP | syscall.EPOLLERR
)

// newPoller starts the poller; nil if epoll cannot be had.
func newPoller(logger *slog.Logger) *poller {
	fd, err := syscall.EpollCreate1(syscall.EPOLL_CLOEXEC)
	if err == nil {
		err = syscall.SetNonblock(fd, true) // so that os.NewFile gives it to the netpoller
		if err != nil {
			_ = syscall.Close(fd)
		}
	}
	if err != nil {
		logger.Warn("detach: no epoll, a goroutine watches each stream's connection", "err", err)
		return nil
	}
	p := &poller{epfd: fd, file: os.NewFile(uintptr(fd), "detach-epoll"), logger: logger, byID: map[uint64]*response{}}
	raw, err := p.file.SyscallConn()
	if err != nil {
		_ = p.file.Close()
		logger.Warn("detach: no epoll, a goroutine watches each stream's connection", "err", err)
		return nil
	}
	go p.loop(raw)
	return p
}

// add registers rs's connection; false for one that is not a socket of
// its own (TLS, a connection with bytes read ahead), left to a goroutine.
func (p *poller) add(rs *response) bool {
	sc, ok := rs.conn.(syscall.Conn)
	if !ok {
		return false
	}
	raw, err := sc.SyscallConn()
	if err != nil {
		return false
	}
	p.mu.Lock()
	p.next++
	id := p.next
	p.byID[id] = rs
	rs.polled, rs.pollID = true, id
	p.mu.Unlock()
	rs.raw = raw
	var addErr error
	err = raw.Control(func(fd uintptr) {
		ev := syscall.EpollEvent{Events: epollWatch, Fd: int32(uint32(id)), Pad: int32(uint32(id >> 32))}
		addErr = syscall.EpollCtl(p.epfd, syscall.EPOLL_CTL_ADD, int(fd), &ev)
	})
	if err = errors.Join(err, addErr); err != nil {
		p.mu.Lock()
		delete(p.byID, id)
		rs.polled = false
		p.mu.Unlock()
		return false
	}
	return true
}

// remove forgets rs's connection. The descriptor is taken through the
// connection, which refuses once it is closed: a closed connection's
// registration went with its descriptor, and the number may be another's.
func (p *poller) remove(rs *response) {
	p.mu.Lock()
	_, ok := p.byID[rs.pollID]
	delete(p.byID, rs.pollID)
	p.mu.Unlock()
	if ok {
		_ = rs.raw.Control(func(fd uintptr) {
			_ = syscall.EpollCtl(p.epfd, syscall.EPOLL_CTL_DEL, int(fd), nil)
		})
	}
}

// loop takes the instance's events as they come, for good. It is one
// RawConn.Read, whose function takes what is there without waiting and
// reports false to wait for more: an event that arrives after it looked
// is not lost, as the netpoller's readiness is only reset when a Read
// begins, once.
func (p *poller) loop(raw syscall.RawConn) {
	var events [128]syscall.EpollEvent
	var failed error
	err := raw.Read(func(fd uintptr) bool {
		for {
			n, err := syscall.EpollWait(int(fd), events[:], 0)
			switch {
			case errors.Is(err, syscall.EINTR):
				continue
			case err != nil:
				failed = err
				return true
			case n == 0:
				return false // wait in the netpoller for the next
			}
			p.dispatch(events[:n])
		}
	})
	p.logger.Error("detach: epoll failed: detached streams no longer notice their clients leave", "err", errors.Join(err, failed))
}

// dispatch tells each event's connection what happened to it.
func (p *poller) dispatch(events []syscall.EpollEvent) {
	for _, ev := range events {
		id := uint64(uint32(ev.Fd)) | uint64(uint32(ev.Pad))<<32
		p.mu.Lock()
		rs := p.byID[id]
		p.mu.Unlock()
		switch {
		case rs == nil: // removed since
		case ev.Events&epollGone != 0:
			rs.sawGone(false)
		case ev.Events&syscall.EPOLLIN != 0:
			rs.sawNext(false)
		}
	}
}
