//go:build linux

package detach

import (
	"errors"
	"log/slog"
	"sync"
	"syscall"
)

// poller watches every detached connection with one epoll instance and
// one goroutine, so that an open stream costs no goroutine (and stack) for
// noticing its client leave, and a connection waiting for its next request
// none at all. Registrations are edge-triggered: one event when the
// client's bytes arrive (its next request) and one when it hangs up.
type poller struct {
	epfd   int
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
	if err != nil {
		logger.Warn("detach: no epoll, a goroutine watches each stream's connection", "err", err)
		return nil
	}
	p := &poller{epfd: fd, logger: logger, byID: map[uint64]*response{}}
	go p.loop()
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

func (p *poller) loop() {
	var events [128]syscall.EpollEvent
	for {
		n, err := syscall.EpollWait(p.epfd, events[:], -1)
		if err != nil {
			if errors.Is(err, syscall.EINTR) {
				continue
			}
			p.logger.Error("detach: epoll failed: detached streams no longer notice their clients leave", "err", err)
			return
		}
		for _, ev := range events[:n] {
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
}
