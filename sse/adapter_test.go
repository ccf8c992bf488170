package sse

import (
	"context"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"connectrpc.com/connect"

	workerv1 "github.com/parleyhq/parley/gen/parley/worker/v1"
	"github.com/parleyhq/parley/gen/parley/worker/v1/workerv1connect"
)

// fakeWorker stands in for any service with server-streaming methods: the
// adapter knows nothing of it (the e2e tests drive SendMessage).
type fakeWorker struct {
	workerv1connect.UnimplementedWorkerServiceHandler
	next chan int32
}

func (f *fakeWorker) Load(ctx context.Context, req *connect.Request[workerv1.LoadRequest], s *connect.ServerStream[workerv1.LoadResponse]) error {
	if req.Msg.GetGatewayId() == "" {
		return connect.NewError(connect.CodeInvalidArgument, errors.New("gateway_id: is required"))
	}
	for {
		select {
		case <-ctx.Done():
			return nil
		case n, ok := <-f.next:
			if !ok {
				return nil
			}
			if err := s.Send(&workerv1.LoadResponse{Report: &workerv1.LoadReport{WorkerId: req.Msg.GetGatewayId(), Running: n}}); err != nil {
				return err
			}
		}
	}
}

func newAdapterServer(t *testing.T, f *fakeWorker, keepAlive time.Duration) *httptest.Server {
	mux := http.NewServeMux()
	mux.Handle(workerv1connect.NewWorkerServiceHandler(f))
	mux.Handle(Prefix, &Adapter{Handler: mux, KeepAlive: keepAlive})
	srv := httptest.NewServer(mux)
	t.Cleanup(srv.Close)
	return srv
}

func TestAdapterServesAnyServerStream(t *testing.T) {
	f := &fakeWorker{next: make(chan int32)}
	srv := newAdapterServer(t, f, 10*time.Millisecond)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, "POST", srv.URL+"/sse/parley.worker.v1.WorkerService/Load", strings.NewReader(`{"gatewayId":"g1"}`))
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	if ct := res.Header.Get("Content-Type"); ct != "text/event-stream" || res.Header.Get("X-Accel-Buffering") != "no" {
		t.Fatalf("headers %v", res.Header)
	}
	go func() {
		f.next <- 1
		time.Sleep(50 * time.Millisecond) // quiet: keep-alive comments go out
		f.next <- 2
		close(f.next)
	}()
	raw, _ := io.ReadAll(res.Body)
	// protojson varies its whitespace on purpose: compare the JSON, not the bytes.
	compact := strings.ReplaceAll(string(raw), " ", "")
	want1 := "data:{\"report\":{\"workerId\":\"g1\",\"running\":1}}\n\n"
	want2 := "data:{\"report\":{\"workerId\":\"g1\",\"running\":2}}\n\n"
	i1, i2 := strings.Index(compact, want1), strings.Index(compact, want2)
	if i1 < 0 || i2 < i1 {
		t.Fatalf("stream %q", raw)
	}
	if !strings.Contains(compact[i1:i2], ":keep-alive\n") {
		t.Errorf("no keep-alive comment while quiet: %q", raw)
	}
}

func TestAdapterRefusesWhatIsNotAServerStream(t *testing.T) {
	a := &Adapter{Handler: http.NotFoundHandler()}
	for path, want := range map[string]int{
		"/sse/parley.worker.v1.WorkerService/Info": 404, // unary
		"/sse/parley.worker.v1.WorkerService/Nope": 404,
		"/sse/no.Such/Method":                      404,
	} {
		rec := httptest.NewRecorder()
		a.ServeHTTP(rec, httptest.NewRequest("POST", path, strings.NewReader("{}")))
		if rec.Code != want {
			t.Errorf("%s: %d, want %d", path, rec.Code, want)
		}
	}
	rec := httptest.NewRecorder()
	a.ServeHTTP(rec, httptest.NewRequest("GET", "/sse/parley.worker.v1.WorkerService/Load", nil))
	if rec.Code != http.StatusMethodNotAllowed {
		t.Errorf("GET: %d", rec.Code)
	}
}

func TestAdapterErrorEvent(t *testing.T) {
	srv := newAdapterServer(t, &fakeWorker{next: make(chan int32)}, 0)
	for body, want := range map[string]string{
		`{}`:                 "event: error\ndata: {\"code\":\"invalid_argument\",\"message\":\"gateway_id: is required\"}\n\n",
		`{"gatewayId": 7}`:   "event: error\ndata: {\"code\":\"invalid_argument\"",
		`{"noSuchField": 1}`: "event: error\ndata: {\"code\":\"invalid_argument\"",
	} {
		res, err := http.Post(srv.URL+"/sse/parley.worker.v1.WorkerService/Load", "application/json", strings.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		got, _ := io.ReadAll(res.Body)
		res.Body.Close()
		if !strings.HasPrefix(string(got), want) {
			t.Errorf("%s: body %q", body, got)
		}
	}
}

func TestSeqOf(t *testing.T) {
	if got := seqOf([]byte(`{"event":{"seq":"42","delta":{"text":"hi"}}}`)); got != "42" {
		t.Fatalf("seq %q", got)
	}
	if got := seqOf([]byte(`{"status":"SERVING"}`)); got != "" {
		t.Fatalf("seq %q", got)
	}
}
