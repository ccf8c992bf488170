package chat

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/parleyhq/parley/server/store"
)

// chainMessage is a stored message for the chain tests.
func chainMessage(id, role, text string) store.Message {
	return store.Message{ID: id, Role: role, Parts: []store.Part{{Text: text}}}
}

func withRecord(m store.Message, previous string, inputs ...string) store.Message {
	meta, _ := json.Marshal(ResponseRecord{Previous: previous, Inputs: inputs})
	m.Parts = append(m.Parts, store.Part{Meta: string(meta)})
	return m
}

func ids(msgs []store.Message) string {
	var s []string
	for _, m := range msgs {
		s = append(s, m.ID)
	}
	return strings.Join(s, " ")
}

// A chain is walked through the records: two responses continuing the same
// one, written interleaved, each see only their own history.
func TestResponseChainByRecords(t *testing.T) {
	a, A := chainMessage("a", "user", "first"), withRecord(chainMessage("A", "assistant", "answer"), "", "a")
	b, c := chainMessage("b", "user", "branch one"), chainMessage("c", "user", "branch two")
	B, C := withRecord(chainMessage("B", "assistant", "one"), "A", "b"), withRecord(chainMessage("C", "assistant", "two"), "A", "c")
	all := []store.Message{a, A, b, c, C, B}
	for _, tc := range []struct {
		out  store.Message
		want string
	}{{A, "a A"}, {B, "a A b B"}, {C, "a A c C"}} {
		rec, ok := ResponseRecordOf(tc.out)
		if !ok {
			t.Fatal("no record")
		}
		got, err := (&StoredResponse{Messages: all, Output: tc.out, Record: rec}).Chain()
		if err != nil || ids(got) != tc.want {
			t.Fatalf("context of %s = %q, %v; want %q", tc.out.ID, ids(got), err, tc.want)
		}
	}

	// A response deleted from the chain breaks it; so does a record that
	// names itself (it must not loop).
	rec, _ := ResponseRecordOf(B)
	if _, err := (&StoredResponse{Messages: []store.Message{b, B, c, C}, Output: B, Record: rec}).Chain(); !errors.Is(err, ErrBrokenChain) {
		t.Fatalf("without A: %v", err)
	}
	if _, err := (&StoredResponse{Messages: []store.Message{a, b, B}, Output: B, Record: rec}).Chain(); !errors.Is(err, ErrBrokenChain) {
		t.Fatalf("A's output gone: %v", err)
	}
	self := withRecord(chainMessage("S", "assistant", "me"), "S")
	rec, _ = ResponseRecordOf(self)
	if _, err := (&StoredResponse{Messages: []store.Message{self}, Output: self, Record: rec}).Chain(); !errors.Is(err, ErrBrokenChain) {
		t.Fatalf("a record naming itself: %v", err)
	}
}
