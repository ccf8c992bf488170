package openai

import (
	"context"
	"encoding/base64"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"net/http"

	"github.com/parleyhq/parley/server/llm"
)

// maxEmbeddingsBody bounds an upstream's embeddings answer (2048 inputs of
// 4096 floats as JSON is about 200 MB; base64 is asked for, a quarter).
const maxEmbeddingsBody = 256 << 20

// Embed forwards a batch to the upstream's /embeddings, asking for base64
// (compact) vectors; an upstream that answers with float arrays is read too.
// Refusals are *worker.UpstreamError, as Generate's.
func (e *Engine) Embed(ctx context.Context, req llm.EmbedRequest) (llm.EmbedResult, error) {
	if !e.serves(req.Model) {
		return llm.EmbedResult{}, fmt.Errorf("%w: %q", llm.ErrUnknownModel, req.Model)
	}
	body := struct {
		Model          string   `json:"model"`
		Input          []string `json:"input"`
		Dimensions     int      `json:"dimensions,omitempty"`
		EncodingFormat string   `json:"encoding_format"`
	}{req.Model, req.Inputs, req.Dimensions, "base64"}
	data, err := json.Marshal(body)
	if err != nil {
		return llm.EmbedResult{}, fmt.Errorf("%w: %v", llm.ErrInvalidRequest, err)
	}
	e.addInFlight(1)
	defer e.addInFlight(-1)
	callCtx, cancel := context.WithTimeout(ctx, e.cfg.FirstByteTimeout)
	defer cancel()
	httpReq, err := e.post(callCtx, "/embeddings", data)
	if err != nil {
		return llm.EmbedResult{}, err
	}
	resp, err := e.cfg.HTTPClient.Do(httpReq)
	if err != nil {
		return llm.EmbedResult{}, e.failure(ctx, callCtx, err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return llm.EmbedResult{}, upstreamError(resp)
	}
	var out struct {
		Data []struct {
			Index     int             `json:"index"`
			Embedding json.RawMessage `json:"embedding"`
		} `json:"data"`
		Usage *struct {
			PromptTokens int `json:"prompt_tokens"`
		} `json:"usage"`
	}
	if err := json.NewDecoder(io.LimitReader(resp.Body, maxEmbeddingsBody)).Decode(&out); err != nil {
		return llm.EmbedResult{}, fmt.Errorf("openai: embeddings: %w", err)
	}
	res := llm.EmbedResult{Vectors: make([][]float32, len(req.Inputs))}
	for _, d := range out.Data {
		if d.Index < 0 || d.Index >= len(req.Inputs) || res.Vectors[d.Index] != nil {
			return llm.EmbedResult{}, fmt.Errorf("openai: embeddings: bad or repeated index %d", d.Index)
		}
		v, err := decodeVector(d.Embedding)
		if err != nil {
			return llm.EmbedResult{}, fmt.Errorf("openai: embeddings[%d]: %w", d.Index, err)
		}
		res.Vectors[d.Index] = v
	}
	for i, v := range res.Vectors {
		if v == nil {
			return llm.EmbedResult{}, fmt.Errorf("openai: embeddings: no vector for input %d", i)
		}
	}
	if out.Usage != nil {
		res.Usage.PromptTokens = out.Usage.PromptTokens
	} else {
		for _, in := range req.Inputs {
			res.Usage.PromptTokens += e.tok.Count(in)
		}
		res.Usage.Estimated = true
	}
	return res, nil
}

// decodeVector reads an embedding given as a base64 string of
// little-endian float32s or as a JSON array of numbers.
func decodeVector(raw json.RawMessage) ([]float32, error) {
	var b64 string
	if json.Unmarshal(raw, &b64) == nil {
		data, err := base64.StdEncoding.DecodeString(b64)
		if err != nil || len(data)%4 != 0 {
			return nil, fmt.Errorf("not base64 float32s")
		}
		v := make([]float32, len(data)/4)
		for i := range v {
			v[i] = math.Float32frombits(binary.LittleEndian.Uint32(data[4*i:]))
		}
		return v, nil
	}
	var v []float32
	if err := json.Unmarshal(raw, &v); err != nil {
		return nil, fmt.Errorf("neither base64 nor an array of numbers")
	}
	return v, nil
}
