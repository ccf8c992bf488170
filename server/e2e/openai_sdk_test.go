package e2e

import (
	"os"
	"os/exec"
	"path/filepath"
	"testing"
)

// TestOfficialOpenAISDK runs the official OpenAI Node SDK, unchanged, against
// the gateway: streaming with usage, and the SDK's error classes for a bad
// key, an unknown model and an empty balance. .ci/run installs the SDK
// (npm ci in openai-sdk/); without it the test fails in CI and skips elsewhere.
func TestOfficialOpenAISDK(t *testing.T) {
	dir, _ := filepath.Abs("openai-sdk")
	if _, err := os.Stat(filepath.Join(dir, "node_modules", "openai")); err != nil {
		if os.Getenv("CI") != "" {
			t.Fatal("the OpenAI SDK is not installed: .ci/run must run npm ci in server/e2e/openai-sdk")
		}
		t.Skip("run `npm ci` in server/e2e/openai-sdk to run the official OpenAI SDK")
	}
	s := startServer(t, fastAuth...)
	rich := s.newAccount(t, "sdk@example.com")
	s.topup(t, rich, "5")
	broke := s.newAccount(t, "broke@example.com")
	cmd := exec.Command("node", "--test", "sdk.test.mjs")
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "PARLEY_URL="+s.BaseURL, "PARLEY_KEY="+rich.Key, "PARLEY_BROKE_KEY="+broke.Key)
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("node --test: %v\n%s", err, out)
	}
	t.Logf("%s", out)
}
