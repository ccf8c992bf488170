package scheduler

import (
	"context"
	"fmt"
	"net"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/parleyhq/parley/server/worker"
)

// DirectScheme prefixes a worker address that is an inference server's
// OpenAI base URL, reached with no worker process in between:
// openai+http://HOST:PORT/v1 (or openai+https://).
const DirectScheme = "openai+"

// Upstream is an inference server the gateway addresses directly, as
// Config.DialUpstream is given it.
type Upstream struct {
	// BaseURL is its OpenAI base URL, http(s)://HOST:PORT/v1, the host
	// resolved to one address for http.
	BaseURL string
	// MaxBatch is the sequences it runs at once, from the address's
	// max-batch parameter (0: learned from the server where it tells).
	MaxBatch int
	// Models are the model ids it serves, from the address's model
	// parameters (none: those it lists).
	Models []string
	// APIKey is Config.UpstreamAPIKey.
	APIKey string
}

// target is one configured worker address: a host (an IP or a DNS name) and a
// port, and for a direct upstream the rest of its URL.
type target struct {
	addr, host, port, pool string
	direct                 *directTarget
}

// directTarget is what an openai+http(s):// address says beyond its host.
type directTarget struct {
	scheme, path string
	maxBatch     int
	models       []string
}

// name is the member name of the target's address addr (host:port): the
// address itself for a worker, the upstream's URL without its parameters
// for a direct one.
func (t target) name(addr string) string {
	if t.direct == nil {
		return addr
	}
	return DirectScheme + t.direct.scheme + "://" + addr + t.direct.path
}

func parseTargets(addrs []string, pool string) ([]target, error) {
	var out []target
	for _, a := range addrs {
		if strings.Contains(a, "://") {
			t, err := parseDirect(a, pool)
			if err != nil {
				return nil, err
			}
			out = append(out, t)
			continue
		}
		host, port, err := net.SplitHostPort(a)
		if err != nil || host == "" || port == "" {
			return nil, fmt.Errorf("scheduler: worker address %q: want host:port, or openai+http://host:port/v1 for an inference server", a)
		}
		out = append(out, target{addr: a, host: host, port: port, pool: pool})
	}
	return out, nil
}

// parseDirect reads openai+http(s)://HOST[:PORT][/PATH][?max-batch=N&model=ID…];
// the path defaults to /v1, the port to the scheme's.
func parseDirect(a, pool string) (target, error) {
	bad := func(why string) (target, error) {
		return target{}, fmt.Errorf("scheduler: inference server address %q: %s (want openai+http://host:port/v1[?max-batch=N&model=ID])", a, why)
	}
	u, err := url.Parse(a)
	if err != nil {
		return bad(err.Error())
	}
	scheme, ok := strings.CutPrefix(u.Scheme, DirectScheme)
	if !ok || (scheme != "http" && scheme != "https") {
		return bad("the scheme must be openai+http or openai+https")
	}
	if u.User != nil {
		return bad("no credentials in the address: give them with --upstream-api-key")
	}
	host, port := u.Hostname(), u.Port()
	if host == "" {
		return bad("no host")
	}
	if port == "" {
		port = map[string]string{"http": "80", "https": "443"}[scheme]
	}
	d := &directTarget{scheme: scheme, path: strings.TrimRight(u.Path, "/")}
	if d.path == "" {
		d.path = "/v1"
	}
	for k, vs := range u.Query() {
		switch k {
		case "max-batch":
			n, err := strconv.Atoi(vs[len(vs)-1])
			if err != nil || n < 1 {
				return bad("max-batch must be a positive integer")
			}
			d.maxBatch = n
		case "model":
			for _, v := range vs {
				if v = strings.TrimSpace(v); v != "" {
					d.models = append(d.models, v)
				}
			}
		default:
			return bad(fmt.Sprintf("unknown parameter %q", k))
		}
	}
	return target{addr: DirectScheme + scheme + "://" + net.JoinHostPort(host, port) + d.path, host: host, port: port, pool: pool, direct: d}, nil
}

// dial returns the engine for the target's address addr (host:port).
func (s *Scheduler) dial(t target, addr string) (worker.Engine, error) {
	if t.direct == nil {
		return s.cfg.Dial(addr), nil
	}
	return s.cfg.DialUpstream(Upstream{
		BaseURL: t.direct.scheme + "://" + addr + t.direct.path, MaxBatch: t.direct.maxBatch,
		Models: slices.Clone(t.direct.models), APIKey: s.cfg.UpstreamAPIKey,
	})
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
		if net.ParseIP(t.host) != nil || (t.direct != nil && t.direct.scheme == "https") {
			// An IP; or an https upstream, whose certificate names the
			// host: one member, its connections spread as DNS answers.
			addrs = []string{net.JoinHostPort(t.host, t.port)}
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
		if m.target == from && !slices.ContainsFunc(addrs, func(a string) bool { return t.name(a) == m.name }) {
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
		if name := t.name(a); !have[name] {
			e, err := s.dial(t, a)
			if err != nil {
				s.logger.Error("worker not added", "worker", name, "err", err)
				continue
			}
			have[name] = true
			s.add(&member{name: name, target: from, pool: p, engine: e, dialed: true})
		}
	}
}
