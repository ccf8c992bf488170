package e2e

import (
	"context"
	"errors"
	"syscall"
	"testing"
	"time"

	"github.com/parleyhq/parley/server/llm"
	"github.com/parleyhq/parley/server/scheduler"
)

func chat(model, text string, maxTokens int) llm.Request {
	return llm.Request{Model: model, MaxTokens: maxTokens, Messages: []llm.ChatMessage{
		{Role: "user", Parts: []llm.Part{{Text: text}}},
	}}
}

func waitWorkers(t *testing.T, s *scheduler.Scheduler, what string, cond func([]scheduler.WorkerStatus) bool) []scheduler.WorkerStatus {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		ws := s.Workers()
		if cond(ws) {
			return ws
		}
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s: %+v", what, ws)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// TestWorkerProcessServesScheduler: a real worker process behind the
// scheduler streams a generation with usage.
func TestWorkerProcessServesScheduler(t *testing.T) {
	w := startWorker(t, "--models", "sim-small")
	s, err := scheduler.New(scheduler.Config{Workers: []string{w.Addr()}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	ws := waitWorkers(t, s, "ready", func(ws []scheduler.WorkerStatus) bool { return ws[0].State == scheduler.StateReady })
	if ws[0].WorkerID == "" || len(ws[0].Models) != 1 || ws[0].Models[0] != "sim-small" || ws[0].Load.MaxBatch == 0 {
		t.Errorf("worker status = %+v", ws[0])
	}
	var text string
	res, err := s.Generate(ctxTimeout(t, 10*time.Second), new(llm.Job{Request: chat("sim-small", "Tell me about the rabbit.", 40), AffinityKey: "c1"}),
		func(d llm.Delta) error { text += d.Text; return nil })
	if err != nil {
		t.Fatal(err)
	}
	if text == "" || res.Usage.CompletionTokens == 0 || res.Usage.PromptTokens == 0 || res.Usage.Estimated {
		t.Errorf("result = %+v, text %q", res, text)
	}
	if _, err := s.Generate(ctxTimeout(t, 10*time.Second), new(llm.Job{Request: chat("nope", "hi", 5)}), func(llm.Delta) error { return nil }); err == nil {
		t.Error("a model no worker serves was accepted")
	}
}

// TestWorkerKilledMidStream: SIGKILL of the worker streaming a generation ends
// the stream with an error and the usage so far, frees its slot, takes the
// worker out of rotation, and the other worker serves the next request.
func TestWorkerKilledMidStream(t *testing.T) {
	workers := map[string]*server{}
	var addrs []string
	for range 2 {
		w := startWorker(t, "--time-scale", "1", "--models", "sim-small")
		workers[w.Addr()] = w
		addrs = append(addrs, w.Addr())
	}
	s, err := scheduler.New(scheduler.Config{Workers: addrs, EjectBase: 10 * time.Second}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	waitWorkers(t, s, "both ready", func(ws []scheduler.WorkerStatus) bool {
		return len(ws) == 2 && ws[0].State == scheduler.StateReady && ws[1].State == scheduler.StateReady
	})

	firstDelta := make(chan struct{})
	type outcome struct {
		res llm.Result
		err error
	}
	done := make(chan outcome, 1)
	go func() {
		started := false
		res, err := s.Generate(ctxTimeout(t, 30*time.Second), new(llm.Job{Request: chat("sim-small", "Tell me a very long story.", 2000)}),
			func(llm.Delta) error {
				if !started {
					started = true
					close(firstDelta)
				}
				return nil
			})
		done <- outcome{res, err}
	}()
	select {
	case <-firstDelta:
	case <-time.After(10 * time.Second):
		t.Fatal("no first delta")
	}
	var victim string
	for _, ws := range s.Workers() {
		if ws.InFlight == 1 {
			victim = ws.Address
		}
	}
	if victim == "" {
		t.Fatalf("no worker has the generation in flight: %+v", s.Workers())
	}
	killedAt := time.Now()
	workers[victim].Signal(syscall.SIGKILL)

	var out outcome
	select {
	case out = <-done:
	case <-time.After(10 * time.Second):
		t.Fatal("the stream did not end after its worker was killed")
	}
	t.Logf("stream ended %v after SIGKILL", time.Since(killedAt))
	if out.err != nil {
		t.Fatalf("error after the first token: %v; want a result", out.err)
	}
	if out.res.FinishReason != llm.FinishError || out.res.Err == nil || out.res.Usage.CompletionTokens == 0 || !out.res.Usage.Estimated {
		t.Errorf("result = %+v, want finish error with the (estimated) usage so far", out.res)
	}
	ws := waitWorkers(t, s, "the killed worker out of rotation", func(ws []scheduler.WorkerStatus) bool {
		for _, w := range ws {
			if w.Address == victim {
				return w.State != scheduler.StateReady && w.InFlight == 0
			}
		}
		return false
	})
	t.Logf("workers after the kill: %+v", ws)

	// The survivor serves the next requests.
	for i := range 3 {
		res, err := s.Generate(ctxTimeout(t, 10*time.Second), new(llm.Job{Request: chat("sim-small", "Hello again.", 5)}), func(llm.Delta) error { return nil })
		if err != nil || res.FinishReason == llm.FinishError {
			t.Fatalf("request %d after the kill: %+v, %v", i, res, err)
		}
	}
	for _, w := range s.Workers() {
		if w.Address == victim && w.State == scheduler.StateReady {
			t.Error("the killed worker came back READY")
		}
	}
	if errors.Is(out.res.Err, context.Canceled) {
		t.Error("the failure was reported as a cancellation")
	}
}
