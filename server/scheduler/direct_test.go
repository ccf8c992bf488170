package scheduler

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/parleyhq/parley/server/worker"
)

// Inference servers addressed directly sit beside workers: an http one
// named by DNS is a member per address (a Kubernetes headless service of
// vLLM pods), each dialed with its own base URL and the address's
// parameters; an https one stays one member, its certificate naming the
// host; bad addresses are refused naming what is wrong.
func TestDirectUpstreams(t *testing.T) {
	var mu sync.Mutex
	dialed := map[string]Upstream{}
	s, err := New(Config{
		Workers: []string{
			"openai+http://vllm.parley.svc:8000/v1?max-batch=64&model=llama&model=qwen",
			"openai+https://api.example.com/v1",
			"10.0.1.9:7000",
		},
		UpstreamAPIKey: "sk-up",
		Resolve: func(_ context.Context, host string) ([]string, error) {
			if host != "vllm.parley.svc" {
				return nil, fmt.Errorf("%s must not be resolved", host)
			}
			return []string{"10.0.0.1", "10.0.0.2"}, nil
		},
		Dial: func(addr string) worker.Engine { return newFake(4) },
		DialUpstream: func(u Upstream) (worker.Engine, error) {
			mu.Lock()
			defer mu.Unlock()
			dialed[u.BaseURL] = u
			return newFake(4), nil
		},
	}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	var names []string
	for _, w := range s.Workers() {
		names = append(names, w.Address+" ← "+w.Target)
	}
	want := []string{
		"openai+http://10.0.0.1:8000/v1 ← openai+http://vllm.parley.svc:8000/v1",
		"openai+http://10.0.0.2:8000/v1 ← openai+http://vllm.parley.svc:8000/v1",
		"openai+https://api.example.com:443/v1 ← openai+https://api.example.com:443/v1",
		"10.0.1.9:7000 ← 10.0.1.9:7000",
	}
	if !slices.Equal(names, want) {
		t.Fatalf("workers:\n%s\nwant:\n%s", strings.Join(names, "\n"), strings.Join(want, "\n"))
	}
	mu.Lock()
	defer mu.Unlock()
	u := dialed["http://10.0.0.2:8000/v1"]
	if u.MaxBatch != 64 || !slices.Equal(u.Models, []string{"llama", "qwen"}) || u.APIKey != "sk-up" {
		t.Errorf("dialed %+v", u)
	}
	if u := dialed["https://api.example.com:443/v1"]; u.MaxBatch != 0 || u.Models != nil || u.APIKey != "sk-up" {
		t.Errorf("dialed %+v", u)
	}
}

func TestDirectAddressErrors(t *testing.T) {
	dial := func(Upstream) (worker.Engine, error) { return newFake(1), nil }
	for _, tc := range []struct{ addr, says string }{
		{"http://vllm:8000/v1", "openai+http or openai+https"},
		{"openai+ftp://vllm:8000/v1", "openai+http or openai+https"},
		{"openai+http://user:pw@vllm:8000/v1", "--upstream-api-key"},
		{"openai+http://vllm:8000/v1?max-batch=0", "max-batch"},
		{"openai+http://vllm:8000/v1?slots=4", `unknown parameter "slots"`},
		{"openai+http://:8000/v1", "no host"},
	} {
		_, err := New(Config{Workers: []string{tc.addr}, DialUpstream: dial, Resolve: func(context.Context, string) ([]string, error) {
			return []string{"10.0.0.1"}, nil
		}}, nil)
		if err == nil || !strings.Contains(err.Error(), tc.says) {
			t.Errorf("%s: err %v, want it to say %q", tc.addr, err, tc.says)
		}
	}
	_, err := New(Config{Workers: []string{"openai+http://10.0.0.1:8000/v1"}}, nil)
	if err == nil || !strings.Contains(err.Error(), "DialUpstream") {
		t.Errorf("no DialUpstream: err %v", err)
	}
	// A pool takes them as --workers does; the default port and path.
	s, err := New(Config{Pools: []Pool{{Name: "gpu", Workers: []string{"openai+http://10.0.0.3"}}}, DialUpstream: dial,
		ConnectGrace: time.Second}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if w := s.Workers(); len(w) != 1 || w[0].Address != "openai+http://10.0.0.3:80/v1" || w[0].Pool != "gpu" {
		t.Errorf("workers %+v", w)
	}
}
