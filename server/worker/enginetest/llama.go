package enginetest

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"
)

// LlamaServer is a running llama.cpp server for the tests (scripts/llama.sh
// start; eval "$(scripts/llama.sh env)"): its base URL, model alias and
// slots.
type LlamaServer struct {
	URL, Model string
	Slots      int
}

// Llama returns the llama.cpp server named by PARLEY_TEST_LLAMA_URL, locked
// for t (LockServer); the test is skipped, saying how to start one, when it
// is unset.
func Llama(t *testing.T) LlamaServer {
	t.Helper()
	url := os.Getenv("PARLEY_TEST_LLAMA_URL")
	if url == "" {
		t.Skip("PARLEY_TEST_LLAMA_URL is not set: no llama.cpp server (scripts/llama.sh start; eval \"$(scripts/llama.sh env)\")")
	}
	s := LlamaServer{URL: strings.TrimRight(url, "/"), Model: os.Getenv("PARLEY_TEST_LLAMA_MODEL"), Slots: 4}
	if s.Model == "" {
		s.Model = "tiny"
	}
	if n, err := strconv.Atoi(os.Getenv("PARLEY_TEST_LLAMA_SLOTS")); err == nil && n > 0 {
		s.Slots = n
	}
	LockServer(t, s.URL)
	return s
}

// Probe reads the server's own load: the slots processing on /slots and
// the requests deferred on /metrics.
func (s LlamaServer) Probe(ctx context.Context) (busy, waiting int, err error) {
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	var slots []struct {
		IsProcessing bool `json:"is_processing"`
	}
	if err := getJSON(ctx, s.URL+"/slots", &slots); err != nil {
		return 0, 0, err
	}
	for _, sl := range slots {
		if sl.IsProcessing {
			busy++
		}
	}
	waiting, err = s.Gauge(ctx, "llamacpp:requests_deferred")
	return busy, waiting, err
}

// Gauge reads one unlabelled metric of the server's /metrics.
func (s LlamaServer) Gauge(ctx context.Context, name string) (int, error) {
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, s.URL+"/metrics", nil)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return 0, err
	}
	defer resp.Body.Close()
	sc := bufio.NewScanner(resp.Body)
	for sc.Scan() {
		if v, ok := strings.CutPrefix(sc.Text(), name+" "); ok {
			f, err := strconv.ParseFloat(strings.TrimSpace(v), 64)
			return int(f), err
		}
	}
	return 0, fmt.Errorf("%s: no %s", s.URL, name)
}

func getJSON(ctx context.Context, url string, v any) error {
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("GET %s: %s", url, resp.Status)
	}
	return json.NewDecoder(resp.Body).Decode(v)
}
