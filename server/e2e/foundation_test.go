package e2e

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"errors"
	"io"
	"net"
	"net/http"
	"strings"
	"syscall"
	"testing"
	"time"

	"connectrpc.com/connect"
	"connectrpc.com/grpchealth"
)

func TestHealthOverEveryProtocol(t *testing.T) {
	s := startServer(t)
	t.Logf("ready in %v", s.Ready)
	if s.Ready > 3*time.Second {
		t.Errorf("took %v to listen; want well under 3 s", s.Ready)
	}
	for _, tc := range []struct {
		name   string
		client *http.Client
		opts   []connect.ClientOption
	}{
		{"connect", h1Client(), nil},
		{"grpc", h2cClient(), []connect.ClientOption{connect.WithGRPC()}},
		{"grpc-web", h1Client(), []connect.ClientOption{connect.WithGRPCWeb()}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := grpchealth.NewClient(tc.client, s.BaseURL, tc.opts...)
			for _, svc := range []string{"", "parley.v1.ChatService"} {
				res, err := c.Check(ctxTimeout(t, 5*time.Second), &grpchealth.CheckRequest{Service: svc})
				if err != nil {
					t.Fatalf("Check(%q): %v", svc, err)
				}
				if res.Status != grpchealth.StatusServing {
					t.Fatalf("Check(%q) = %v, want SERVING", svc, res.Status)
				}
			}
			_, err := c.Check(ctxTimeout(t, 5*time.Second), &grpchealth.CheckRequest{Service: "no.such.Service"})
			if connect.CodeOf(err) != connect.CodeNotFound {
				t.Fatalf("unknown service: %v, want not_found", err)
			}
		})
	}
}

func TestRawGRPCWebReachesHealth(t *testing.T) {
	s := startServer(t)
	// An empty grpc.health.v1.HealthCheckRequest is zero bytes: one frame header.
	frame := make([]byte, 5)
	req, _ := http.NewRequest("POST", s.BaseURL+"/grpc.health.v1.Health/Check", bytes.NewReader(frame))
	req.Header.Set("Content-Type", "application/grpc-web+proto")
	res, err := h1Client().Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	body, _ := io.ReadAll(res.Body)
	if res.StatusCode != 200 || res.Header.Get("Content-Type") != "application/grpc-web+proto" {
		t.Fatalf("status %d, content-type %q", res.StatusCode, res.Header.Get("Content-Type"))
	}
	// First frame: the response message; then a trailers frame with grpc-status: 0.
	n := binary.BigEndian.Uint32(body[1:5])
	// HealthCheckResponse{status: SERVING} is field 1, varint 1.
	if got := body[5 : 5+n]; !bytes.Equal(got, []byte{0x08, 0x01}) {
		t.Fatalf("response message %x, want 0801 (SERVING)", got)
	}
	if trailer := string(body[5+n+5:]); !strings.Contains(trailer, "grpc-status: 0") {
		t.Fatalf("trailers %q", trailer)
	}
}

func TestHealthzReadyzMetrics(t *testing.T) {
	s := startServer(t)
	for path, want := range map[string]int{"/healthz": 200, "/readyz": 200, "/metrics": 200, "/nope.json": 404, "/": 200, "/c/some-route": 200} {
		res, err := http.Get(s.BaseURL + path)
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(res.Body)
		res.Body.Close()
		if res.StatusCode != want {
			t.Errorf("%s: %d %s", path, res.StatusCode, body)
		}
		if path == "/readyz" {
			var report map[string]string
			if err := json.Unmarshal(body, &report); err != nil || report["sqlite"] != "ok" {
				t.Errorf("/readyz body %s", body)
			}
		}
		if res.Header.Get("X-Request-Id") == "" {
			t.Errorf("%s: no X-Request-Id", path)
		}
	}
	// The RPCs made above are counted per procedure and code.
	_, _ = grpchealth.NewClient(h1Client(), s.BaseURL).Check(ctxTimeout(t, 5*time.Second), &grpchealth.CheckRequest{})
	res, err := http.Get(s.BaseURL + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(res.Body)
	res.Body.Close()
	if !bytes.Contains(body, []byte(`parley_rpc_requests_total{code="ok",procedure="/grpc.health.v1.Health/Check"} 1`)) {
		t.Errorf("metrics lack the health check count:\n%s", grepLines(body, "parley_rpc"))
	}
}

func grepLines(b []byte, sub string) string {
	var out []string
	for _, l := range strings.Split(string(b), "\n") {
		if strings.Contains(l, sub) {
			out = append(out, l)
		}
	}
	return strings.Join(out, "\n")
}

func TestProtocolEdges(t *testing.T) {
	s := startServer(t, "--max-body-bytes", "65536")
	post := func(path, contentType string, body io.Reader) (*http.Response, []byte) {
		t.Helper()
		req, _ := http.NewRequest("POST", s.BaseURL+path, body)
		req.Header.Set("Content-Type", contentType)
		res, err := h1Client().Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer res.Body.Close()
		b, _ := io.ReadAll(res.Body)
		return res, b
	}
	t.Run("unknown method", func(t *testing.T) {
		res, _ := post("/parley.v1.ChatService/NoSuchMethod", "application/json", strings.NewReader("{}"))
		if res.StatusCode != 404 {
			t.Fatalf("status %d", res.StatusCode)
		}
		_, err := grpchealth.NewClient(h2cClient(), s.BaseURL+"/nope", connect.WithGRPC()).Check(ctxTimeout(t, 5*time.Second), &grpchealth.CheckRequest{})
		if connect.CodeOf(err) != connect.CodeUnimplemented {
			t.Fatalf("gRPC unknown method: %v", err)
		}
	})
	t.Run("method not built yet", func(t *testing.T) {
		res, body := post("/parley.v1.AdminService/ListWorkers", "application/json", strings.NewReader("{}"))
		if res.StatusCode == 200 || !bytes.Contains(body, []byte(`"code":"unimplemented"`)) && !bytes.Contains(body, []byte(`"code":"unauthenticated"`)) {
			t.Fatalf("status %d body %s", res.StatusCode, body)
		}
	})
	t.Run("malformed body", func(t *testing.T) {
		res, body := post("/grpc.health.v1.Health/Check", "application/json", strings.NewReader(`{"service": 12`))
		if res.StatusCode != 400 || !bytes.Contains(body, []byte(`"code":"invalid_argument"`)) {
			t.Fatalf("status %d body %s", res.StatusCode, body)
		}
	})
	t.Run("wrong content type", func(t *testing.T) {
		res, _ := post("/grpc.health.v1.Health/Check", "text/plain", strings.NewReader(`{}`))
		if res.StatusCode != http.StatusUnsupportedMediaType {
			t.Fatalf("status %d", res.StatusCode)
		}
	})
	t.Run("body over the limit is refused unread", func(t *testing.T) {
		// Declare 1 GB but send only the headers: the answer must come
		// without the server waiting for (or reading) the body.
		conn, err := net.Dial("tcp", strings.TrimPrefix(s.BaseURL, "http://"))
		if err != nil {
			t.Fatal(err)
		}
		defer conn.Close()
		_, _ = io.WriteString(conn, "POST /grpc.health.v1.Health/Check HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: 1000000000\r\n\r\n{")
		_ = conn.SetReadDeadline(time.Now().Add(5 * time.Second))
		buf := make([]byte, 4096)
		n, err := io.ReadAtLeast(conn, buf, 12)
		if err != nil {
			t.Fatalf("no answer before the body was sent: %v", err)
		}
		head := string(buf[:n])
		if !strings.Contains(head, "resource_exhausted") && !strings.HasPrefix(head, "HTTP/1.1 429") {
			t.Fatalf("answer %q", head)
		}
		// gRPC over HTTP/2 with a declared length over the limit.
		big := bytes.Repeat([]byte("x"), 70000)
		res, body := post("/grpc.health.v1.Health/Check", "application/json", bytes.NewReader(big))
		if !bytes.Contains(body, []byte("resource_exhausted")) {
			t.Fatalf("status %d body %s", res.StatusCode, body)
		}
	})
}

func TestGracefulShutdownEndsOpenStreamCleanly(t *testing.T) {
	s := startServer(t, "--shutdown-grace", "500ms")
	c := grpchealth.NewClient(h2cClient(), s.BaseURL, connect.WithGRPC())
	events := c.Watch(ctxTimeout(t, 20*time.Second), &grpchealth.CheckRequest{})
	first := <-events
	if first.Err != nil || first.Response.Status != grpchealth.StatusServing {
		t.Fatalf("first watch event %+v", first)
	}
	s.Signal(syscall.SIGTERM)
	var last grpchealth.WatchEvent
	sawNotServing := false
	for ev := range events {
		if ev.Err == nil && ev.Response.Status == grpchealth.StatusNotServing {
			sawNotServing = true
		}
		last = ev
	}
	if !sawNotServing {
		t.Error("the stream never reported NOT_SERVING during the drain")
	}
	// The stream ends with a status from the server (OK once the drain
	// deadline cancels it, or canceled/unavailable), never a reset or a cut
	// connection, which the client would report as another error.
	if last.Err != nil {
		var ce *connect.Error
		if !errors.As(last.Err, &ce) || ce.Code() != connect.CodeCanceled && ce.Code() != connect.CodeUnavailable ||
			strings.Contains(last.Err.Error(), "RST_STREAM") || strings.Contains(last.Err.Error(), "EOF") {
			t.Fatalf("stream ended with %v (code %v), want a clean end", last.Err, connect.CodeOf(last.Err))
		}
	}
	code, err := s.Wait(10 * time.Second)
	if err != nil || code != 0 {
		t.Fatalf("exit code %d, %v\n%s", code, err, s.Logs())
	}
}
