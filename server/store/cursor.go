package store

import (
	"encoding/base64"
	"fmt"
	"strconv"
	"strings"
)

// A cursor is the keyset position after the last item of a page: its sort
// time (Unix nanoseconds) and ID, "v1.<nanos>.<id>" in unpadded base64url.
// Every backend pages the same way with it; the API layer signs it before it
// reaches a client.

// EncodeCursor returns the cursor of the position (at, id).
func EncodeCursor(at int64, id string) string {
	return base64.RawURLEncoding.EncodeToString([]byte("v1." + strconv.FormatInt(at, 10) + "." + id))
}

// DecodeCursor reads a cursor made by EncodeCursor; anything else is an
// error wrapping ErrInvalidCursor.
func DecodeCursor(c string) (at int64, id string, err error) {
	raw, err := base64.RawURLEncoding.DecodeString(c)
	if err != nil {
		return 0, "", fmt.Errorf("%w: not base64url", ErrInvalidCursor)
	}
	parts := strings.SplitN(string(raw), ".", 3)
	if len(parts) != 3 || parts[0] != "v1" || parts[2] == "" {
		return 0, "", fmt.Errorf("%w: malformed", ErrInvalidCursor)
	}
	at, err = strconv.ParseInt(parts[1], 10, 64)
	if err != nil {
		return 0, "", fmt.Errorf("%w: malformed position", ErrInvalidCursor)
	}
	return at, parts[2], nil
}

// Page trims a result fetched with limit+1 rows to limit and returns the
// cursor of its last item when more rows follow.
func Page[T any](items []T, limit int, key func(T) (int64, string)) ([]T, string) {
	if len(items) <= limit {
		return items, ""
	}
	items = items[:limit]
	at, id := key(items[limit-1])
	return items, EncodeCursor(at, id)
}
