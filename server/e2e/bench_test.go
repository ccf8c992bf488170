package e2e

import (
	"bytes"
	"os/exec"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"
)

// parley bench against a gateway with its default request-rate limits (a
// burst of 20) refuses to report figures from the refusals: it exits
// non-zero, prints the refusals by kind first and says what refused them;
// with --max-error-rate 1 the same run passes, its figures each saying how
// many successes they come from.
func TestBenchFailsOnRefusals(t *testing.T) {
	s := startServer(t, append([]string{"--rate-limits="}, fastAuth...)...)
	a := s.newAccount(t, "bench@example.com")
	s.topup(t, a, "10")
	bench := func(extra ...string) (string, string, int) {
		t.Helper()
		ctx := ctxTimeout(t, 60*time.Second)
		cmd := exec.CommandContext(ctx, parleyBin, append([]string{"bench", "--url", s.BaseURL, "--api-key", a.Key,
			"--protocol", "connect", "--concurrency", "10", "--requests", "60", "--max-tokens", "5", "--quiet"}, extra...)...)
		var stdout, stderr bytes.Buffer
		cmd.Stdout, cmd.Stderr = &stdout, &stderr
		_ = cmd.Run()
		return stdout.String(), stderr.String(), cmd.ProcessState.ExitCode()
	}
	out, errOut, code := bench()
	if code == 0 {
		t.Fatalf("bench exited 0 with requests refused:\n%s%s", out, errOut)
	}
	if !strings.Contains(errOut, "rpc resource_exhausted") || !strings.Contains(errOut, "--rate-limits") {
		t.Errorf("stderr does not say why:\n%s", errOut)
	}
	kinds, figures := strings.Index(out, "errors: "), strings.Index(out, "TTFT")
	if kinds < 0 || !regexp.MustCompile(`\d+\s+rpc resource_exhausted`).MatchString(out) || figures >= 0 && figures < kinds {
		t.Errorf("the error kinds do not come first:\n%s", out)
	}
	m := regexp.MustCompile(`requests 60  ok (\d+)  errors (\d+)`).FindStringSubmatch(out)
	if m == nil || m[2] == "0" {
		t.Fatalf("no count of successes and errors:\n%s", out)
	}
	if figures >= 0 && !strings.Contains(out, "TTFT  p50") || !strings.Contains(out, "("+m[1]+" ok)") {
		t.Errorf("latencies without their count of successes (%s):\n%s", m[1], out)
	}
	if out, errOut, code := bench("--max-error-rate", "1"); code != 0 {
		t.Errorf("--max-error-rate 1: exit %d\n%s%s", code, out, errOut)
	}
}

// parley bench relay, on the default configuration of the gateways it
// starts, completes with no error (it turns their request rates off, and
// says so).
func TestBenchRelayNoErrors(t *testing.T) {
	ctx := ctxTimeout(t, 120*time.Second)
	cmd := exec.CommandContext(ctx, parleyBin, "bench", "relay", "--tokens", "5", "--token-delay", "1ms",
		"--streams", "8", "--answers", "60", "--trials", "1", "--hold", "30", "--hold-delay", "50ms", "--hold-for", "500ms",
		"--burst", "40", "--burst-rate", "400", "--burst-delay", "5ms", "--quiet")
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("bench relay: %v\n%s", err, out)
	}
	for _, want := range []string{"--rate-limits off", "0 failed", "relay  30      0"} {
		if !strings.Contains(string(out), want) && !(want == "relay  30      0" && regexp.MustCompile(`relay\s+30\s+0\s`).Match(out)) {
			t.Errorf("no %q in:\n%s", want, out)
		}
	}
	if !regexp.MustCompile(`0\s+relay\[direct\]\s+40\s+0\s`).Match(out) {
		t.Errorf("the burst's direct-mode row is not 40 ok, 0 errors:\n%s", out)
	}
	if !regexp.MustCompile(`relay\s+60\s+0\s`).Match(out) {
		t.Errorf("the load run's relay row is not 60 ok, 0 errors:\n%s", out)
	}
	// The hold's worker-path row gives the gateway's RSS a stream, the
	// stacks' share of it, the worker's and the mock's.
	if row := regexp.MustCompile(`(?m)^\s*relay\s+30\s+0\s.*$`).Find(out); len(regexp.MustCompile(`-?\d+\.\d KB`).FindAll(row, -1)) != 4 {
		t.Errorf("the hold's relay row has not four figures in KB (%q):\n%s", row, out)
	}
}

// parley bench relay streams from the gateways over their own API as the
// SDKs (Connect) and the web app (gRPC-Web) do, on both paths, with no
// error: the streams are served whole, tokens and end, detached from
// net/http as the OpenAI-compatible ones are.
func TestBenchRelayOverConnectAndGRPCWeb(t *testing.T) {
	for _, api := range []string{"connect", "grpc-web"} {
		t.Run(api, func(t *testing.T) {
			ctx := ctxTimeout(t, 120*time.Second)
			cmd := exec.CommandContext(ctx, parleyBin, "bench", "relay", "--api", api, "--tokens", "5", "--token-delay", "1ms",
				"--streams", "8", "--answers", "40", "--trials", "1", "--hold", "20", "--hold-delay", "50ms", "--hold-for", "500ms", "--quiet")
			out, err := cmd.CombinedOutput()
			if err != nil {
				t.Fatalf("bench relay --api %s: %v\n%s", api, err, out)
			}
			for _, row := range []*regexp.Regexp{
				regexp.MustCompile(`(?m)^\s*relay\s+40\s+0\s`), regexp.MustCompile(`(?m)^\s*relay\[direct\]\s+40\s+0\s`), // the load run
				regexp.MustCompile(`(?m)^\s*relay\s+20\s+0\s`), regexp.MustCompile(`(?m)^\s*relay\[direct\]\s+20\s+0\s`), // the hold
			} {
				if !row.Match(out) {
					t.Errorf("no row matching %s:\n%s", row, out)
				}
			}
			if !strings.Contains(string(out), "0 failed") {
				t.Errorf("failures:\n%s", out)
			}
		})
	}
}

// parley bench users against two gateways sharing one database: simulated
// people sign up (the first run) or in, list and open their conversations,
// chat with think time and attach documents; every class is reported with
// its count of successes. People whose password is wrong fail to sign in:
// the run says so first and exits non-zero.
func TestBenchUsersProfile(t *testing.T) {
	scaleMode(t)
	gw := []*server{startServer(t, fastAuth...), startServer(t, fastAuth...)}
	users := func(extra ...string) (string, string, int) {
		t.Helper()
		ctx := ctxTimeout(t, 90*time.Second)
		cmd := exec.CommandContext(ctx, parleyBin, append([]string{"bench", "users", "--url", gw[0].BaseURL + "," + gw[1].BaseURL,
			"--users", "12", "--ramp", "1s", "--duration", "8s", "--think", "1s", "--max-tokens", "8", "--attach-every", "2", "--quiet"}, extra...)...)
		var stdout, stderr bytes.Buffer
		cmd.Stdout, cmd.Stderr = &stdout, &stderr
		_ = cmd.Run()
		return stdout.String(), stderr.String(), cmd.ProcessState.ExitCode()
	}
	class := func(out, name string) (ok, errs int) {
		m := regexp.MustCompile(regexp.QuoteMeta(name) + `\s+(\d+)\s+(\d+)\s+[\d.]+ms\s+[\d.]+ms\s+[\d.]+ms`).FindStringSubmatch(out)
		if m == nil {
			t.Fatalf("no %q line:\n%s", name, out)
		}
		ok, _ = strconv.Atoi(m[1])
		errs, _ = strconv.Atoi(m[2])
		return ok, errs
	}
	out, errOut, code := users() // signs the 12 up
	if code != 0 {
		t.Fatalf("exit %d:\n%s%s", code, out, errOut)
	}
	if ok, _ := class(out, "sign-in"); ok != 12 {
		t.Errorf("%d signed in, want 12:\n%s", ok, out)
	}
	for _, c := range []string{"list conversations", "send: first token", "send: whole answer", "upload document"} {
		if ok, errs := class(out, c); ok == 0 || errs != 0 {
			t.Errorf("%s: %d ok, %d errors:\n%s", c, ok, errs, out)
		}
	}
	out, errOut, code = users() // signs them in: each opens the conversation of the first run
	if code != 0 {
		t.Fatalf("second run, exit %d:\n%s%s", code, out, errOut)
	}
	if ok, _ := class(out, "open conversation"); ok != 12 {
		t.Errorf("%d opened a conversation, want 12:\n%s", ok, out)
	}
	out, _, code = users("--password", "not-their-password")
	if code == 0 || !strings.HasPrefix(out[strings.Index(out, "\n")+1:], "errors: 12 of 12 requests failed") {
		t.Errorf("wrong passwords: exit %d, and the failures not first:\n%s", code, out)
	}
}
