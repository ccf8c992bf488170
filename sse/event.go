package sse

import "time"

// Event is one server-sent event.
type Event struct {
	// ID is the event's id field. When decoding it is the stream's last event ID, as
	// the spec defines it: an id persists until the next id field changes it.
	ID string
	// Event is the event type; empty means the default type, "message".
	Event string
	// Data is the payload; a multi-line payload travels as one data field per line.
	Data string
	// Retry is the reconnection time the event sets (whole milliseconds on the
	// wire); zero means the event does not set one.
	Retry time.Duration
}
