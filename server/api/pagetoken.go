package api

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"strings"

	"github.com/parleyhq/parley/server/apierr"
)

// PageTokens seal store cursors into page tokens bound to one user and one
// list, so a token that was tampered with, or taken from another user or
// another method, is refused as invalid rather than read.
type PageTokens struct {
	Key []byte
}

// Seal returns the page token for cursor ("" stays "").
func (p PageTokens) Seal(userID, list, cursor string) string {
	if cursor == "" {
		return ""
	}
	return base64.RawURLEncoding.EncodeToString(p.mac(userID, list, cursor)) + "." + cursor
}

// Open returns the cursor a page token holds, or invalid_argument naming
// page_token.
func (p PageTokens) Open(userID, list, token string) (string, error) {
	if token == "" {
		return "", nil
	}
	sig, cursor, ok := strings.Cut(token, ".")
	mac, err := base64.RawURLEncoding.DecodeString(sig)
	if !ok || err != nil || !hmac.Equal(mac, p.mac(userID, list, cursor)) {
		return "", apierr.InvalidArgument("page_token", "is not a page token of this list")
	}
	return cursor, nil
}

func (p PageTokens) mac(userID, list, cursor string) []byte {
	h := hmac.New(sha256.New, p.Key)
	h.Write([]byte(userID + "\x00" + list + "\x00" + cursor))
	return h.Sum(nil)[:16]
}

// PageSize checks a request's page_size: 0 means the default of 50; at most 200.
func PageSize(n int32) (int, error) {
	switch {
	case n == 0:
		return 50, nil
	case n < 0 || n > 200:
		return 0, apierr.InvalidArgument("page_size", "must be between 1 and 200")
	}
	return int(n), nil
}
