package scheduler

import (
	"context"
	"fmt"
	"net"
	"slices"
	"time"
)

// target is one configured worker address: a host (an IP or a DNS name) and a
// port.
type target struct {
	addr, host, port, pool string
}

func parseTargets(addrs []string, pool string) ([]target, error) {
	var out []target
	for _, a := range addrs {
		host, port, err := net.SplitHostPort(a)
		if err != nil || host == "" || port == "" {
			return nil, fmt.Errorf("scheduler: worker address %q: want host:port", a)
		}
		out = append(out, target{addr: a, host: host, port: port, pool: pool})
	}
	return out, nil
}

func (s *Scheduler) resolveLoop(ctx context.Context, targets []target) {
	defer s.wg.Done()
	t := time.NewTicker(s.cfg.ResolveInterval)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
			s.resolve(ctx, targets)
		}
	}
}

// resolve brings the workers from targets in line with what their names
// resolve to now: new addresses are dialed, vanished ones closed. A name that
// fails to resolve keeps its workers.
func (s *Scheduler) resolve(ctx context.Context, targets []target) {
	for _, t := range targets {
		var addrs []string
		if net.ParseIP(t.host) != nil {
			addrs = []string{t.addr}
		} else {
			rctx, cancel := context.WithTimeout(ctx, 5*time.Second)
			hosts, err := s.cfg.Resolve(rctx, t.host)
			cancel()
			if err != nil {
				s.logger.Warn("resolving worker address", "target", t.addr, "err", err)
				continue
			}
			for _, h := range hosts {
				addrs = append(addrs, net.JoinHostPort(h, t.port))
			}
		}
		s.reconcile(t, addrs)
	}
}

func (s *Scheduler) reconcile(t target, addrs []string) {
	from := t.addr
	s.mu.Lock()
	p := s.poolLocked(t.pool)
	var gone []*member
	have := map[string]bool{}
	kept := s.members[:0]
	for _, m := range s.members {
		if m.target == from && !slices.Contains(addrs, m.name) {
			gone = append(gone, m)
			continue
		}
		if m.target == from {
			have[m.name] = true
		}
		kept = append(kept, m)
	}
	clear(s.members[len(kept):])
	s.members = kept
	s.regroupLocked()
	s.mu.Unlock()
	for _, m := range gone {
		s.logger.Info("worker removed", "worker", m.name, "target", from)
		m.close()
	}
	for _, a := range addrs {
		if !have[a] {
			have[a] = true
			s.add(&member{name: a, target: from, pool: p, engine: s.cfg.Dial(a), dialed: true})
		}
	}
}
