package e2e

import (
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	"connectrpc.com/connect"

	parleyv1 "github.com/parleyhq/parley/gen/parley/v1"
)

// postgresOnly points every parley process the test starts at a fresh
// PostgreSQL database for all its relational data, messages included (no
// Redis, ClickHouse or CQL store). It skips unless scripts/services.sh's env
// is set.
func postgresOnly(t *testing.T) {
	t.Helper()
	pgURL := os.Getenv("PARLEY_TEST_POSTGRES_URL")
	if pgURL == "" {
		t.Skip("PARLEY_TEST_POSTGRES_URL not set (scripts/services.sh up; eval \"$(scripts/services.sh env)\")")
	}
	t.Setenv("PARLEY_POSTGRES_URL", inDatabase(t, pgURL, freshDatabase(t, pgURL)))
	setSecret(t)
}

// Search over the embedded SQLite store's FTS5 index: titles and messages.
func TestSearchConversations(t *testing.T) {
	searchSuite(t, startServer(t, fastAuth...), true)
}

// Search over PostgreSQL's tsvector indexes, with the messages in
// PostgreSQL too.
func TestSearchConversationsPostgres(t *testing.T) {
	postgresOnly(t)
	searchSuite(t, startServer(t, fastAuth...), true)
}

// With the messages in ScyllaDB/Cassandra (the scale model), search finds
// titles only: the documented limitation.
func TestSearchConversationsScale(t *testing.T) {
	if os.Getenv("PARLEY_TEST_CASSANDRA_HOSTS") == "" {
		t.Skip("PARLEY_TEST_CASSANDRA_HOSTS not set (scripts/services.sh up; eval \"$(scripts/services.sh env)\")")
	}
	scaleMode(t)
	searchSuite(t, startServer(t, fastAuth...), false)
}

func searchSuite(t *testing.T, s *server, messagesIndexed bool) {
	a, b := s.newAccount(t, "finder@example.com"), s.newAccount(t, "other@example.com")
	ctx := ctxTimeout(t, 60*time.Second)
	ac, bc := s.api(protocols[0], cred{cookie: a.Cookie}), s.api(protocols[0], cred{cookie: b.Cookie})
	create := func(c apiClients, title string) string {
		t.Helper()
		res, err := c.Conv.CreateConversation(ctx, connect.NewRequest(&parleyv1.CreateConversationRequest{Title: title}))
		if err != nil {
			t.Fatal(err)
		}
		return res.Msg.GetConversation().GetConversationId()
	}
	search := func(c apiClients, q string, size int32, token string) (*parleyv1.SearchConversationsResponse, error) {
		res, err := c.Conv.SearchConversations(ctx, connect.NewRequest(&parleyv1.SearchConversationsRequest{Query: q, PageSize: size, PageToken: token}))
		if err != nil {
			return nil, err
		}
		return res.Msg, nil
	}
	ids := func(res *parleyv1.SearchConversationsResponse) []string {
		out := []string{}
		for _, r := range res.GetResults() {
			out = append(out, r.GetConversation().GetConversationId())
		}
		return out
	}
	marked := func(r *parleyv1.ConversationSearchResult) string {
		rs := []rune(r.GetSnippet())
		var out strings.Builder
		last := int32(0)
		for _, h := range r.GetHighlights() {
			out.WriteString(string(rs[last:h.GetStart()]) + "«" + string(rs[h.GetStart():h.GetEnd()]) + "»")
			last = h.GetEnd()
		}
		out.WriteString(string(rs[last:]))
		return out.String()
	}

	travel := create(ac, "Travel notes")
	_, _, _ = send(t, ctx, ac, &parleyv1.SendMessageRequest{ConversationId: travel, Parts: textPart("Where do the pelicans of Lisbon nest in winter?")})
	other := create(bc, "Pelicans of Lisbon, privately")
	_, _, _ = send(t, ctx, bc, &parleyv1.SendMessageRequest{ConversationId: other, Parts: textPart("pelicans lisbon secrets")})
	var alpha []string
	for i := range 3 {
		alpha = append([]string{create(ac, "Alphabet soup "+string(rune('A'+i)))}, alpha...)
	}

	// Message text, with the words that matched marked.
	res, err := search(ac, "PELICAN lisbon", 0, "")
	if err != nil {
		t.Fatal(err)
	}
	if messagesIndexed {
		if got := ids(res); !slices.Equal(got, []string{travel}) {
			t.Fatalf("pelican lisbon found %v, want only %s (never the other user's)", got, travel)
		}
		r := res.GetResults()[0]
		if r.GetMessageId() == "" || marked(r) != "Where do the «pelicans» of «Lisbon» nest in winter?" {
			t.Fatalf("hit %q in message %q", marked(r), r.GetMessageId())
		}
		if r.GetConversation().GetTitle() != "Travel notes" {
			t.Fatalf("conversation %v", r.GetConversation())
		}
	} else if len(res.GetResults()) != 0 {
		t.Fatalf("messages in the CQL store are not indexed, yet found %v", ids(res))
	}

	// Titles: every word must match; pages of the caller's conversations,
	// most recently updated first.
	res, err = search(ac, "travel", 0, "")
	if err != nil || !slices.Equal(ids(res), []string{travel}) || res.GetResults()[0].GetMessageId() != "" ||
		marked(res.GetResults()[0]) != "«Travel» notes" {
		t.Fatalf("travel: %v %v", res, err)
	}
	var got []string
	token := ""
	for range 5 {
		res, err := search(ac, "alpha soup", 2, token)
		if err != nil {
			t.Fatal(err)
		}
		got = append(got, ids(res)...)
		if token = res.GetNextPageToken(); token == "" {
			break
		}
	}
	if !slices.Equal(got, alpha) {
		t.Fatalf("paged alpha soup: %v, want %v", got, alpha)
	}
	first, err := search(ac, "alpha", 2, "")
	if err != nil || first.GetNextPageToken() == "" {
		t.Fatalf("first page: %v %v", first, err)
	}
	_, err = search(ac, "soup", 2, first.GetNextPageToken())
	wantCode(t, "a page token of another query", err, connect.CodeInvalidArgument)
	_, err = search(bc, "alpha", 2, first.GetNextPageToken())
	wantCode(t, "a page token of another user", err, connect.CodeInvalidArgument)

	// The other user finds only their own.
	res, err = search(bc, "lisbon", 0, "")
	if err != nil || !slices.Equal(ids(res), []string{other}) {
		t.Fatalf("other user's lisbon: %v %v", res, err)
	}
	res, err = search(bc, "travel", 0, "")
	if err != nil || len(res.GetResults()) != 0 {
		t.Fatalf("other user found %v", ids(res))
	}

	for _, q := range []string{"", "   ", "?!", strings.Repeat("x", 201)} {
		_, err = search(ac, q, 0, "")
		wantCode(t, "query "+q, err, connect.CodeInvalidArgument)
	}
	_, err = search(s.api(protocols[0], cred{}), "travel", 0, "")
	wantCode(t, "search logged out", err, connect.CodeUnauthenticated)
}
