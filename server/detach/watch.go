package detach

import (
	"context"
	"net"
	"sync"
	"syscall"
	"time"
)

// response is one request's state under Conns.Handler.
type response struct {
	conns    *Conns
	w        writer
	detached bool // set by Go, on the handler's goroutine before it returns

	// Set when detached.
	conn     net.Conn
	pending  []byte // bytes of the next request, read early
	cancel   context.CancelFunc
	polled   bool            // the poller watches the connection
	pollID   uint64          // its registration with the poller
	raw      syscall.RawConn // the connection's descriptor, while polled
	readDone chan struct{}   // not polled: closed when the watching goroutine returns

	mu        sync.Mutex
	done      []func()    // Done's work, run by finish
	finished  bool        // finish has run the work registered so far
	keep      bool        // finish found the connection fit to serve again
	nextHere  bool        // the client's next request has begun
	gone      bool        // the client left, the connection failed, or it sat idle too long
	stopping  bool        // finish stopped the watching goroutine's read
	idleArmed bool        // the wait for the next request has begun
	idleTimer *time.Timer // polled: its end
	settled   bool        // the connection is handed back or closed
}

// What the client does is watched from the moment the response is
// detached: a client that leaves (EOF, reset) cancels the response's
// context; after the response, the connection waits, up to the server's
// idle timeout, for the client's next request, and is handed back to the
// server when it begins, as net/http's idle connections wait. On Linux one
// epoll instance watches every detached connection (watch_linux.go);
// elsewhere a goroutine each reads one byte.

// watch begins watching rs's connection.
func (c *Conns) watch(rs *response) {
	if c.poller != nil && c.poller.add(rs) {
		return
	}
	rs.readDone = make(chan struct{})
	go rs.read()
}

// read is the watching goroutine of a connection the poller does not
// watch: one byte read is the next request's first; EOF, an error or the
// idle deadline, the client gone.
func (rs *response) read() {
	defer close(rs.readDone)
	var b [1]byte
	if n, _ := rs.conn.Read(b[:]); n == 1 {
		rs.mu.Lock()
		rs.pending = append(rs.pending, b[0])
		rs.mu.Unlock()
		rs.sawNext(true)
		return
	}
	rs.sawGone(true)
}

// sawNext: the client's next request has begun. fromRead: called by the
// watching goroutine, whose read has returned.
func (rs *response) sawNext(fromRead bool) {
	rs.mu.Lock()
	rs.nextHere = true
	a := rs.decide()
	rs.mu.Unlock()
	rs.act(a, fromRead)
}

// sawGone: the client left, or the connection failed or sat idle too long.
func (rs *response) sawGone(fromRead bool) {
	rs.mu.Lock()
	if rs.stopping {
		rs.mu.Unlock()
		return // finish stopped the read on purpose
	}
	rs.gone = true
	a := rs.decide()
	rs.mu.Unlock()
	rs.cancel()
	rs.act(a, fromRead)
}

// finish ends a detached response: the last chunk written, the connection
// handed back, closed or left to wait for the next request, and the Done
// work run.
func (rs *response) finish() {
	rs.cancel()
	err := rs.w.end()
	rs.mu.Lock()
	rs.finished = true
	rs.keep = err == nil && !rs.w.close
	a := rs.decide()
	done := rs.done
	rs.done = nil
	rs.mu.Unlock()
	rs.act(a, false)
	for _, fn := range done {
		fn()
	}
	rs.conns.ended(rs) // after the Done work: shutdown waits for its log lines
}

type action int

const (
	none      action = iota
	giveBack         // the next request has begun: the server reads it
	closeConn        // the client is gone, or the connection is unfit
	waitIdle         // wait for the next request
)

// decide is what the connection's state calls for; rs.mu held.
func (rs *response) decide() action {
	switch {
	case rs.settled || !rs.finished:
		return none
	case rs.gone || !rs.keep:
		rs.settled = true
		return closeConn
	case rs.nextHere:
		rs.settled = true
		return giveBack
	case !rs.idleArmed:
		rs.idleArmed = true
		return waitIdle
	}
	return none
}

// act does what decide chose.
func (rs *response) act(a action, fromRead bool) {
	switch a {
	case closeConn:
		rs.unwatch(fromRead, false)
		_ = rs.conn.Close()
	case giveBack:
		rs.unwatch(fromRead, true)
		_ = rs.conn.SetReadDeadline(time.Time{})
		rs.conns.give(rs.conn, rs.pending)
	case waitIdle:
		// Under rs.mu: the next request or the client's leaving may have
		// settled the connection since decide, and then it is not idle.
		rs.mu.Lock()
		if rs.settled {
			rs.mu.Unlock()
			return
		}
		if !rs.conns.idle(rs, true) {
			rs.mu.Unlock()
			rs.sawGone(false) // the server has stopped listening
			return
		}
		d := rs.conns.idleTimeout
		if rs.polled {
			rs.idleTimer = time.AfterFunc(d, func() { rs.sawGone(false) })
		} else {
			_ = rs.conn.SetReadDeadline(time.Now().Add(d)) // the read goes on as the idle wait
		}
		rs.mu.Unlock()
	}
}

// unwatch stops watching the connection before it is closed or handed
// back. A watching goroutine whose read is under way is stopped and, when
// the connection is handed back (wait), waited for: its read must not take
// the next request's bytes.
func (rs *response) unwatch(fromRead, wait bool) {
	rs.conns.idle(rs, false)
	if rs.polled {
		rs.mu.Lock()
		t := rs.idleTimer
		rs.mu.Unlock()
		if t != nil {
			t.Stop()
		}
		rs.conns.poller.remove(rs)
		return
	}
	if fromRead || !wait {
		return // the read has returned, or the close ends it
	}
	rs.mu.Lock()
	rs.stopping = true
	rs.mu.Unlock()
	_ = rs.conn.SetReadDeadline(time.Unix(1, 0))
	<-rs.readDone
}
