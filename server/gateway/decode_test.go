package gateway

import (
	"bytes"
	"compress/flate"
	"compress/gzip"
	"context"
	"encoding/binary"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"syscall"
	"testing"
	"time"

	"connectrpc.com/connect"
	"google.golang.org/protobuf/proto"

	parleyv1 "github.com/parleyhq/parley/gen/parley/v1"
	"github.com/parleyhq/parley/gen/parley/v1/parleyv1connect"
)

type chatStub struct {
	parleyv1connect.UnimplementedChatServiceHandler
}

func (chatStub) Complete(_ context.Context, req *connect.Request[parleyv1.CompleteRequest]) (*connect.Response[parleyv1.CompleteResponse], error) {
	return connect.NewResponse(&parleyv1.CompleteResponse{Model: req.Msg.GetModel()}), nil
}

func (chatStub) CompleteStream(_ context.Context, req *connect.Request[parleyv1.CompleteStreamRequest], s *connect.ServerStream[parleyv1.CompleteStreamResponse]) error {
	return s.Send(&parleyv1.CompleteStreamResponse{})
}

// gzipBomb is a gzip member that inflates to about n zero bytes: one
// megabyte compressed once, its deflate blocks repeated. Its trailer is
// wrong; a bomb is never read to its end.
func gzipBomb(n int64) []byte {
	var one bytes.Buffer
	fw, _ := flate.NewWriter(&one, flate.BestCompression)
	_, _ = fw.Write(make([]byte, 1<<20))
	_ = fw.Flush()
	var out bytes.Buffer
	out.Write([]byte{0x1f, 0x8b, 8, 0, 0, 0, 0, 0, 0, 0xff})
	for done := int64(0); done < n; done += 1 << 20 {
		out.Write(one.Bytes())
	}
	out.Write([]byte{0x01, 0x00, 0x00, 0xFF, 0xFF, 0, 0, 0, 0, 0, 0, 0, 0})
	return out.Bytes()
}

func cpuTime() time.Duration {
	var ru syscall.Rusage
	_ = syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

func TestDecodeLimits(t *testing.T) {
	const maxBytes = 4 << 20
	mux := http.NewServeMux()
	mux.Handle(parleyv1connect.NewChatServiceHandler(chatStub{}, DecodeLimits(maxBytes, 10_000)))
	srv := httptest.NewServer(mux)
	defer srv.Close()
	post := func(t *testing.T, path, contentType string, header map[string]string, body []byte) (int, string) {
		t.Helper()
		req, _ := http.NewRequest("POST", srv.URL+path, bytes.NewReader(body))
		req.Header.Set("Content-Type", contentType)
		for k, v := range header {
			req.Header.Set(k, v)
		}
		res, err := srv.Client().Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer res.Body.Close()
		b, _ := io.ReadAll(res.Body)
		if len(b) > 5 && b[0]&1 != 0 { // a compressed end-of-stream message
			if zr, err := gzip.NewReader(bytes.NewReader(b[5:])); err == nil {
				b, _ = io.ReadAll(zr)
			}
		}
		return res.StatusCode, string(b)
	}
	envelope := func(flags byte, data []byte) []byte {
		out := []byte{flags, 0, 0, 0, 0}
		binary.BigEndian.PutUint32(out[1:], uint32(len(data)))
		return append(out, data...)
	}
	bomb := gzipBomb(2 << 30)
	complete := parleyv1connect.ChatServiceCompleteProcedure
	stream := parleyv1connect.ChatServiceCompleteStreamProcedure

	// WithReadMaxBytes alone does count the decompressed size — but Connect
	// then inflates the rest of a too-large message to report its size: 2
	// GiB here, seconds of CPU. The limited gzip stops one byte past the
	// limit.
	for _, tc := range []struct {
		name, path, contentType string
		header                  map[string]string
		body                    []byte
	}{
		{"connect unary, Content-Encoding: gzip", complete, "application/proto", map[string]string{"Content-Encoding": "gzip"}, bomb},
		{"connect streaming, compressed envelope", stream, "application/connect+proto", map[string]string{"Connect-Content-Encoding": "gzip"}, envelope(1, bomb)},
	} {
		t.Run("gzip bomb: "+tc.name, func(t *testing.T) {
			cpu0, start := cpuTime(), time.Now()
			_, body := post(t, tc.path, tc.contentType, tc.header, tc.body)
			cpu := cpuTime() - cpu0
			if !strings.Contains(body, "resource_exhausted") || !strings.Contains(body, "inflates past 4194304 bytes") {
				t.Fatalf("body %q", body)
			}
			t.Logf("refused in %v, %v of CPU (client and server)", time.Since(start).Round(time.Millisecond), cpu.Round(time.Millisecond))
			if cpu > 500*time.Millisecond {
				t.Fatalf("refusing a 2 GiB gzip bomb took %v of CPU", cpu)
			}
		})
	}
	t.Run("Connect's own gzip: the decompressed size is checked, but all of it inflated", func(t *testing.T) {
		mux := http.NewServeMux()
		mux.Handle(parleyv1connect.NewChatServiceHandler(chatStub{}, connect.WithReadMaxBytes(maxBytes)))
		plain := httptest.NewServer(mux)
		defer plain.Close()
		req, _ := http.NewRequest("POST", plain.URL+complete, bytes.NewReader(gzipBomb(256<<20)))
		req.Header.Set("Content-Type", "application/proto")
		req.Header.Set("Content-Encoding", "gzip")
		cpu0 := cpuTime()
		res, err := plain.Client().Do(req)
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(res.Body)
		res.Body.Close()
		if !strings.Contains(string(b), "larger than configured max") {
			t.Fatalf("body %q", b)
		}
		t.Logf("a 256 MiB bomb: %v of CPU, and %s", (cpuTime() - cpu0).Round(time.Millisecond), b)
	})
	t.Run("a compressed message under the limit is served", func(t *testing.T) {
		c := parleyv1connect.NewChatServiceClient(srv.Client(), srv.URL, connect.WithSendGzip())
		res, err := c.Complete(t.Context(), connect.NewRequest(&parleyv1.CompleteRequest{Model: strings.Repeat("m", 3_000_000)}))
		if err != nil || len(res.Msg.GetModel()) != 3_000_000 {
			t.Fatalf("%v", err)
		}
	})
	t.Run("too many elements are refused before unmarshalling", func(t *testing.T) {
		msg := &parleyv1.CompleteRequest{Model: "m"}
		part := &parleyv1.Part{Kind: &parleyv1.Part_Text{Text: "x"}}
		parts := make([]*parleyv1.Part, 20_000)
		for i := range parts {
			parts[i] = part
		}
		msg.Messages = []*parleyv1.Message{{Parts: parts}}
		data, _ := proto.Marshal(msg)
		_, body := post(t, complete, "application/proto", nil, data)
		if !strings.Contains(body, "over 10000 elements") {
			t.Fatalf("proto: %q", body)
		}
		js := `{"model":"m","messages":[{"parts":[` + strings.Repeat(`{"text":"x"},`, 20_000) + `{"text":"x"}]}]}`
		_, body = post(t, complete, "application/json", nil, []byte(js))
		if !strings.Contains(body, "over 10000 elements") {
			t.Fatalf("json: %q", body)
		}
		_, body = post(t, complete, "application/json", nil, []byte(`{"model":"m","messages":[{"parts":[{"text":"[{\"}]"}]}]}`))
		if !strings.Contains(body, `"model":"m"`) {
			t.Fatalf("a small request: %q", body)
		}
	})
}

func TestJSONElements(t *testing.T) {
	h := JSONElements(100)(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, err := io.ReadAll(r.Body)
		if _, ok := err.(*TooManyElements); ok {
			http.Error(w, err.Error(), 400)
		}
	}))
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, httptest.NewRequest("POST", "/", strings.NewReader(strings.Repeat(`{"a":"b"},`, 1000))))
	if rec.Code != 400 {
		t.Fatalf("status %d", rec.Code)
	}
	rec = httptest.NewRecorder()
	h.ServeHTTP(rec, httptest.NewRequest("POST", "/", strings.NewReader(`{"a":"\"{{{{{{{[[[[[[["}`)))
	if rec.Code != 200 {
		t.Fatalf("status %d", rec.Code)
	}
}
