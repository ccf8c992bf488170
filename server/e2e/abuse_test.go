package e2e

import (
	"bufio"
	"bytes"
	"compress/flate"
	"context"
	"encoding/base64"
	"encoding/binary"
	"fmt"
	"io"
	"net/http"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"connectrpc.com/connect"
	"google.golang.org/protobuf/proto"

	parleyv1 "github.com/parleyhq/parley/gen/parley/v1"
	"github.com/parleyhq/parley/gen/parley/v1/parleyv1connect"
	"github.com/parleyhq/parley/server/attach"
	"github.com/parleyhq/parley/server/attach/attachtest"
)

// The abuse tests send each hostile request of issue 13 to the real binary
// and measure what refusing it costs the gateway — its peak RSS (VmHWM,
// reset before through /proc/<pid>/clear_refs), its CPU (utime+stime) and
// the bytes its Go heap allocated (go_memstats_alloc_bytes_total) — against
// the budgets below, then send it again while a normal request is timed.
// Each case runs on a fresh gateway whose accounts were made by the admin
// CLI, so no password hash has grown the gateway's heap before it is
// measured. The budgets are docs/security.md's (Budgets).

// cost is what one hostile request may cost the gateway, or did.
type cost struct {
	rss   int64   // peak RSS over the RSS before, bytes
	alloc int64   // bytes allocated by the Go heap
	cpu   float64 // CPU-seconds, user and system
}

func (c cost) String() string {
	return fmt.Sprintf("peak RSS +%.1f MB, %.1f MB allocated, %.2f CPU-s", float64(c.rss)/1e6, float64(c.alloc)/1e6, c.cpu)
}

// The budgets of a refused request, and of the normal request's latency
// meanwhile.
var (
	refusedCheap = cost{rss: 16 << 20, alloc: 32 << 20, cpu: 0.1}   // refused from headers or a count
	refusedBody  = cost{rss: 64 << 20, alloc: 128 << 20, cpu: 0.5}  // refused after its body (≤ 32 MiB) was read: ≤ 2× the body
	refusedJSON  = cost{rss: 64 << 20, alloc: 128 << 20, cpu: 0.75} // refused after an 8 MB JSON body was parsed (/v1 decodes JSON at ~40 ms a MB)
	paidBomb     = cost{rss: 64 << 20, alloc: 128 << 20, cpu: 1.0}  // a paid document bomb, read to its budget
	normalP50    = 250 * time.Millisecond
	normalMax    = 2 * time.Second
)

// procKB reads a field of /proc/<pid>/status, in kB.
func procKB(t *testing.T, pid int, field string) int64 {
	t.Helper()
	f, err := os.Open(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		t.Skip("no /proc: ", err)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if rest, ok := strings.CutPrefix(sc.Text(), field+":"); ok {
			kb, _ := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(rest), " kB"), 10, 64)
			return kb
		}
	}
	t.Fatalf("no %s in /proc/%d/status", field, pid)
	return 0
}

// allocated is the gateway's go_memstats_alloc_bytes_total.
func (s *server) allocated(t *testing.T) int64 {
	t.Helper()
	v, ok := metricValue(metricsBody(t, s.BaseURL), "go_memstats_alloc_bytes_total")
	if !ok {
		t.Fatal("no go_memstats_alloc_bytes_total in /metrics")
	}
	return int64(v)
}

// measure runs attack and returns what it cost the gateway.
func (s *server) measure(t *testing.T, attack func()) cost {
	t.Helper()
	pid := s.cmd.Process.Pid
	time.Sleep(100 * time.Millisecond) // let the last request's work end
	rss := procKB(t, pid, "VmRSS")
	// "5" resets the peak RSS to the current RSS (Linux 4.0+); where it
	// cannot, the growth of the peak is a lower bound.
	base := rss
	if err := os.WriteFile(fmt.Sprintf("/proc/%d/clear_refs", pid), []byte("5"), 0); err != nil {
		base = procKB(t, pid, "VmHWM")
	}
	alloc0, cpu0 := s.allocated(t), cpuSeconds(t, pid)
	attack()
	cpu := cpuSeconds(t, pid) - cpu0
	peak := procKB(t, pid, "VmHWM")
	return cost{rss: max(0, peak-base) << 10, alloc: s.allocated(t) - alloc0, cpu: cpu}
}

// abuseEnv is a gateway with three API keys made by the admin CLI: a key
// with no balance, a funded one for paid attacks, and a funded one for the
// normal requests timed meanwhile. Each measured case gets a fresh gateway
// process on the same data directory (restart), so no memory an earlier
// case left in the heap hides what this one costs.
type abuseEnv struct {
	s                    *server
	args                 []string
	broke, paid, normal  string
	brokeEmail, paidMail string
}

func newAbuseEnv(t *testing.T, args ...string) *abuseEnv {
	t.Helper()
	s := startServer(t, append(slices.Clone(fastAuth), args...)...)
	key := func(email, usd string) string {
		s.admin(t, "create-user", "--email", email, "--password", "a long password", "--tier", "pro")
		if usd != "" {
			s.admin(t, "topup", "--email", email, "--usd", usd)
		}
		return strings.TrimSpace(s.admin(t, "create-key", "--email", email))
	}
	e := &abuseEnv{s: s, args: args, brokeEmail: "broke@example.com", paidMail: "paid@example.com"}
	e.broke = key(e.brokeEmail, "")
	e.paid = key(e.paidMail, "100")
	e.normal = key("normal@example.com", "100")
	// One normal request first, so the measurements see a warm gateway.
	if err := e.normalRequest(); err != nil {
		t.Fatal(err)
	}
	return e
}

// restart replaces the gateway with a fresh process on the same data.
func (e *abuseEnv) restart(t *testing.T) {
	t.Helper()
	e.s.kill()
	e.s = startServer(t, append(append(slices.Clone(fastAuth), "--data-dir", e.s.DataDir), e.args...)...)
	if err := e.normalRequest(); err != nil {
		t.Fatal(err)
	}
}

func (e *abuseEnv) chat(key string, p protocol) parleyv1connect.ChatServiceClient {
	return e.s.api(p, cred{bearer: key}).Chat
}

// normalRequest is a small completion by the normal account.
func (e *abuseEnv) normalRequest() error {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	_, err := e.chat(e.normal, protocols[0]).Complete(ctx, connect.NewRequest(&parleyv1.CompleteRequest{
		Model: "sim-small", Messages: userText("Hello there"), MaxOutputTokens: 8}))
	return err
}

// within checks one hostile request: sent to a fresh, quiet gateway, it
// must cost at most budget; sent again (times over) while a normal request
// is timed every 20 ms, the normal request must stay fast. CPU time swells
// on a machine busy with other work (a CI runner's neighbours), so a CPU
// figure over budget is measured again, on fresh gateways, up to twice,
// and the least taken: the budget is on what the request costs.
func (e *abuseEnv) within(t *testing.T, name string, budget cost, times int, attack func(t *testing.T)) {
	t.Helper()
	e.restart(t)
	got := e.s.measure(t, func() { attack(t) })
	for try := 0; try < 2 && got.cpu > budget.cpu; try++ {
		e.restart(t)
		again := e.s.measure(t, func() { attack(t) })
		t.Logf("%s: %.2f CPU-s, over budget; measured again: %.2f", name, got.cpu, again.cpu)
		got.cpu = min(got.cpu, again.cpu)
	}
	var lat []time.Duration
	var mu sync.Mutex
	stop := make(chan struct{})
	var wg sync.WaitGroup
	wg.Go(func() {
		for {
			select {
			case <-stop:
				return
			case <-time.After(20 * time.Millisecond):
			}
			start := time.Now()
			if err := e.normalRequest(); err != nil {
				t.Errorf("%s: a normal request failed during the abuse: %v", name, err)
				return
			}
			mu.Lock()
			lat = append(lat, time.Since(start))
			mu.Unlock()
		}
	})
	for range times {
		attack(t)
	}
	time.Sleep(100 * time.Millisecond)
	close(stop)
	wg.Wait()
	slices.Sort(lat)
	var p50, worst time.Duration
	if len(lat) > 0 {
		p50, worst = lat[len(lat)/2], lat[len(lat)-1]
	}
	t.Logf("BUDGET %-58s %s (budget %s); normal request p50 %v, max %v (%d during the abuse)",
		name+":", got, budget, p50.Round(time.Millisecond), worst.Round(time.Millisecond), len(lat))
	if got.rss > budget.rss || got.alloc > budget.alloc || got.cpu > budget.cpu {
		t.Errorf("%s cost %s, over its budget %s", name, got, budget)
	}
	if p50 > normalP50 || worst > normalMax {
		t.Errorf("%s: normal requests p50 %v, max %v during the abuse; budget %v and %v", name, p50, worst, normalP50, normalMax)
	}
}

// post sends a raw HTTP request and returns the status and body.
func post(t *testing.T, client *http.Client, url string, header map[string]string, body []byte) (int, string) {
	t.Helper()
	req, _ := http.NewRequest("POST", url, bytes.NewReader(body))
	for k, v := range header {
		req.Header.Set(k, v)
	}
	res, err := client.Do(req)
	if err != nil {
		t.Fatalf("POST %s: %v", url, err)
	}
	defer res.Body.Close()
	b, _ := io.ReadAll(io.LimitReader(res.Body, 1<<20))
	return res.StatusCode, string(b) + fmt.Sprint(res.Trailer) + fmt.Sprint(res.Header)
}

// manyPartsProto is a CompleteRequest of about n bytes made of tiny text
// parts: the costliest body to unmarshal, byte for byte.
func manyPartsProto(n int) []byte {
	parts := make([]*parleyv1.Part, 1000)
	for i := range parts {
		parts[i] = &parleyv1.Part{Kind: &parleyv1.Part_Text{Text: "x"}}
	}
	unit, _ := proto.Marshal(&parleyv1.CompleteRequest{Messages: []*parleyv1.Message{{Role: parleyv1.Role_ROLE_USER, Parts: parts}}})
	head, _ := proto.Marshal(&parleyv1.CompleteRequest{Model: "sim-small"})
	return append(head, bytes.Repeat(unit, n/len(unit))...)
}

// gzipBomb is a gzip member inflating to about n zero bytes, made in
// milliseconds (one compressed megabyte repeated); its trailer is wrong.
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

func grpcFrame(flags byte, msg []byte) []byte {
	out := make([]byte, 5, 5+len(msg))
	out[0] = flags
	binary.BigEndian.PutUint32(out[1:], uint32(len(msg)))
	return append(out, msg...)
}

func wantIn(t *testing.T, what, got string, want ...string) {
	t.Helper()
	for _, w := range want {
		if strings.Contains(got, w) {
			return
		}
	}
	t.Errorf("%s: %.300q, want one of %q", what, got, want)
}

// TestAbuseUnauthenticatedBodies: a 32 MB body with no or bad credentials
// is answered 401 in its protocol from its headers, its body never read.
func TestAbuseUnauthenticatedBodies(t *testing.T) {
	e := newAbuseEnv(t)
	body := manyPartsProto(32<<20 - 64<<10)
	cases := []struct {
		name   string
		client func() *http.Client
		header map[string]string
		body   []byte
		want   []string
	}{
		{"connect, 32 MB protobuf, no credentials", h1Client, map[string]string{"Content-Type": "application/proto"}, body, []string{`"code":"unauthenticated"`}},
		{"connect, 32 MB protobuf, bad key", h1Client, map[string]string{"Content-Type": "application/proto", "Authorization": "Bearer pk_bad"}, body, []string{`"code":"unauthenticated"`}},
		{"grpc, 32 MB protobuf, no credentials", h2cClient, map[string]string{"Content-Type": "application/grpc"}, grpcFrame(0, body), []string{"Grpc-Status:[16]"}},
		{"connect, 2 GiB gzip bomb, no credentials", h1Client, map[string]string{"Content-Type": "application/proto", "Content-Encoding": "gzip"}, gzipBomb(2 << 30), []string{`"code":"unauthenticated"`}},
	}
	for _, tc := range cases {
		e.within(t, tc.name, refusedCheap, 3, func(t *testing.T) {
			_, got := post(t, tc.client(), e.s.BaseURL+parleyv1connect.ChatServiceCompleteProcedure, tc.header, tc.body)
			wantIn(t, tc.name, got, tc.want...)
		})
	}
	e.within(t, "sse, 32 MB JSON, no credentials", refusedCheap, 3, func(t *testing.T) {
		js := []byte(`{"model":"sim-small","messages":[{"parts":[` + strings.Repeat(`{"text":"x"},`, (32<<20-1<<20)/13) + `{"text":"x"}]}]}`)
		_, got := post(t, h1Client(), e.s.BaseURL+"/sse/parley.v1.ChatService/CompleteStream", map[string]string{"Content-Type": "application/json"}, js)
		wantIn(t, "sse", got, "event: error\ndata: {\"code\":\"unauthenticated\"")
	})
	e.within(t, "openai, 32 MB JSON, no credentials", refusedCheap, 3, func(t *testing.T) {
		js := []byte(`{"model":"sim-small","messages":[` + strings.Repeat(`{"role":"user","content":"x"},`, (32<<20-1<<20)/30) + `{"role":"user","content":"x"}]}`)
		status, got := post(t, h1Client(), e.s.BaseURL+"/v1/chat/completions", map[string]string{"Content-Type": "application/json"}, js)
		if status != 401 {
			t.Errorf("openai: %d %.200s", status, got)
		}
	})
}

// TestAbuseCompressedBodies: compressed bodies inflate only to the size
// limit of what they are sent to — 64 KiB for the procedures open to
// anyone, 32 MiB for the others — and stop there, never to their end.
func TestAbuseCompressedBodies(t *testing.T) {
	e := newAbuseEnv(t)
	bomb := gzipBomb(2 << 30)
	e.within(t, "2 GiB gzip bomb to Login (public, before its throttle)", refusedCheap, 3, func(t *testing.T) {
		_, got := post(t, h1Client(), e.s.BaseURL+parleyv1connect.AuthServiceLoginProcedure,
			map[string]string{"Content-Type": "application/json", "Content-Encoding": "gzip"}, bomb)
		wantIn(t, "login", got, "larger than configured max 65536")
	})
	e.within(t, "2 GiB gzip bomb to Complete, key with no balance", refusedBody, 3, func(t *testing.T) {
		_, got := post(t, h1Client(), e.s.BaseURL+parleyv1connect.ChatServiceCompleteProcedure,
			map[string]string{"Content-Type": "application/proto", "Content-Encoding": "gzip", "Authorization": "Bearer " + e.broke}, bomb)
		wantIn(t, "complete", got, "inflates past 33554432 bytes")
	})
	e.within(t, "2 GiB gzip bomb in a gRPC frame, key with no balance", refusedBody, 3, func(t *testing.T) {
		_, got := post(t, h2cClient(), e.s.BaseURL+parleyv1connect.ChatServiceCompleteProcedure,
			map[string]string{"Content-Type": "application/grpc", "Grpc-Encoding": "gzip", "Authorization": "Bearer " + e.broke}, grpcFrame(1, bomb))
		wantIn(t, "grpc", got, "Grpc-Status:[8]")
	})
	e.within(t, "gzip inflating to just under 32 MiB, key with no balance", refusedBody, 3, func(t *testing.T) {
		_, got := post(t, h1Client(), e.s.BaseURL+parleyv1connect.ChatServiceCompleteProcedure,
			map[string]string{"Content-Type": "application/proto", "Content-Encoding": "gzip", "Authorization": "Bearer " + e.broke}, gzipBomb(31<<20))
		wantIn(t, "under the limit", got, "invalid_argument")
	})
	// The JSON surfaces do not inflate request bodies at all: a gzip body is
	// refused as what it is, bytes that are not JSON.
	e.within(t, "2 GiB gzip bomb to /v1/chat/completions", refusedCheap, 3, func(t *testing.T) {
		status, got := post(t, h1Client(), e.s.BaseURL+"/v1/chat/completions",
			map[string]string{"Content-Type": "application/json", "Content-Encoding": "gzip", "Authorization": "Bearer " + e.broke}, bomb)
		if status != 400 {
			t.Errorf("v1: %d %.200s", status, got)
		}
	})
	e.within(t, "2 GiB gzip bomb to /sse/…/CompleteStream", refusedCheap, 3, func(t *testing.T) {
		_, got := post(t, h1Client(), e.s.BaseURL+"/sse/parley.v1.ChatService/CompleteStream",
			map[string]string{"Content-Type": "application/json", "Content-Encoding": "gzip", "Authorization": "Bearer " + e.broke}, bomb)
		wantIn(t, "sse", got, "event: error")
	})
	e.within(t, "32 MB protobuf of tiny parts, key with no balance", refusedBody, 3, func(t *testing.T) {
		_, got := post(t, h1Client(), e.s.BaseURL+parleyv1connect.ChatServiceCompleteProcedure,
			map[string]string{"Content-Type": "application/proto", "Authorization": "Bearer " + e.broke}, manyPartsProto(32<<20-64<<10))
		wantIn(t, "many parts", got, "over 100000 elements")
	})
}

// TestAbuseManyParts: a request naming the caller's own attachment in
// thousands of parts is refused by counting, before one is loaded — on
// the API and on the web channel.
func TestAbuseManyParts(t *testing.T) {
	e := newAbuseEnv(t)
	up := e.s.attachments(protocols[0], cred{bearer: e.paid})
	doc := e.s.upload(t, up, "big.txt", "text/plain", bytes.Repeat([]byte("all work and no play "), (512<<10)/21))
	ref := attachmentPart(doc.GetAttachmentId())
	parts := make([]*parleyv1.Part, 10_000)
	for i := range parts {
		parts[i] = ref
	}
	ctx := ctxTimeout(t, 60*time.Second)
	e.within(t, "Complete: 10,000 parts naming an attachment", refusedCheap, 3, func(t *testing.T) {
		_, err := e.chat(e.paid, protocols[0]).Complete(ctx, connect.NewRequest(&parleyv1.CompleteRequest{Model: "sim-small",
			Messages: []*parleyv1.Message{{Role: parleyv1.Role_ROLE_USER, Parts: parts}}}))
		wantIn(t, "complete", fmt.Sprint(err), "over the limit of 256 per message")
	})
	spread := make([]*parleyv1.Message, 30)
	for i := range spread {
		spread[i] = &parleyv1.Message{Role: parleyv1.Role_ROLE_USER, Parts: parts[:100]}
	}
	e.within(t, "Complete: 3,000 attachment parts over 30 messages", refusedCheap, 3, func(t *testing.T) {
		_, err := e.chat(e.paid, protocols[0]).Complete(ctx, connect.NewRequest(&parleyv1.CompleteRequest{Model: "sim-small", Messages: spread}))
		wantIn(t, "complete spread", fmt.Sprint(err), "over the limit of 32 per request")
	})
	conv := func() parleyv1connect.ConversationServiceClient {
		return e.s.api(protocols[0], cred{bearer: e.paid}).Conv
	}
	e.within(t, "SendMessage (web): 10,000 parts naming an attachment", refusedCheap, 3, func(t *testing.T) {
		stream, err := conv().SendMessage(ctx, connect.NewRequest(&parleyv1.SendMessageRequest{Model: "sim-small", Parts: parts}))
		if err == nil {
			for stream.Receive() {
			}
			err = stream.Err()
		}
		wantIn(t, "send", fmt.Sprint(err), "over the limit of 256 per message")
	})
	e.within(t, "SendMessage (web): 200 parts naming an attachment", refusedCheap, 3, func(t *testing.T) {
		stream, err := conv().SendMessage(ctx, connect.NewRequest(&parleyv1.SendMessageRequest{Model: "sim-small", Parts: parts[:200]}))
		if err == nil {
			for stream.Receive() {
			}
			err = stream.Err()
		}
		wantIn(t, "send 200", fmt.Sprint(err), "over 32 attachments")
	})
	img := "data:image/png;base64," + base64.StdEncoding.EncodeToString(attachtest.PNG(8, 8))
	content := strings.Repeat(`{"type":"image_url","image_url":{"url":"`+img+`"}},`, 5000)
	js := `{"model":"sim-small","messages":[{"role":"user","content":[` + content + `{"type":"text","text":"x"}]}]}`
	// Refused by the count too, after its 600 KB of JSON are parsed.
	e.within(t, "OpenAI: 5,000 image_url parts", refusedBody, 3, func(t *testing.T) {
		status, got := post(t, h1Client(), e.s.BaseURL+"/v1/chat/completions", map[string]string{"Authorization": "Bearer " + e.paid}, []byte(js))
		if status != 400 {
			t.Errorf("openai: %d %.200s", status, got)
		}
		wantIn(t, "openai", got, "over the limit of 256 per message")
	})
}

// TestAbuseUnpaidWork: a key that cannot pay is refused before its images
// are decoded, its documents extracted or its prompt tokenized.
func TestAbuseUnpaidWork(t *testing.T) {
	e := newAbuseEnv(t)
	ctx := ctxTimeout(t, 120*time.Second)
	complete := func(key string, parts ...*parleyv1.Part) error {
		_, err := e.chat(key, protocols[0]).Complete(ctx, connect.NewRequest(&parleyv1.CompleteRequest{Model: "sim-large", MaxOutputTokens: 16,
			Messages: []*parleyv1.Message{{Role: parleyv1.Role_ROLE_USER, Parts: parts}}}))
		return err
	}
	doc := func(data []byte, mime string) *parleyv1.Part {
		return &parleyv1.Part{Kind: &parleyv1.Part_Document{Document: &parleyv1.InlineDocument{Data: data, MimeType: mime, Filename: "f"}}}
	}
	huge := attachtest.HugePNG(7000, 7000) // 49 megapixels: 196 MB to decode it
	docs := []struct {
		name, mime string
		data       []byte
	}{
		{"PDF deflate bomb (1 GiB)", "application/pdf", attachtest.PDFDeflateBomb(1 << 30)},
		{"DOCX zip bomb (1 GiB)", attach.DOCX, attachtest.DOCXGigaBomb(1 << 30)},
		{"PPTX zip bomb (1 GiB)", attach.PPTX, attachtest.PPTXGigaBomb(1 << 30)},
	}
	for _, d := range docs {
		e.within(t, "no balance: "+d.name, refusedCheap, 3, func(t *testing.T) {
			wantCode(t, d.name, complete(e.broke, doc(d.data, d.mime)), connect.CodeResourceExhausted)
		})
	}
	e.within(t, "no balance: a 49-megapixel image", refusedCheap, 3, func(t *testing.T) {
		err := complete(e.broke, &parleyv1.Part{Kind: &parleyv1.Part_Image{Image: &parleyv1.InlineImage{Data: huge, MimeType: "image/png"}}})
		wantCode(t, "image", err, connect.CodeResourceExhausted)
	})
	e.within(t, "no balance: a 1.8 MB prompt of 450 messages", refusedBody, 3, func(t *testing.T) {
		msgs := make([]*parleyv1.Message, 450)
		text := strings.Repeat("lorem ipsum dolor sit amet ", (4<<10)/27)
		for i := range msgs {
			msgs[i] = &parleyv1.Message{Role: parleyv1.Role_ROLE_USER, Parts: []*parleyv1.Part{{Kind: &parleyv1.Part_Text{Text: text}}}}
		}
		_, err := e.chat(e.broke, protocols[0]).Complete(ctx, connect.NewRequest(&parleyv1.CompleteRequest{Model: "sim-large", MaxOutputTokens: 16, Messages: msgs}))
		wantCode(t, "prompt", err, connect.CodeResourceExhausted)
	})
	e.within(t, "no balance: embeddings of 8 MB of text", refusedJSON, 3, func(t *testing.T) {
		input := strings.Repeat("lorem ipsum dolor sit amet ", 5000)[:128_000]
		js := `{"model":"sim-embed","input":[` + strings.Repeat(`"`+input+`",`, 63) + `"` + input + `"]}`
		status, got := post(t, h1Client(), e.s.BaseURL+"/v1/embeddings", map[string]string{"Authorization": "Bearer " + e.broke}, []byte(js))
		if status != 429 {
			t.Errorf("embeddings: %d %.200s", status, got)
		}
	})
	e.within(t, "no balance (OpenAI): a 49-megapixel image_url", refusedCheap, 3, func(t *testing.T) {
		js := `{"model":"sim-large","max_tokens":16,"messages":[{"role":"user","content":[{"type":"image_url","image_url":{"url":"data:image/png;base64,` +
			base64.StdEncoding.EncodeToString(huge) + `"}}]}]}`
		status, got := post(t, h1Client(), e.s.BaseURL+"/v1/chat/completions", map[string]string{"Authorization": "Bearer " + e.broke}, []byte(js))
		if status != 429 {
			t.Errorf("openai: %d %.200s", status, got)
		}
	})

	// Paid for, a bomb is read only to the inflation budget (or refused by
	// its ratio), in bounded memory, and charged for the text it gave.
	for _, d := range docs {
		e.within(t, "paid: "+d.name, paidBomb, 1, func(t *testing.T) {
			err := complete(e.paid, doc(d.data, d.mime))
			if err != nil && !strings.Contains(err.Error(), "zip bomb") {
				t.Errorf("%s: %v", d.name, err)
			}
		})
	}
	e.within(t, "paid: PDF of 1 GiB of text operators", paidBomb, 1, func(t *testing.T) {
		// 512 KiB of text is over sim-large's window: refused after it is read.
		err := complete(e.paid, doc(attachtest.PDFTextBomb(1<<30), "application/pdf"))
		wantIn(t, "text bomb", fmt.Sprint(err), "exceeds sim-large's context window")
	})
}

// TestAbuseImageDecodesShareThePool: one user's large images wait in their
// own share of the decode pool; another user's image is decoded at once.
func TestAbuseImageDecodesShareThePool(t *testing.T) {
	e := newAbuseEnv(t, "--prepare-concurrency", "2", "--prepare-per-user", "1", "--prepare-queue-per-user", "4")
	big := attachtest.JPEG(5000, 4000) // 20 megapixels
	small := attachtest.PNG(64, 64)
	ctx := ctxTimeout(t, 120*time.Second)
	image := func(key string, data []byte, mime string) error {
		_, err := e.chat(key, protocols[0]).Complete(ctx, connect.NewRequest(&parleyv1.CompleteRequest{Model: "sim-small", MaxOutputTokens: 8,
			Messages: []*parleyv1.Message{{Role: parleyv1.Role_ROLE_USER, Parts: []*parleyv1.Part{
				{Kind: &parleyv1.Part_Image{Image: &parleyv1.InlineImage{Data: data, MimeType: mime}}}}}}}))
		return err
	}
	// The abuser sends 8 at once: one decodes, four wait, the rest are
	// refused; meanwhile another user's small image is timed.
	var wg sync.WaitGroup
	var mu sync.Mutex
	codes := map[connect.Code]int{}
	for range 8 {
		wg.Go(func() {
			err := image(e.paid, big, "image/jpeg")
			mu.Lock()
			code := connect.Code(0) // served
			if err != nil {
				if code = connect.CodeOf(err); code != connect.CodeResourceExhausted {
					t.Errorf("a large image: %v", err)
				}
			}
			codes[code]++
			mu.Unlock()
		})
	}
	time.Sleep(200 * time.Millisecond)
	var lat []time.Duration
	for range 10 {
		start := time.Now()
		if err := image(e.normal, small, "image/png"); err != nil {
			t.Fatal(err)
		}
		lat = append(lat, time.Since(start))
	}
	wg.Wait()
	slices.Sort(lat)
	t.Logf("BUDGET %-58s outcomes %v; the other user's image p50 %v, max %v", "8 large images at once from one user:", codes,
		lat[len(lat)/2].Round(time.Millisecond), lat[len(lat)-1].Round(time.Millisecond))
	if codes[connect.CodeResourceExhausted] == 0 || codes[0] == 0 {
		t.Errorf("outcomes %v: want some served and some refused as busy", codes)
	}
	if lat[len(lat)/2] > normalP50 || lat[len(lat)-1] > normalMax {
		t.Errorf("another user's image waited: p50 %v, max %v", lat[len(lat)/2], lat[len(lat)-1])
	}
}
