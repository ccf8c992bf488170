package redis

import (
	"context"
	"fmt"
	"net/url"
	"strings"

	goredis "github.com/redis/go-redis/v9"
)

// Open connects to Redis and checks that it answers. url is one server
// (redis://[user:password@]host:port/db, rediss:// for TLS) or a Redis
// Cluster: redis+cluster://[user:password@]host:port,host:port,…[?options]
// (rediss+cluster:// for TLS), naming any of its nodes (the client finds the
// rest); the options are go-redis's cluster URL options (dial_timeout=3s,
// read_timeout, route_by_latency=true, …).
func Open(ctx context.Context, url string) (goredis.UniversalClient, error) {
	c, err := Dial(url)
	if err != nil {
		return nil, err
	}
	if err := c.Ping(ctx).Err(); err != nil {
		c.Close()
		return nil, fmt.Errorf("redis: ping: %w", err)
	}
	return c, nil
}

// Dial returns a client of the Redis (or Redis Cluster) at url, as Open
// takes it, without checking that it answers: for a best-effort store such
// as the response cache, which works on while its Redis is down.
func Dial(url string) (goredis.UniversalClient, error) {
	if IsClusterURL(url) {
		opts, err := parseClusterURL(url)
		if err != nil {
			return nil, err
		}
		return goredis.NewClusterClient(opts), nil
	}
	opts, err := goredis.ParseURL(url)
	if err != nil {
		return nil, fmt.Errorf("redis: %w", err)
	}
	return goredis.NewClient(opts), nil
}

// IsClusterURL says whether url names a Redis Cluster (redis+cluster:// or
// rediss+cluster://).
func IsClusterURL(url string) bool {
	return strings.HasPrefix(url, "redis+cluster://") || strings.HasPrefix(url, "rediss+cluster://")
}

// parseClusterURL turns redis+cluster://user:pw@h1:p1,h2:p2/?opts into
// go-redis's cluster options (its form is redis://user:pw@h1:p1?addr=h2:p2).
func parseClusterURL(raw string) (*goredis.ClusterOptions, error) {
	scheme, rest, _ := strings.Cut(raw, "://")
	scheme = strings.TrimSuffix(scheme, "+cluster")
	auth, hostsAndRest := "", rest
	if i := strings.LastIndexByte(rest[:hostsEnd(rest)], '@'); i >= 0 {
		auth, hostsAndRest = rest[:i+1], rest[i+1:]
	}
	end := hostsEnd(hostsAndRest)
	hosts, tail := hostsAndRest[:end], hostsAndRest[end:]
	addrs := strings.Split(hosts, ",")
	for _, a := range addrs {
		if a == "" {
			return nil, fmt.Errorf("redis: cluster URL %q: empty address in the host list", redact(raw))
		}
	}
	path, query, _ := strings.Cut(tail, "?")
	if path != "" && path != "/" && path != "/0" {
		return nil, fmt.Errorf("redis: cluster URL %q: Redis Cluster has only database 0", redact(raw))
	}
	q, err := url.ParseQuery(query)
	if err != nil {
		return nil, fmt.Errorf("redis: cluster URL %q: %w", redact(raw), err)
	}
	for _, a := range addrs[1:] {
		q.Add("addr", a)
	}
	u := scheme + "://" + auth + addrs[0]
	if len(q) > 0 {
		u += "?" + q.Encode()
	}
	opts, err := goredis.ParseClusterURL(u)
	if err != nil {
		return nil, fmt.Errorf("redis: cluster URL %q: %w", redact(raw), err)
	}
	return opts, nil
}

// hostsEnd is the index where the authority of s (after "scheme://") ends.
func hostsEnd(s string) int {
	if i := strings.IndexAny(s, "/?"); i >= 0 {
		return i
	}
	return len(s)
}

// redact hides a URL's password for error messages.
func redact(raw string) string {
	scheme, rest, ok := strings.Cut(raw, "://")
	if !ok {
		return raw
	}
	end := hostsEnd(rest)
	if i := strings.LastIndexByte(rest[:end], '@'); i >= 0 {
		if user, _, hasPw := strings.Cut(rest[:i], ":"); hasPw {
			return scheme + "://" + user + ":xxxxx@" + rest[i+1:]
		}
	}
	return raw
}
