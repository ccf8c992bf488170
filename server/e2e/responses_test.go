package e2e

import (
	"bufio"
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"reflect"
	"strings"
	"syscall"
	"testing"
	"time"

	"connectrpc.com/connect"

	parleyv1 "github.com/parleyhq/parley/gen/parley/v1"
)

// respObject is the part of a Responses API response object these tests read.
type respObject struct {
	ID                 string            `json:"id"`
	Object             string            `json:"object"`
	Status             string            `json:"status"`
	Model              string            `json:"model"`
	Output             []respItem        `json:"output"`
	PreviousResponseID *string           `json:"previous_response_id"`
	Instructions       *string           `json:"instructions"`
	Metadata           map[string]string `json:"metadata"`
	Store              bool              `json:"store"`
	Error              *struct {
		Code, Message string
	} `json:"error"`
	IncompleteDetails *struct {
		Reason string `json:"reason"`
	} `json:"incomplete_details"`
	Usage *struct {
		InputTokens  int `json:"input_tokens"`
		OutputTokens int `json:"output_tokens"`
		TotalTokens  int `json:"total_tokens"`
	} `json:"usage"`
}

type respItem struct {
	Type      string `json:"type"`
	ID        string `json:"id"`
	Status    string `json:"status"`
	Role      string `json:"role"`
	CallID    string `json:"call_id"`
	Name      string `json:"name"`
	Arguments string `json:"arguments"`
	Output    string `json:"output"`
	Content   []struct {
		Type string `json:"type"`
		Text string `json:"text"`
	} `json:"content"`
}

// text is the response's output text, as the SDKs' output_text joins it.
func (r *respObject) text() string {
	var b strings.Builder
	for _, it := range r.Output {
		for _, c := range it.Content {
			if it.Type == "message" && c.Type == "output_text" {
				b.WriteString(c.Text)
			}
		}
	}
	return b.String()
}

// respCall sends one request to the Responses API and returns its status
// and body.
func respCall(t *testing.T, s *server, key, method, path string, body any) (int, []byte) {
	t.Helper()
	var rd io.Reader
	if body != nil {
		data, err := json.Marshal(body)
		if err != nil {
			t.Fatal(err)
		}
		rd = bytes.NewReader(data)
	}
	req, err := http.NewRequestWithContext(ctxTimeout(t, 20*time.Second), method, s.BaseURL+path, rd)
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Authorization", "Bearer "+key)
	req.Header.Set("Content-Type", "application/json")
	res, err := h1Client().Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	data, err := io.ReadAll(res.Body)
	if err != nil {
		t.Fatal(err)
	}
	return res.StatusCode, data
}

// createResponse makes a response and fails the test unless it is 200.
func createResponse(t *testing.T, s *server, key string, body map[string]any) (*respObject, []byte) {
	t.Helper()
	status, data := respCall(t, s, key, "POST", "/v1/responses", body)
	if status != http.StatusOK {
		t.Fatalf("POST /v1/responses: %d %s", status, data)
	}
	var r respObject
	if err := json.Unmarshal(data, &r); err != nil {
		t.Fatalf("%v: %s", err, data)
	}
	if r.Object != "response" || !strings.HasPrefix(r.ID, "resp_") || r.Usage == nil {
		t.Fatalf("response %s", data)
	}
	return &r, data
}

// wantOpenAIError checks an error answer: its status, and the parameter it
// names.
func wantOpenAIError(t *testing.T, what string, status int, data []byte, wantStatus int, wantParam string) {
	t.Helper()
	var e struct {
		Error struct {
			Message string  `json:"message"`
			Type    string  `json:"type"`
			Param   *string `json:"param"`
		} `json:"error"`
	}
	if err := json.Unmarshal(data, &e); err != nil || status != wantStatus || e.Error.Message == "" {
		t.Fatalf("%s: %d %s, want %d", what, status, data, wantStatus)
	}
	if wantParam != "" && (e.Error.Param == nil || *e.Error.Param != wantParam) {
		t.Fatalf("%s: param %v, want %q (%s)", what, e.Error.Param, wantParam, data)
	}
}

var weatherFunction = map[string]any{
	"type": "function", "name": "get_weather", "description": "Current weather",
	"parameters": map[string]any{
		"type":                 "object",
		"properties":           map[string]any{"location": map[string]any{"type": "string"}},
		"required":             []any{"location"},
		"additionalProperties": false,
	},
}

// respEvent is one event of a streamed response.
type respEvent struct {
	name string
	data map[string]any
}

func streamResponse(t *testing.T, s *server, key string, body map[string]any) []respEvent {
	t.Helper()
	return streamResponseWatching(t, s, key, body, nil)
}

// streamResponseWatching is streamResponse calling onDelta after each text
// delta.
func streamResponseWatching(t *testing.T, s *server, key string, body map[string]any, onDelta func(n int)) []respEvent {
	t.Helper()
	body["stream"] = true
	data, _ := json.Marshal(body)
	req, _ := http.NewRequestWithContext(ctxTimeout(t, 20*time.Second), "POST", s.BaseURL+"/v1/responses", bytes.NewReader(data))
	req.Header.Set("Authorization", "Bearer "+key)
	res, err := h1Client().Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	if res.StatusCode != http.StatusOK || !strings.HasPrefix(res.Header.Get("Content-Type"), "text/event-stream") {
		b, _ := io.ReadAll(res.Body)
		t.Fatalf("stream: %d %s", res.StatusCode, b)
	}
	var events []respEvent
	var name string
	deltas := 0
	sc := bufio.NewScanner(res.Body)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		line := sc.Text()
		switch {
		case strings.HasPrefix(line, "event: "):
			name = strings.TrimPrefix(line, "event: ")
		case strings.HasPrefix(line, "data: "):
			payload := strings.TrimPrefix(line, "data: ")
			if payload == "[DONE]" {
				t.Fatal("a Responses stream has no [DONE]")
			}
			var ev map[string]any
			if err := json.Unmarshal([]byte(payload), &ev); err != nil {
				t.Fatalf("%v: %s", err, payload)
			}
			if ev["type"] != name {
				t.Fatalf("event %q carries type %v", name, ev["type"])
			}
			if seq, _ := ev["sequence_number"].(float64); int(seq) != len(events) {
				t.Fatalf("event %d (%s) has sequence_number %v", len(events), name, ev["sequence_number"])
			}
			events = append(events, respEvent{name, ev})
			if name == "response.output_text.delta" && onDelta != nil {
				deltas++
				onDelta(deltas)
			}
		}
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	return events
}

// eventResponse decodes the response an event carries.
func eventResponse(t *testing.T, ev respEvent) *respObject {
	t.Helper()
	data, _ := json.Marshal(ev.data["response"])
	var r respObject
	if err := json.Unmarshal(data, &r); err != nil {
		t.Fatal(err)
	}
	return &r
}

// The Responses API over the same core as chat completions: whole and
// streamed answers, function calls, stored responses continued by
// previous_response_id, retrieve and delete scoped to their owner, and the
// money.
func TestResponses(t *testing.T) { testResponses(t) }

// The same on the scale backends (PostgreSQL, and Cassandra for messages
// when scripts/services.sh runs it), where stored responses live in those
// stores.
func TestResponsesScaleMode(t *testing.T) {
	scaleMode(t)
	testResponses(t)
}

func testResponses(t *testing.T) {
	s := startServer(t, fastAuth...)
	a := s.newAccount(t, "responses@example.com")
	s.topup(t, a, "5")
	c := s.api(protocols[0], cred{bearer: a.Key})
	ctx := ctxTimeout(t, 60*time.Second)
	before, err := c.Billing.GetBalance(ctx, connect.NewRequest(&parleyv1.GetBalanceRequest{}))
	if err != nil {
		t.Fatal(err)
	}
	generations := 0

	var first *respObject
	t.Run("Whole", func(t *testing.T) {
		r, data := createResponse(t, s, a.Key, map[string]any{"model": "sim-small", "input": "Tell me a story.",
			"instructions": "Be brief.", "metadata": map[string]any{"topic": "stories"}, "user": "end-user-1"})
		generations++
		if r.Status != "completed" || r.Model != "sim-small" || r.text() == "" || len(r.Output) != 1 || r.Output[0].Role != "assistant" ||
			!strings.HasPrefix(r.Output[0].ID, "msg_") || r.Output[0].Status != "completed" || r.Metadata["topic"] != "stories" ||
			r.Instructions == nil || *r.Instructions != "Be brief." || !r.Store || r.PreviousResponseID != nil || r.Error != nil ||
			r.Usage.InputTokens == 0 || r.Usage.TotalTokens != r.Usage.InputTokens+r.Usage.OutputTokens {
			t.Fatalf("response %s", data)
		}
		// Stored: retrieved as it was created.
		status, got := respCall(t, s, a.Key, "GET", "/v1/responses/"+r.ID, nil)
		if status != http.StatusOK || !sameJSON(got, data) {
			t.Fatalf("retrieved %d %s\ncreated %s", status, got, data)
		}
		first = r

		// Cut at max_output_tokens: incomplete, not failed.
		r, data = createResponse(t, s, a.Key, map[string]any{"model": "sim-small", "input": "Tell me a long story.", "max_output_tokens": 5})
		generations++
		if r.Status != "incomplete" || r.IncompleteDetails == nil || r.IncompleteDetails.Reason != "max_output_tokens" ||
			r.Usage.OutputTokens != 5 || r.Output[0].Status != "incomplete" {
			t.Fatalf("cut response %s", data)
		}
	})

	t.Run("Streamed", func(t *testing.T) {
		events := streamResponse(t, s, a.Key, map[string]any{"model": "sim-small", "input": "Tell me a story."})
		generations++
		var names []string
		var deltas strings.Builder
		for _, ev := range events {
			if n := len(names); n == 0 || names[n-1] != ev.name {
				names = append(names, ev.name)
			}
			if ev.name == "response.output_text.delta" {
				deltas.WriteString(ev.data["delta"].(string))
			}
		}
		want := []string{"response.created", "response.in_progress", "response.output_item.added", "response.content_part.added",
			"response.output_text.delta", "response.output_text.done", "response.content_part.done", "response.output_item.done",
			"response.completed"}
		if !reflect.DeepEqual(names, want) {
			t.Fatalf("events %v, want %v", names, want)
		}
		created, done := eventResponse(t, events[0]), eventResponse(t, events[len(events)-1])
		if created.Status != "in_progress" || len(created.Output) != 0 || created.ID != done.ID || done.Status != "completed" ||
			done.text() != deltas.String() || deltas.Len() == 0 || done.Usage == nil || done.Usage.OutputTokens == 0 {
			t.Fatalf("created %+v, completed %+v, deltas %q", created, done, deltas.String())
		}
		for _, ev := range events[len(events)-5 : len(events)-1] {
			if ev.data["item_id"] != nil && ev.data["item_id"] != done.Output[0].ID {
				t.Fatalf("%s names item %v, the output is %s", ev.name, ev.data["item_id"], done.Output[0].ID)
			}
		}
		if ev := events[len(events)-4]; ev.data["text"] != deltas.String() {
			t.Fatalf("output_text.done %v", ev.data)
		}
		// The streamed response was stored whole.
		status, got := respCall(t, s, a.Key, "GET", "/v1/responses/"+done.ID, nil)
		stored, _ := json.Marshal(events[len(events)-1].data["response"])
		if status != http.StatusOK || !sameJSON(got, stored) {
			t.Fatalf("retrieved %d %s\nstreamed %s", status, got, stored)
		}
	})

	var call respItem
	var called, followUp *respObject
	t.Run("FunctionCallRoundTrip", func(t *testing.T) {
		r, data := createResponse(t, s, a.Key, map[string]any{"model": "sim-small", "input": "What is the weather in Paris?",
			"tools": []any{weatherFunction}, "tool_choice": "required"})
		generations++
		if len(r.Output) != 1 || r.Output[0].Type != "function_call" || r.Output[0].Name != "get_weather" ||
			r.Output[0].CallID == "" || !strings.HasPrefix(r.Output[0].ID, "fc_") || r.Output[0].Status != "completed" {
			t.Fatalf("response %s", data)
		}
		var args map[string]any
		if err := json.Unmarshal([]byte(r.Output[0].Arguments), &args); err != nil || args["location"] == nil {
			t.Fatalf("arguments %q", r.Output[0].Arguments)
		}
		call, called = r.Output[0], r

		// The output goes back with previous_response_id: the call is in
		// the stored history, and the answer quotes its result.
		r, data = createResponse(t, s, a.Key, map[string]any{"model": "sim-small", "previous_response_id": called.ID,
			"tools": []any{weatherFunction}, "input": []any{
				map[string]any{"type": "function_call_output", "call_id": call.CallID, "output": `{"temperature": 18}`}}})
		generations++
		if r.Status != "completed" || !strings.Contains(r.text(), `The get_weather tool returned: {"temperature": 18}`) ||
			r.PreviousResponseID == nil || *r.PreviousResponseID != called.ID || r.Usage.InputTokens <= called.Usage.TotalTokens {
			t.Fatalf("follow-up %s", data)
		}
		followUp = r

		// The same without storage: the caller sends every item.
		r, data = createResponse(t, s, a.Key, map[string]any{"model": "sim-small", "store": false, "tools": []any{weatherFunction},
			"input": []any{
				map[string]any{"role": "user", "content": []any{map[string]any{"type": "input_text", "text": "What is the weather in Paris?"}}},
				map[string]any{"type": "function_call", "id": call.ID, "call_id": call.CallID, "name": call.Name, "arguments": call.Arguments, "status": "completed"},
				map[string]any{"type": "function_call_output", "call_id": call.CallID, "output": `{"temperature": 19}`}}})
		generations++
		if r.Store || !strings.Contains(r.text(), `The get_weather tool returned: {"temperature": 19}`) {
			t.Fatalf("stateless follow-up %s", data)
		}
		// store false: nothing to retrieve, nothing to continue.
		status, got := respCall(t, s, a.Key, "GET", "/v1/responses/"+r.ID, nil)
		wantOpenAIError(t, "GET an unstored response", status, got, http.StatusNotFound, "")
		status, got = respCall(t, s, a.Key, "POST", "/v1/responses", map[string]any{"model": "sim-small", "input": "more", "previous_response_id": r.ID})
		wantOpenAIError(t, "continue an unstored response", status, got, http.StatusNotFound, "previous_response_id")

		// Streamed, a call is a function_call item with its arguments.
		events := streamResponse(t, s, a.Key, map[string]any{"model": "sim-small", "input": "Weather in Oslo?",
			"tools": []any{weatherFunction}, "tool_choice": map[string]any{"type": "function", "name": "get_weather"}})
		generations++
		var args2 strings.Builder
		var done *respObject
		for _, ev := range events {
			switch ev.name {
			case "response.function_call_arguments.delta":
				args2.WriteString(ev.data["delta"].(string))
			case "response.function_call_arguments.done":
				if ev.data["arguments"] != args2.String() {
					t.Fatalf("arguments.done %v, deltas %q", ev.data, args2.String())
				}
			case "response.completed":
				done = eventResponse(t, ev)
			}
		}
		if done == nil || len(done.Output) != 1 || done.Output[0].Type != "function_call" || done.Output[0].Arguments != args2.String() {
			t.Fatalf("streamed call: %+v", events)
		}
	})

	t.Run("PreviousResponseAndInputItems", func(t *testing.T) {
		r, data := createResponse(t, s, a.Key, map[string]any{"model": "sim-small", "input": "And then?", "previous_response_id": first.ID,
			"instructions": "Be briefer."})
		generations++
		// The history is in the prompt: the first exchange (its instructions
		// are not carried over, as OpenAI does) plus the new input.
		if r.Usage.InputTokens < first.Usage.TotalTokens || r.PreviousResponseID == nil || *r.PreviousResponseID != first.ID {
			t.Fatalf("continued %s after %+v", data, first.Usage)
		}
		status, got := respCall(t, s, a.Key, "GET", "/v1/responses/"+r.ID+"/input_items?order=asc", nil)
		var list struct {
			Object  string     `json:"object"`
			Data    []respItem `json:"data"`
			HasMore bool       `json:"has_more"`
		}
		if status != http.StatusOK || json.Unmarshal(got, &list) != nil || list.Object != "list" || len(list.Data) != 3 ||
			list.Data[0].Content[0].Text != "Tell me a story." || list.Data[1].ID != first.Output[0].ID ||
			list.Data[1].Content[0].Text != first.text() || list.Data[2].Content[0].Text != "And then?" || list.HasMore {
			t.Fatalf("input items %d %s", status, got)
		}
		status, got = respCall(t, s, a.Key, "GET", "/v1/responses/"+r.ID+"/input_items?limit=1", nil)
		if status != http.StatusOK || json.Unmarshal(got, &list) != nil || len(list.Data) != 1 || !list.HasMore || list.Data[0].Content[0].Text != "And then?" {
			t.Fatalf("input items, newest first, one: %d %s", status, got)
		}

		// Two responses continue the same one: each sees its own history.
		b1, _ := createResponse(t, s, a.Key, map[string]any{"model": "sim-small", "input": "Branch one.", "previous_response_id": first.ID})
		b2, _ := createResponse(t, s, a.Key, map[string]any{"model": "sim-small", "input": "Branch two.", "previous_response_id": first.ID})
		generations += 2
		for _, b := range []*respObject{b1, b2} {
			_, got = respCall(t, s, a.Key, "GET", "/v1/responses/"+b.ID+"/input_items?order=asc", nil)
			if json.Unmarshal(got, &list) != nil || len(list.Data) != 3 || list.Data[1].ID != first.Output[0].ID {
				t.Fatalf("branch input items %s", got)
			}
		}
		if list.Data[2].Content[0].Text != "Branch two." {
			t.Fatalf("branch two's history %s", got)
		}

		// A chain is one conversation of the caller's, kept out of the web
		// app's list (archived).
		res, err := c.Conv.ListConversations(ctx, connect.NewRequest(&parleyv1.ListConversationsRequest{}))
		if err != nil {
			t.Fatal(err)
		}
		if n := len(res.Msg.GetConversations()); n != 0 {
			t.Fatalf("%d responses' conversations in the active list", n)
		}
		res, err = c.Conv.ListConversations(ctx, connect.NewRequest(&parleyv1.ListConversationsRequest{Archived: parleyv1.ArchivedFilter_ARCHIVED_FILTER_ARCHIVED}))
		if err != nil {
			t.Fatal(err)
		}
		titles := map[string]bool{}
		for _, conv := range res.Msg.GetConversations() {
			titles[conv.GetTitle()] = true
		}
		// The first chain (first, its continuation, two branches), the cut
		// one, the streamed one, the two of the call, the streamed call.
		if len(res.Msg.GetConversations()) != 5 || !titles["Tell me a story."] {
			t.Fatalf("archived conversations %v", res.Msg.GetConversations())
		}
	})

	t.Run("OwnerOnly", func(t *testing.T) {
		b := s.newAccount(t, "responses-other@example.com")
		s.topup(t, b, "1")
		for _, path := range []string{"/v1/responses/" + first.ID, "/v1/responses/" + first.ID + "/input_items"} {
			status, got := respCall(t, s, b.Key, "GET", path, nil)
			wantOpenAIError(t, "another user's GET "+path, status, got, http.StatusNotFound, "")
		}
		status, got := respCall(t, s, b.Key, "DELETE", "/v1/responses/"+first.ID, nil)
		wantOpenAIError(t, "another user's DELETE", status, got, http.StatusNotFound, "")
		status, got = respCall(t, s, b.Key, "POST", "/v1/responses", map[string]any{"model": "sim-small", "input": "hi", "previous_response_id": first.ID})
		wantOpenAIError(t, "another user's previous_response_id", status, got, http.StatusNotFound, "previous_response_id")
		for _, id := range []string{"resp_x", "resp_" + strings.Repeat("0", 64), "nope"} {
			status, got = respCall(t, s, a.Key, "GET", "/v1/responses/"+id, nil)
			wantOpenAIError(t, "GET "+id, status, got, http.StatusNotFound, "")
		}
		if status, _ := respCall(t, s, a.Key, "GET", "/v1/responses/"+first.ID, nil); status != http.StatusOK {
			t.Fatalf("the owner's response after the others' tries: %d", status)
		}
	})

	t.Run("Delete", func(t *testing.T) {
		status, got := respCall(t, s, a.Key, "DELETE", "/v1/responses/"+called.ID, nil)
		var del map[string]any
		if status != http.StatusOK || json.Unmarshal(got, &del) != nil || del["id"] != called.ID || del["object"] != "response" || del["deleted"] != true {
			t.Fatalf("DELETE: %d %s", status, got)
		}
		status, got = respCall(t, s, a.Key, "GET", "/v1/responses/"+called.ID, nil)
		wantOpenAIError(t, "GET a deleted response", status, got, http.StatusNotFound, "")
		status, got = respCall(t, s, a.Key, "DELETE", "/v1/responses/"+called.ID, nil)
		wantOpenAIError(t, "DELETE a deleted response", status, got, http.StatusNotFound, "")
		status, got = respCall(t, s, a.Key, "POST", "/v1/responses", map[string]any{"model": "sim-small", "input": "hi", "previous_response_id": called.ID})
		wantOpenAIError(t, "continue a deleted response", status, got, http.StatusNotFound, "previous_response_id")
		// The response that continued it is still there, but its history
		// is not whole: it cannot be continued.
		if status, got = respCall(t, s, a.Key, "GET", "/v1/responses/"+followUp.ID, nil); status != http.StatusOK {
			t.Fatalf("GET the follow-up: %d %s", status, got)
		}
		status, got = respCall(t, s, a.Key, "POST", "/v1/responses", map[string]any{"model": "sim-small", "input": "hi", "previous_response_id": followUp.ID})
		wantOpenAIError(t, "continue after a deleted response", status, got, http.StatusBadRequest, "previous_response_id")
		// Deleting the last response of a chain deletes its conversation.
		if status, got = respCall(t, s, a.Key, "DELETE", "/v1/responses/"+followUp.ID, nil); status != http.StatusOK {
			t.Fatalf("DELETE the follow-up: %d %s", status, got)
		}
		res, err := c.Conv.ListConversations(ctx, connect.NewRequest(&parleyv1.ListConversationsRequest{Archived: parleyv1.ArchivedFilter_ARCHIVED_FILTER_ARCHIVED}))
		if err != nil {
			t.Fatal(err)
		}
		if n := len(res.Msg.GetConversations()); n != 4 {
			t.Fatalf("%d conversations after the chain was deleted, want 4", n)
		}
	})

	t.Run("StructuredOutput", func(t *testing.T) {
		r, data := createResponse(t, s, a.Key, map[string]any{"model": "sim-small", "input": "A person, please.",
			"text": map[string]any{"format": map[string]any{"type": "json_schema", "name": "person", "strict": true, "schema": map[string]any{
				"type": "object", "properties": map[string]any{"name": map[string]any{"type": "string"}, "age": map[string]any{"type": "integer"}},
				"required": []any{"name", "age"}, "additionalProperties": false}}}})
		generations++
		var person struct {
			Name *string `json:"name"`
			Age  *int    `json:"age"`
		}
		if err := json.Unmarshal([]byte(r.text()), &person); err != nil || person.Name == nil || person.Age == nil {
			t.Fatalf("json_schema answer %s", data)
		}
	})

	t.Run("Refused", func(t *testing.T) {
		for _, tc := range []struct {
			body  map[string]any
			param string
		}{
			{map[string]any{"model": "sim-small", "input": "hi", "reasoning": map[string]any{"effort": "extreme"}}, "reasoning"},
			{map[string]any{"model": "sim-small", "input": "hi", "background": true, "store": false}, "background"},
			{map[string]any{"model": "sim-small", "input": "hi", "include": []any{"message.input_image.image_url"}}, "include"},
			{map[string]any{"model": "sim-small", "input": "hi", "tools": []any{map[string]any{"type": "web_search"}}}, "tools[0].type"},
			{map[string]any{"model": "sim-small", "input": []any{map[string]any{"type": "item_reference", "id": "x"}}}, "input[0].type"},
			{map[string]any{"model": "sim-small", "input": "hi", "text": map[string]any{"format": map[string]any{"type": "json_schema", "name": "bad name", "schema": map[string]any{"type": "object"}}}}, "text.format.name"},
			{map[string]any{"model": "sim-small", "input": []any{map[string]any{"role": "user", "content": "a"}, map[string]any{"role": "robot", "content": "b"}}}, "input[1].role"},
			{map[string]any{"model": "sim-small"}, "input"},
			{map[string]any{"model": "no-such-model", "input": "hi"}, "model"},
		} {
			status, got := respCall(t, s, a.Key, "POST", "/v1/responses", tc.body)
			want := http.StatusBadRequest
			if tc.param == "model" {
				want = http.StatusNotFound
			}
			wantOpenAIError(t, tc.param, status, got, want, tc.param)
		}
	})

	// What the account paid is what its usage records say, to the nano-USD.
	recs := usageOf(t, c, generations)
	var cost int64
	for _, r := range recs {
		cost += r.GetCostNanos()
	}
	after, err := c.Billing.GetBalance(ctx, connect.NewRequest(&parleyv1.GetBalanceRequest{}))
	if err != nil {
		t.Fatal(err)
	}
	if cost == 0 || before.Msg.GetBalanceNanos()-after.Msg.GetBalanceNanos() != cost || after.Msg.GetReservedNanos() != 0 {
		t.Fatalf("balance %d → %d (reserved %d), usage records cost %d", before.Msg.GetBalanceNanos(), after.Msg.GetBalanceNanos(),
			after.Msg.GetReservedNanos(), cost)
	}
}

// With --openai-unsupported=drop, fields and built-in tools the Responses
// API cannot honour are dropped and counted, not refused.
func TestResponsesDropUnsupported(t *testing.T) {
	s := startServer(t, append(fastAuth, "--openai-unsupported", "drop")...)
	a := s.newAccount(t, "responses-drop@example.com")
	s.topup(t, a, "1")
	r, data := createResponse(t, s, a.Key, map[string]any{"model": "sim-small", "input": "hi", "reasoning": map[string]any{"effort": "extreme"},
		"tools": []any{map[string]any{"type": "web_search"}, weatherFunction}})
	if r.Status != "completed" || !strings.Contains(string(data), `"tools":[{"type":"function","name":"get_weather"`) {
		t.Fatalf("response %s", data)
	}
	metrics := metricsBody(t, s.BaseURL)
	for _, want := range []string{`parley_openai_dropped_params_total{field="reasoning"} 1`, `parley_openai_dropped_params_total{field="tools"} 1`} {
		if !strings.Contains(metrics, want) {
			t.Fatalf("no %s in /metrics", want)
		}
	}
}

// A stream cut by its worker's death ends with response.failed, never
// response.completed, and nothing is stored.
func TestResponsesStreamCutIsFailed(t *testing.T) {
	w := startWorker(t, "--engine", "sim", "--time-scale", "1")
	s := startServer(t, append(fastAuth, "--workers", w.Addr())...)
	a := s.newAccount(t, "responses-cut@example.com")
	s.topup(t, a, "1")
	for try := 0; try < 50; try++ { // the gateway may need a moment to open the worker's load stream
		if status, _ := respCall(t, s, a.Key, "POST", "/v1/responses", map[string]any{"model": "sim-small", "input": "hi", "max_output_tokens": 16}); status == http.StatusOK {
			break
		}
		time.Sleep(100 * time.Millisecond)
	}
	events := streamResponseWatching(t, s, a.Key, map[string]any{"model": "sim-small", "input": "Tell me a long story.", "max_output_tokens": 1000},
		func(n int) {
			if n == 5 {
				w.Signal(syscall.SIGKILL)
			}
		})
	last := events[len(events)-1]
	for _, ev := range events {
		if ev.name == "response.completed" || ev.name == "response.incomplete" {
			t.Fatalf("a cut stream sent %s", ev.name)
		}
	}
	r := eventResponse(t, last)
	if last.name != "response.failed" || r.Status != "failed" || r.Error == nil || r.Error.Message == "" || r.text() == "" {
		t.Fatalf("last event %s: %v", last.name, last.data)
	}
	status, got := respCall(t, s, a.Key, "GET", "/v1/responses/"+r.ID, nil)
	wantOpenAIError(t, "GET a failed response", status, got, http.StatusNotFound, "")
}

// sameJSON says whether two JSON documents hold the same values.
func sameJSON(a, b []byte) bool {
	var x, y any
	return json.Unmarshal(a, &x) == nil && json.Unmarshal(b, &y) == nil && reflect.DeepEqual(x, y)
}
