package redis

import (
	"context"
	_ "embed"
	"fmt"
	"strconv"
	"time"

	goredis "github.com/redis/go-redis/v9"
)

//go:embed load.lua
var loadSource string

var loadScript = goredis.NewScript(loadSource)

// DefaultLoadKey is the hash the gateways share their load figures in.
const DefaultLoadKey = "parley:load"

// LoadBoard is limits.LoadBoard in Redis: every gateway publishes its busy
// and total worker slots and reads the sums over all, in one script call.
type LoadBoard struct {
	rdb goredis.UniversalClient
	key string
}

// NewLoadBoard returns a board over rdb in the hash key (DefaultLoadKey when
// empty).
func NewLoadBoard(rdb goredis.UniversalClient, key string) *LoadBoard {
	if key == "" {
		key = DefaultLoadKey
	}
	return &LoadBoard{rdb: rdb, key: key}
}

// Share implements limits.LoadBoard.
func (b *LoadBoard) Share(ctx context.Context, gateway string, busy, total float64, now time.Time, ttl time.Duration) (float64, float64, error) {
	f := func(x float64) string { return strconv.FormatFloat(x, 'f', -1, 64) }
	res, err := loadScript.Run(ctx, b.rdb, []string{b.key}, gateway, f(busy), f(total), now.UnixMilli(), now.Add(ttl).UnixMilli()).StringSlice()
	if err != nil {
		return 0, 0, fmt.Errorf("redis load board: %w", err)
	}
	if len(res) != 2 {
		return 0, 0, fmt.Errorf("redis load board: %d results", len(res))
	}
	sb, err1 := strconv.ParseFloat(res[0], 64)
	st, err2 := strconv.ParseFloat(res[1], 64)
	if err1 != nil || err2 != nil {
		return 0, 0, fmt.Errorf("redis load board: bad sums %q", res)
	}
	return sb, st, nil
}
