// Package parley is the Go SDK for Parley: a thin layer over the generated
// Connect clients in gen/ that adds authentication (an API key or a cookie
// jar for browser-style sessions), the choice of protocol, streams as
// range-over-func iterators, and typed access to error details.
//
//	c := parley.New("http://127.0.0.1:8080", parley.WithAPIKey(key))
//	for ev, err := range c.CompleteStream(ctx, parley.Prompt("sim-small", "Hello")) {
//		if err != nil { return err }
//		fmt.Print(ev.GetDelta().GetText())
//	}
package parley

import (
	"context"
	"errors"
	"iter"
	"net"
	"net/http"
	"strconv"
	"strings"
	"time"

	"connectrpc.com/connect"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/structpb"

	parleyv1 "github.com/parleyhq/parley/gen/parley/v1"
	"github.com/parleyhq/parley/gen/parley/v1/parleyv1connect"
)

// Protocol is the wire protocol the client speaks.
type Protocol int

const (
	// Connect over HTTP/1.1 or HTTP/2 (the default).
	Connect Protocol = iota
	// GRPC over HTTP/2 (cleartext h2c for http:// URLs).
	GRPC
	// GRPCWeb over HTTP/1.1 or HTTP/2.
	GRPCWeb
)

type options struct {
	apiKey   string
	jar      http.CookieJar
	client   *http.Client
	protocol Protocol
	extra    []connect.ClientOption
}

// Option configures a Client.
type Option func(*options)

// WithAPIKey authenticates every call with `Authorization: Bearer key`.
func WithAPIKey(key string) Option { return func(o *options) { o.apiKey = key } }

// WithCookieJar keeps the session cookie that SignUp and Login set, as a
// browser would (use net/http/cookiejar).
func WithCookieJar(jar http.CookieJar) Option { return func(o *options) { o.jar = jar } }

// WithHTTPClient sends requests through c (its Jar is kept unless
// WithCookieJar is also given).
func WithHTTPClient(c *http.Client) Option { return func(o *options) { o.client = c } }

// WithProtocol selects Connect (default), GRPC or GRPCWeb.
func WithProtocol(p Protocol) Option { return func(o *options) { o.protocol = p } }

// WithClientOptions passes extra options (interceptors, compression) to
// every generated client.
func WithClientOptions(opts ...connect.ClientOption) Option {
	return func(o *options) { o.extra = append(o.extra, opts...) }
}

// Client holds one generated client per service, sharing a transport.
type Client struct {
	Auth          parleyv1connect.AuthServiceClient
	APIKeys       parleyv1connect.ApiKeyServiceClient
	Models        parleyv1connect.ModelServiceClient
	Chat          parleyv1connect.ChatServiceClient
	Conversations parleyv1connect.ConversationServiceClient
	Attachments   parleyv1connect.AttachmentServiceClient
	Files         parleyv1connect.FileServiceClient
	VectorStores  parleyv1connect.VectorStoreServiceClient
	Projects      parleyv1connect.ProjectServiceClient
	Memories      parleyv1connect.MemoryServiceClient
	Batches       parleyv1connect.BatchServiceClient
	Webhooks      parleyv1connect.WebhookServiceClient
	Billing       parleyv1connect.BillingServiceClient
	Admin         parleyv1connect.AdminServiceClient
}

// New returns a client for the gateway at baseURL (e.g. "http://127.0.0.1:8080").
func New(baseURL string, opts ...Option) *Client {
	var o options
	for _, f := range opts {
		f(&o)
	}
	hc := o.client
	if hc == nil {
		hc = &http.Client{}
		if o.protocol == GRPC && strings.HasPrefix(baseURL, "http://") {
			var p http.Protocols
			p.SetUnencryptedHTTP2(true)
			hc.Transport = &http.Transport{Protocols: &p, DialContext: (&net.Dialer{}).DialContext}
		}
	} else {
		c := *hc
		hc = &c
	}
	if o.jar != nil {
		hc.Jar = o.jar
	}
	copts := append([]connect.ClientOption{}, o.extra...)
	switch o.protocol {
	case GRPC:
		copts = append(copts, connect.WithGRPC())
	case GRPCWeb:
		copts = append(copts, connect.WithGRPCWeb())
	}
	if o.apiKey != "" {
		copts = append(copts, connect.WithInterceptors(bearer(o.apiKey)))
	}
	baseURL = strings.TrimRight(baseURL, "/")
	return &Client{
		Auth:          parleyv1connect.NewAuthServiceClient(hc, baseURL, copts...),
		APIKeys:       parleyv1connect.NewApiKeyServiceClient(hc, baseURL, copts...),
		Models:        parleyv1connect.NewModelServiceClient(hc, baseURL, copts...),
		Chat:          parleyv1connect.NewChatServiceClient(hc, baseURL, copts...),
		Conversations: parleyv1connect.NewConversationServiceClient(hc, baseURL, copts...),
		Attachments:   parleyv1connect.NewAttachmentServiceClient(hc, baseURL, copts...),
		Files:         parleyv1connect.NewFileServiceClient(hc, baseURL, copts...),
		VectorStores:  parleyv1connect.NewVectorStoreServiceClient(hc, baseURL, copts...),
		Projects:      parleyv1connect.NewProjectServiceClient(hc, baseURL, copts...),
		Memories:      parleyv1connect.NewMemoryServiceClient(hc, baseURL, copts...),
		Batches:       parleyv1connect.NewBatchServiceClient(hc, baseURL, copts...),
		Webhooks:      parleyv1connect.NewWebhookServiceClient(hc, baseURL, copts...),
		Billing:       parleyv1connect.NewBillingServiceClient(hc, baseURL, copts...),
		Admin:         parleyv1connect.NewAdminServiceClient(hc, baseURL, copts...),
	}
}

type bearer string

func (b bearer) WrapUnary(next connect.UnaryFunc) connect.UnaryFunc {
	return func(ctx context.Context, req connect.AnyRequest) (connect.AnyResponse, error) {
		req.Header().Set("Authorization", "Bearer "+string(b))
		return next(ctx, req)
	}
}

func (b bearer) WrapStreamingClient(next connect.StreamingClientFunc) connect.StreamingClientFunc {
	return func(ctx context.Context, s connect.Spec) connect.StreamingClientConn {
		conn := next(ctx, s)
		conn.RequestHeader().Set("Authorization", "Bearer "+string(b))
		return conn
	}
}

func (b bearer) WrapStreamingHandler(next connect.StreamingHandlerFunc) connect.StreamingHandlerFunc {
	return next
}

// Prompt is a CompleteStreamRequest with one user message of text.
func Prompt(model, text string) *parleyv1.CompleteStreamRequest {
	return &parleyv1.CompleteStreamRequest{Model: model, Messages: []*parleyv1.Message{UserText(text)}}
}

// UserText is a user message of one text part.
func UserText(text string) *parleyv1.Message {
	return &parleyv1.Message{Role: parleyv1.Role_ROLE_USER, Parts: []*parleyv1.Part{Text(text)}}
}

// Text is a text part.
func Text(text string) *parleyv1.Part {
	return &parleyv1.Part{Kind: &parleyv1.Part_Text{Text: text}}
}

// Function is a tool the model may call: name, what it does, and its
// parameters as a JSON Schema (a decoded JSON object; nil takes none). It
// fails only if schema holds values protobuf's Struct cannot carry.
func Function(name, description string, schema map[string]any) (*parleyv1.Tool, error) {
	t := &parleyv1.Tool{Name: name, Description: description}
	if schema != nil {
		s, err := structpb.NewStruct(schema)
		if err != nil {
			return nil, err
		}
		t.Parameters = s
	}
	return t, nil
}

// ToolCalls are the tool calls of an assistant message.
func ToolCalls(m *parleyv1.Message) []*parleyv1.ToolCall {
	var out []*parleyv1.ToolCall
	for _, p := range m.GetParts() {
		if c := p.GetToolCall(); c != nil {
			out = append(out, c)
		}
	}
	return out
}

// ToolResult is the message answering the tool call callID with content.
func ToolResult(callID, content string) *parleyv1.Message {
	return &parleyv1.Message{Role: parleyv1.Role_ROLE_TOOL, Parts: []*parleyv1.Part{
		{Kind: &parleyv1.Part_ToolResult{ToolResult: &parleyv1.ToolResult{ToolCallId: callID, Content: content}}}}}
}

// eventer is every streamed response of Parley: it carries a GenerationEvent.
type eventer interface {
	GetEvent() *parleyv1.GenerationEvent
}

// events turns a server stream into an iterator of its events. Breaking out
// of the loop closes the stream.
func events[T any, PT interface {
	*T
	eventer
}](stream *connect.ServerStreamForClient[T], err error) iter.Seq2[*parleyv1.GenerationEvent, error] {
	return func(yield func(*parleyv1.GenerationEvent, error) bool) {
		if err != nil {
			yield(nil, err)
			return
		}
		defer stream.Close()
		for stream.Receive() {
			if !yield(PT(stream.Msg()).GetEvent(), nil) {
				return
			}
		}
		if err := stream.Err(); err != nil {
			yield(nil, err)
		}
	}
}

// CompleteStream streams an API-channel generation (billed to the key's
// balance). Leaving the loop early cancels the generation.
func (c *Client) CompleteStream(ctx context.Context, req *parleyv1.CompleteStreamRequest) iter.Seq2[*parleyv1.GenerationEvent, error] {
	return events(c.Chat.CompleteStream(ctx, connect.NewRequest(req)))
}

// SendMessage adds a message to a stored conversation and streams the answer.
// Leaving the loop does not stop the answer: resume with StreamGeneration,
// stop with Conversations.CancelGeneration.
func (c *Client) SendMessage(ctx context.Context, req *parleyv1.SendMessageRequest) iter.Seq2[*parleyv1.GenerationEvent, error] {
	return events(c.Conversations.SendMessage(ctx, connect.NewRequest(req)))
}

// StreamGeneration follows a conversation's generation from after_seq.
func (c *Client) StreamGeneration(ctx context.Context, req *parleyv1.StreamGenerationRequest) iter.Seq2[*parleyv1.GenerationEvent, error] {
	return events(c.Conversations.StreamGeneration(ctx, connect.NewRequest(req)))
}

// Collect collects a stream's answer (choice 0): the deltas joined, and the
// finished event.
func Collect(seq iter.Seq2[*parleyv1.GenerationEvent, error]) (string, *parleyv1.GenerationFinished, error) {
	m, fin, err := CollectMessage(seq)
	var b strings.Builder
	for _, p := range m.GetParts() {
		b.WriteString(p.GetText())
	}
	return b.String(), fin, err
}

// CollectMessage collects a stream's answer (choice 0) as the assistant
// message a whole Complete returns: its text, and its tool calls put
// together from their streamed pieces (the arguments joined by index).
func CollectMessage(seq iter.Seq2[*parleyv1.GenerationEvent, error]) (*parleyv1.Message, *parleyv1.GenerationFinished, error) {
	var text strings.Builder
	var calls []*parleyv1.ToolCall
	var fin *parleyv1.GenerationFinished
	message := func() *parleyv1.Message {
		m := &parleyv1.Message{Role: parleyv1.Role_ROLE_ASSISTANT}
		if text.Len() > 0 || len(calls) == 0 {
			m.Parts = append(m.Parts, Text(text.String()))
		}
		for _, c := range calls {
			m.Parts = append(m.Parts, &parleyv1.Part{Kind: &parleyv1.Part_ToolCall{ToolCall: c}})
		}
		return m
	}
	for ev, err := range seq {
		if err != nil {
			return message(), fin, err
		}
		if d := ev.GetDelta(); d != nil && d.GetChoice() == 0 {
			text.WriteString(d.GetText())
			for _, tc := range d.GetToolCalls() {
				for int(tc.GetIndex()) >= len(calls) {
					calls = append(calls, &parleyv1.ToolCall{})
				}
				c := calls[tc.GetIndex()]
				if tc.GetId() != "" {
					c.Id, c.Name = tc.GetId(), tc.GetName()
				}
				c.Arguments += tc.GetArguments()
			}
		}
		if f := ev.GetFinished(); f != nil {
			fin = f
		}
	}
	return message(), fin, nil
}

// Code returns err's Connect code (connect.CodeUnknown for other errors).
func Code(err error) connect.Code { return connect.CodeOf(err) }

// RetryAfter says how long to wait before retrying, from the RetryInfo detail
// or else the Retry-After header of a resource_exhausted or unavailable error.
func RetryAfter(err error) (time.Duration, bool) {
	var info parleyv1.RetryInfo
	if Detail(err, &info) {
		return info.GetRetryDelay().AsDuration(), true
	}
	var ce *connect.Error
	if errors.As(err, &ce) {
		if s, perr := strconv.Atoi(ce.Meta().Get("Retry-After")); perr == nil && s >= 0 {
			return time.Duration(s) * time.Second, true
		}
	}
	return 0, false
}

// Detail fills msg with err's first detail of msg's type (FieldViolation,
// LimitExceeded, InsufficientBalance, RetryInfo) and reports whether it had one.
func Detail(err error, msg proto.Message) bool {
	var ce *connect.Error
	if !errors.As(err, &ce) {
		return false
	}
	name := string(msg.ProtoReflect().Descriptor().FullName())
	for _, d := range ce.Details() {
		if d.Type() != name {
			continue
		}
		v, derr := d.Value()
		if derr != nil {
			return false
		}
		proto.Merge(msg, v)
		return true
	}
	return false
}
