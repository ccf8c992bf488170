package e2e

import (
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"connectrpc.com/connect"

	parleyv1 "github.com/parleyhq/parley/gen/parley/v1"
)

// The fields coding agents send on the Anthropic surface: accepted as
// asking for nothing Parley must do (docs/api/anthropic.md), or refused by
// name because honouring them silently would mislead. The same body twice
// gives the same answer.
func TestAnthropicFieldPolicy(t *testing.T) {
	s := startServer(t, fastAuth...)
	a := s.newAccount(t, "fields@example.com")
	s.topup(t, a, "10")
	key := map[string]string{"x-api-key": a.Key, "anthropic-version": "2023-06-01"}
	const msgs = `"messages":[{"role":"user","content":"Hello"}]`
	for _, tc := range []struct {
		name, fields string
		refused      string // the field named, or "" when accepted
	}{
		{"thinking adaptive", `"thinking":{"type":"adaptive"}`, ""},
		{"thinking enabled", `"thinking":{"type":"enabled","budget_tokens":2048}`, ""},
		{"thinking disabled", `"thinking":{"type":"disabled"}`, ""},
		{"thinking of an unknown type", `"thinking":{"type":"deep"}`, "thinking"},
		{"effort", `"output_config":{"effort":"high"}`, ""},
		{"an output format", `"output_config":{"format":{"type":"json_schema","schema":{}}}`, "output_config"},
		{"clearing thinking", `"context_management":{"edits":[{"type":"clear_thinking_20251015","keep":"all"}]}`, ""},
		{"clearing tool uses", `"context_management":{"edits":[{"type":"clear_tool_uses_20250919"}]}`, "context_management"},
		{"metadata.user_id", `"metadata":{"user_id":"{\"device_id\":\"d\"}"}`, ""},
		{"service_tier auto", `"service_tier":"auto"`, ""},
		{"top_k", `"top_k":5`, "top_k"},
		{"a deferred tool", `"tools":[{"name":"Read","description":"d","input_schema":{"type":"object"},"defer_loading":true}]`, ""},
		{"cache_control", `"system":[{"type":"text","text":"Be terse.","cache_control":{"type":"ephemeral"}}]`, ""},
		{"max_tokens over the model's", `"max_tokens":128000`, ""},
		{"max_tokens over any Claude's", `"max_tokens":128001`, "max_tokens"},
		{"several, named in order", `"top_k":5,"container":"c","thinking":{"type":"deep"}`, "container"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			body := `{"model":"sim-small",` + msgs + `,` + tc.fields + `}`
			if !strings.Contains(tc.fields, `"max_tokens"`) {
				body = `{"model":"sim-small","max_tokens":5,` + msgs + `,` + tc.fields + `}`
			}
			var first string
			for try := range 2 {
				res, b := s.postRaw(t, "/v1/messages?beta=true", body, map[string]string{"x-api-key": a.Key,
					"anthropic-version": "2023-06-01", "anthropic-beta": "context-management-2025-06-27,effort-2025-11-24"})
				if tc.refused == "" {
					if res.StatusCode != 200 {
						t.Fatalf("refused: %d %s", res.StatusCode, b)
					}
					continue
				}
				msg := anthropicErr(t, tc.name, res, b, 400, "invalid_request_error")
				if !strings.HasPrefix(msg, tc.refused+":") && !strings.HasPrefix(msg, tc.refused+" ") {
					t.Fatalf("the refusal names %q, want %s", msg, tc.refused)
				}
				if try == 0 {
					first = msg
				} else if msg != first {
					t.Fatalf("the same body refused twice differently: %q then %q", first, msg)
				}
			}
		})
	}

	t.Run("a system message among the messages", func(t *testing.T) {
		body := `{"model":"sim-small","max_tokens":5,"messages":[{"role":"user","content":"Hello"},` +
			`{"role":"system","content":[{"type":"text","text":"# Environment"}]}]}`
		if res, b := s.postRaw(t, "/v1/messages", body, key); res.StatusCode != 200 {
			t.Fatalf("%d %s", res.StatusCode, b)
		}
		body = `{"model":"sim-small","max_tokens":5,"messages":[{"role":"user","content":"Hello"},{"role":"tool","content":"x"}]}`
		res, b := s.postRaw(t, "/v1/messages", body, key)
		if msg := anthropicErr(t, "role tool", res, b, 400, "invalid_request_error"); !strings.HasPrefix(msg, "messages[1].role") {
			t.Fatalf("refusal %q", msg)
		}
	})

	t.Run("aliases", func(t *testing.T) {
		// The embedded catalog answers Claude's and GPT's names with the
		// large sim; the usage record names the model that served it.
		res, b := s.postRaw(t, "/v1/messages", `{"model":"claude-sonnet-4-5","max_tokens":5,`+msgs+`}`, key)
		var m struct{ Model string }
		if res.StatusCode != 200 || json.Unmarshal(b, &m) != nil || m.Model != "sim-large" {
			t.Fatalf("claude-sonnet-4-5: %d %s", res.StatusCode, b)
		}
		res, b = s.postRaw(t, "/v1/chat/completions", `{"model":"gpt-5-codex","max_tokens":5,`+msgs+`}`, map[string]string{"Authorization": "Bearer " + a.Key})
		if res.StatusCode != 200 || json.Unmarshal(b, &m) != nil || m.Model != "sim-large" {
			t.Fatalf("gpt-5-codex on chat completions: %d %s", res.StatusCode, b)
		}
		res, b = s.postRaw(t, "/v1/responses", `{"model":"gpt-5","max_output_tokens":16,"input":"Hello"}`, map[string]string{"Authorization": "Bearer " + a.Key})
		if res.StatusCode != 200 || json.Unmarshal(b, &m) != nil || m.Model != "sim-large" {
			t.Fatalf("gpt-5 on responses: %d %s", res.StatusCode, b)
		}
		// Each usage record names the model that served it and the alias
		// asked for; one that named the model itself names no alias.
		bill := s.clients(protocols[0], cred{bearer: a.Key}).Bill
		want := map[string]bool{"claude-sonnet-4-5": true, "gpt-5-codex": true, "gpt-5": true}
		waitFor(t, 10*time.Second, "the aliases' usage records", func() bool {
			res, err := bill.ListUsage(t.Context(), connect.NewRequest(&parleyv1.ListUsageRequest{PageSize: 100}))
			if err != nil {
				t.Fatal(err)
			}
			seen := map[string]bool{}
			for _, r := range res.Msg.GetUsageRecords() {
				if r.GetRequestedModel() != "" && r.GetModel() == "sim-large" {
					seen[r.GetRequestedModel()] = true
				}
				if r.GetModel() == "sim-small" && r.GetRequestedModel() != "" {
					t.Fatalf("a record of sim-small asked for by its name names an alias: %v", r)
				}
			}
			return len(seen) == len(want) && seen["claude-sonnet-4-5"] && seen["gpt-5-codex"] && seen["gpt-5"]
		})
	})
}

// The field policy of the OpenAI surfaces (docs/api/responses.md,
// docs/api/chat-completions.md): each harmless field accepted, each
// refused one refused by name (the first in sorted order when several
// are), the same body twice the same answer.
func TestOpenAIFieldPolicy(t *testing.T) {
	s := startServer(t, fastAuth...)
	a := s.newAccount(t, "openai-fields@example.com")
	s.topup(t, a, "10")
	bearer := map[string]string{"Authorization": "Bearer " + a.Key}
	type row struct{ name, fields, refused string }
	run := func(t *testing.T, path, base string, rows []row) {
		for _, tc := range rows {
			t.Run(tc.name, func(t *testing.T) {
				body := base + tc.fields + `}`
				var first string
				for try := range 2 {
					res, b := s.postRaw(t, path, body, bearer)
					if tc.refused == "" {
						if res.StatusCode != 200 {
							t.Fatalf("refused: %d %s", res.StatusCode, b)
						}
						continue
					}
					wantOpenAIError(t, tc.name, res.StatusCode, b, 400, tc.refused)
					if try == 0 {
						first = string(b)
					} else if string(b) != first {
						t.Fatalf("the same body refused twice differently: %s then %s", first, b)
					}
				}
			})
		}
	}
	t.Run("responses", func(t *testing.T) {
		run(t, "/v1/responses", `{"model":"sim-small","max_output_tokens":16,"input":"Hello",`, []row{
			{"reasoning", `"reasoning":{"effort":"high","summary":"auto","context":"all_turns"}`, ""},
			{"reasoning of an unknown effort", `"reasoning":{"effort":"extreme"}`, "reasoning"},
			{"text.verbosity", `"text":{"verbosity":"low"}`, ""},
			{"include encrypted reasoning", `"include":["reasoning.encrypted_content"]`, ""},
			{"include other", `"include":["message.input_image.image_url"]`, "include"},
			{"client_metadata", `"client_metadata":{"session_id":"s"}`, ""},
			{"prompt_cache_key", `"prompt_cache_key":"k"`, ""},
			{"stream_options", `"stream_options":{"include_obfuscation":false}`, ""},
			{"service_tier auto", `"service_tier":"auto"`, ""},
			{"store false", `"store":false`, ""},
			{"background without store", `"background":true,"store":false`, "background"},
			{"truncation auto", `"truncation":"auto"`, "truncation"},
			{"truncation disabled", `"truncation":"disabled"`, ""},
			{"prompt", `"prompt":{"id":"pmpt_1"}`, "prompt"},
			{"conversation", `"conversation":"conv_1"`, "conversation"},
			{"max_tool_calls", `"max_tool_calls":3`, "max_tool_calls"},
			{"top_logprobs", `"top_logprobs":3`, "top_logprobs"},
			{"a hosted tool", `"tools":[{"type":"web_search"}]`, "tools[0].type"},
			{"a namespace tool", `"tools":[{"type":"namespace","name":"ns","tools":[]}]`, "tools[0].type"},
			{"several, named in order", `"top_logprobs":3,"max_tool_calls":2,"prompt":{"id":"p"}`, "max_tool_calls"},
		})
	})
	t.Run("chat completions", func(t *testing.T) {
		run(t, "/v1/chat/completions", `{"model":"sim-small","max_tokens":5,"messages":[{"role":"user","content":"Hello"}],`, []row{
			{"reasoning_effort", `"reasoning_effort":"low"`, ""},
			{"reasoning_effort unknown", `"reasoning_effort":"extreme"`, "reasoning_effort"},
			{"metadata", `"metadata":{"k":"v"}`, ""},
			{"store false", `"store":false`, ""},
			{"store true", `"store":true`, "store"},
			{"zero penalties", `"presence_penalty":0,"frequency_penalty":0`, ""},
			{"a penalty", `"presence_penalty":0.5`, "presence_penalty"},
			{"empty logit_bias", `"logit_bias":{}`, ""},
			{"logit_bias", `"logit_bias":{"50256":-100}`, "logit_bias"},
			{"service_tier default", `"service_tier":"default"`, ""},
			{"audio", `"modalities":["text","audio"],"audio":{"voice":"alloy","format":"wav"}`, "audio"},
			{"web_search_options", `"web_search_options":{}`, "web_search_options"},
			{"prediction", `"prediction":{"type":"content","content":"x"}`, "prediction"},
			{"several, named in order", `"prediction":{"type":"content","content":"x"},"audio":{},"store":true`, "audio"},
		})
	})
}

// claudeCode is the pinned Claude Code binary that make e2e-deps installs.
func claudeCode(t *testing.T) string {
	t.Helper()
	bin, _ := filepath.Abs("coding-agents/node_modules/@anthropic-ai/claude-code-linux-x64/claude")
	if _, err := os.Stat(bin); err != nil {
		t.Skipf("Claude Code is not installed (make e2e-deps installs it into server/e2e/coding-agents): %v", err)
	}
	return bin
}

// Claude Code, unchanged, against a default gateway: a plain answer, then a
// prompt that makes the sim call Claude Code's Read tool on a file; the
// client runs it and sends the result back, and the loop ends with an answer
// quoting the file. Its default model is a Claude name, which the embedded
// catalog's alias serves with the large sim.
func TestClaudeCode(t *testing.T) {
	bin := claudeCode(t)
	s := startServer(t, fastAuth...)
	a := s.newAccount(t, "claude-code@example.com")
	s.topup(t, a, "10")
	work := t.TempDir()
	note := filepath.Join(work, "note.txt")
	if err := os.WriteFile(note, []byte("The secret word is periwinkle.\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	run := func(prompt string, args ...string) string {
		t.Helper()
		ctx, cancel := context.WithTimeout(t.Context(), 90*time.Second)
		defer cancel()
		cmd := exec.CommandContext(ctx, bin, append([]string{"-p", prompt}, args...)...)
		cmd.Dir = work
		cmd.Env = []string{"HOME=" + t.TempDir(), "PATH=" + os.Getenv("PATH"), "ANTHROPIC_BASE_URL=" + s.BaseURL,
			"ANTHROPIC_API_KEY=" + a.Key, "DISABLE_TELEMETRY=1", "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC=1", "DISABLE_AUTOUPDATER=1"}
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("claude -p %q: %v\n%s", prompt, err, out)
		}
		return string(out)
	}
	answered := func(out string) bool { return strings.TrimSpace(out) != "" && !strings.Contains(out, "API Error") }
	if out := run("say hi"); !answered(out) {
		t.Fatalf("claude -p 'say hi' answered %q", out)
	}
	if out := run("Read " + `{"file_path": "` + note + `"}`); !strings.Contains(out, "The Read tool returned") || !strings.Contains(out, "periwinkle") {
		t.Fatalf("the Read loop answered %q", out)
	}
	// Under the sim's own name too.
	if out := run("say hi", "--model", "sim-large"); !answered(out) {
		t.Fatalf("claude --model sim-large answered %q", out)
	}
}

// Codex CLI, unchanged but for its configuration (a provider at the gateway
// on the Responses API; web search and the multi-agent and goal tools off,
// since they are hosted or namespaced tools Parley refuses by name), against
// a default gateway: a plain answer, then a prompt that makes the sim call
// exec_command; Codex runs the command, sends its output back, and the loop
// ends with an answer quoting it. The model is gpt-5-codex, which the
// embedded catalog's alias serves with the large sim.
func TestCodex(t *testing.T) {
	bin, _ := filepath.Abs("coding-agents/node_modules/.bin/codex")
	if _, err := os.Stat(bin); err != nil {
		t.Skipf("Codex is not installed (make e2e-deps installs it into server/e2e/coding-agents): %v", err)
	}
	s := startServer(t, fastAuth...)
	a := s.newAccount(t, "codex@example.com")
	s.topup(t, a, "10")
	home, work := t.TempDir(), t.TempDir()
	if err := os.WriteFile(filepath.Join(work, "note.txt"), []byte("The secret word is periwinkle.\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	config := `model = "gpt-5-codex"
model_provider = "parley"
web_search = "disabled"

[features]
multi_agent = false
goals = false

[model_providers.parley]
name = "Parley"
base_url = "` + s.BaseURL + `/v1"
env_key = "PARLEY_API_KEY"
wire_api = "responses"
`
	if err := os.WriteFile(filepath.Join(home, "config.toml"), []byte(config), 0o600); err != nil {
		t.Fatal(err)
	}
	run := func(prompt string) string {
		t.Helper()
		ctx, cancel := context.WithTimeout(t.Context(), 90*time.Second)
		defer cancel()
		cmd := exec.CommandContext(ctx, bin, "exec", "--skip-git-repo-check", prompt)
		cmd.Dir = work
		cmd.Env = []string{"HOME=" + home, "CODEX_HOME=" + home, "PATH=" + os.Getenv("PATH"), "PARLEY_API_KEY=" + a.Key}
		out, err := cmd.CombinedOutput()
		if err != nil || strings.Contains(string(out), "ERROR:") {
			t.Fatalf("codex exec %q: %v\n%s", prompt, err, out)
		}
		return string(out)
	}
	if out := run("say hi"); !strings.Contains(out, "tokens used") {
		t.Fatalf("codex exec 'say hi' answered %q", out)
	}
	if out := run(`exec_command {"cmd": "cat note.txt"}`); !strings.Contains(out, "The exec_command tool returned") || !strings.Contains(out, "periwinkle") {
		t.Fatalf("the exec_command loop answered %q", out)
	}
}
