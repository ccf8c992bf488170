package chat

import (
	"strings"

	parleyv1 "github.com/parleyhq/parley/gen/parley/v1"
)

// Collector gathers a generation's deltas into whole choices, for the
// surfaces that answer with a whole completion (ChatService.Complete, the
// non-streamed OpenAI endpoint). Use Emit as the core's emit.
type Collector struct {
	Choices []*CollectedChoice
}

// CollectedChoice is one choice put back together: its text, its tool calls
// in index order with their arguments joined, and its log probabilities.
type CollectedChoice struct {
	Text strings.Builder
	// Reasoning is the model's reasoning (models that reason), apart from
	// the answer.
	Reasoning strings.Builder
	ToolCalls []*parleyv1.ToolCall
	Logprobs  []*parleyv1.TokenLogprob
}

// Emit adds one event.
func (c *Collector) Emit(ev *parleyv1.GenerationEvent) error {
	d := ev.GetDelta()
	if d == nil {
		return nil
	}
	ch := c.Choice(int(d.GetChoice()))
	ch.Text.WriteString(d.GetText())
	ch.Reasoning.WriteString(d.GetReasoning())
	for _, tc := range d.GetToolCalls() {
		i := int(tc.GetIndex())
		for len(ch.ToolCalls) <= i {
			ch.ToolCalls = append(ch.ToolCalls, &parleyv1.ToolCall{})
		}
		call := ch.ToolCalls[i]
		if tc.GetId() != "" {
			call.Id = tc.GetId()
		}
		if tc.GetName() != "" {
			call.Name = tc.GetName()
		}
		call.Arguments += tc.GetArguments()
	}
	ch.Logprobs = append(ch.Logprobs, d.GetLogprobs()...)
	return nil
}

// Choice returns choice i, making it (and those before it) if need be.
func (c *Collector) Choice(i int) *CollectedChoice {
	for len(c.Choices) <= i {
		c.Choices = append(c.Choices, &CollectedChoice{})
	}
	return c.Choices[i]
}

// Message is the choice as an assistant message: its text part (when there
// is text or no call) and one part per tool call.
func (ch *CollectedChoice) Message() *parleyv1.Message {
	m := &parleyv1.Message{Role: parleyv1.Role_ROLE_ASSISTANT}
	if ch.Text.Len() > 0 || len(ch.ToolCalls) == 0 {
		m.Parts = append(m.Parts, &parleyv1.Part{Kind: &parleyv1.Part_Text{Text: ch.Text.String()}})
	}
	for _, tc := range ch.ToolCalls {
		m.Parts = append(m.Parts, &parleyv1.Part{Kind: &parleyv1.Part_ToolCall{ToolCall: tc}})
	}
	return m
}
