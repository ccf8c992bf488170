package cql

import (
	"encoding/base64"
	"fmt"
	"strconv"
	"strings"

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
