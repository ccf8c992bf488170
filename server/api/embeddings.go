package api

import (
	"context"

	"connectrpc.com/connect"

	parleyv1 "github.com/parleyhq/parley/gen/parley/v1"
	"github.com/parleyhq/parley/server/chat"
	"github.com/parleyhq/parley/server/compat/openaiwire"
)

// EmbeddingHandler serves EmbeddingService over the chat core.
type EmbeddingHandler struct {
	Core *chat.Core
}

// Embed embeds the inputs and answers with one vector per input.
func (h *EmbeddingHandler) Embed(ctx context.Context, req *connect.Request[parleyv1.EmbedRequest]) (*connect.Response[parleyv1.EmbedResponse], error) {
	m := req.Msg
	out, err := h.Core.Embed(ctx, chat.EmbedRequest{Model: m.GetModel(), Inputs: m.GetInputs(), Dimensions: int(m.GetDimensions()), User: m.GetUser()})
	if err != nil {
		return nil, err
	}
	res := &parleyv1.EmbedResponse{RequestId: out.RequestID, Model: out.Model, Usage: chat.UsageToProto(out.Usage), CostNanos: out.CostNanos}
	for i, v := range out.Vectors {
		e := &parleyv1.Embedding{Index: int32(i)}
		if m.GetEncoding() == parleyv1.EmbeddingEncoding_EMBEDDING_ENCODING_BASE64 {
			e.Packed = openaiwire.PackFloats(v)
		} else {
			e.Values = v
		}
		res.Embeddings = append(res.Embeddings, e)
	}
	return connect.NewResponse(res), nil
}
