package parley_test

import (
	"context"
	"fmt"
	"net/http/cookiejar"
	"os"
	"strings"
	"time"

	"connectrpc.com/connect"

	"github.com/parleyhq/parley/clients/go"
	parleyv1 "github.com/parleyhq/parley/gen/parley/v1"
)

// The README's streaming example.
func Example() {
	ctx := context.Background()
	c := parley.New(os.Getenv("PARLEY_URL"), parley.WithAPIKey(os.Getenv("PARLEY_API_KEY")))
	var answer strings.Builder
	for ev, err := range c.CompleteStream(ctx, parley.Prompt("sim-small", "Tell me a story.")) {
		if err != nil {
			panic(err)
		}
		answer.WriteString(ev.GetDelta().GetText()) // print it here as it comes
		if f := ev.GetFinished(); f != nil {
			fmt.Println(f.GetFinishReason(), answer.Len() > 0)
		}
	}
	// Output: FINISH_REASON_STOP true
}

// Files: store a document for later use, list it, read it back, and delete
// it. Its id is also an attachment id, usable in any message.
func ExampleClient_files() {
	ctx := context.Background()
	c := parley.New(os.Getenv("PARLEY_URL"), parley.WithAPIKey(os.Getenv("PARLEY_API_KEY")))
	created, err := c.Files.CreateFile(ctx, connect.NewRequest(&parleyv1.CreateFileRequest{
		Filename: "notes.md", Purpose: "user_data", Content: []byte("# Notes\nThe launch is on Tuesday.\n"),
	}))
	if err != nil {
		panic(err)
	}
	id := created.Msg.GetFile().GetFileId()
	list, _ := c.Files.ListFiles(ctx, connect.NewRequest(&parleyv1.ListFilesRequest{Purpose: "user_data"}))
	content, _ := c.Files.GetFileContent(ctx, connect.NewRequest(&parleyv1.GetFileContentRequest{FileId: id}))
	fmt.Println(created.Msg.GetFile().GetStatus(), list.Msg.GetFiles()[0].GetFileId() == id, strings.Contains(string(content.Msg.GetContent()), "Tuesday"))
	if _, err := c.Files.DeleteFile(ctx, connect.NewRequest(&parleyv1.DeleteFileRequest{FileId: id})); err != nil {
		panic(err)
	}
	// Output: ATTACHMENT_STATUS_READY true true
}

// Vector stores: index a file, wait for its ingestion, and search it
// (hybrid: vector similarity and BM25, fused).
func ExampleClient_vectorStores() {
	ctx := context.Background()
	c := parley.New(os.Getenv("PARLEY_URL"), parley.WithAPIKey(os.Getenv("PARLEY_API_KEY")))
	f, err := c.Files.CreateFile(ctx, connect.NewRequest(&parleyv1.CreateFileRequest{
		Filename: "handbook.md", Purpose: "assistants", Content: []byte("# Leave\nEvery employee gets 27 days of paid leave a year.\n"),
	}))
	if err != nil {
		panic(err)
	}
	vs, err := c.VectorStores.CreateVectorStore(ctx, connect.NewRequest(&parleyv1.CreateVectorStoreRequest{
		Name: "handbook", FileIds: []string{f.Msg.GetFile().GetFileId()},
	}))
	if err != nil {
		panic(err)
	}
	store := vs.Msg.GetVectorStore()
	for store.GetStatus() == parleyv1.VectorStoreStatus_VECTOR_STORE_STATUS_IN_PROGRESS {
		time.Sleep(100 * time.Millisecond)
		got, err := c.VectorStores.GetVectorStore(ctx, connect.NewRequest(&parleyv1.GetVectorStoreRequest{VectorStoreId: store.GetVectorStoreId()}))
		if err != nil {
			panic(err)
		}
		store = got.Msg.GetVectorStore()
	}
	found, err := c.VectorStores.SearchVectorStores(ctx, connect.NewRequest(&parleyv1.SearchVectorStoresRequest{
		VectorStoreIds: []string{store.GetVectorStoreId()}, Query: "how many days of leave?", MaxNumResults: 3,
	}))
	if err != nil {
		panic(err)
	}
	top := found.Msg.GetResults()[0]
	fmt.Println(store.GetFileCounts().GetCompleted(), top.GetFilename(), strings.Contains(top.GetText(), "27 days"))
	if _, err := c.VectorStores.DeleteVectorStore(ctx, connect.NewRequest(&parleyv1.DeleteVectorStoreRequest{VectorStoreId: store.GetVectorStoreId()})); err != nil {
		panic(err)
	}
	// Output: 1 handbook.md true
}

// A project with a file, indexed for its chats, and a memory.
func ExampleClient_projects() {
	ctx := context.Background()
	c := parley.New(os.Getenv("PARLEY_URL"), parley.WithAPIKey(os.Getenv("PARLEY_API_KEY")))
	p, err := c.Projects.CreateProject(ctx, connect.NewRequest(&parleyv1.CreateProjectRequest{
		Name: "Thesis", Instructions: "Cite the sources.",
	}))
	if err != nil {
		panic(err)
	}
	project := p.Msg.GetProject()
	f, err := c.Files.CreateFile(ctx, connect.NewRequest(&parleyv1.CreateFileRequest{
		Filename: "notes.md", Purpose: "assistants", Content: []byte("# Notes\nThe survey ran from March to May.\n"),
	}))
	if err != nil {
		panic(err)
	}
	if _, err := c.VectorStores.AddFiles(ctx, connect.NewRequest(&parleyv1.AddFilesRequest{
		VectorStoreId: project.GetVectorStoreId(), Files: []*parleyv1.NewVectorStoreFile{{FileId: f.Msg.GetFile().GetFileId()}},
	})); err != nil {
		panic(err)
	}
	for project.GetFileCounts().GetCompleted()+project.GetFileCounts().GetFailed() == 0 {
		time.Sleep(100 * time.Millisecond)
		got, err := c.Projects.GetProject(ctx, connect.NewRequest(&parleyv1.GetProjectRequest{ProjectId: project.GetProjectId()}))
		if err != nil {
			panic(err)
		}
		project = got.Msg.GetProject()
	}
	m, err := c.Memories.CreateMemory(ctx, connect.NewRequest(&parleyv1.CreateMemoryRequest{Text: "I am vegetarian."}))
	if err != nil {
		panic(err)
	}
	fmt.Println(project.GetName(), project.GetFileCounts().GetCompleted(), m.Msg.GetMemory().GetText())
	if _, err := c.Memories.DeleteMemory(ctx, connect.NewRequest(&parleyv1.DeleteMemoryRequest{MemoryId: m.Msg.GetMemory().GetMemoryId()})); err != nil {
		panic(err)
	}
	if _, err := c.Projects.DeleteProject(ctx, connect.NewRequest(&parleyv1.DeleteProjectRequest{ProjectId: project.GetProjectId()})); err != nil {
		panic(err)
	}
	// Output: Thesis 1 I am vegetarian.
}

// A tool loop: the model calls get_weather, the program runs it and sends
// the result back, and the model answers with it.
func ExampleFunction() {
	ctx := context.Background()
	c := parley.New(os.Getenv("PARLEY_URL"), parley.WithAPIKey(os.Getenv("PARLEY_API_KEY")))
	weather, _ := parley.Function("get_weather", "Current weather in a city", map[string]any{
		"type":       "object",
		"properties": map[string]any{"location": map[string]any{"type": "string"}},
		"required":   []any{"location"},
	})
	req := parley.Prompt("sim-small", "What is the weather in Paris? Use get_weather.")
	req.Tools = []*parleyv1.Tool{weather}
	for {
		answer, fin, err := parley.CollectMessage(c.CompleteStream(ctx, req))
		if err != nil {
			panic(err)
		}
		calls := parley.ToolCalls(answer)
		if len(calls) == 0 {
			fmt.Println(fin.GetFinishReason(), strings.Contains(answer.GetParts()[0].GetText(), "21 °C and sunny"))
			return
		}
		req.Messages = append(req.Messages, answer)
		for _, call := range calls {
			fmt.Println("calling", call.GetName()) // run it with call.GetArguments(), a JSON object
			req.Messages = append(req.Messages, parley.ToolResult(call.GetId(), "21 °C and sunny"))
		}
	}
	// Output:
	// calling get_weather
	// FINISH_REASON_STOP true
}

// A browser-style session: the cookie jar keeps Session_id.
func ExampleWithCookieJar() {
	ctx := context.Background()
	jar, _ := cookiejar.New(nil)
	c := parley.New(os.Getenv("PARLEY_URL"), parley.WithCookieJar(jar), parley.WithProtocol(parley.GRPCWeb))
	_, err := c.Auth.SignUp(ctx, connect.NewRequest(&parleyv1.SignUpRequest{Email: "jar@example.com", Password: "jar-password-123"}))
	if err != nil {
		panic(err)
	}
	text, fin, err := parley.Collect(c.SendMessage(ctx, &parleyv1.SendMessageRequest{
		Model: "sim-small", Parts: []*parleyv1.Part{parley.Text("Hello!")},
	}))
	fmt.Println(err, fin.GetFinishReason(), len(text) > 0)
	// Output: <nil> FINISH_REASON_STOP true
}

// Errors carry their Connect code and details.
func ExampleRetryAfter() {
	c := parley.New(os.Getenv("PARLEY_URL"), parley.WithAPIKey("pk_not-a-key"))
	_, err := c.Models.ListModels(context.Background(), connect.NewRequest(&parleyv1.ListModelsRequest{}))
	_, retry := parley.RetryAfter(err)
	fmt.Println(parley.Code(err), retry)
	// Output: unauthenticated false
}

// Batches: a JSONL file of requests, run on the GPUs' idle capacity at the
// batch price; the output file has one line per answered custom_id, as
// OpenAI writes it.
func ExampleClient_batches() {
	ctx := context.Background()
	c := parley.New(os.Getenv("PARLEY_URL"), parley.WithAPIKey(os.Getenv("PARLEY_API_KEY")))
	var lines strings.Builder
	for i := range 3 {
		fmt.Fprintf(&lines, `{"custom_id":"q%d","method":"POST","url":"/v1/chat/completions","body":{"model":"sim-small","max_tokens":8,"messages":[{"role":"user","content":"Question %d"}]}}`+"\n", i, i)
	}
	f, err := c.Files.CreateFile(ctx, connect.NewRequest(&parleyv1.CreateFileRequest{
		Filename: "requests.jsonl", Purpose: "batch", Content: []byte(lines.String()),
	}))
	if err != nil {
		panic(err)
	}
	res, err := c.Batches.CreateBatch(ctx, connect.NewRequest(&parleyv1.CreateBatchRequest{
		InputFileId: f.Msg.GetFile().GetFileId(), Endpoint: "/v1/chat/completions",
	}))
	if err != nil {
		panic(err)
	}
	b := res.Msg.GetBatch()
	for b.GetStatus() == parleyv1.BatchStatus_BATCH_STATUS_VALIDATING || b.GetStatus() == parleyv1.BatchStatus_BATCH_STATUS_IN_PROGRESS ||
		b.GetStatus() == parleyv1.BatchStatus_BATCH_STATUS_FINALIZING {
		time.Sleep(100 * time.Millisecond)
		got, err := c.Batches.GetBatch(ctx, connect.NewRequest(&parleyv1.GetBatchRequest{BatchId: b.GetId()}))
		if err != nil {
			panic(err)
		}
		b = got.Msg.GetBatch()
	}
	out, _ := c.Files.GetFileContent(ctx, connect.NewRequest(&parleyv1.GetFileContentRequest{FileId: b.GetOutputFileId()}))
	fmt.Println(b.GetStatus(), b.GetRequestCounts().GetCompleted(), strings.Count(string(out.Msg.GetContent()), `"status_code":200`))
	// Output: BATCH_STATUS_COMPLETED 3 3
}
