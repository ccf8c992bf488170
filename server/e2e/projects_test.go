package e2e

import (
	"slices"
	"strings"
	"testing"
	"time"

	"connectrpc.com/connect"
	"google.golang.org/protobuf/proto"

	parleyv1 "github.com/parleyhq/parley/gen/parley/v1"
)

// A web user's project over Connect and gRPC, as the web app drives it:
// create the project, upload a file with FileService and add it to the
// project's store with VectorStoreService, wait for the indexing, and chat in
// the project. The answer cites the file, the citations are saved with the
// message, indexing charges nothing to the balance, another user reaches
// none of it, and deleting the project takes its chats and its store.
func TestProjectChatsCiteTheirFiles(t *testing.T) {
	s := startServer(t, fastAuth...)
	a := s.newAccount(t, "projects@example.com")
	s.topup(t, a, "1")
	b := s.newAccount(t, "projects-other@example.com")

	for _, p := range protocols {
		t.Run(p.name, func(t *testing.T) {
			ctx := ctxTimeout(t, 90*time.Second)
			c := s.api(p, cred{cookie: a.Cookie})
			other := s.api(p, cred{cookie: b.Cookie})

			created, err := c.Projects.CreateProject(ctx, connect.NewRequest(&parleyv1.CreateProjectRequest{
				Name: "  Lighthouse " + p.name + " ", Instructions: "Answer as the keeper's logbook would."}))
			if err != nil {
				t.Fatal(err)
			}
			proj := created.Msg.GetProject()
			if proj.GetName() != "Lighthouse "+p.name || proj.GetVectorStoreId() == "" || proj.GetFileCounts().GetTotal() != 0 {
				t.Fatalf("new project %v: want the name trimmed, a store and no files", proj)
			}

			// The file goes in through FileService and the project's store.
			text := sentences("harbour", 60) + "The lighthouse keeper's cat is named Bartholomew.\n" + sentences("orchard", 60)
			file, err := c.Files.CreateFile(ctx, connect.NewRequest(&parleyv1.CreateFileRequest{
				Filename: "keeper.txt", Purpose: "assistants", Content: []byte(text)}))
			if err != nil {
				t.Fatal(err)
			}
			fileID := file.Msg.GetFile().GetFileId()
			if _, err := c.Stores.AddFiles(ctx, connect.NewRequest(&parleyv1.AddFilesRequest{
				VectorStoreId: proj.GetVectorStoreId(), Files: []*parleyv1.NewVectorStoreFile{{FileId: fileID}}})); err != nil {
				t.Fatal(err)
			}
			waitFor(t, 30*time.Second, "the project's file to be indexed", func() bool {
				got, err := c.Stores.GetVectorStoreFile(ctx, connect.NewRequest(&parleyv1.GetVectorStoreFileRequest{
					VectorStoreId: proj.GetVectorStoreId(), FileId: fileID}))
				if err != nil {
					t.Fatal(err)
				}
				switch got.Msg.GetFile().GetStatus() {
				case parleyv1.VectorStoreFileStatus_VECTOR_STORE_FILE_STATUS_IN_PROGRESS:
					return false
				case parleyv1.VectorStoreFileStatus_VECTOR_STORE_FILE_STATUS_COMPLETED:
					return true
				}
				t.Fatalf("the file's indexing ended %v", got.Msg.GetFile())
				return true
			})
			got, err := c.Projects.GetProject(ctx, connect.NewRequest(&parleyv1.GetProjectRequest{ProjectId: proj.GetProjectId()}))
			if err != nil {
				t.Fatal(err)
			}
			if got.Msg.GetProject().GetFileCounts().GetCompleted() != 1 || got.Msg.GetProject().GetUsageBytes() <= 0 {
				t.Fatalf("the project after indexing: %v", got.Msg.GetProject())
			}
			// The web channel's indexing counts against the tier, not the balance.
			bal, err := c.Billing.GetBalance(ctx, connect.NewRequest(&parleyv1.GetBalanceRequest{}))
			if err != nil {
				t.Fatal(err)
			}
			if bal.Msg.GetBalanceNanos() != 1e9 || bal.Msg.GetReservedNanos() != 0 {
				t.Fatalf("balance after indexing a project's file: %v, want the topped-up $1 untouched", bal.Msg)
			}

			// A chat started in the project is answered from its file, and cites it.
			st, answer, fin := send(t, ctx, c, &parleyv1.SendMessageRequest{Model: "sim-small",
				Parts: textPart("What is the lighthouse keeper's cat named?"), ProjectId: proj.GetProjectId(), MaxOutputTokens: 400})
			convID := st.GetConversationId()
			if !strings.Contains(answer, "[1]") || len(fin.GetCitations()) == 0 {
				t.Fatalf("answer %q with citations %v: want [1] cited", answer, fin.GetCitations())
			}
			cite := fin.GetCitations()[0]
			if cite.GetNumber() != 1 || cite.GetFileId() != fileID || cite.GetFilename() != "keeper.txt" || cite.GetScore() <= 0 || cite.GetScore() > 1 {
				t.Fatalf("citation %v: want [1] from keeper.txt (%s) with a score in (0, 1]", cite, fileID)
			}
			quoted := false
			for _, c := range fin.GetCitations() {
				quoted = quoted || strings.Contains(c.GetQuote(), "Bartholomew")
			}
			if !quoted {
				t.Fatalf("citations %v: none quotes the passage naming the cat", fin.GetCitations())
			}
			conv, err := c.Conv.GetConversation(ctx, connect.NewRequest(&parleyv1.GetConversationRequest{ConversationId: convID}))
			if err != nil {
				t.Fatal(err)
			}
			if conv.Msg.GetConversation().GetProjectId() != proj.GetProjectId() {
				t.Fatalf("conversation %v: want it in the project", conv.Msg.GetConversation())
			}
			// The citations are saved: a reload shows them.
			msgs, err := c.Conv.ListMessages(ctx, connect.NewRequest(&parleyv1.ListMessagesRequest{ConversationId: convID}))
			if err != nil {
				t.Fatal(err)
			}
			var saved []*parleyv1.Citation
			for _, m := range msgs.Msg.GetMessages() {
				for _, part := range m.GetParts() {
					if part.GetCitation() != nil {
						saved = append(saved, part.GetCitation())
					}
				}
			}
			if len(saved) != len(fin.GetCitations()) || saved[0].GetFileId() != fileID || saved[0].GetQuote() != cite.GetQuote() {
				t.Fatalf("saved citations %v, streamed %v", saved, fin.GetCitations())
			}
			// A second chat made with CreateConversation is in the project too,
			// and the project's listing shows both and nothing else.
			second, err := c.Conv.CreateConversation(ctx, connect.NewRequest(&parleyv1.CreateConversationRequest{
				Title: "second", ProjectId: proj.GetProjectId()}))
			if err != nil {
				t.Fatal(err)
			}
			list, err := c.Conv.ListConversations(ctx, connect.NewRequest(&parleyv1.ListConversationsRequest{ProjectId: proj.GetProjectId()}))
			if err != nil {
				t.Fatal(err)
			}
			if ids := conversationIDs(list.Msg.GetConversations()); len(ids) != 2 || !slices.Contains(ids, convID) || !slices.Contains(ids, second.Msg.GetConversation().GetConversationId()) {
				t.Fatalf("the project's conversations %v: want %s and the second", ids, convID)
			}
			// Its project cannot change.
			_, err = sendTo(t, ctx, c, &parleyv1.SendMessageRequest{Model: "sim-small", Parts: textPart("move"),
				ConversationId: convID, ProjectId: "0193e7a0-0000-7000-8000-000000000000"})
			wantField(t, "moving a chat to another project", err, connect.CodeInvalidArgument, "project_id")

			// Another user reaches none of it.
			pid := proj.GetProjectId()
			_, err = other.Projects.GetProject(ctx, connect.NewRequest(&parleyv1.GetProjectRequest{ProjectId: pid}))
			wantCode(t, "GetProject of another user's project", err, connect.CodeNotFound)
			_, err = other.Projects.UpdateProject(ctx, connect.NewRequest(&parleyv1.UpdateProjectRequest{ProjectId: pid, Name: proto.String("mine")}))
			wantCode(t, "UpdateProject of another user's project", err, connect.CodeNotFound)
			_, err = other.Projects.DeleteProject(ctx, connect.NewRequest(&parleyv1.DeleteProjectRequest{ProjectId: pid}))
			wantCode(t, "DeleteProject of another user's project", err, connect.CodeNotFound)
			theirs, err := other.Projects.ListProjects(ctx, connect.NewRequest(&parleyv1.ListProjectsRequest{}))
			if err != nil || len(theirs.Msg.GetProjects()) != 0 {
				t.Fatalf("another user's ListProjects: %v %v", theirs, err)
			}
			_, err = other.Conv.CreateConversation(ctx, connect.NewRequest(&parleyv1.CreateConversationRequest{ProjectId: pid}))
			wantField(t, "CreateConversation in another user's project", err, connect.CodeInvalidArgument, "project_id")
			_, err = sendTo(t, ctx, other, &parleyv1.SendMessageRequest{Model: "sim-small", Parts: textPart("What is the cat named?"), ProjectId: pid})
			wantField(t, "SendMessage in another user's project", err, connect.CodeInvalidArgument, "project_id")
			_, err = other.Stores.AddFiles(ctx, connect.NewRequest(&parleyv1.AddFilesRequest{
				VectorStoreId: proj.GetVectorStoreId(), Files: []*parleyv1.NewVectorStoreFile{{FileId: fileID}}}))
			wantCode(t, "AddFiles to another user's project store", err, connect.CodeNotFound)
			_, err = other.Stores.SearchVectorStores(ctx, connect.NewRequest(&parleyv1.SearchVectorStoresRequest{
				VectorStoreIds: []string{proj.GetVectorStoreId()}, Query: "cat"}))
			wantCode(t, "SearchVectorStores on another user's project store", err, connect.CodeNotFound)
			others, err := other.Conv.ListConversations(ctx, connect.NewRequest(&parleyv1.ListConversationsRequest{ProjectId: pid}))
			if err != nil || len(others.Msg.GetConversations()) != 0 {
				t.Fatalf("another user's listing of the project's chats: %v %v", others, err)
			}

			// Bad input names its field and leaves nothing.
			for _, tc := range []struct {
				what  string
				req   *parleyv1.CreateProjectRequest
				field string
			}{
				{"no name", &parleyv1.CreateProjectRequest{Name: "   "}, "name"},
				{"a 101-character name", &parleyv1.CreateProjectRequest{Name: strings.Repeat("n", 101)}, "name"},
				{"instructions over 8000 characters", &parleyv1.CreateProjectRequest{Name: "x", Instructions: strings.Repeat("i", 8001)}, "instructions"},
			} {
				_, err := c.Projects.CreateProject(ctx, connect.NewRequest(tc.req))
				wantField(t, tc.what, err, connect.CodeInvalidArgument, tc.field)
			}
			_, err = c.Projects.UpdateProject(ctx, connect.NewRequest(&parleyv1.UpdateProjectRequest{ProjectId: pid}))
			wantField(t, "an update that changes nothing", err, connect.CodeInvalidArgument, "name")
			_, err = c.Projects.GetProject(ctx, connect.NewRequest(&parleyv1.GetProjectRequest{}))
			wantField(t, "GetProject without an id", err, connect.CodeInvalidArgument, "project_id")
			_, err = c.Conv.CreateConversation(ctx, connect.NewRequest(&parleyv1.CreateConversationRequest{ProjectId: "no-such-project"}))
			wantField(t, "CreateConversation in no project", err, connect.CodeInvalidArgument, "project_id")
			mine, err := c.Projects.ListProjects(ctx, connect.NewRequest(&parleyv1.ListProjectsRequest{}))
			if err != nil {
				t.Fatal(err)
			}
			found := 0
			for _, q := range mine.Msg.GetProjects() {
				if strings.HasPrefix(q.GetName(), "Lighthouse "+p.name) {
					found++
				}
			}
			if found != 1 {
				t.Fatalf("projects %v: want the one project, the refused ones left nothing", mine.Msg.GetProjects())
			}

			// Renaming keeps the store; deleting takes the chats and the store,
			// and leaves the file in FileService.
			renamed, err := c.Projects.UpdateProject(ctx, connect.NewRequest(&parleyv1.UpdateProjectRequest{ProjectId: pid, Name: proto.String("Keeper " + p.name)}))
			if err != nil {
				t.Fatal(err)
			}
			if r := renamed.Msg.GetProject(); r.GetName() != "Keeper "+p.name || r.GetInstructions() != proj.GetInstructions() || r.GetVectorStoreId() != proj.GetVectorStoreId() {
				t.Fatalf("renamed project %v", r)
			}
			if _, err := c.Projects.DeleteProject(ctx, connect.NewRequest(&parleyv1.DeleteProjectRequest{ProjectId: pid})); err != nil {
				t.Fatal(err)
			}
			_, err = c.Projects.GetProject(ctx, connect.NewRequest(&parleyv1.GetProjectRequest{ProjectId: pid}))
			wantCode(t, "GetProject after delete", err, connect.CodeNotFound)
			_, err = c.Conv.GetConversation(ctx, connect.NewRequest(&parleyv1.GetConversationRequest{ConversationId: convID}))
			wantCode(t, "a deleted project's chat", err, connect.CodeNotFound)
			_, err = c.Conv.GetConversation(ctx, connect.NewRequest(&parleyv1.GetConversationRequest{ConversationId: second.Msg.GetConversation().GetConversationId()}))
			wantCode(t, "a deleted project's second chat", err, connect.CodeNotFound)
			_, err = c.Stores.GetVectorStore(ctx, connect.NewRequest(&parleyv1.GetVectorStoreRequest{VectorStoreId: proj.GetVectorStoreId()}))
			wantCode(t, "a deleted project's store", err, connect.CodeNotFound)
			if _, err := c.Files.GetFile(ctx, connect.NewRequest(&parleyv1.GetFileRequest{FileId: fileID})); err != nil {
				t.Fatalf("the file after its project was deleted: %v", err)
			}
			_, err = c.Projects.DeleteProject(ctx, connect.NewRequest(&parleyv1.DeleteProjectRequest{ProjectId: pid}))
			wantCode(t, "deleting it again", err, connect.CodeNotFound)
		})
	}
}

func conversationIDs(cs []*parleyv1.Conversation) []string {
	ids := make([]string, 0, len(cs))
	for _, c := range cs {
		ids = append(ids, c.GetConversationId())
	}
	return ids
}
