package sse

import (
	"bytes"
	"errors"
	"io"
	"reflect"
	"strings"
	"testing"
	"testing/iotest"
	"time"
)

// decodeAll reads every event of r until an error, which it returns too.
func decodeAll(r io.Reader, opts ...DecoderOption) ([]Event, error) {
	dec := NewDecoder(r, opts...)
	var evs []Event
	for {
		ev, err := dec.Next()
		if err != nil {
			return evs, err
		}
		evs = append(evs, ev)
	}
}

func TestDecoder(t *testing.T) {
	tests := []struct {
		name, in string
		want     []Event
	}{
		{"lf", "data: a\n\ndata: b\n\n", []Event{{Data: "a"}, {Data: "b"}}},
		{"crlf", "data: a\r\n\r\ndata: b\r\n\r\n", []Event{{Data: "a"}, {Data: "b"}}},
		{"cr", "data: a\r\rdata: b\r\r", []Event{{Data: "a"}, {Data: "b"}}},
		{"mixed endings", "data: a\r\ndata: b\rdata: c\n\r\n", []Event{{Data: "a\nb\nc"}}},
		{"multi-line data", "data: one\ndata:two\ndata:  three\ndata\n\n", []Event{{Data: "one\ntwo\n three\n"}}},
		{"comments ignored", ": ping\n:\ndata: x\n: inside\n\n: bye\n", []Event{{Data: "x"}}},
		{"fields", "id: 1\nevent: delta\nretry: 250\ndata: x\n\ndata: y\n\n",
			[]Event{{ID: "1", Event: "delta", Data: "x", Retry: 250 * time.Millisecond}, {ID: "1", Data: "y"}}},
		{"id reset", "id: 1\ndata: x\n\nid\ndata: y\n\n", []Event{{ID: "1", Data: "x"}, {Data: "y"}}},
		{"id with NUL ignored", "id: 1\n\nid: a\x00b\ndata: x\n\n", []Event{{ID: "1", Data: "x"}}},
		{"bad retry ignored", "retry: 12a\ndata: x\n\n", []Event{{Data: "x"}}},
		{"unknown fields ignored", "foo: bar\ndata: x\nDATA: y\n\n", []Event{{Data: "x"}}},
		{"no data, no event", "event: a\n\nid: 2\n\n\n\ndata: x\n\n", []Event{{ID: "2", Data: "x"}}},
		{"empty data dispatches", "data\n\ndata:\n\n", []Event{{Data: ""}, {Data: ""}}},
		{"bom skipped", "\uFEFFdata: x\n\n", []Event{{Data: "x"}}},
		{"only first bom", "\uFEFF\uFEFFdata: x\n\ndata: y\n\n", []Event{{Data: "y"}}},
		{"missing trailing blank line", "data: a\n\ndata: b\n", []Event{{Data: "a"}}},
		{"unterminated last line", "data: a\n\ndata: b", []Event{{Data: "a"}}},
		{"colon in value", "data: a: b\n\n", []Event{{Data: "a: b"}}},
		{"empty stream", "", nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			readers := map[string]io.Reader{
				"whole":     strings.NewReader(tt.in),
				"byte-wise": iotest.OneByteReader(strings.NewReader(tt.in)),
				"half":      iotest.HalfReader(strings.NewReader(tt.in)),
			}
			for how, r := range readers {
				got, err := decodeAll(r)
				if err != io.EOF {
					t.Errorf("%s: err = %v, want io.EOF", how, err)
				}
				if !reflect.DeepEqual(got, tt.want) {
					t.Errorf("%s: got %+v, want %+v", how, got, tt.want)
				}
			}
		})
	}
}

// TestDecoderSplitCRLF checks that a CR ending one read and the LF starting the
// next make one line break, and that the CR's event is not held back waiting.
func TestDecoderSplitCRLF(t *testing.T) {
	r, w := io.Pipe()
	dec := NewDecoder(r)
	go func() {
		w.Write([]byte("data: a\r\n\r"))
		w.Write([]byte("\ndata: b\r\n\r\n"))
		w.Close()
	}()
	for _, want := range []string{"a", "b"} {
		ev, err := dec.Next()
		if err != nil || ev.Data != want {
			t.Fatalf("got %+v, %v; want data %q", ev, err, want)
		}
	}
	if _, err := dec.Next(); err != io.EOF {
		t.Fatalf("end = %v", err)
	}
}

func TestDecoderRetry(t *testing.T) {
	dec := NewDecoder(strings.NewReader("retry: 3000\n\ndata: x\n\n"))
	ev, err := dec.Next()
	if err != nil || ev.Retry != 0 || dec.Retry() != 3*time.Second {
		t.Fatalf("event %+v, err %v, Retry() %v", ev, err, dec.Retry())
	}
}

func TestDecoderOversizeLine(t *testing.T) {
	in := "data: ok\n\ndata: " + strings.Repeat("x", 100) + "\n\n"
	got, err := decodeAll(strings.NewReader(in), WithMaxLineSize(64))
	if !errors.Is(err, ErrLineTooLong) {
		t.Fatalf("err = %v, want ErrLineTooLong", err)
	}
	if len(got) != 1 || got[0].Data != "ok" {
		t.Fatalf("events before the long line: %+v", got)
	}
	// A line of exactly the bound is fine.
	line := "data: " + strings.Repeat("y", 58)
	if got, err := decodeAll(strings.NewReader(line+"\n\n"), WithMaxLineSize(64)); err != io.EOF || len(got) != 1 {
		t.Fatalf("line at the bound: %+v, %v", got, err)
	}
	// The error sticks.
	dec := NewDecoder(strings.NewReader(strings.Repeat("z", 200)), WithMaxLineSize(64))
	for range 2 {
		if _, err := dec.Next(); !errors.Is(err, ErrLineTooLong) {
			t.Fatalf("err = %v", err)
		}
	}
}

func TestDecoderReadError(t *testing.T) {
	boom := errors.New("boom")
	r := io.MultiReader(strings.NewReader("data: a\n\ndata: b"), iotest.ErrReader(boom))
	got, err := decodeAll(r)
	if !errors.Is(err, boom) || len(got) != 1 {
		t.Fatalf("got %+v, %v", got, err)
	}
}

func TestRoundTrip(t *testing.T) {
	evs := []Event{
		{Data: "plain"},
		{ID: "42", Event: "delta", Data: "multi\nline\n\ntext", Retry: 2 * time.Second},
		{ID: "42", Data: "  leading spaces and trailing  "},
		{ID: "43", Event: "done", Data: "ünïcödé ✓ 😀"},
		{ID: "43", Data: ""},
		{ID: "43", Data: "\n"},
	}
	var buf bytes.Buffer
	enc := NewEncoder(&buf)
	for i, ev := range evs {
		if err := enc.WriteEvent(ev); err != nil {
			t.Fatal(err)
		}
		if i == 2 {
			enc.WriteComment("keep-alive")
		}
	}
	got, err := decodeAll(&buf)
	if err != io.EOF {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(got, evs) {
		t.Fatalf("round trip\n got %+v\nwant %+v", got, evs)
	}
}

func FuzzDecoder(f *testing.F) {
	for _, s := range []string{
		"data: a\n\n", "\uFEFFid: 1\r\nevent: x\r\nretry: 10\r\ndata: b\r\n\r\n",
		": c\rdata\r\r", "data: " + strings.Repeat("x", 300), "retry: 99999999999999999999999\ndata:\n\n",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, in string) {
		evs, err := decodeAll(iotest.HalfReader(strings.NewReader(in)), WithMaxLineSize(256))
		if err != io.EOF && !errors.Is(err, ErrLineTooLong) {
			t.Fatalf("unexpected error %v", err)
		}
		// What decodes re-encodes and decodes to the same events.
		var buf bytes.Buffer
		enc := NewEncoder(&buf)
		for _, ev := range evs {
			ev.Retry = ev.Retry.Truncate(time.Millisecond)
			if err := enc.WriteEvent(ev); err != nil {
				t.Fatalf("re-encoding %+v: %v", ev, err)
			}
		}
		again, err := decodeAll(&buf)
		if err != io.EOF || len(again) != len(evs) {
			t.Fatalf("re-decoded %d events (%v), want %d", len(again), err, len(evs))
		}
		for i := range evs {
			if again[i].Data != evs[i].Data || again[i].Event != evs[i].Event {
				t.Fatalf("event %d: %+v != %+v", i, again[i], evs[i])
			}
		}
	})
}

func BenchmarkDecoder(b *testing.B) {
	chunk := "data: {\"id\":\"chatcmpl-1\",\"object\":\"chat.completion.chunk\",\"choices\":[{\"index\":0,\"delta\":{\"content\":\" hello\"},\"finish_reason\":null}]}\n\n"
	in := strings.Repeat(chunk, 100)
	b.SetBytes(int64(len(in)))
	b.ReportAllocs()
	for b.Loop() {
		dec := NewDecoder(strings.NewReader(in))
		for {
			if _, err := dec.Next(); err != nil {
				break
			}
		}
	}
}

// NextData gives what Next gives; Buffered is true only when the next
// event can be read without waiting.
func TestNextDataAndBuffered(t *testing.T) {
	stream := "data: one\n\n: ping\n\ndata: two\ndata: lines\n\nevent: x\ndata: three\r\n\r\ndata: four\n\n"
	a, b := NewDecoder(strings.NewReader(stream)), NewDecoder(strings.NewReader(stream))
	for {
		ev, err1 := a.Next()
		data, err2 := b.NextData()
		if (err1 == nil) != (err2 == nil) || ev.Data != string(data) {
			t.Fatalf("Next %q %v, NextData %q %v", ev.Data, err1, data, err2)
		}
		if err1 != nil {
			break
		}
	}
	pr, pw := io.Pipe()
	d := NewDecoder(pr)
	go func() { _, _ = io.WriteString(pw, "data: a\n\ndata: b\n\ndata: c") }()
	if data, err := d.NextData(); err != nil || string(data) != "a" {
		t.Fatal(string(data), err)
	}
	if !d.Buffered() {
		t.Error("b is buffered")
	}
	if data, _ := d.NextData(); string(data) != "b" {
		t.Fatal(string(data))
	}
	if d.Buffered() {
		t.Error("c is not whole yet")
	}
	for _, tc := range []struct {
		rest string
		want bool
	}{
		{"data: x\n\n", true}, {"data: x\r\n\r\n", true}, {": c\n\ndata: x\n\n", false},
		{"id: 1\ndata: x\n\n", true}, {"data: x\rdata: y\n\n", false}, {"data: x\n", false}, {"", false},
	} {
		d := NewDecoder(strings.NewReader("data: first\n\n" + tc.rest))
		if _, err := d.NextData(); err != nil {
			t.Fatal(err)
		}
		if got := d.Buffered(); got != tc.want {
			t.Errorf("after %q: Buffered %v, want %v", tc.rest, got, tc.want)
		}
	}
}
