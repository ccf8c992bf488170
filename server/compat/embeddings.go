package compat

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"net/http"

	"github.com/parleyhq/parley/server/apierr"
	"github.com/parleyhq/parley/server/chat"
	"github.com/parleyhq/parley/server/compat/openaiwire"
)

// Embeddings serves POST /v1/embeddings in OpenAI's wire format: input as a
// string or a list of strings, dimensions, encoding_format float or base64
// (what the OpenAI SDKs ask for by default), user.
func (h *openAIHandler) Embeddings(w http.ResponseWriter, r *http.Request) {
	req, err := h.parseEmbeddings(r)
	if err != nil {
		h.fail(w, r, err)
		return
	}
	out, err := h.Core.Embed(r.Context(), req.creq)
	if err != nil {
		h.fail(w, r, err)
		return
	}
	type datum struct {
		Object    string `json:"object"`
		Index     int    `json:"index"`
		Embedding any    `json:"embedding"`
	}
	body := struct {
		Object string  `json:"object"`
		Data   []datum `json:"data"`
		Model  string  `json:"model"`
		Usage  struct {
			PromptTokens int `json:"prompt_tokens"`
			TotalTokens  int `json:"total_tokens"`
		} `json:"usage"`
	}{Object: "list", Model: out.Model, Data: make([]datum, len(out.Vectors))}
	for i, v := range out.Vectors {
		body.Data[i] = datum{Object: "embedding", Index: i, Embedding: v}
		if req.base64 {
			body.Data[i].Embedding = base64.StdEncoding.EncodeToString(openaiwire.PackFloats(v))
		}
	}
	body.Usage.PromptTokens, body.Usage.TotalTokens = out.Usage.PromptTokens, out.Usage.PromptTokens
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(body)
}

// embeddingsParams are the fields /v1/embeddings reads.
var embeddingsParams = map[string]bool{"model": true, "input": true, "dimensions": true, "encoding_format": true, "user": true}

// embeddingsRequest is a parsed /v1/embeddings body.
type embeddingsRequest struct {
	creq   chat.EmbedRequest
	base64 bool
}

func (h *openAIHandler) parseEmbeddings(r *http.Request) (*embeddingsRequest, error) {
	var body struct {
		Model          string          `json:"model"`
		Input          json.RawMessage `json:"input"`
		Dimensions     *int            `json:"dimensions"`
		EncodingFormat string          `json:"encoding_format"`
		User           string          `json:"user"`
	}
	if _, err := h.decodeBody(r, embeddingsParams, nil, &body); err != nil {
		return nil, err
	}
	out := &embeddingsRequest{creq: chat.EmbedRequest{Model: body.Model, User: body.User, Rename: func(f string) string {
		if f == "inputs" || len(f) > 6 && f[:7] == "inputs[" {
			return "input" + f[6:]
		}
		return f
	}}}
	switch body.EncodingFormat {
	case "", "float":
	case "base64":
		out.base64 = true
	default:
		return nil, apierr.InvalidArgument("encoding_format", fmt.Sprintf("%q is not float or base64", body.EncodingFormat))
	}
	if body.Dimensions != nil {
		if *body.Dimensions < 1 {
			return nil, apierr.InvalidArgument("dimensions", "must be at least 1")
		}
		out.creq.Dimensions = *body.Dimensions
	}
	in := bytes.TrimSpace(body.Input)
	var one string
	switch {
	case len(in) == 0 || string(in) == "null":
		return nil, apierr.InvalidArgument("input", "is required")
	case json.Unmarshal(in, &one) == nil:
		out.creq.Inputs = []string{one}
	case json.Unmarshal(in, &out.creq.Inputs) == nil:
	default:
		// Token ids are the client's tokenizer's: Parley cannot know which
		// one, so it takes text only rather than guess.
		return nil, apierr.InvalidArgument("input", "must be a string or an array of strings (token ids are not accepted: send the text)")
	}
	return out, nil
}
