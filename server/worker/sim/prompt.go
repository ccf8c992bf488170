package sim

import (
	"github.com/parleyhq/parley/server/tokenize"
	"github.com/parleyhq/parley/server/worker"
)

// promptTokens returns the prompt's tokens as the gateway counts them
// (worker.PromptIDs), so billing and the simulated usage agree exactly.
func promptTokens(tok *tokenize.Tokenizer, msgs []worker.ChatMessage) []int {
	return worker.PromptIDs(tok, msgs)
}
