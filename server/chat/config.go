package chat

import (
	"flag"
	"fmt"
)

// Config is the generation core as `parley serve` configures it: the
// budgets of one request, the largest prompt and the API channel's
// scheduling priority.
type Config struct {
	Budgets
	// MaxPromptBytes is Core.MaxPromptBytes.
	MaxPromptBytes int
	// APIPriority is Core.APIPriority.
	APIPriority int
	// BackgroundPriority is Core.BackgroundPriority.
	BackgroundPriority int
	// AutoTitles is Core.AutoTitles.
	AutoTitles bool
}

// RegisterFlags registers the core's settings with their defaults, filling
// c. The budgets are checked in order of cheapness, before any of the work
// they bound is done.
func (c *Config) RegisterFlags(fs *flag.FlagSet) {
	d := DefaultBudgets()
	fs.IntVar(&c.PartsPerMessage, "max-parts-per-message", d.PartsPerMessage, "parts one message may have")
	fs.IntVar(&c.PartsPerRequest, "max-parts-per-request", d.PartsPerRequest, "parts one request may have, all messages together")
	fs.IntVar(&c.Attachments, "max-attachments-per-request", d.Attachments, "inline images and documents and attachment references one request may have")
	fs.Int64Var(&c.AttachmentBytes, "max-attachment-bytes-per-request", d.AttachmentBytes, "their declared sizes (inline bytes, uploads' prepared forms) summed, checked before any is loaded")
	fs.IntVar(&c.ExactCountBytes, "exact-count-bytes", d.ExactCountBytes, "prompt text up to which an API request is tokenized before its hold; longer ones are held at a token per byte and counted after")
	fs.IntVar(&c.MaxPromptBytes, "max-prompt-bytes", 8<<20, "largest prompt text of a request, refused before it is tokenized")
	// 2 is the pro tier's priority (llm.PriorityPro).
	fs.IntVar(&c.APIPriority, "api-priority", 2, "scheduling priority of API requests among the web tiers (0 free … 3 max)")
	fs.IntVar(&c.BackgroundPriority, "background-priority", 0, "scheduling priority of background responses and generations (-1 below every tier, like ingestion; 0 free … 3 max)")
	fs.BoolVar(&c.AutoTitles, "auto-titles", true, "name a new web chat from its first exchange with a short generation (at the lowest priority, counted in the user's tier limits and usage like any message); off: the first message, cut short")
}

// Validate reports settings that cannot work.
func (c Config) Validate() error {
	if c.BackgroundPriority < -1 || c.BackgroundPriority > 3 || c.APIPriority < 0 || c.APIPriority > 3 {
		return fmt.Errorf("--api-priority must be 0 to 3 and --background-priority -1 to 3")
	}
	return nil
}
