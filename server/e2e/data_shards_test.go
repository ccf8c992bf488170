package e2e

import (
	"errors"
	"fmt"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"connectrpc.com/connect"

	parleyv1 "github.com/parleyhq/parley/gen/parley/v1"
	"github.com/parleyhq/parley/server/apierr"
	"github.com/parleyhq/parley/server/store/postgres"
)

// The users' data spread over two PostgreSQL clusters (--postgres-url with
// two URLs): the test PostgreSQL keeps the accounts and logical shards
// 0–31, scripts/services.sh's synchronous pair (PARLEY_SERVICES_PGSYNC=1)
// shards 32–63. With the pair's primary stopped, the web chat users whose
// shard is there are told unavailable with Retry-After, while the others
// keep chatting and everyone's API key keeps answering (accounts and
// ledger live on the first cluster); once the standby is promoted, the
// users there chat again and find every conversation they had.
func TestDataShardDownFailsOnlyItsUsers(t *testing.T) {
	main := os.Getenv("PARLEY_TEST_POSTGRES_URL")
	primary, standby := os.Getenv("PARLEY_TEST_PGSYNC_PRIMARY_URL"), os.Getenv("PARLEY_TEST_PGSYNC_STANDBY_URL")
	if main == "" || primary == "" || standby == "" {
		t.Skip("PARLEY_TEST_POSTGRES_URL, PARLEY_TEST_PGSYNC_PRIMARY_URL or PARLEY_TEST_PGSYNC_STANDBY_URL not set (PARLEY_SERVICES_PGSYNC=1 scripts/services.sh up)")
	}
	root, _ := filepath.Abs("../..")
	services := func(cmd string) {
		t.Helper()
		c := exec.Command("scripts/services.sh", cmd)
		c.Dir = root
		if out, err := c.CombinedOutput(); err != nil {
			t.Fatalf("services.sh %s: %v\n%s", cmd, err, out)
		}
	}
	t.Cleanup(func() { services("pgsync-reset") })
	p, _ := url.Parse(primary)
	s, _ := url.Parse(standby)
	pair := fmt.Sprintf("postgres://postgres@%s,%s/%s?sslmode=disable&target_session_attrs=read-write", p.Host, s.Host, freshDatabase(t, primary))
	t.Setenv("PARLEY_POSTGRES_URL", inDatabase(t, main, freshDatabase(t, main))+" "+pair)
	setSecret(t)
	gw := startServer(t, fastAuth...)

	// A user on each cluster.
	var on [2]*account
	for i := 0; on[0] == nil || on[1] == nil; i++ {
		if i == 40 {
			t.Fatal("40 sign-ups all hashed to one cluster")
		}
		a := gw.newAccount(t, fmt.Sprintf("shard%d@example.com", i))
		on[postgres.DataShard(a.User.GetUserId())*2/postgres.DataShards] = a
	}
	for _, a := range on {
		gw.topup(t, a, "1")
	}
	convs := [2]string{}
	chat := func(i int, text string) error {
		t.Helper()
		g, err := sendTo(t, ctxTimeout(t, 30*time.Second), gw.api(protocols[0], cred{cookie: on[i].Cookie}),
			&parleyv1.SendMessageRequest{Model: "sim-small", ConversationId: convs[i], Parts: textPart(text), MaxOutputTokens: 8})
		if err == nil && convs[i] == "" {
			convs[i] = g.started.GetConversationId()
		}
		return err
	}
	list := func(i int) ([]*parleyv1.Conversation, error) {
		res, err := gw.api(protocols[0], cred{cookie: on[i].Cookie}).Conv.ListConversations(ctxTimeout(t, 10*time.Second),
			connect.NewRequest(&parleyv1.ListConversationsRequest{}))
		if err != nil {
			return nil, err
		}
		return res.Msg.GetConversations(), nil
	}
	for i := range on {
		for turn := range 2 {
			if err := chat(i, fmt.Sprintf("Turn %d on cluster %d.", turn, i)); err != nil {
				t.Fatalf("cluster %d's user: %v", i, err)
			}
		}
	}

	services("pgsync-stop-primary")
	stopped := time.Now()
	// The second cluster's user: unavailable, with when to come back.
	_, err := list(1)
	var ce *connect.Error
	if !errors.As(err, &ce) || ce.Code() != connect.CodeUnavailable || ce.Meta().Get("Retry-After") == "" {
		t.Fatalf("listing on the stopped cluster: %v, want unavailable with Retry-After", err)
	}
	if d, ok := apierr.RetryAfter(err); !ok || d <= 0 {
		t.Fatalf("no retry delay in %v", err)
	}
	if err := chat(1, "Anyone there?"); connect.CodeOf(err) != connect.CodeUnavailable {
		t.Fatalf("chatting on the stopped cluster: %v, want unavailable", err)
	}
	// The first cluster's user chats on; everyone's key answers.
	if err := chat(0, "Still here?"); err != nil {
		t.Fatalf("the first cluster's user while the second is down: %v", err)
	}
	if l, err := list(0); err != nil || len(l) != 1 {
		t.Fatalf("the first cluster's user lists %d conversations (%v)", len(l), err)
	}
	for i := range on {
		if _, err := gw.api(protocols[0], cred{bearer: on[i].Key}).Chat.Complete(ctxTimeout(t, 20*time.Second), connect.NewRequest(&parleyv1.CompleteRequest{
			Model: "sim-small", Messages: userText("An API call."), MaxOutputTokens: 6})); err != nil {
			t.Fatalf("cluster %d's user's API key while the second cluster is down: %v", i, err)
		}
	}

	services("pgsync-promote")
	var back []*parleyv1.Conversation
	waitFor(t, 60*time.Second, "the second cluster's user served from the promoted standby", func() bool {
		back, err = list(1)
		return err == nil
	})
	t.Logf("the second cluster's users were refused for %.1f s, until the standby was promoted", time.Since(stopped).Seconds())
	if len(back) != 1 || back[0].GetConversationId() != convs[1] {
		t.Fatalf("after the promotion the user lists %v, want its conversation %s", back, convs[1])
	}
	if err := chat(1, "Back again."); err != nil {
		t.Fatalf("chatting after the promotion: %v", err)
	}
	msgs, err := gw.api(protocols[0], cred{cookie: on[1].Cookie}).Conv.ListMessages(ctxTimeout(t, 10*time.Second),
		connect.NewRequest(&parleyv1.ListMessagesRequest{ConversationId: convs[1]}))
	if err != nil || len(msgs.Msg.GetMessages()) != 6 {
		t.Fatalf("after the promotion the conversation holds %d messages (%v), want the 3 turns' 6", len(msgs.Msg.GetMessages()), err)
	}
}

// A logical data shard moved while two gateways serve its user's chat:
// `parley admin move-data-shard` moves the user's shard to the other
// cluster between turns through both gateways; the gateways find it there
// by themselves (the old cluster fences the shard), and the conversation
// holds every turn, once, read through either gateway.
func TestMoveDataShardThroughGateways(t *testing.T) {
	main := os.Getenv("PARLEY_TEST_POSTGRES_URL")
	if main == "" {
		t.Skip("PARLEY_TEST_POSTGRES_URL not set (scripts/services.sh up; eval \"$(scripts/services.sh env)\")")
	}
	scaleMode(t)
	t.Setenv("PARLEY_POSTGRES_URL", inDatabase(t, main, freshDatabase(t, main))+" "+inDatabase(t, main, freshDatabase(t, main)))
	gw := []*server{startServer(t, fastAuth...), startServer(t, fastAuth...)}
	a := gw[0].newAccount(t, "moving-data@example.com")
	gw[0].topup(t, a, "1")
	conv, turns := "", 0
	chat := func(g *server) {
		t.Helper()
		res, err := sendTo(t, ctxTimeout(t, 30*time.Second), g.api(protocols[0], cred{cookie: a.Cookie}),
			&parleyv1.SendMessageRequest{Model: "sim-small", ConversationId: conv, Parts: textPart(fmt.Sprintf("Turn %d.", turns)), MaxOutputTokens: 8})
		if err != nil {
			t.Fatalf("turn %d: %v", turns, err)
		}
		conv = res.started.GetConversationId()
		turns++
	}
	for range 2 {
		chat(gw[0])
		chat(gw[1])
	}
	shard := postgres.DataShard(a.User.GetUserId())
	to := 1 - shard*2/postgres.DataShards
	out := gw[0].admin(t, "move-data-shard", "--shard", fmt.Sprint(shard), "--to", fmt.Sprint(to))
	t.Log(strings.TrimSpace(out))
	if !strings.Contains(out, fmt.Sprintf("moved from cluster %d to %d: users: 1,", 1-to, to)) {
		t.Fatalf("move-data-shard said %q", out)
	}
	for range 2 {
		chat(gw[0])
		chat(gw[1])
	}
	for i, g := range gw {
		c := g.api(protocols[0], cred{cookie: a.Cookie})
		msgs, err := c.Conv.ListMessages(ctxTimeout(t, 10*time.Second), connect.NewRequest(&parleyv1.ListMessagesRequest{ConversationId: conv}))
		if err != nil || len(msgs.Msg.GetMessages()) != 2*turns {
			t.Fatalf("gateway %d: the conversation holds %d messages (%v), want the %d turns' %d", i+1, len(msgs.Msg.GetMessages()), err, turns, 2*turns)
		}
		list, err := c.Conv.ListConversations(ctxTimeout(t, 10*time.Second), connect.NewRequest(&parleyv1.ListConversationsRequest{}))
		if err != nil || len(list.Msg.GetConversations()) != 1 {
			t.Fatalf("gateway %d: %d conversations (%v), want 1", i+1, len(list.Msg.GetConversations()), err)
		}
	}
}
