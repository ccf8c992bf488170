package e2e

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"connectrpc.com/connect"

	parleyv1 "github.com/parleyhq/parley/gen/parley/v1"
)

// TestMeasureAuth measures, against the real binary, authenticated GetMe
// calls per second with a warm credential cache (32 callers, 5 s per
// protocol and channel) and the median login latency (argon2id at the
// default cost). It is a measurement, not a check; run it with
//
//	PARLEY_MEASURE=1 go test ./server/e2e -run MeasureAuth -v
func TestMeasureAuth(t *testing.T) {
	if os.Getenv("PARLEY_MEASURE") == "" {
		t.Skip("set PARLEY_MEASURE=1 to measure")
	}
	s := startServer(t, fastAuth...)
	a := s.newAccount(t, "bench@example.com")
	const callers, window = 32, 5 * time.Second
	for _, p := range protocols {
		for _, channel := range []string{"session", "key"} {
			c := s.as(p, a, channel) // one client: HTTP/1.1 pools 32 connections, h2c multiplexes one
			var calls atomic.Int64
			var wg sync.WaitGroup
			cpu0 := cpuSeconds(t, s.cmd.Process.Pid)
			deadline := time.Now().Add(window)
			for range callers {
				wg.Go(func() {
					for time.Now().Before(deadline) {
						if _, err := c.Auth.GetMe(context.Background(), connect.NewRequest(&parleyv1.GetMeRequest{})); err != nil {
							t.Error(err)
							return
						}
						calls.Add(1)
					}
				})
			}
			wg.Wait()
			cpu := cpuSeconds(t, s.cmd.Process.Pid) - cpu0
			t.Logf("GetMe %-7s %-7s %8.0f calls/s, server CPU %.2f cores, %8.0f calls per server CPU-second",
				p.name, channel, float64(calls.Load())/window.Seconds(), cpu/window.Seconds(), float64(calls.Load())/cpu)
		}
	}
	c := s.clients(protocols[0], cred{})
	var lat []time.Duration
	for range 50 {
		start := time.Now()
		if _, err := c.Auth.Login(context.Background(), connect.NewRequest(&parleyv1.LoginRequest{Email: a.Email, Password: a.Password})); err != nil {
			t.Fatal(err)
		}
		lat = append(lat, time.Since(start))
	}
	slices.Sort(lat)
	t.Logf("Login p50 %v, p90 %v (%d logins)", lat[len(lat)/2], lat[len(lat)*9/10], len(lat))
}

// cpuSeconds is the user+system CPU time of a process so far (Linux only).
func cpuSeconds(t *testing.T, pid int) float64 {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		t.Skip("no /proc: ", err)
	}
	// Fields after the command name (which is in parentheses): utime and
	// stime are the 12th and 13th, in clock ticks (100 a second on Linux).
	f := strings.Fields(string(b[bytes.LastIndexByte(b, ')')+2:]))
	utime, _ := strconv.ParseFloat(f[11], 64)
	stime, _ := strconv.ParseFloat(f[12], 64)
	return (utime + stime) / 100
}
