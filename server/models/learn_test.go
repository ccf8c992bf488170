package models

import (
	"bytes"
	"context"
	"log/slog"
	"strings"
	"testing"

	"connectrpc.com/connect"
)

func TestLearnRefusesUnpriced(t *testing.T) {
	c, err := New(Defaults())
	if err != nil {
		t.Fatal(err)
	}
	var logs bytes.Buffer
	c.SetUnpriced(Unpriced{}, slog.New(slog.NewTextHandler(&logs, nil)))
	if c.Ready(context.Background()) != nil {
		t.Error("not ready before any worker")
	}
	c.Learn("10.0.0.1:9000", "us-east", []string{"sim-small", "llama-3"})
	c.Learn("10.0.0.2:9000", "us-west", []string{"llama-3"})
	c.Learn("10.0.0.2:9000", "us-west", []string{"llama-3"})
	if _, ok := c.Lookup("llama-3"); ok {
		t.Fatal("an unpriced model was offered")
	}
	if n := strings.Count(logs.String(), "refused"); n != 1 {
		t.Errorf("logged %d times, want once:\n%s", n, logs.String())
	}
	err = c.Ready(context.Background())
	if err == nil || !strings.Contains(err.Error(), `"llama-3" (served by 10.0.0.1:9000 (pool us-east), 10.0.0.2:9000 (pool us-west))`) {
		t.Errorf("Ready = %v", err)
	}
	if w, ok := err.(interface{ Warning() bool }); !ok || !w.Warning() {
		t.Error("the readiness message is not a warning")
	}
	e := c.Unknown("model", "llama-3")
	if e.Code() != connect.CodeNotFound || !strings.Contains(e.Message(), "no price") || !strings.Contains(e.Message(), "--unpriced-models=default") {
		t.Errorf("Unknown = %v", e)
	}
	if e := c.Unknown("model", "nope"); !strings.Contains(e.Message(), `unknown model "nope"`) {
		t.Errorf("Unknown(nope) = %v", e)
	}
	st := c.Availability([]Server{
		{Address: "10.0.0.1:9000", Pool: "us-east", State: "READY", Up: true, Models: []string{"sim-small", "llama-3"}},
		{Address: "10.0.0.3:9000", Pool: "us-west", State: "CONNECTING", Models: []string{"sim-large"}},
	})
	got := map[string]string{}
	for _, s := range st {
		got[s.ID] = s.State
	}
	if got["sim-small"] != StateAvailable || got["sim-large"] != StateUnavailable || got["sim-embed"] != StateUnavailable || got["llama-3"] != StateRefused {
		t.Errorf("availability = %v", got)
	}
	if st[len(st)-1].ID != "llama-3" || st[len(st)-1].Servers[0].Pool != "us-east" {
		t.Errorf("last = %+v", st[len(st)-1])
	}
}

func TestLearnServesAtDefaultPrice(t *testing.T) {
	c, _ := New(Defaults())
	u, err := ParseUnpriced("default", 1_000_000, 2_000_000, 8192, 1024)
	if err != nil {
		t.Fatal(err)
	}
	c.SetUnpriced(u, nil)
	before := c.All()
	c.Learn("w", "default", []string{"llama-3"})
	m, ok := c.Lookup("llama-3")
	if !ok || m.InputPriceNanosPerMillion != 1_000_000 || m.OutputPriceNanosPerMillion != 2_000_000 || m.ContextWindow != 8192 || !c.DefaultPriced("llama-3") {
		t.Fatalf("learned %+v, %v", m, ok)
	}
	if len(before) != 3 || len(c.All()) != 4 {
		t.Errorf("a snapshot changed under its reader: %d, %d", len(before), len(c.All()))
	}
	if c.Ready(context.Background()) != nil {
		t.Error("a served model made a readiness message")
	}
	for _, bad := range [][5]any{{"maybe", 1, 1, 10, 5}, {"default", -1, 1, 10, 5}, {"default", 1, 1, 10, 10}} {
		if _, err := ParseUnpriced(bad[0].(string), int64(bad[1].(int)), int64(bad[2].(int)), int64(bad[3].(int)), int64(bad[4].(int))); err == nil {
			t.Errorf("ParseUnpriced%v accepted", bad)
		}
	}
}
