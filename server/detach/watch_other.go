//go:build !linux

package detach

import "log/slog"

// poller: none outside Linux; a goroutine watches each connection.
type poller struct{}

func newPoller(*slog.Logger) *poller { return nil }
func (*poller) add(*response) bool   { return false }
func (*poller) remove(*response)     {}
