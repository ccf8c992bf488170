package store

import (
	"context"
	"errors"
	"testing"
)

// CreateSchema tries again until the step succeeds, stops at an error it is
// told is final, and gives up after SchemaAttempts tries with the last error.
func TestCreateSchema(t *testing.T) {
	busy, final := errors.New("busy"), errors.New("bad password")
	n := 0
	if err := CreateSchema(t.Context(), nil, func() error {
		if n++; n < 3 {
			return busy
		}
		return nil
	}); err != nil || n != 3 {
		t.Errorf("succeeding on the third try: %v after %d tries", err, n)
	}
	n = 0
	if err := CreateSchema(t.Context(), func(err error) bool { return err != final }, func() error { n++; return final }); err != final || n != 1 {
		t.Errorf("final error: %v after %d tries", err, n)
	}
	n = 0
	if err := CreateSchema(t.Context(), nil, func() error { n++; return busy }); err != busy || n != SchemaAttempts {
		t.Errorf("always busy: %v after %d tries", err, n)
	}
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	n = 0
	if err := CreateSchema(ctx, nil, func() error { n++; return busy }); err != busy || n != 1 {
		t.Errorf("ended context: %v after %d tries", err, n)
	}
}
