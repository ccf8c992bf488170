package e2e

import (
	"bufio"
	"io"
	"iter"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/parleyhq/parley/server/internal/wait"
)

// The end-to-end tests' shared helpers: reading /metrics and waiting for a
// condition. One of each, so a fix to one reaches every test.

// metricsBody is the text of base's /metrics (a gateway's or the region
// checker's BaseURL).
func metricsBody(t *testing.T, base string) string {
	t.Helper()
	res, err := http.Get(base + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	b, err := io.ReadAll(res.Body)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// metricValue is the value of series (a family name, with its labels as
// /metrics writes them when it has any) in the metrics text, and whether
// the series is there.
func metricValue(text, series string) (float64, bool) {
	for line := range strings.SplitSeq(text, "\n") {
		if v, ok := strings.CutPrefix(line, series+" "); ok {
			f, err := strconv.ParseFloat(strings.TrimSpace(v), 64)
			return f, err == nil
		}
	}
	return 0, false
}

// scrape reads one series' value from the gateway's /metrics (0 if absent).
func scrape(t *testing.T, s *server, series string) float64 {
	t.Helper()
	v, _ := metricValue(metricsBody(t, s.BaseURL), series)
	return v
}

// waitMetric polls s's /metrics until series is there and satisfies ok
// (for 30 s at most) and returns its value.
func waitMetric(t *testing.T, s *server, series string, ok func(float64) bool) float64 {
	t.Helper()
	var v float64
	var found bool
	waitFor(t, 30*time.Second, series+" to reach the value the test waits for", func() bool {
		v, found = metricValue(metricsBody(t, s.BaseURL), series)
		return found && ok(v)
	})
	return v
}

// waitFor polls ok every 100 ms until it holds, failing the test (naming
// what it waited for) when it still does not after limit.
func waitFor(t *testing.T, limit time.Duration, what string, ok func() bool) {
	t.Helper()
	wait.For(t, limit, what, ok)
}

// sseEvent is one server-sent event as the tests read it.
type sseEvent struct {
	Name string
	Data string
}

// sseEvents yields the events of an SSE stream as they arrive: the event
// name and its data lines joined, dispatched at the blank line that ends
// each event (an event the stream cut before its blank line is dropped, as
// an EventSource drops it). Comments and other fields are skipped.
func sseEvents(r io.Reader) iter.Seq[sseEvent] {
	return func(yield func(sseEvent) bool) {
		var cur sseEvent
		sc := bufio.NewScanner(r)
		sc.Buffer(make([]byte, 1<<20), 1<<20)
		for sc.Scan() {
			line := sc.Text()
			switch {
			case line == "":
				if cur != (sseEvent{}) && !yield(cur) {
					return
				}
				cur = sseEvent{}
			case strings.HasPrefix(line, "event: "):
				cur.Name = line[len("event: "):]
			case strings.HasPrefix(line, "data: "):
				cur.Data += line[len("data: "):]
			}
		}
	}
}
