package e2e

import (
	"strings"
	"testing"
	"time"

	"connectrpc.com/connect"

	parleyv1 "github.com/parleyhq/parley/gen/parley/v1"
)

// ChatService's file_search over Connect and gRPC: the passages of the
// caller's vector store reach the model, the answer's [n] markers come back
// as citation parts (whole and streamed), and another user's store is not
// found.
func TestChatFileSearchCites(t *testing.T) {
	s := startServer(t, fastAuth...)
	a := s.newAccount(t, "chat-fs@example.com")
	s.topup(t, a, "1")
	b := s.newAccount(t, "chat-fs-other@example.com")
	s.topup(t, b, "1")

	text := sentences("harbour", 60) + "The lighthouse keeper's cat is named Bartholomew.\n" + sentences("orchard", 60)
	f := uploadFile(t, s, a.Key, map[string]string{"purpose": "assistants"}, "keeper.txt", []byte(text))
	var vs vectorStoreJSON
	vectorCall(t, s, a.Key, "POST", "/v1/vector_stores", map[string]any{"name": "keeper", "file_ids": []string{f.ID}}, &vs)
	if got := waitIngested(t, s, a.Key, vs.ID, f.ID, 20*time.Second); got.Status != "completed" {
		t.Fatalf("the file after ingestion: %+v", got)
	}
	question := []*parleyv1.Message{{Role: parleyv1.Role_ROLE_USER, Parts: []*parleyv1.Part{
		{Kind: &parleyv1.Part_Text{Text: "What is the lighthouse keeper's cat named?"}}}}}
	search := &parleyv1.FileSearch{VectorStoreIds: []string{vs.ID}, MaxNumResults: 3}

	for _, p := range protocols {
		t.Run(p.name, func(t *testing.T) {
			c := s.api(p, cred{bearer: a.Key})
			res, err := c.Chat.Complete(t.Context(), connect.NewRequest(&parleyv1.CompleteRequest{
				Model: "sim-small", Messages: question, FileSearch: search, MaxOutputTokens: 400}))
			if err != nil {
				t.Fatal(err)
			}
			var answer string
			var cites []*parleyv1.Citation
			for _, part := range res.Msg.GetMessage().GetParts() {
				switch {
				case part.GetCitation() != nil:
					cites = append(cites, part.GetCitation())
				case len(cites) > 0:
					t.Fatalf("a part after the citations: %v", part)
				default:
					answer += part.GetText()
				}
			}
			if !strings.Contains(answer, "[1]") || len(cites) == 0 {
				t.Fatalf("answer %q with citations %v: want [1] cited", answer, cites)
			}
			found := false
			for _, c := range cites {
				if c.GetFileId() != f.ID || c.GetFilename() != "keeper.txt" || c.GetScore() <= 0 || c.GetScore() > 1 {
					t.Fatalf("citation %v: want keeper.txt (%s) with a score in (0, 1]", c, f.ID)
				}
				found = found || strings.Contains(c.GetQuote(), "Bartholomew")
			}
			if cites[0].GetNumber() != 1 || !found {
				t.Fatalf("citations %v: want [1] first and the passage naming the cat quoted", cites)
			}
			if res.Msg.GetUsage().GetPromptTokens() < int64(len("Bartholomew")) {
				t.Fatalf("prompt of %d tokens: the passages are not in it", res.Msg.GetUsage().GetPromptTokens())
			}

			// Streamed: the finished event carries the same citations.
			stream, err := c.Chat.CompleteStream(t.Context(), connect.NewRequest(&parleyv1.CompleteStreamRequest{
				Model: "sim-small", Messages: question, FileSearch: search, MaxOutputTokens: 400}))
			if err != nil {
				t.Fatal(err)
			}
			var streamed []*parleyv1.Citation
			for stream.Receive() {
				if fin := stream.Msg().GetEvent().GetFinished(); fin != nil {
					streamed = fin.GetCitations()
				}
			}
			if err := stream.Err(); err != nil {
				t.Fatal(err)
			}
			if len(streamed) == 0 || streamed[0].GetFileId() != f.ID {
				t.Fatalf("streamed citations %v", streamed)
			}

			// Another user's store is not found; a bad filter names its field.
			other := s.api(p, cred{bearer: b.Key})
			_, err = other.Chat.Complete(t.Context(), connect.NewRequest(&parleyv1.CompleteRequest{
				Model: "sim-small", Messages: question, FileSearch: search}))
			wantCode(t, "another user's vector store", err, connect.CodeNotFound)
			_, err = c.Chat.Complete(t.Context(), connect.NewRequest(&parleyv1.CompleteRequest{
				Model: "sim-small", Messages: question, FileSearch: &parleyv1.FileSearch{VectorStoreIds: []string{vs.ID}, MaxNumResults: 99}}))
			wantField(t, "max_num_results 99", err, connect.CodeInvalidArgument, "file_search.max_num_results")
			_, err = c.Chat.Complete(t.Context(), connect.NewRequest(&parleyv1.CompleteRequest{
				Model: "sim-small", Messages: question, FileSearch: &parleyv1.FileSearch{}}))
			wantField(t, "no vector store", err, connect.CodeInvalidArgument, "file_search.vector_store_ids")
		})
	}
}
