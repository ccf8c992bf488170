package e2e

import (
	"os"
	"os/exec"
	"path/filepath"
	"testing"
)

// TestOfficialOpenAIPythonSDK runs the official OpenAI Python SDK and
// langchain-openai, unchanged, against the gateway (openai-py/test_*.py: chat completions, embeddings, completions, responses, files, and the anthropic SDK on /v1/messages):
// tool calls (plain, streamed, follow-up, auto), structured output, n,
// logprobs, models, error classes and retries. .ci/run installs them into
// openai-py/.venv; without it the test fails in CI and skips elsewhere.
func TestOfficialOpenAIPythonSDK(t *testing.T) {
	dir, _ := filepath.Abs("openai-py")
	python := filepath.Join(dir, ".venv", "bin", "python")
	if _, err := os.Stat(python); err != nil {
		if os.Getenv("CI") != "" {
			t.Fatal("the OpenAI Python SDK is not installed: .ci/run must create server/e2e/openai-py/.venv")
		}
		t.Skip("run `python3 -m venv .venv && .venv/bin/pip install -r requirements.txt` in server/e2e/openai-py to run the official OpenAI Python SDK")
	}
	s := startServer(t, append(fastAuth, "--webhook-allow-private")...) // test_webhooks.py's receiver is on loopback
	rich := s.newAccount(t, "py-sdk@example.com")
	s.topup(t, rich, "5")
	broke := s.newAccount(t, "py-broke@example.com")
	// test_batches.py's expired batch: a gateway whose "24h" window is 3 s,
	// at real sim time, one line at a time.
	slow := startServer(t, append(fastAuth, "--test-batch-window", "3s", "--sim-time-scale", "1", "--batch-concurrency", "1")...)
	late := slow.newAccount(t, "py-expiring@example.com")
	slow.topup(t, late, "5")
	// test_reasoning.py needs a gateway with a reasoning model: TestReasoningThroughPythonSDKs runs it.
	cmd := exec.Command(python, "-m", "pytest", "-q", "-rs", "--ignore=test_reasoning.py") // -rs: skip reasons, for scripts/test-summary.sh
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "PARLEY_URL="+s.BaseURL, "PARLEY_KEY="+rich.Key, "PARLEY_BROKE_KEY="+broke.Key,
		"PARLEY_EXPIRING_URL="+slow.BaseURL, "PARLEY_EXPIRING_KEY="+late.Key)
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("pytest: %v\n%s", err, out)
	}
	t.Logf("%s", out)
}
