package openai_test

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"testing"
	"time"

	"github.com/parleyhq/parley/server/worker"
	"github.com/parleyhq/parley/server/worker/enginetest"
	"github.com/parleyhq/parley/server/worker/openai"
)

// openLive opens an engine as a gateway does for a direct upstream and
// waits until it has found the upstream live.
func openLive(t *testing.T, cfg openai.Config) *openai.Engine {
	t.Helper()
	e, err := openai.Open(cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(e.Close)
	waitLive(t, e, true, 5*time.Second)
	return e
}

func waitLive(t *testing.T, e *openai.Engine, live bool, limit time.Duration) time.Duration {
	t.Helper()
	start := time.Now()
	for e.Live() != live {
		if time.Since(start) > limit {
			t.Fatalf("engine live=%v after %v, want %v (last error: %v)", e.Live(), limit, live, e.LastError())
		}
		time.Sleep(5 * time.Millisecond)
	}
	return time.Since(start)
}

// The engine a gateway runs in process for a direct upstream (Open) passes
// the conformance suite against the fake upstream, as the worker's does.
func TestConformanceDirect(t *testing.T) {
	enginetest.Run(t, func(t *testing.T) enginetest.Target {
		u := newServerUpstream(t, 2, 5*time.Millisecond)
		e := openLive(t, openai.Config{BaseURL: u.URL + "/v1", MetricsInterval: 5 * time.Millisecond})
		return enginetest.Target{
			Engine: e, Model: "llama-3-8b", Slots: 2, AcceptsImages: true, LongTokens: 200,
			Probe: func(context.Context) (int, int, error) {
				busy, waiting := u.probe()
				return busy, waiting, nil
			},
			Upstream: u.URL,
			Connect: func(t *testing.T, baseURL string, firstByte time.Duration) worker.Engine {
				return openLive(t, openai.Config{BaseURL: baseURL + "/v1", Models: []string{"llama-3-8b"},
					MaxBatch: 2, MetricsURL: "-", FirstByteTimeout: firstByte})
			},
		}
	})
}

// The same against a real llama.cpp server (scripts/llama.sh).
func TestConformanceLlamaCppDirect(t *testing.T) {
	enginetest.Run(t, func(t *testing.T) enginetest.Target {
		s := enginetest.Llama(t)
		e := openLive(t, openai.Config{BaseURL: s.URL + "/v1", MetricsInterval: 20 * time.Millisecond})
		if got := e.Load().MaxBatch; got != s.Slots {
			t.Errorf("slots learned in the background: %d, want llama.cpp's %d", got, s.Slots)
		}
		return enginetest.Target{
			Engine: e, Model: s.Model, Slots: s.Slots, LongTokens: 600,
			Probe:    s.Probe,
			Upstream: s.URL,
			Connect: func(t *testing.T, baseURL string, firstByte time.Duration) worker.Engine {
				return openLive(t, openai.Config{BaseURL: baseURL + "/v1", Models: []string{s.Model},
					MaxBatch: s.Slots, MetricsURL: "-", FirstByteTimeout: firstByte})
			},
		}
	})
}

// An engine from Open does not wait for its upstream: down at the start,
// it is not live and serves nothing; when the server comes up it learns its
// models and is live; when the server goes away (connections refused) it is
// down within a poll, and back when the server is.
func TestOpenFollowsUpstream(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	serve := func() *http.Server {
		t.Helper()
		var ln net.Listener
		var err error
		for range 100 { // the port was just closed: it may take a moment to bind again
			if ln, err = net.Listen("tcp", addr); err == nil {
				break
			}
			time.Sleep(10 * time.Millisecond)
		}
		if err != nil {
			t.Fatal(err)
		}
		mux := http.NewServeMux()
		mux.HandleFunc("GET /v1/models", func(w http.ResponseWriter, r *http.Request) {
			fmt.Fprint(w, `{"object":"list","data":[{"id":"late-model","object":"model"}]}`)
		})
		srv := &http.Server{Handler: mux}
		go srv.Serve(ln)
		t.Cleanup(func() { srv.Close() })
		return srv
	}

	changed := 0
	e, err := openai.Open(openai.Config{BaseURL: "http://" + addr + "/v1", MetricsInterval: 20 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close()
	go func() {
		for {
			<-e.LoadChanged()
			changed++
		}
	}()
	time.Sleep(150 * time.Millisecond)
	if e.Live() || len(e.Models()) != 0 {
		t.Fatalf("with nothing listening: live=%v, models %v", e.Live(), e.Models())
	}
	if e.LastError() == nil {
		t.Error("no reason given for being down")
	}

	srv := serve()
	took := waitLive(t, e, true, 7*time.Second) // the discovery back-off is at most 5 s
	if m := e.Models(); len(m) != 1 || m[0].ID != "late-model" {
		t.Fatalf("models %v, want the upstream's late-model", m)
	}
	t.Logf("live %v after the server came up", took)

	srv.Close()
	took = waitLive(t, e, false, 2*time.Second)
	t.Logf("down %v after the server went away", took)
	if took > 500*time.Millisecond {
		t.Errorf("a refused connection took %v to notice, want about one 20 ms poll", took)
	}

	serve()
	waitLive(t, e, true, 2*time.Second)
}
