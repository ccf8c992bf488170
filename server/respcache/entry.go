package respcache

import (
	"bufio"
	"bytes"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"io"

	"google.golang.org/protobuf/encoding/protodelim"
	"google.golang.org/protobuf/proto"

	parleyv1 "github.com/parleyhq/parley/gen/parley/v1"
)

// Key is the cache key of a request: a SHA-256 over its scope (whose answers
// may be shared: one user), the model and its catalog version (a changed
// catalog entry makes every old entry unreachable) and the normalised
// request, each length-prefixed so no two different tuples collide by
// concatenation.
func Key(scope, model, version string, normalised []byte) string {
	h := sha256.New()
	var n [8]byte
	for _, part := range [][]byte{[]byte(scope), []byte(model), []byte(version), normalised} {
		binary.BigEndian.PutUint64(n[:], uint64(len(part)))
		h.Write(n[:])
		h.Write(part)
	}
	return hex.EncodeToString(h.Sum(nil))
}

// Encode is a finished generation's events (its deltas, then its finished
// event) as the cache stores them: length-delimited protobuf.
func Encode(events []*parleyv1.GenerationEvent) ([]byte, error) {
	var b bytes.Buffer
	for _, ev := range events {
		if _, err := protodelim.MarshalTo(&b, ev); err != nil {
			return nil, err
		}
	}
	return b.Bytes(), nil
}

// Decode reverses Encode. An entry that does not end in a finished event is
// refused (a torn or foreign value).
func Decode(data []byte) ([]*parleyv1.GenerationEvent, error) {
	r := bufio.NewReader(bytes.NewReader(data))
	var out []*parleyv1.GenerationEvent
	for {
		ev := &parleyv1.GenerationEvent{}
		err := protodelim.UnmarshalFrom(r, ev)
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return nil, err
		}
		out = append(out, ev)
	}
	if len(out) == 0 || out[len(out)-1].GetFinished() == nil {
		return nil, errors.New("respcache: entry does not end in a finished event")
	}
	return out, nil
}

// Clone copies an event for recording (the emitter may reuse it).
func Clone(ev *parleyv1.GenerationEvent) *parleyv1.GenerationEvent {
	return proto.Clone(ev).(*parleyv1.GenerationEvent)
}
