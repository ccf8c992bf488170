package e2e

import (
	"encoding/json"
	"regexp"
	"strings"
	"testing"
	"time"

	"connectrpc.com/connect"

	parleyv1 "github.com/parleyhq/parley/gen/parley/v1"
)

// textCompletionBody is a /v1/completions answer or chunk as the test reads it.
type textCompletionBody struct {
	ID      string `json:"id"`
	Object  string `json:"object"`
	Model   string `json:"model"`
	Choices []struct {
		Text         string  `json:"text"`
		Index        int     `json:"index"`
		FinishReason *string `json:"finish_reason"`
		Logprobs     *struct {
			Tokens        []string             `json:"tokens"`
			TokenLogprobs []float64            `json:"token_logprobs"`
			TopLogprobs   []map[string]float64 `json:"top_logprobs"`
			TextOffset    []int                `json:"text_offset"`
		} `json:"logprobs"`
	} `json:"choices"`
	Usage *struct {
		PromptTokens     int `json:"prompt_tokens"`
		CompletionTokens int `json:"completion_tokens"`
		TotalTokens      int `json:"total_tokens"`
	} `json:"usage"`
}

func TestCompletions(t *testing.T) {
	s := startServer(t, fastAuth...)
	a := s.newAccount(t, "completions@example.com")
	s.topup(t, a, "1")
	bearer := map[string]string{"Authorization": "Bearer " + a.Key}
	post := func(body string) (int, []byte) {
		res, b := s.postRaw(t, "/v1/completions", body, bearer)
		return res.StatusCode, b
	}

	t.Run("string prompt", func(t *testing.T) {
		status, body := post(`{"model":"sim-small","prompt":"Say hello","max_tokens":5,"user":"end-3"}`)
		norm := regexp.MustCompile(`"id":"cmpl-[0-9a-f-]+","object":"text_completion","created":\d+`).ReplaceAllString(string(body), `"id":"ID","object":"text_completion","created":0`)
		norm = regexp.MustCompile(`"text":"[^"]+"`).ReplaceAllString(norm, `"text":"T"`)
		norm = regexp.MustCompile(`"prompt_tokens":(\d+),"completion_tokens":5,"total_tokens":\d+`).ReplaceAllString(norm, `"prompt_tokens":P,"completion_tokens":5,"total_tokens":S`)
		want := `{"id":"ID","object":"text_completion","created":0,"model":"sim-small","choices":[{"text":"T","index":0,"logprobs":null,"finish_reason":"length"}],` +
			`"usage":{"prompt_tokens":P,"completion_tokens":5,"total_tokens":S,"prompt_tokens_details":{"cached_tokens":0}}}` + "\n"
		if status != 200 || norm != want {
			t.Fatalf("%d\ngot  %s\nwant %s", status, norm, want)
		}
	})

	t.Run("default max_tokens", func(t *testing.T) {
		status, body := post(`{"model":"sim-small","prompt":"Tell me a long story"}`)
		var out textCompletionBody
		if status != 200 || json.Unmarshal(body, &out) != nil || out.Usage.CompletionTokens > 16 || out.Usage.CompletionTokens == 0 {
			t.Fatalf("%d %s", status, body)
		}
	})

	t.Run("list prompt", func(t *testing.T) {
		status, body := post(`{"model":"sim-small","prompt":["One","Two","Three"],"max_tokens":4,"n":2,"logprobs":2}`)
		var out textCompletionBody
		if status != 200 || json.Unmarshal(body, &out) != nil || len(out.Choices) != 6 {
			t.Fatalf("%d %s", status, body)
		}
		for i, c := range out.Choices {
			lp := c.Logprobs
			if c.Index != i || c.Text == "" || lp == nil || strings.Join(lp.Tokens, "") != c.Text || len(lp.TokenLogprobs) != len(lp.Tokens) ||
				len(lp.TopLogprobs) != len(lp.Tokens) || len(lp.TextOffset) != len(lp.Tokens) || lp.TextOffset[0] != 0 {
				t.Errorf("choice %d: %+v", i, c)
			}
		}
		one := textCompletionBody{}
		_, b := post(`{"model":"sim-small","prompt":"One","max_tokens":4}`)
		_ = json.Unmarshal(b, &one)
		if out.Usage.PromptTokens <= one.Usage.PromptTokens {
			t.Errorf("usage of three prompts %+v, of one %+v", out.Usage, one.Usage)
		}
		if out.Usage.TotalTokens != out.Usage.PromptTokens+out.Usage.CompletionTokens || out.Usage.CompletionTokens > 24 {
			t.Errorf("usage %+v", out.Usage)
		}
	})

	t.Run("stream", func(t *testing.T) {
		res, body := s.postRaw(t, "/v1/completions", `{"model":"sim-small","prompt":["Hello","Bye"],"max_tokens":3,"stream":true,"stream_options":{"include_usage":true}}`, bearer)
		if res.StatusCode != 200 || res.Header.Get("Content-Type") != "text/event-stream" {
			t.Fatalf("%d %v", res.StatusCode, res.Header)
		}
		evs := readEvents(t, body)
		if len(evs) != 2*(3+1)+2 || evs[len(evs)-1].Data != "[DONE]" {
			t.Fatalf("want 3 deltas and a finish per prompt, the usage and [DONE]; got %d events:\n%s", len(evs), body)
		}
		ids := map[string]bool{}
		texts := map[int]string{}
		for i, ev := range evs[:len(evs)-1] {
			var c textCompletionBody
			if ev.Name != "" || json.Unmarshal([]byte(ev.Data), &c) != nil || c.Object != "text_completion" || c.Model != "sim-small" {
				t.Fatalf("event %d: %+v", i, ev)
			}
			ids[c.ID] = true
			switch {
			case i == len(evs)-2:
				if len(c.Choices) != 0 || c.Usage == nil || c.Usage.CompletionTokens != 6 {
					t.Errorf("usage chunk %s", ev.Data)
				}
			case i%4 == 3:
				if len(c.Choices) != 1 || c.Choices[0].Index != i/4 || c.Choices[0].FinishReason == nil || *c.Choices[0].FinishReason != "length" || c.Choices[0].Text != "" {
					t.Errorf("finish chunk %s", ev.Data)
				}
			default:
				if len(c.Choices) != 1 || c.Choices[0].Index != i/4 || c.Choices[0].FinishReason != nil || c.Usage != nil {
					t.Errorf("delta chunk %s", ev.Data)
				}
				texts[c.Choices[0].Index] += c.Choices[0].Text
			}
		}
		if len(ids) != 1 || texts[0] == "" || texts[1] == "" {
			t.Errorf("ids %v, texts %v", ids, texts)
		}
	})

	t.Run("errors", func(t *testing.T) {
		for _, tc := range []struct {
			body   string
			status int
			param  string
		}{
			{`{"model":"sim-small","prompt":"x","suffix":"y"}`, 400, "suffix"},
			{`{"model":"sim-small","prompt":"x","best_of":3}`, 400, "best_of"},
			{`{"model":"sim-small","prompt":"x","echo":true}`, 400, "echo"},
			{`{"model":"sim-small","prompt":"x","logprobs":6}`, 400, "logprobs"},
			{`{"model":"sim-small","prompt":"x","n":9}`, 400, "n"},
			{`{"model":"sim-small","prompt":"x","max_tokens":999999}`, 400, "max_tokens"},
			{`{"model":"sim-small","prompt":"x","stop":["a","b","c","d","e"]}`, 400, "stop"},
			{`{"model":"sim-small","prompt":[1,2,3]}`, 400, "prompt"},
			{`{"model":"sim-small","prompt":["x",""]}`, 400, "prompt[1]"},
			{`{"model":"sim-small"}`, 400, "prompt"},
			{`{"model":"nope","prompt":"x"}`, 404, "model"},
		} {
			status, body := post(tc.body)
			var e struct {
				Error struct {
					Type  string  `json:"type"`
					Param *string `json:"param"`
				} `json:"error"`
			}
			if status != tc.status || json.Unmarshal(body, &e) != nil || e.Error.Param == nil || *e.Error.Param != tc.param || e.Error.Type != "invalid_request_error" {
				t.Errorf("%s: %d %s", tc.body, status, body)
			}
		}
		// Harmless defaults are accepted.
		if status, body := post(`{"model":"sim-small","prompt":"x","max_tokens":2,"echo":false,"best_of":1,"suffix":null,"presence_penalty":0,"logit_bias":{}}`); status != 200 {
			t.Errorf("harmless defaults: %d %s", status, body)
		}
	})

	t.Run("ledger", func(t *testing.T) {
		c := s.api(protocols[0], cred{bearer: a.Key})
		var recs []*parleyv1.UsageRecord
		deadline := time.Now().Add(5 * time.Second)
		for {
			res, err := c.Billing.ListUsage(ctxTimeout(t, 5*time.Second), connect.NewRequest(&parleyv1.ListUsageRequest{PageSize: 200}))
			if err != nil {
				t.Fatal(err)
			}
			// string 1 + default 1 + list 3 + one 1 + stream 2 + harmless 1
			if recs = res.Msg.GetUsageRecords(); len(recs) >= 9 || time.Now().After(deadline) {
				break
			}
			time.Sleep(50 * time.Millisecond)
		}
		var cost int64
		users := 0
		for _, r := range recs {
			cost += r.GetCostNanos()
			if r.GetUser() == "end-3" {
				users++
			}
		}
		bal, err := c.Billing.GetBalance(ctxTimeout(t, 5*time.Second), connect.NewRequest(&parleyv1.GetBalanceRequest{}))
		if err != nil {
			t.Fatal(err)
		}
		if len(recs) != 9 || users != 1 || 1e9-bal.Msg.GetBalanceNanos() != cost || bal.Msg.GetReservedNanos() != 0 {
			t.Fatalf("%d records (%d of end-3) costing %d; balance %d, reserved %d", len(recs), users, cost, bal.Msg.GetBalanceNanos(), bal.Msg.GetReservedNanos())
		}
	})
}
