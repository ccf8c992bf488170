package clickhouse

import (
	"encoding/base64"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/parleyhq/parley/server/store"
)

// A cursor is the keyset position after the last item of a page: its sort
// time and ID, "v1.<unix nanos>.<id>" in unpadded base64url. The API layer
// signs it before it reaches a client.

func encodeCursor(at int64, id string) string {
	return base64.RawURLEncoding.EncodeToString([]byte("v1." + strconv.FormatInt(at, 10) + "." + id))
}

func decodeCursor(c string) (at int64, id string, err error) {
	raw, err := base64.RawURLEncoding.DecodeString(c)
	if err != nil {
		return 0, "", fmt.Errorf("%w: not base64url", store.ErrInvalidCursor)
	}
	parts := strings.SplitN(string(raw), ".", 3)
	if len(parts) != 3 || parts[0] != "v1" || parts[2] == "" {
		return 0, "", fmt.Errorf("%w: malformed", store.ErrInvalidCursor)
	}
	at, err = strconv.ParseInt(parts[1], 10, 64)
	if err != nil {
		return 0, "", fmt.Errorf("%w: malformed position", store.ErrInvalidCursor)
	}
	return at, parts[2], nil
}

// page trims a result fetched with limit+1 rows to limit and returns the
// cursor of its last item when more rows follow.
func page[T any](items []T, limit int, key func(T) (int64, string)) ([]T, string) {
	if len(items) <= limit {
		return items, ""
	}
	items = items[:limit]
	at, id := key(items[limit-1])
	return items, encodeCursor(at, id)
}

func fromTS(n int64) time.Time { return time.Unix(0, n).UTC() }
