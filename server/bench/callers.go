package bench

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"time"

	"connectrpc.com/connect"

	parleyv1 "github.com/parleyhq/parley/gen/parley/v1"
	"github.com/parleyhq/parley/gen/parley/v1/parleyv1connect"
	workerv1 "github.com/parleyhq/parley/gen/parley/worker/v1"
	"github.com/parleyhq/parley/gen/parley/worker/v1/workerv1connect"
	"github.com/parleyhq/parley/server/compat/openaiwire"
	"github.com/parleyhq/parley/sse"
)

func newCaller(cfg Config) (caller, error) {
	client := httpClient(cfg.Protocol, cfg.Concurrency)
	var opts []connect.ClientOption
	switch cfg.Protocol {
	case "connect":
	case "grpc":
		opts = append(opts, connect.WithGRPC())
	case "grpc-web":
		opts = append(opts, connect.WithGRPCWeb())
	case "openai-sse":
		if cfg.Target == "worker" {
			return nil, fmt.Errorf("bench: openai-sse targets a gateway, not a worker")
		}
		return openAICaller(cfg, client), nil
	default:
		return nil, fmt.Errorf("bench: unknown protocol %q (connect, grpc, grpc-web, openai-sse)", cfg.Protocol)
	}
	if cfg.Target == "worker" {
		return workerCaller(cfg, workerv1connect.NewWorkerServiceClient(client, cfg.URL, opts...)), nil
	}
	return chatCaller(cfg, parleyv1connect.NewChatServiceClient(client, cfg.URL, opts...)), nil
}

func chatCaller(cfg Config, c parleyv1connect.ChatServiceClient) caller {
	msgs := []*parleyv1.Message{{Role: parleyv1.Role_ROLE_USER, Parts: []*parleyv1.Part{{Kind: &parleyv1.Part_Text{Text: cfg.Prompt}}}}}
	return func(ctx context.Context) sample {
		start := time.Now()
		var s sample
		if !cfg.Stream {
			req := connect.NewRequest(&parleyv1.CompleteRequest{Model: cfg.Model, Messages: msgs, MaxOutputTokens: int64(cfg.MaxTokens)})
			req.Header().Set("Authorization", "Bearer "+cfg.APIKey)
			res, err := c.Complete(ctx, req)
			s.total, s.ttft, s.err = time.Since(start), time.Since(start), err
			if err == nil {
				s.tokens = int(res.Msg.GetUsage().GetCompletionTokens())
			}
			return s
		}
		req := connect.NewRequest(&parleyv1.CompleteStreamRequest{Model: cfg.Model, Messages: msgs, MaxOutputTokens: int64(cfg.MaxTokens)})
		req.Header().Set("Authorization", "Bearer "+cfg.APIKey)
		stream, err := c.CompleteStream(ctx, req)
		if err != nil {
			return sample{err: err}
		}
		defer stream.Close()
		for stream.Receive() {
			if stream.Msg().GetEvent().GetDelta() != nil {
				if s.tokens == 0 {
					s.ttft = time.Since(start)
				}
				s.tokens++
			}
		}
		s.total, s.err = time.Since(start), stream.Err()
		return s
	}
}

func workerCaller(cfg Config, c workerv1connect.WorkerServiceClient) caller {
	msgs := []*workerv1.ChatMessage{{Role: "user", Parts: []*workerv1.ContentPart{{Kind: &workerv1.ContentPart_Text{Text: cfg.Prompt}}}}}
	n := 0
	return func(ctx context.Context) sample {
		n++
		start := time.Now()
		var s sample
		req := connect.NewRequest(&workerv1.GenerateRequest{
			RequestId: fmt.Sprintf("bench-%d", n), Model: cfg.Model, Messages: msgs, MaxTokens: int64(cfg.MaxTokens),
		})
		if cfg.APIKey != "" { // the worker token
			req.Header().Set("Authorization", "Bearer "+cfg.APIKey)
		}
		stream, err := c.Generate(ctx, req)
		if err != nil {
			return sample{err: err}
		}
		defer stream.Close()
		for stream.Receive() {
			if stream.Msg().GetDelta() != nil {
				if s.tokens == 0 {
					s.ttft = time.Since(start)
				}
				s.tokens++
			}
		}
		s.total, s.err = time.Since(start), stream.Err()
		return s
	}
}

func openAICaller(cfg Config, client *http.Client) caller {
	body, _ := json.Marshal(map[string]any{
		"model": cfg.Model, "stream": cfg.Stream, "max_tokens": cfg.MaxTokens,
		"messages": []map[string]string{{"role": "user", "content": cfg.Prompt}},
	})
	return func(ctx context.Context) sample {
		start := time.Now()
		var s sample
		req, _ := http.NewRequestWithContext(ctx, "POST", cfg.URL+"/v1/chat/completions", bytes.NewReader(body))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Authorization", "Bearer "+cfg.APIKey)
		res, err := client.Do(req)
		if err != nil {
			return sample{err: err}
		}
		defer res.Body.Close()
		if res.StatusCode != 200 {
			b, _ := io.ReadAll(io.LimitReader(res.Body, 512))
			return sample{err: &httpStatusError{res.StatusCode, string(bytes.TrimSpace(b))}}
		}
		if !cfg.Stream {
			var out openaiwire.ChatCompletion
			err := json.NewDecoder(res.Body).Decode(&out)
			s.total, s.ttft, s.err = time.Since(start), time.Since(start), err
			if out.Usage != nil {
				s.tokens = out.Usage.CompletionTokens
			}
			return s
		}
		dec := sse.NewDecoder(res.Body)
		for {
			ev, err := dec.Next()
			if err != nil {
				if err != io.EOF {
					s.err = err
				}
				break
			}
			if ev.Data == "[DONE]" {
				break
			}
			if bytes.Contains([]byte(ev.Data), []byte(`"content":"`)) {
				if s.tokens == 0 {
					s.ttft = time.Since(start)
				}
				s.tokens++
			}
		}
		s.total = time.Since(start)
		return s
	}
}
