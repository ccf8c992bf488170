package sse

import (
	"bytes"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"
)

func TestEncoderGolden(t *testing.T) {
	var buf bytes.Buffer
	enc := NewEncoder(&buf)
	steps := []func() error{
		func() error { return enc.WriteEvent(Event{Data: `{"a":1}`}) },
		func() error {
			return enc.WriteEvent(Event{ID: "7", Event: "delta", Data: "one\ntwo\r\nthree\rfour", Retry: 1500 * time.Millisecond})
		},
		func() error { return enc.WriteEvent(Event{Data: ""}) },
		func() error { return enc.WriteEvent(Event{Data: "trailing\n"}) },
		func() error { return enc.WriteComment("ping") },
		func() error { return enc.WriteComment("two\nlines") },
		func() error { return enc.WriteEvent(Event{Data: "[DONE]"}) },
	}
	for i, step := range steps {
		if err := step(); err != nil {
			t.Fatalf("step %d: %v", i, err)
		}
	}
	const want = "data: {\"a\":1}\n\n" +
		"id: 7\nevent: delta\nretry: 1500\ndata: one\ndata: two\ndata: three\ndata: four\n\n" +
		"data: \n\n" +
		"data: trailing\ndata: \n\n" +
		": ping\n" +
		": two\n: lines\n" +
		"data: [DONE]\n\n"
	if got := buf.String(); got != want {
		t.Fatalf("encoded\n%q\nwant\n%q", got, want)
	}
}

func TestEncoderRejectsBrokenFields(t *testing.T) {
	enc := NewEncoder(io.Discard)
	for _, ev := range []Event{{ID: "a\nb"}, {ID: "a\x00"}, {Event: "x\ry"}} {
		if err := enc.WriteEvent(ev); !errors.Is(err, ErrInvalidField) {
			t.Errorf("WriteEvent(%+v) = %v, want ErrInvalidField", ev, err)
		}
	}
}

// TestEncoderFlushes checks that each event reaches an HTTP client before the
// handler returns.
func TestEncoderFlushes(t *testing.T) {
	next := make(chan struct{})
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/event-stream")
		enc := NewEncoder(w)
		enc.WriteEvent(Event{Data: "first"})
		<-next
		enc.WriteEvent(Event{Data: "second"})
	}))
	defer srv.Close()
	resp, err := http.Get(srv.URL)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	dec := NewDecoder(resp.Body)
	ev, err := dec.Next()
	if err != nil || ev.Data != "first" {
		t.Fatalf("first event = %+v, %v", ev, err)
	}
	close(next)
	if ev, err := dec.Next(); err != nil || ev.Data != "second" {
		t.Fatalf("second event = %+v, %v", ev, err)
	}
	if _, err := dec.Next(); err != io.EOF {
		t.Fatalf("end = %v, want io.EOF", err)
	}
}

// unwrapper hides the Flusher behind Unwrap, as logging middleware does.
type unwrapper struct{ http.ResponseWriter }

func (u unwrapper) Unwrap() http.ResponseWriter { return u.ResponseWriter }

func TestEncoderFlushesThroughUnwrap(t *testing.T) {
	rec := httptest.NewRecorder()
	if err := NewEncoder(unwrapper{rec}).WriteEvent(Event{Data: "x"}); err != nil {
		t.Fatal(err)
	}
	if !rec.Flushed {
		t.Fatal("not flushed")
	}
}

func TestEncoderAllocations(t *testing.T) {
	enc := NewEncoder(io.Discard)
	ev := Event{ID: "1", Event: "delta", Data: "line one\nline two", Retry: time.Second}
	// Two events a run, each taking the pooled buffer and giving it back:
	// none allocates, except where the race detector drops what the pool
	// was given.
	limit := 0.0
	if raceEnabled {
		limit = 2
	}
	if n := testing.AllocsPerRun(100, func() { enc.WriteEvent(ev); enc.WriteComment("ping") }); n > limit {
		t.Fatalf("%v allocations per run of two events, want at most %v", n, limit)
	}
}

// An Encoder keeps no buffer while it waits for its next event: every open
// stream has one.
func TestEncoderHoldsNoBufferBetweenEvents(t *testing.T) {
	var out bytes.Buffer
	enc := NewEncoder(&out)
	if err := enc.WriteData([]byte("a"), false); err != nil {
		t.Fatal(err)
	}
	if enc.w == nil {
		t.Fatal("an event written without flush is not buffered")
	}
	if out.Len() != 0 {
		t.Fatalf("an event written without flush went out: %q", out.String())
	}
	if err := enc.WriteData([]byte("b"), true); err != nil {
		t.Fatal(err)
	}
	if enc.w != nil {
		t.Fatal("the Encoder keeps its buffer after a flush")
	}
	if got := out.String(); got != "data: a\n\ndata: b\n\n" {
		t.Fatalf("wrote %q", got)
	}
	if err := enc.WriteComment("ping"); err != nil || enc.w != nil {
		t.Fatalf("after a comment: %v, buffer kept %v", err, enc.w != nil)
	}
}

func BenchmarkEncoder(b *testing.B) {
	enc := NewEncoder(io.Discard)
	ev := Event{Data: `{"id":"chatcmpl-1","object":"chat.completion.chunk","choices":[{"index":0,"delta":{"content":" hello"},"finish_reason":null}]}`}
	b.ReportAllocs()
	for b.Loop() {
		enc.WriteEvent(ev)
	}
}
