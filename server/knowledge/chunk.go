package knowledge

import "fmt"

// The chunking OpenAI documents as auto, and the bounds of a static one.
const (
	AutoChunkTokens   = 800
	AutoOverlapTokens = 400
	MinChunkTokens    = 100
	MaxChunkTokens    = 4096
)

// CheckChunking checks a static chunking strategy: chunks of 100 to 4096
// tokens, overlapping by at most half of one.
func CheckChunking(chunkTokens, overlapTokens int) error {
	switch {
	case chunkTokens < MinChunkTokens || chunkTokens > MaxChunkTokens:
		return fmt.Errorf("max_chunk_size_tokens: %d is outside %d to %d", chunkTokens, MinChunkTokens, MaxChunkTokens)
	case overlapTokens < 0 || overlapTokens > chunkTokens/2:
		return fmt.Errorf("chunk_overlap_tokens: %d is outside 0 to half of max_chunk_size_tokens (%d)", overlapTokens, chunkTokens/2)
	}
	return nil
}
