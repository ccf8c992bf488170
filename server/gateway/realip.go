package gateway

import (
	"net"
	"net/http"
	"net/netip"
	"strings"
)

// RealIP sets a request's RemoteAddr to its client's address when it came
// through one of the trusted reverse proxies: the right-most address of
// X-Forwarded-For that is not itself a trusted proxy (a client can write
// any addresses on the left of the header; only what the proxies appended
// is believed). A request from any other peer keeps the peer's address, its
// header ignored. Everything after it (organisation keys' allow-lists, the
// audit log, sign-in throttling, request logs) sees the client's address.
// With no trusted proxies it returns next unchanged.
func RealIP(trusted []netip.Prefix) func(http.Handler) http.Handler {
	return func(next http.Handler) http.Handler {
		if len(trusted) == 0 {
			return next
		}
		isTrusted := func(a netip.Addr) bool {
			for _, p := range trusted {
				if p.Contains(a) {
					return true
				}
			}
			return false
		}
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if client, ok := forwardedClient(r, isTrusted); ok {
				r = r.WithContext(r.Context()) // a copy: the caller's request is not changed
				r.RemoteAddr = net.JoinHostPort(client.String(), "0")
			}
			next.ServeHTTP(w, r)
		})
	}
}

// forwardedClient is the client's address by X-Forwarded-For, when the
// peer is trusted and the header names one.
func forwardedClient(r *http.Request, trusted func(netip.Addr) bool) (netip.Addr, bool) {
	peer, err := netip.ParseAddrPort(r.RemoteAddr)
	if err != nil || !trusted(peer.Addr().Unmap()) {
		return netip.Addr{}, false
	}
	values := r.Header.Values("X-Forwarded-For")
	var client netip.Addr
	for i := len(values) - 1; i >= 0; i-- {
		hops := strings.Split(values[i], ",")
		for j := len(hops) - 1; j >= 0; j-- {
			a, err := netip.ParseAddr(strings.TrimSpace(hops[j]))
			if err != nil {
				// Not an address: nothing to its left can be believed.
				return client, client.IsValid()
			}
			client = a.Unmap()
			if !trusted(client) {
				return client, true
			}
		}
	}
	return client, client.IsValid()
}
