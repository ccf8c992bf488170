package e2e

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"connectrpc.com/connect"

	parleyv1 "github.com/parleyhq/parley/gen/parley/v1"
	"github.com/parleyhq/parley/server/attach/attachtest"
)

// anthropicWeather is the get_weather tool in the Messages API's form.
const anthropicWeather = `{"name":"get_weather","description":"Current weather","input_schema":{"type":"object",
	"properties":{"location":{"type":"string"}},"required":["location"]}}`

// postRaw sends body to path with the given headers and returns the answer.
func (s *server) postRaw(t *testing.T, path, body string, header map[string]string) (*http.Response, []byte) {
	t.Helper()
	req, _ := http.NewRequest("POST", s.BaseURL+path, strings.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	for k, v := range header {
		req.Header.Set(k, v)
	}
	res, err := h1Client().Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	b, _ := io.ReadAll(res.Body)
	return res, b
}

// readEvents is the server-sent events of a whole response body.
func readEvents(t *testing.T, body []byte) []sseEvent {
	t.Helper()
	return slices.Collect(sseEvents(bytes.NewReader(body)))
}

// anthropicErr checks an answer is the Messages API's error JSON, exactly,
// with the status and type given, and returns its message.
func anthropicErr(t *testing.T, what string, res *http.Response, body []byte, status int, typ string) string {
	t.Helper()
	var e struct {
		Type  string `json:"type"`
		Error struct {
			Type    string `json:"type"`
			Message string `json:"message"`
		} `json:"error"`
	}
	dec := json.NewDecoder(bytes.NewReader(body))
	dec.DisallowUnknownFields()
	if res.StatusCode != status || dec.Decode(&e) != nil || e.Type != "error" || e.Error.Type != typ || e.Error.Message == "" ||
		res.Header.Get("Content-Type") != "application/json" {
		t.Errorf("%s: %d %s, want %d %s", what, res.StatusCode, body, status, typ)
	}
	return e.Error.Message
}

func TestAnthropicMessages(t *testing.T) {
	s := startServer(t, fastAuth...)
	a := s.newAccount(t, "anthropic@example.com")
	s.topup(t, a, "10")
	key := map[string]string{"x-api-key": a.Key, "anthropic-version": "2023-06-01"}
	post := func(path, body string) (*http.Response, []byte) { return s.postRaw(t, path, body, key) }

	t.Run("whole message", func(t *testing.T) {
		res, body := post("/v1/messages", `{"model":"sim-small","max_tokens":5,"system":"Be terse.","messages":[{"role":"user","content":"Hello"}]}`)
		if res.StatusCode != 200 || res.Header.Get("Content-Type") != "application/json" || res.Header.Get("Request-Id") == "" {
			t.Fatalf("%d %v %s", res.StatusCode, res.Header, body)
		}
		// Ids vary and the text is the sim's; the shape is exact.
		norm := regexp.MustCompile(`"id":"msg_[0-9a-f-]+"`).ReplaceAllString(string(body), `"id":"ID"`)
		norm = regexp.MustCompile(`"text":"[^"]+"`).ReplaceAllString(norm, `"text":"T"`)
		norm = regexp.MustCompile(`"input_tokens":[1-9]\d*,`).ReplaceAllString(norm, `"input_tokens":N,`)
		want := `{"id":"ID","type":"message","role":"assistant","model":"sim-small","content":[{"type":"text","text":"T"}],` +
			`"stop_reason":"max_tokens","stop_sequence":null,"usage":{"input_tokens":N,"cache_creation_input_tokens":0,` +
			`"cache_read_input_tokens":0,"output_tokens":5}}` + "\n"
		if norm != want {
			t.Fatalf("got  %s\nwant %s", norm, want)
		}
	})

	t.Run("auth", func(t *testing.T) {
		const body = `{"model":"sim-small","max_tokens":2,"messages":[{"role":"user","content":"Hi"}]}`
		for _, h := range []map[string]string{
			{"Authorization": "Bearer " + a.Key},
			{"x-api-key": a.Key, "anthropic-version": "2099-12-31"},
			{"x-api-key": a.Key, "anthropic-version": "not a date", "anthropic-beta": "whatever-2025-01-01"},
		} {
			if res, b := s.postRaw(t, "/v1/messages", body, h); res.StatusCode != 200 {
				t.Errorf("%v: %d %s", h, res.StatusCode, b)
			}
		}
		res, b := s.postRaw(t, "/v1/messages", body, map[string]string{"x-api-key": "pk_wrong"})
		anthropicErr(t, "bad x-api-key", res, b, 401, "authentication_error")
		res, b = s.postRaw(t, "/v1/messages/count_tokens", body, map[string]string{"x-api-key": "pk_wrong"})
		anthropicErr(t, "count_tokens with a bad key", res, b, 401, "authentication_error")
		res, b = s.postRaw(t, "/v1/messages", body, nil)
		anthropicErr(t, "no key", res, b, 401, "authentication_error")
		// A session cookie from another origin is still refused (CSRF).
		res, b = s.postRaw(t, "/v1/messages", body, map[string]string{"Cookie": "Session_id=" + a.Cookie, "Origin": "https://evil.example"})
		anthropicErr(t, "cross-origin cookie", res, b, 403, "permission_error")
	})

	t.Run("stream events", func(t *testing.T) {
		res, body := post("/v1/messages", `{"model":"sim-small","max_tokens":3,"stream":true,"messages":[{"role":"user","content":"Hello"}]}`)
		if res.StatusCode != 200 || res.Header.Get("Content-Type") != "text/event-stream" {
			t.Fatalf("%d %v", res.StatusCode, res.Header)
		}
		evs := readEvents(t, body)
		var names []string
		for _, ev := range evs {
			names = append(names, ev.Name)
			var typ struct{ Type string }
			if json.Unmarshal([]byte(ev.Data), &typ) != nil || typ.Type != ev.Name {
				t.Errorf("event %s carries %s", ev.Name, ev.Data)
			}
		}
		if strings.Join(names, ",") != "message_start,content_block_start,content_block_delta,content_block_delta,content_block_delta,content_block_stop,message_delta,message_stop" {
			t.Fatalf("events %v", names)
		}
		start := regexp.MustCompile(`"id":"msg_[0-9a-f-]+"`).ReplaceAllString(evs[0].Data, `"id":"ID"`)
		if !regexp.MustCompile(`^\{"type":"message_start","message":\{"id":"ID","type":"message","role":"assistant","model":"sim-small","content":\[\],` +
			`"stop_reason":null,"stop_sequence":null,"usage":\{"input_tokens":[1-9]\d*,"cache_creation_input_tokens":0,"cache_read_input_tokens":0,"output_tokens":0\}\}\}$`).MatchString(start) {
			t.Errorf("message_start %s", evs[0].Data)
		}
		if evs[1].Data != `{"type":"content_block_start","index":0,"content_block":{"type":"text","text":""}}` {
			t.Errorf("content_block_start %s", evs[1].Data)
		}
		for _, ev := range evs[2:5] {
			if !regexp.MustCompile(`^\{"type":"content_block_delta","index":0,"delta":\{"type":"text_delta","text":"[^"]+"\}\}$`).MatchString(ev.Data) {
				t.Errorf("delta %s", ev.Data)
			}
		}
		if evs[5].Data != `{"type":"content_block_stop","index":0}` || evs[7].Data != `{"type":"message_stop"}` {
			t.Errorf("stops %s %s", evs[5].Data, evs[7].Data)
		}
		if !regexp.MustCompile(`^\{"type":"message_delta","delta":\{"stop_reason":"max_tokens","stop_sequence":null\},` +
			`"usage":\{"input_tokens":[1-9]\d*,"cache_creation_input_tokens":0,"cache_read_input_tokens":\d+,"output_tokens":3\}\}$`).MatchString(evs[6].Data) {
			t.Errorf("message_delta %s", evs[6].Data)
		}
	})

	t.Run("pings", func(t *testing.T) {
		slow := startServer(t, append(fastAuth, "--sim-time-scale", "1", "--ping-interval", "20ms")...)
		b := slow.newAccount(t, "anthropic-ping@example.com")
		slow.topup(t, b, "1")
		res, body := slow.postRaw(t, "/v1/messages", `{"model":"sim-small","max_tokens":8,"stream":true,"messages":[{"role":"user","content":"Hi"}]}`,
			map[string]string{"x-api-key": b.Key})
		pings := 0
		for _, ev := range readEvents(t, body) {
			if ev.Name == "ping" {
				pings++
				if ev.Data != `{"type":"ping"}` {
					t.Errorf("ping %s", ev.Data)
				}
			}
		}
		if res.StatusCode != 200 || pings == 0 {
			t.Fatalf("%d, %d pings:\n%s", res.StatusCode, pings, body)
		}
	})

	t.Run("tool_use round trip", func(t *testing.T) {
		res, body := post("/v1/messages", `{"model":"sim-small","max_tokens":200,"stream":true,"tool_choice":{"type":"any"},
			"tools":[`+anthropicWeather+`],"messages":[{"role":"user","content":"What is the weather in Paris?"}]}`)
		if res.StatusCode != 200 {
			t.Fatalf("%d %s", res.StatusCode, body)
		}
		var use struct {
			Type, ID, Name string
			Input          map[string]any
		}
		var partial strings.Builder
		stop := ""
		for _, ev := range readEvents(t, body) {
			var e struct {
				ContentBlock json.RawMessage `json:"content_block"`
				Delta        struct {
					Type        string `json:"type"`
					PartialJSON string `json:"partial_json"`
					StopReason  string `json:"stop_reason"`
				} `json:"delta"`
			}
			_ = json.Unmarshal([]byte(ev.Data), &e)
			switch ev.Name {
			case "content_block_start":
				_ = json.Unmarshal(e.ContentBlock, &use)
			case "content_block_delta":
				if e.Delta.Type != "input_json_delta" {
					t.Fatalf("delta %s", ev.Data)
				}
				partial.WriteString(e.Delta.PartialJSON)
			case "message_delta":
				stop = e.Delta.StopReason
			}
		}
		var input map[string]any
		if use.Type != "tool_use" || use.Name != "get_weather" || use.ID == "" || len(use.Input) != 0 || stop != "tool_use" ||
			json.Unmarshal([]byte(partial.String()), &input) != nil || input["location"] == nil {
			t.Fatalf("tool use %+v %q, stop %q:\n%s", use, partial.String(), stop, body)
		}
		args, _ := json.Marshal(input)
		history := fmt.Sprintf(`[{"role":"user","content":"What is the weather in Paris?"},
			{"role":"assistant","content":[{"type":"text","text":"Let me look."},{"type":"tool_use","id":%q,"name":"get_weather","input":%s}]},
			{"role":"user","content":[{"type":"tool_result","tool_use_id":%q,"content":[{"type":"text","text":"18C and sunny"}]}]}]`, use.ID, args, use.ID)
		res, body = post("/v1/messages", `{"model":"sim-small","max_tokens":200,"tools":[`+anthropicWeather+`],"messages":`+history+`}`)
		var out struct {
			Content []struct {
				Type, Text string
			}
			StopReason string `json:"stop_reason"`
		}
		if res.StatusCode != 200 || json.Unmarshal(body, &out) != nil || len(out.Content) != 1 || out.Content[0].Type != "text" ||
			!strings.Contains(out.Content[0].Text, "The get_weather tool returned: 18C and sunny") || out.StopReason == "tool_use" {
			t.Fatalf("%d %s", res.StatusCode, body)
		}
		// An error result reaches the model marked as one.
		errHistory := strings.Replace(history, `"tool_use_id":`, `"is_error":true,"tool_use_id":`, 1)
		res, body = post("/v1/messages", `{"model":"sim-small","max_tokens":200,"tools":[`+anthropicWeather+`],"messages":`+errHistory+`}`)
		if res.StatusCode != 200 || !strings.Contains(string(body), "returned: Error: 18C and sunny") {
			t.Fatalf("%d %s", res.StatusCode, body)
		}
		// Whole, the call's input is the parsed object.
		res, body = post("/v1/messages", `{"model":"sim-small","max_tokens":200,"tool_choice":{"type":"tool","name":"get_weather"},
			"tools":[`+anthropicWeather+`],"messages":[{"role":"user","content":"Hi"}]}`)
		if res.StatusCode != 200 || !regexp.MustCompile(`"content":\[\{"type":"tool_use","id":"[^"]+","name":"get_weather","input":\{"location":"[^"]*"\}\}\],"stop_reason":"tool_use"`).Match(body) {
			t.Fatalf("%d %s", res.StatusCode, body)
		}
	})

	t.Run("image and document blocks", func(t *testing.T) {
		png := base64.StdEncoding.EncodeToString(attachtest.PNG(16, 16))
		res, body := post("/v1/messages", `{"model":"sim-small","max_tokens":5,"messages":[{"role":"user","content":[
			{"type":"image","source":{"type":"base64","media_type":"image/png","data":"`+png+`"}},
			{"type":"document","source":{"type":"text","media_type":"text/plain","data":"A note."},"title":"note.txt"},
			{"type":"text","text":"What is this?","cache_control":{"type":"ephemeral"}}]}]}`)
		if res.StatusCode != 200 {
			t.Fatalf("%d %s", res.StatusCode, body)
		}
		res, body = post("/v1/messages", `{"model":"sim-small","max_tokens":5,"messages":[{"role":"user","content":[
			{"type":"image","source":{"type":"base64","media_type":"image/png","data":"`+base64.StdEncoding.EncodeToString([]byte("not a png"))+`"}}]}]}`)
		if msg := anthropicErr(t, "bad image", res, body, 400, "invalid_request_error"); !strings.HasPrefix(msg, "messages[0].content[0].source") {
			t.Errorf("bad image: %s", msg)
		}
	})

	t.Run("count_tokens", func(t *testing.T) {
		counter := s.newAccount(t, "anthropic-count@example.com")
		s.topup(t, counter, "1")
		const prompt = `"system":"Be terse.","tools":[` + anthropicWeather + `],"messages":[{"role":"user","content":"What is the weather in Paris?"}]`
		res, body := s.postRaw(t, "/v1/messages/count_tokens", `{"model":"sim-small",`+prompt+`}`, map[string]string{"x-api-key": counter.Key})
		var n struct {
			InputTokens int `json:"input_tokens"`
		}
		if res.StatusCode != 200 || json.Unmarshal(body, &n) != nil || n.InputTokens <= 0 || string(body) != fmt.Sprintf(`{"input_tokens":%d}`+"\n", n.InputTokens) {
			t.Fatalf("%d %s", res.StatusCode, body)
		}
		// An image counts as the core prices it (85 + 170 per tile), not 0.
		png := base64.StdEncoding.EncodeToString(attachtest.PNG(16, 16))
		res, body = s.postRaw(t, "/v1/messages/count_tokens", `{"model":"sim-small","messages":[{"role":"user","content":[{"type":"text","text":"What is the weather in Paris?"},
			{"type":"image","source":{"type":"base64","media_type":"image/png","data":"`+png+`"}}]}]}`, map[string]string{"x-api-key": counter.Key})
		var withImage struct {
			InputTokens int `json:"input_tokens"`
		}
		if res.StatusCode != 200 || json.Unmarshal(body, &withImage) != nil || withImage.InputTokens < 255 {
			t.Fatalf("count_tokens with an image: %d %s", res.StatusCode, body)
		}
		// Nothing was generated or charged.
		c := s.api(protocols[0], cred{bearer: counter.Key})
		bal, err := c.Billing.GetBalance(ctxTimeout(t, 5*time.Second), connect.NewRequest(&parleyv1.GetBalanceRequest{}))
		if err != nil || bal.Msg.GetBalanceNanos() != 1e9 || bal.Msg.GetReservedNanos() != 0 {
			t.Fatalf("balance after count_tokens: %v %v", bal, err)
		}
		time.Sleep(200 * time.Millisecond) // usage records are written in batches
		if n := countUsage(t, c); n != 0 {
			t.Fatalf("count_tokens made %d usage records", n)
		}
		res, body = post("/v1/messages", `{"model":"sim-small","max_tokens":2,"tool_choice":{"type":"none"},`+prompt+`}`)
		var m struct {
			Usage struct {
				InputTokens          int `json:"input_tokens"`
				CacheReadInputTokens int `json:"cache_read_input_tokens"`
			}
		}
		if res.StatusCode != 200 || json.Unmarshal(body, &m) != nil || m.Usage.InputTokens+m.Usage.CacheReadInputTokens != n.InputTokens {
			t.Fatalf("count %d, message %d %s", n.InputTokens, res.StatusCode, body)
		}
		res, body = post("/v1/messages/count_tokens", `{"model":"sim-small","max_tokens":5,"messages":[{"role":"user","content":"x"}]}`)
		anthropicErr(t, "count_tokens with max_tokens", res, body, 400, "invalid_request_error")
		res, body = post("/v1/messages/count_tokens", `{"model":"no-such-model","messages":[{"role":"user","content":"x"}]}`)
		anthropicErr(t, "count_tokens unknown model", res, body, 404, "not_found_error")
	})

	t.Run("errors", func(t *testing.T) {
		const msgs = `"messages":[{"role":"user","content":"x"}]`
		for _, tc := range []struct {
			body   string
			status int
			typ    string
			field  string // the message starts with it
		}{
			{`{"model":"no-such-model","max_tokens":5,` + msgs + `}`, 404, "not_found_error", "model"},
			{`{"model":"sim-small",` + msgs + `}`, 400, "invalid_request_error", "max_tokens"},
			{`{"model":"sim-small","max_tokens":999999,` + msgs + `}`, 400, "invalid_request_error", "max_tokens"},
			{`{"model":"sim-small","max_tokens":5,"top_k":5,` + msgs + `}`, 400, "invalid_request_error", "top_k"},
			{`{"model":"sim-small","max_tokens":5,"thinking":{"type":"deep"},` + msgs + `}`, 400, "invalid_request_error", "thinking"},
			{`{"model":"sim-small","max_tokens":5,"temperature":1.5,` + msgs + `}`, 400, "invalid_request_error", "temperature"},
			{`{"model":"sim-small","max_tokens":5,"stop_sequences":["a","b","c","d","e"],` + msgs + `}`, 400, "invalid_request_error", "stop_sequences"},
			{`{"model":"sim-small","max_tokens":5,"metadata":{"user_id":"u","tier":"x"},` + msgs + `}`, 400, "invalid_request_error", "metadata.tier"},
			{`{"model":"sim-small","max_tokens":5,"tools":[{"type":"web_search_20250305","name":"web_search"}],` + msgs + `}`, 400, "invalid_request_error", "tools[0].type"},
			{`{"model":"sim-small","max_tokens":5,"tools":[{"name":"f"}],` + msgs + `}`, 400, "invalid_request_error", "tools[0].input_schema"},
			{`{"model":"sim-small","max_tokens":5,"tools":[{"name":"bad name!","input_schema":{"type":"object"}}],` + msgs + `}`, 400, "invalid_request_error", "tools[0].name"},
			{`{"model":"sim-small","max_tokens":5,"messages":[]}`, 400, "invalid_request_error", "messages"},
			{`{"model":"sim-small","max_tokens":5,"messages":[{"role":"system","content":"x"}]}`, 400, "invalid_request_error", "messages[0].role"},
			{`{"model":"sim-small","max_tokens":5,"messages":[{"role":"user","content":"x"},{"role":"assistant","content":"The answer is"}]}`, 400, "invalid_request_error", "messages[1].role"},
			{`{"model":"sim-small","max_tokens":5,"messages":[{"role":"user","content":[{"type":"image","source":{"type":"url","url":"https://example.com/a.png"}}]}]}`, 400, "invalid_request_error", "messages[0].content[0].source.type"},
			{`{"model":"sim-small","max_tokens":5,"messages":[{"role":"user","content":[{"type":"text","text":"x","citations":[{"type":"x"}]}]}]}`, 400, "invalid_request_error", "messages[0].content[0].citations"},
			{`{"model":"sim-small","max_tokens":5,"messages":[{"role":"user","content":"x"},{"role":"assistant","content":[{"type":"tool_use","id":"","name":"f","input":{}}]},{"role":"user","content":"y"}]}`, 400, "invalid_request_error", "messages[1].content[0].id"},
			{`{"model":"sim-small","max_tokens":5,"messages":[{"role":"user","content":[{"type":"tool_result","tool_use_id":"","content":"r"}]}]}`, 400, "invalid_request_error", "messages[0].content[0].tool_use_id"},
			{`not json`, 400, "invalid_request_error", "body"},
		} {
			res, body := post("/v1/messages", tc.body)
			if msg := anthropicErr(t, tc.body, res, body, tc.status, tc.typ); !strings.HasPrefix(msg, tc.field+":") {
				t.Errorf("%s: message %q does not name %s", tc.body, msg, tc.field)
			}
		}
	})

	t.Run("empty balance", func(t *testing.T) {
		broke := s.newAccount(t, "anthropic-broke@example.com")
		for _, stream := range []string{"false", "true"} {
			res, body := s.postRaw(t, "/v1/messages", `{"model":"sim-small","max_tokens":5,"stream":`+stream+`,"messages":[{"role":"user","content":"x"}]}`,
				map[string]string{"x-api-key": broke.Key})
			msg := anthropicErr(t, "broke, stream "+stream, res, body, 400, "invalid_request_error")
			if !strings.Contains(msg, "credit balance is too low") || res.Header.Get("X-Should-Retry") != "false" {
				t.Errorf("broke: %s %v", msg, res.Header)
			}
		}
		// Counting is free.
		res, body := s.postRaw(t, "/v1/messages/count_tokens", `{"model":"sim-small","messages":[{"role":"user","content":"x"}]}`,
			map[string]string{"x-api-key": broke.Key})
		if res.StatusCode != 200 {
			t.Fatalf("count_tokens when broke: %d %s", res.StatusCode, body)
		}
	})
}

// countUsage is how many usage records the account has now.
func countUsage(t *testing.T, c apiClients) int {
	t.Helper()
	res, err := c.Billing.ListUsage(ctxTimeout(t, 5*time.Second), connect.NewRequest(&parleyv1.ListUsageRequest{PageSize: 200}))
	if err != nil {
		t.Fatal(err)
	}
	return len(res.Msg.GetUsageRecords())
}

// Every message, whole or streamed, with tools or not, is charged exactly
// what its usage record says, and metadata.user_id is the record's user.
func TestAnthropicBalanceMatchesUsage(t *testing.T) {
	s := startServer(t, fastAuth...)
	a := s.newAccount(t, "anthropic-ledger@example.com")
	s.topup(t, a, "1")
	key := map[string]string{"x-api-key": a.Key}
	bodies := []string{
		`{"model":"sim-small","max_tokens":20,"metadata":{"user_id":"end-7"},"messages":[{"role":"user","content":"Hello"}]}`,
		`{"model":"sim-small","max_tokens":20,"stream":true,"metadata":{"user_id":"end-7"},"messages":[{"role":"user","content":"Hello again"}]}`,
		`{"model":"sim-large","max_tokens":50,"metadata":{"user_id":"end-7"},"tool_choice":{"type":"any"},"tools":[` + anthropicWeather + `],"messages":[{"role":"user","content":"Weather?"}]}`,
		`{"model":"sim-small","max_tokens":20,"stream":true,"metadata":{"user_id":"end-7"},"tool_choice":{"type":"any"},"tools":[` + anthropicWeather + `],"messages":[{"role":"user","content":"Weather?"}]}`,
	}
	for _, b := range bodies {
		if res, body := s.postRaw(t, "/v1/messages", b, key); res.StatusCode != 200 {
			t.Fatalf("%d %s", res.StatusCode, body)
		}
	}
	c := s.api(protocols[0], cred{bearer: a.Key})
	recs := usageOf(t, c, len(bodies))
	var cost int64
	for _, r := range recs {
		if r.GetUser() != "end-7" || r.GetCostNanos() <= 0 {
			t.Errorf("record %v", r)
		}
		cost += r.GetCostNanos()
	}
	bal, err := c.Billing.GetBalance(ctxTimeout(t, 5*time.Second), connect.NewRequest(&parleyv1.GetBalanceRequest{}))
	if err != nil {
		t.Fatal(err)
	}
	if spent := 1e9 - bal.Msg.GetBalanceNanos(); spent != cost || bal.Msg.GetReservedNanos() != 0 {
		t.Fatalf("balance went down by %d, usage records cost %d (reserved %d)", spent, cost, bal.Msg.GetReservedNanos())
	}
}

// With --openai-unsupported=drop the fields Parley cannot honour are dropped
// on the Anthropic surface too, and counted in the same metric.
func TestAnthropicDropUnsupported(t *testing.T) {
	s := startServer(t, append(fastAuth, "--openai-unsupported", "drop")...)
	a := s.newAccount(t, "anthropic-drop@example.com")
	s.topup(t, a, "1")
	res, body := s.postRaw(t, "/v1/messages", `{"model":"sim-small","max_tokens":5,"top_k":5,"messages":[{"role":"user","content":[{"type":"text","text":"x","citations":[{"type":"y"}]}]}]}`,
		map[string]string{"x-api-key": a.Key})
	if res.StatusCode != 200 {
		t.Fatalf("%d %s", res.StatusCode, body)
	}
	metrics := metricsBody(t, s.BaseURL)
	for _, f := range []string{"top_k", "messages[].content[].citations"} {
		if !strings.Contains(metrics, `parley_openai_dropped_params_total{field="`+f+`"} 1`) {
			t.Errorf("no drop of %s counted", f)
		}
	}
}
