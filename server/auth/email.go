package auth

import (
	"errors"
	"net/mail"
	"strings"
)

// NormalizeEmail trims and lower-cases an address and checks it is a single
// bare address (no display name), at most 254 bytes. Emails are unique by
// this normal form.
func NormalizeEmail(s string) (string, error) {
	s = strings.ToLower(strings.TrimSpace(s))
	if s == "" {
		return "", errors.New("is required")
	}
	if len(s) > 254 {
		return "", errors.New("is longer than 254 bytes")
	}
	addr, err := mail.ParseAddress(s)
	if err != nil || addr.Address != s || addr.Name != "" || !strings.Contains(s[strings.LastIndexByte(s, '@')+1:], ".") {
		return "", errors.New("is not a valid email address")
	}
	return s, nil
}
