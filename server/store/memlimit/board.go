package memlimit

import (
	"context"
	"sync"
	"time"
)

// Board is the in-process limits.LoadBoard: the gateways of one process (in
// tests, several) share their load figures in a map. Gateways in different
// processes share them through store/redis.LoadBoard instead.
type Board struct {
	mu      sync.Mutex
	figures map[string]figure
}

type figure struct {
	busy, total float64
	until       time.Time
}

// NewBoard returns an empty board.
func NewBoard() *Board { return &Board{figures: map[string]figure{}} }

// Share implements limits.LoadBoard.
func (b *Board) Share(_ context.Context, gateway string, busy, total float64, now time.Time, ttl time.Duration) (float64, float64, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.figures[gateway] = figure{busy: busy, total: total, until: now.Add(ttl)}
	var sb, st float64
	for g, f := range b.figures {
		if now.After(f.until) {
			delete(b.figures, g)
			continue
		}
		sb, st = sb+f.busy, st+f.total
	}
	return sb, st, nil
}
