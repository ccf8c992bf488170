package e2e

import (
	"context"
	"encoding/base64"
	"encoding/binary"
	"encoding/json"
	"io"
	"math"
	"net/http"
	"strings"
	"testing"
	"time"

	"connectrpc.com/connect"

	parleyv1 "github.com/parleyhq/parley/gen/parley/v1"
	"github.com/parleyhq/parley/gen/parley/v1/parleyv1connect"
)

// Embeddings over Connect and OpenAI's /v1/embeddings: vectors in order,
// texts sharing words closer, dimensions and base64 honoured, bad input
// named, and the balance charged exactly what the usage records say.
func TestEmbeddings(t *testing.T) {
	s := startServer(t, fastAuth...)
	a := s.newAccount(t, "embed@example.com")
	s.topup(t, a, "1")
	hc := h1Client()
	hc.Transport = credTransport{base: hc.Transport, c: cred{bearer: a.Key}}
	emb := parleyv1connect.NewEmbeddingServiceClient(hc, s.BaseURL)
	ctx := ctxTimeout(t, 30*time.Second)

	res, err := emb.Embed(ctx, connect.NewRequest(&parleyv1.EmbedRequest{Model: "sim-embed", User: "u1",
		Inputs: []string{"white rabbit with a watch", "the white rabbit", "quarterly revenue report"}}))
	if err != nil {
		t.Fatal(err)
	}
	e := res.Msg.GetEmbeddings()
	if len(e) != 3 || len(e[0].GetValues()) != 512 || res.Msg.GetUsage().GetPromptTokens() == 0 || res.Msg.GetCostNanos() <= 0 {
		t.Fatalf("%d embeddings, usage %v, cost %d", len(e), res.Msg.GetUsage(), res.Msg.GetCostNanos())
	}
	dot := func(a, b []float32) (d float64) {
		for i := range a {
			d += float64(a[i]) * float64(b[i])
		}
		return d
	}
	if dot(e[0].GetValues(), e[1].GetValues()) <= dot(e[0].GetValues(), e[2].GetValues()) {
		t.Fatal("texts sharing words are not closer than texts sharing none")
	}
	packed, err := emb.Embed(ctx, connect.NewRequest(&parleyv1.EmbedRequest{Model: "sim-embed", Inputs: []string{"white rabbit"},
		Dimensions: 32, Encoding: parleyv1.EmbeddingEncoding_EMBEDDING_ENCODING_BASE64}))
	if err != nil || len(packed.Msg.GetEmbeddings()[0].GetPacked()) != 4*32 || len(packed.Msg.GetEmbeddings()[0].GetValues()) != 0 {
		t.Fatalf("base64, 32 dimensions: %v %v", err, packed.Msg)
	}
	for _, tc := range []struct {
		req   *parleyv1.EmbedRequest
		field string
		code  connect.Code
	}{
		{&parleyv1.EmbedRequest{Model: "sim-small", Inputs: []string{"x"}}, "model", connect.CodeInvalidArgument},
		{&parleyv1.EmbedRequest{Model: "nope", Inputs: []string{"x"}}, "model", connect.CodeNotFound},
		{&parleyv1.EmbedRequest{Model: "sim-embed"}, "inputs", connect.CodeInvalidArgument},
		{&parleyv1.EmbedRequest{Model: "sim-embed", Inputs: []string{"a", ""}}, "inputs[1]", connect.CodeInvalidArgument},
		{&parleyv1.EmbedRequest{Model: "sim-embed", Inputs: []string{"a"}, Dimensions: 513}, "dimensions", connect.CodeInvalidArgument},
	} {
		_, err := emb.Embed(ctx, connect.NewRequest(tc.req))
		var fv parleyv1.FieldViolation
		if connect.CodeOf(err) != tc.code || !detailOf(err, &fv) || fv.GetField() != tc.field {
			t.Errorf("%v: %v (field %q), want %v naming %s", tc.req, err, fv.GetField(), tc.code, tc.field)
		}
	}
	// A chat model refuses to embed and an embedding model to chat.
	_, err = s.api(protocols[0], cred{bearer: a.Key}).Chat.Complete(ctx, connect.NewRequest(&parleyv1.CompleteRequest{Model: "sim-embed", Messages: userText("x")}))
	wantCode(t, "chat on sim-embed", err, connect.CodeInvalidArgument)

	// OpenAI's wire format.
	post := func(body string) (*http.Response, []byte) {
		req, _ := http.NewRequest("POST", s.BaseURL+"/v1/embeddings", strings.NewReader(body))
		req.Header.Set("Authorization", "Bearer "+a.Key)
		r, err := h1Client().Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer r.Body.Close()
		b, _ := io.ReadAll(r.Body)
		return r, b
	}
	r, body := post(`{"model":"sim-embed","input":["white rabbit","white rabbit"],"dimensions":8,"encoding_format":"base64"}`)
	var out struct {
		Object string `json:"object"`
		Data   []struct {
			Object    string `json:"object"`
			Index     int    `json:"index"`
			Embedding string `json:"embedding"`
		} `json:"data"`
		Usage struct {
			PromptTokens int `json:"prompt_tokens"`
			TotalTokens  int `json:"total_tokens"`
		} `json:"usage"`
	}
	if r.StatusCode != 200 || json.Unmarshal(body, &out) != nil || out.Object != "list" || len(out.Data) != 2 || out.Data[1].Index != 1 ||
		out.Usage.PromptTokens == 0 || out.Usage.TotalTokens != out.Usage.PromptTokens {
		t.Fatalf("%d %s", r.StatusCode, body)
	}
	raw, _ := base64.StdEncoding.DecodeString(out.Data[0].Embedding)
	var norm float64
	for i := 0; i+4 <= len(raw); i += 4 {
		x := math.Float32frombits(binary.LittleEndian.Uint32(raw[i:]))
		norm += float64(x) * float64(x)
	}
	if len(raw) != 32 || math.Abs(norm-1) > 1e-3 {
		t.Fatalf("base64 vector of %d bytes, norm² %v", len(raw), norm)
	}
	for _, tc := range []struct{ body, param string }{
		{`{"model":"sim-embed","input":[[1,2,3]]}`, "input"},
		{`{"model":"sim-embed","input":["a",""]}`, "input[1]"},
		{`{"model":"sim-embed","input":"a","encoding_format":"int8"}`, "encoding_format"},
		{`{"model":"sim-embed","input":"a","dimensions":0}`, "dimensions"},
	} {
		r, body := post(tc.body)
		if r.StatusCode != 400 || !strings.Contains(string(body), `"param":"`+tc.param+`"`) {
			t.Errorf("%s: %d %s, want 400 naming %s", tc.body, r.StatusCode, body, tc.param)
		}
	}

	// Billing is exact: what left the balance is what the usage records cost.
	bill := s.api(protocols[0], cred{bearer: a.Key}).Billing
	var sum int64
	records := waitUsage(t, s, a, 3)   // refusals leave none
	time.Sleep(200 * time.Millisecond) // and no fourth comes
	if records = waitUsage(t, s, a, 3); len(records) != 3 {
		t.Fatalf("%d usage records, want 3 (two Connect calls, one /v1/embeddings call)", len(records))
	}
	for _, rec := range records {
		sum += rec.GetCostNanos()
	}
	bal, err := bill.GetBalance(context.Background(), connect.NewRequest(&parleyv1.GetBalanceRequest{}))
	if err != nil {
		t.Fatal(err)
	}
	if spent := 1_000_000_000 - bal.Msg.GetBalanceNanos(); spent != sum || bal.Msg.GetReservedNanos() != 0 {
		t.Fatalf("balance moved by %d, usage records cost %d (reserved %d)", spent, sum, bal.Msg.GetReservedNanos())
	}
}
