package sim

import (
	"strings"
	"time"
)

// Config sets the simulated GPU's shape and pace. Zero fields take the defaults
// below, except TimeScale, whose zero value means no waiting at all.
type Config struct {
	// Models are the model ids served (default, when EmbedModels is empty too:
	// "sim-small", "sim-large" and "sim-embed"). An id containing "embed" is
	// an embedding model and moves to EmbedModels.
	Models []string
	// EmbedModels are the embedding model ids served.
	EmbedModels []string
	// MaxBatch is the number of sequences decoding at once (default 32).
	MaxBatch int
	// StepBase and StepPerSeq price one decode step: StepBase + StepPerSeq ×
	// running (defaults 15ms and 0.2ms: ~65 tokens/s per sequence alone, ~46 at a
	// full batch of 32).
	StepBase, StepPerSeq time.Duration
	// PrefillRate is the prompt tokens processed per second (default 5000).
	PrefillRate float64
	// BlockTokens is the prefix cache's block size in tokens (default 64).
	BlockTokens int
	// KVCapacityTokens bounds the KV cache: cached prefixes plus the running
	// sequences' own tokens (default 1<<20).
	KVCapacityTokens int64
	// TimeScale multiplies every simulated duration before waiting it out: 1 is
	// real time, 0.01 a hundred times faster, 0 no waiting.
	TimeScale float64
	// Clock is the time source (default the system clock); tests drive a fake.
	Clock Clock
}

func (c Config) withDefaults() Config {
	if len(c.Models) == 0 && len(c.EmbedModels) == 0 {
		c.Models = []string{"sim-small", "sim-large", "sim-embed"}
	}
	chat := make([]string, 0, len(c.Models))
	for _, id := range c.Models {
		if strings.Contains(id, "embed") {
			c.EmbedModels = append(c.EmbedModels, id)
		} else {
			chat = append(chat, id)
		}
	}
	c.Models = chat
	if c.MaxBatch <= 0 {
		c.MaxBatch = 32
	}
	if c.StepBase <= 0 {
		c.StepBase = 15 * time.Millisecond
	}
	if c.StepPerSeq <= 0 {
		c.StepPerSeq = 200 * time.Microsecond
	}
	if c.PrefillRate <= 0 {
		c.PrefillRate = 5000
	}
	if c.BlockTokens <= 0 {
		c.BlockTokens = 64
	}
	if c.KVCapacityTokens <= 0 {
		c.KVCapacityTokens = 1 << 20
	}
	if c.TimeScale < 0 {
		c.TimeScale = 0
	}
	if c.Clock == nil {
		c.Clock = systemClock{}
	}
	return c
}
