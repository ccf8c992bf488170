package parley_test

import (
	"context"
	"fmt"
	"net/http/cookiejar"
	"os"
	"strings"

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
