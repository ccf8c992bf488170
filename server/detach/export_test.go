package detach

import "net"

// WithoutPoller makes c watch each connection with a goroutine, as it does
// where there is no epoll, so that the tests run both ways.
func WithoutPoller(c *Conns) { c.poller = nil }

// Idle is how many connections wait for their next request.
func Idle(c *Conns) int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.idleConns)
}

// Len is the number of detached responses under way.
func Len(c *Conns) int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.open)
}

// Give hands conn back as a connection whose client sent its next request.
func Give(c *Conns, conn net.Conn) { c.give(conn, nil) }
