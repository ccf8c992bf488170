package compat

import (
	"net/http"

	parleyv1 "github.com/parleyhq/parley/gen/parley/v1"
	"github.com/parleyhq/parley/server/chat"
)

// encoder is one streaming surface's wire form of a generation: the stream
// runner calls it for each thing that happens, and it writes the events its
// API defines for it. gen numbers the generations of one stream (a legacy
// completion streams one per prompt, the others one).
type encoder interface {
	// start writes the beginning of generation gen.
	start(gen int, s *parleyv1.GenerationStarted) error
	// delta writes one piece of generation gen's answer.
	delta(gen int, d *parleyv1.GenerationDelta) error
	// finish writes the end of generation gen, which ended by itself; after
	// the last generation's, the end of the stream.
	finish(gen int, out *chat.Outcome)
	// fail ends a stream that has started with err: a failure, or a
	// generation cut short (interrupted).
	fail(err error)
	// ping writes the keep-alive of a quiet stream.
	ping() error
	// started reports whether anything went out (the headers with it).
	started() bool
}

// runStream is the one stream runner: it runs creqs one after the other
// through the core, each's events written by enc, with the keep-alive
// going while it waits. A failure before anything went out is answered by
// refuse, with its HTTP status (overload, balance); after, by enc.fail; a
// generation that did not end by itself ends the stream with enc.fail too.
func (h *deps) runStream(r *http.Request, enc encoder, creqs []chat.Request, refuse func(error)) {
	stop := keepAlive(h.PingInterval, enc.ping)
	defer stop()
	for gen := range creqs {
		// Indexed, not ranged over: a copy of the request would sit in
		// this frame, which every open stream keeps on its stack.
		out, err := h.Core.Complete(r.Context(), &creqs[gen], func(ev *parleyv1.GenerationEvent) error {
			switch k := ev.GetKind().(type) {
			case *parleyv1.GenerationEvent_Started:
				return enc.start(gen, k.Started)
			case *parleyv1.GenerationEvent_Delta:
				return enc.delta(gen, k.Delta)
			}
			return nil
		})
		if err != nil && !enc.started() {
			refuse(err)
			return
		}
		if err == nil {
			err = interrupted(out)
		}
		if err != nil {
			enc.fail(err)
			return
		}
		enc.finish(gen, out)
	}
}
