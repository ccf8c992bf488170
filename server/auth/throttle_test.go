package auth_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"connectrpc.com/connect"

	"github.com/parleyhq/parley/server/apierr"
	"github.com/parleyhq/parley/server/auth"
)

// login tries a password for email from ip and returns the error's code (0:
// logged in) and its retry-after.
func (f *fixture) login(t *testing.T, email, password, ip string) (connect.Code, time.Duration) {
	t.Helper()
	_, _, err := f.auth.Login(context.Background(), email, password, auth.Client{IP: ip})
	if err == nil {
		return 0, 0
	}
	d, _ := apierr.RetryAfter(err)
	return connect.CodeOf(err), d
}

// An attacker failing over and over from one address neither locks the
// owner out from another address nor keeps failing at full speed: after
// the free failures each one shuts that address out for twice as long.
func TestLoginLockoutWithoutLockIn(t *testing.T) {
	f := newFixture(t, auth.Config{LoginRate: 100_000})
	f.signUp(t, "owner@example.com")
	const attacker, owner = "203.0.113.66", "198.51.100.7"

	var waits []time.Duration
	failures := 0
	for len(waits) < 14 {
		code, wait := f.login(t, "owner@example.com", "guess", attacker)
		switch code {
		case connect.CodeUnauthenticated:
			failures++
		case connect.CodeResourceExhausted:
			waits = append(waits, wait)
			// Refused again at once: the gate stays shut until the wait is over.
			if c, _ := f.login(t, "owner@example.com", "password123", attacker); c != connect.CodeResourceExhausted {
				t.Fatalf("second try while shut: %v", c)
			}
			// The owner, from elsewhere, is never slowed.
			if c, _ := f.login(t, "owner@example.com", "password123", owner); c != 0 {
				t.Fatalf("after %d attacker failures the owner is refused: %v", failures, c)
			}
			f.clock.Advance(wait - time.Millisecond)
			if c, _ := f.login(t, "owner@example.com", "guess", attacker); c != connect.CodeResourceExhausted {
				t.Fatalf("let in a millisecond early after a %v wait: %v", wait, c)
			}
			f.clock.Advance(time.Millisecond)
		default:
			t.Fatalf("attempt %d: code %v", failures+1, code)
		}
	}
	if failures != auth.DefaultLoginFreeFailures+len(waits) {
		t.Errorf("%d failures for %d waits: want %d free failures, then one per wait", failures, len(waits), auth.DefaultLoginFreeFailures)
	}
	want := []time.Duration{}
	for i := range waits {
		want = append(want, min(time.Second<<i, auth.DefaultLoginBackoffMax))
	}
	if fmt.Sprint(waits) != fmt.Sprint(want) {
		t.Errorf("waits %v, want %v (doubling, capped)", waits, want)
	}
	t.Logf("attacker waits: %v", waits)
}

// The owner's own mistypes are forgiven once they get in: the back-off of
// their address starts again from nothing.
func TestLoginSuccessClearsTheBackoff(t *testing.T) {
	f := newFixture(t, auth.Config{LoginRate: 100_000})
	f.signUp(t, "owner@example.com")
	const ip = "198.51.100.7"
	for range auth.DefaultLoginFreeFailures + 1 {
		if c, _ := f.login(t, "owner@example.com", "typo", ip); c != connect.CodeUnauthenticated {
			t.Fatal(c)
		}
	}
	if c, d := f.login(t, "owner@example.com", "password123", ip); c != connect.CodeResourceExhausted || d != time.Second {
		t.Fatalf("after %d failures: %v %v, want a 1 s back-off", auth.DefaultLoginFreeFailures+1, c, d)
	}
	f.clock.Advance(time.Second)
	if c, _ := f.login(t, "owner@example.com", "password123", ip); c != 0 {
		t.Fatal(c)
	}
	for range auth.DefaultLoginFreeFailures {
		if c, _ := f.login(t, "owner@example.com", "typo", ip); c != connect.CodeUnauthenticated {
			t.Fatalf("after a success, a free failure was refused: %v", c)
		}
	}
}

// Per account, across every address, a much larger number of failures is
// allowed before the same back-off starts: a guesser spread over many
// addresses is slowed too. Unknown accounts are throttled alike.
func TestLoginAccountWideBackoff(t *testing.T) {
	f := newFixture(t, auth.Config{LoginRate: 100_000, LoginAccountFreeFailures: 20})
	f.signUp(t, "owner@example.com")
	for _, email := range []string{"owner@example.com", "nobody@example.com"} {
		for i := range 20 {
			ip := fmt.Sprintf("203.0.113.%d", i) // one failure per address: no pair back-off
			if c, _ := f.login(t, email, "guess", ip); c != connect.CodeUnauthenticated {
				t.Fatalf("%s: failure %d: %v", email, i+1, c)
			}
		}
		if c, _ := f.login(t, email, "guess", "203.0.113.200"); c != connect.CodeUnauthenticated {
			t.Fatalf("%s: the 21st failure was refused: %v", email, c)
		}
		c, d := f.login(t, email, "password123", "198.51.100.7")
		if c != connect.CodeResourceExhausted || d != time.Second {
			t.Fatalf("%s: past the account's free failures, from a new address: %v %v; want a 1 s back-off", email, c, d)
		}
		f.clock.Advance(time.Hour)
	}
	if c, _ := f.login(t, "owner@example.com", "password123", "198.51.100.7"); c != 0 {
		t.Fatalf("after the back-off: %v", c)
	}
}

// The per-address limit before any password work stays: one address
// trying many accounts is limited to LoginRate a minute.
func TestLoginRatePerAddress(t *testing.T) {
	f := newFixture(t, auth.Config{LoginRate: 5})
	for i := range 5 {
		if c, _ := f.login(t, fmt.Sprintf("user%d@example.com", i), "guess", "203.0.113.9"); c != connect.CodeUnauthenticated {
			t.Fatalf("attempt %d: %v", i+1, c)
		}
	}
	c, d := f.login(t, "user9@example.com", "guess", "203.0.113.9")
	if c != connect.CodeResourceExhausted || d <= 0 || d > time.Minute {
		t.Fatalf("6th attempt in the minute: %v %v", c, d)
	}
	if c, _ := f.login(t, "user9@example.com", "guess", "203.0.113.10"); c != connect.CodeUnauthenticated {
		t.Fatalf("another address: %v", c)
	}
}

func TestLoginBackoff(t *testing.T) {
	for _, tc := range []struct {
		n    int64
		want time.Duration
	}{{0, 0}, {5, 0}, {6, time.Second}, {7, 2 * time.Second}, {10, 16 * time.Second}, {15, 512 * time.Second}, {16, 15 * time.Minute}, {1000, 15 * time.Minute}} {
		if got := auth.LoginBackoff(tc.n, 5, 15*time.Minute); got != tc.want {
			t.Errorf("LoginBackoff(%d) = %v, want %v", tc.n, got, tc.want)
		}
	}
}

// The pre-auth throttles count an IPv6 client by its /64: whoever holds one
// holds 2^64 addresses, and must not get as many buckets.
func TestAddressKey(t *testing.T) {
	for _, tc := range []struct{ ip, want string }{
		{"203.0.113.7", "203.0.113.7"},
		{"::ffff:203.0.113.7", "203.0.113.7"},
		{"2001:db8:1:2:3:4:5:6", "2001:db8:1:2::/64"},
		{"2001:db8:1:2:ffff:ffff:ffff:ffff", "2001:db8:1:2::/64"},
		{"2001:db8:1:3::1", "2001:db8:1:3::/64"},
		{"fe80::1%eth0", "fe80::/64"},
		{"::1", "::/64"},
		{"not an address", "not an address"},
	} {
		if got := auth.AddressKey(tc.ip); got != tc.want {
			t.Errorf("AddressKey(%q) = %q, want %q", tc.ip, got, tc.want)
		}
	}
}

func TestSignUpAndLoginThrottleIPv6By64(t *testing.T) {
	f := newFixture(t, auth.Config{LoginRate: 3})
	signUp := func(i int, ip string) connect.Code {
		_, _, err := f.auth.SignUp(context.Background(), fmt.Sprintf("u%d@example.com", i), "password123", "", "", auth.Client{IP: ip})
		if err == nil {
			return 0
		}
		return connect.CodeOf(err)
	}
	// Three addresses of one /64 share its three sign-ups a minute.
	for i, ip := range []string{"2001:db8:5:6::1", "2001:db8:5:6::2", "2001:db8:5:6:ffff::9"} {
		if code := signUp(i, ip); code != 0 {
			t.Fatalf("sign-up %d from %s: %v", i, ip, code)
		}
	}
	if code := signUp(3, "2001:db8:5:6:1234::1"); code != connect.CodeResourceExhausted {
		t.Fatalf("fourth sign-up from the same /64: %v, want resource_exhausted", code)
	}
	if code := signUp(4, "2001:db8:5:7::1"); code != 0 {
		t.Fatalf("sign-up from the next /64: %v", code)
	}
	// Logins too: the /64's three attempts, then refused whatever the address.
	for i := range 3 {
		if code, _ := f.login(t, "u0@example.com", "password123", fmt.Sprintf("2001:db8:9:9::%x", i+1)); code != 0 {
			t.Fatalf("login %d: %v", i, code)
		}
	}
	if code, _ := f.login(t, "u0@example.com", "password123", "2001:db8:9:9:abcd::1"); code != connect.CodeResourceExhausted {
		t.Fatalf("fourth login from the same /64: %v, want resource_exhausted", code)
	}
}

// The global sign-up rate holds across addresses, and counts accounts made,
// not refusals.
func TestSignUpRateGlobal(t *testing.T) {
	f := newFixture(t, auth.Config{LoginRate: 100, SignUpRateGlobal: 3})
	signUp := func(email, ip string) error {
		_, _, err := f.auth.SignUp(context.Background(), email, "password123", "", "", auth.Client{IP: ip})
		return err
	}
	for i := range 3 {
		if err := signUp(fmt.Sprintf("g%d@example.com", i), fmt.Sprintf("198.51.100.%d", i+1)); err != nil {
			t.Fatal(err)
		}
	}
	// A fourth address is refused: the server's three a minute are taken.
	err := signUp("g9@example.com", "198.51.100.50")
	if connect.CodeOf(err) != connect.CodeResourceExhausted || !strings.Contains(err.Error(), "--signup-rate-global") {
		t.Fatalf("fourth sign-up from a fourth address: %v", err)
	}
	// One refills in 20 s; a sign-up refused after taking it (the email is
	// taken) gives it back, so the next one still gets it.
	f.clock.Advance(20 * time.Second)
	if err := signUp("g0@example.com", "198.51.100.51"); connect.CodeOf(err) != connect.CodeAlreadyExists {
		t.Fatalf("duplicate email: %v", err)
	}
	if err := signUp("g10@example.com", "198.51.100.52"); err != nil {
		t.Fatalf("after a refused sign-up gave its take back: %v", err)
	}
}
