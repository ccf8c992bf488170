package llm

// Request is one generation: a chat to continue with one assistant message.
type Request struct {
	// ID identifies the request in logs; engines do not interpret it.
	ID    string
	Model string
	// Messages are the conversation so far, oldest first.
	Messages []ChatMessage
	// MaxTokens bounds the completion; zero means the model's MaxOutputTokens.
	MaxTokens int
	// Temperature and TopP are sampling settings; nil means the engine's default.
	Temperature, TopP *float64
	// Stop ends the completion before the first occurrence of any of these strings.
	Stop []string
	// Seed makes sampling repeatable where the engine supports it.
	Seed *int64

	// Tools are the functions the model may call; ToolChoice says whether it
	// must, may or must not (the zero value: auto when Tools is set).
	Tools      []Tool
	ToolChoice ToolChoice
	// ParallelToolCalls, when false, allows at most one call per answer; nil
	// means the engine's default (several allowed).
	ParallelToolCalls *bool
	// ResponseFormat constrains the answer's text (the zero value: free text).
	ResponseFormat ResponseFormat
	// N is the number of choices to generate (0 and 1: one).
	N int
	// Logprobs asks for each output token's log probability, with the
	// TopLogprobs most likely alternatives (0–20).
	Logprobs    bool
	TopLogprobs int
	// ReasoningEffort asks a model that reasons to reason less or more:
	// "none", "minimal", "low", "medium", "high" or "xhigh" ("": the
	// model's default). Engines pass it on to models that reason.
	ReasoningEffort string
}

// Choices is the number of choices req asks for: N, at least 1.
func (req *Request) Choices() int { return max(req.N, 1) }

// Tool is a function the model may call: its name, what it does, and its
// parameters as a JSON Schema (raw JSON, passed on unchanged).
type Tool struct {
	Name, Description string
	Parameters        []byte
	// Strict asks the engine to follow Parameters exactly.
	Strict bool
}

// ToolChoiceMode says whether the model calls a tool.
type ToolChoiceMode string

// The tool choice modes, as OpenAI names them.
const (
	ToolChoiceAuto     ToolChoiceMode = "" // the model decides (the default)
	ToolChoiceNone     ToolChoiceMode = "none"
	ToolChoiceRequired ToolChoiceMode = "required"
	// ToolChoiceFunction: the model must call ToolChoice.Function.
	ToolChoiceFunction ToolChoiceMode = "function"
)

// ToolChoice is a request's tool choice: a mode and, for ToolChoiceFunction,
// the function's name.
type ToolChoice struct {
	Mode     ToolChoiceMode
	Function string
}

// ResponseFormatType is the kind of text an answer must be.
type ResponseFormatType string

// The response formats, as OpenAI names them.
const (
	FormatText       ResponseFormatType = "" // free text (the default)
	FormatJSONObject ResponseFormatType = "json_object"
	FormatJSONSchema ResponseFormatType = "json_schema"
)

// ResponseFormat constrains an answer's text: any JSON object, or JSON valid
// against Schema (raw JSON).
type ResponseFormat struct {
	Type   ResponseFormatType
	Name   string
	Schema []byte
	Strict bool
}

// ChatMessage is one turn of a conversation: a role ("system", "user",
// "assistant", "tool") and its content in order. An assistant message may
// hold tool calls; a "tool" message holds one tool result.
type ChatMessage struct {
	Role  string
	Parts []Part
}

// Part is one piece of a message's content; exactly one field is set.
type Part struct {
	Text       string
	Image      *Image
	Document   *Document
	ToolCall   *ToolCall
	ToolResult *ToolResult
}

// ToolCall is a call the model made: its id (the one the result answers),
// the function's name and the arguments as a JSON object in a string. The
// store keeps it in a message's parts as JSON, under these tags.
type ToolCall struct {
	ID        string `json:"id"`
	Name      string `json:"name"`
	Arguments string `json:"arguments"`
}

// ToolResult is the caller's answer to the tool call ToolCallID. The store
// keeps it in a message's parts as JSON, under these tags.
type ToolResult struct {
	ToolCallID string `json:"tool_call_id"`
	Content    string `json:"content"`
}

// Image is an image attached to a message, with its pixel size (used for token
// accounting even where the data is not sent).
type Image struct {
	Data          []byte
	MimeType      string
	Width, Height int
}

// Document is an attached document, already reduced to its text.
type Document struct {
	Filename, MimeType string
	Text               string
}
