package e2e

import (
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"connectrpc.com/connect"
	"google.golang.org/protobuf/encoding/protojson"

	parleyv1 "github.com/parleyhq/parley/gen/parley/v1"
)

// A share link is read with no session, shows the conversation as it was
// shared and nothing else of the owner's, can't be made for another user's
// conversation, and is gone after Unshare.
func TestShareConversation(t *testing.T) {
	s := startServer(t, fastAuth...)
	a, b := s.newAccount(t, "sharer@example.com"), s.newAccount(t, "nosy@example.com")
	ctx := ctxTimeout(t, 60*time.Second)
	ac, bc, anon := s.api(protocols[0], cred{cookie: a.Cookie}), s.api(protocols[0], cred{cookie: b.Cookie}), s.api(protocols[0], cred{})
	att := s.upload(t, s.attachments(protocols[0], cred{cookie: a.Cookie}), "notes.txt", "text/plain", []byte("private attachment body"))

	conv, err := ac.Conv.CreateConversation(ctx, connect.NewRequest(&parleyv1.CreateConversationRequest{Title: "Shared plans"}))
	if err != nil {
		t.Fatal(err)
	}
	id := conv.Msg.GetConversation().GetConversationId()
	_, answer, _ := send(t, ctx, ac, &parleyv1.SendMessageRequest{ConversationId: id,
		Parts: append(textPart("What should we cook?"), attachmentPart(att.GetAttachmentId()))})
	secret, err := ac.Conv.CreateConversation(ctx, connect.NewRequest(&parleyv1.CreateConversationRequest{Title: "Unshared secret"}))
	if err != nil {
		t.Fatal(err)
	}

	sh, err := ac.Conv.ShareConversation(ctx, connect.NewRequest(&parleyv1.ShareConversationRequest{ConversationId: id}))
	if err != nil {
		t.Fatal(err)
	}
	shareID := sh.Msg.GetShareId()
	if len(shareID) < 22 || sh.Msg.GetPath() != "/share/"+shareID {
		t.Fatalf("share %q at %q", shareID, sh.Msg.GetPath())
	}
	// Later messages are not in the snapshot.
	_, _, _ = send(t, ctx, ac, &parleyv1.SendMessageRequest{ConversationId: id, Parts: textPart("A later, unshared question")})

	read := func(c apiClients) (*parleyv1.SharedConversation, error) {
		res, err := c.Conv.GetSharedConversation(ctx, connect.NewRequest(&parleyv1.GetSharedConversationRequest{ShareId: shareID}))
		if err != nil {
			return nil, err
		}
		return res.Msg.GetShared(), nil
	}
	shared, err := read(anon)
	if err != nil {
		t.Fatalf("logged out: %v", err)
	}
	if shared.GetTitle() != "Shared plans" || len(shared.GetMessages()) != 2 {
		t.Fatalf("shared %v", shared)
	}
	q, ans := shared.GetMessages()[0], shared.GetMessages()[1]
	if q.GetRole() != parleyv1.Role_ROLE_USER || q.GetText() != "What should we cook?" ||
		len(q.GetAttachmentFilenames()) != 1 || q.GetAttachmentFilenames()[0] != "notes.txt" {
		t.Fatalf("question %v", q)
	}
	if ans.GetRole() != parleyv1.Role_ROLE_ASSISTANT || ans.GetText() != answer || ans.GetModel() == "" {
		t.Fatalf("answer %v, want %q", ans, answer)
	}
	// Nothing else of the owner's: no email, ids or attachment content.
	js, _ := protojson.Marshal(shared)
	for _, leak := range []string{a.Email, a.User.GetUserId(), id, att.GetAttachmentId(), "private attachment body", "Unshared secret", secret.Msg.GetConversation().GetConversationId()} {
		if strings.Contains(string(js), leak) {
			t.Fatalf("the share shows %q: %s", leak, js)
		}
	}
	// Plain HTTP with no cookie: the Connect JSON call and the app's route.
	res, err := http.Post(s.BaseURL+"/parley.v1.ConversationService/GetSharedConversation", "application/json",
		strings.NewReader(`{"shareId":"`+shareID+`"}`))
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(res.Body)
	res.Body.Close()
	if res.StatusCode != 200 || !strings.Contains(string(body), "What should we cook?") {
		t.Fatalf("plain POST: %d %s", res.StatusCode, body)
	}
	// A public procedure takes small messages only.
	res, err = http.Post(s.BaseURL+"/parley.v1.ConversationService/GetSharedConversation", "application/json",
		strings.NewReader(`{"shareId":"`+strings.Repeat("A", 100<<10)+`"}`))
	if err != nil {
		t.Fatal(err)
	}
	body, _ = io.ReadAll(res.Body)
	res.Body.Close()
	if !strings.Contains(string(body), `"code":"resource_exhausted"`) {
		t.Fatalf("a 100 KiB request to a public procedure: %d %s", res.StatusCode, body)
	}
	page, err := http.Get(s.BaseURL + "/share/" + shareID)
	if err != nil {
		t.Fatal(err)
	}
	page.Body.Close()
	if page.StatusCode != 200 || !strings.HasPrefix(page.Header.Get("Content-Type"), "text/html") {
		t.Fatalf("GET /share/{id}: %d %s", page.StatusCode, page.Header.Get("Content-Type"))
	}

	// Another user can neither share nor unshare it.
	_, err = bc.Conv.ShareConversation(ctx, connect.NewRequest(&parleyv1.ShareConversationRequest{ConversationId: id}))
	wantCode(t, "share another user's conversation", err, connect.CodeNotFound)
	_, err = bc.Conv.UnshareConversation(ctx, connect.NewRequest(&parleyv1.UnshareConversationRequest{ConversationId: id}))
	wantCode(t, "unshare another user's conversation", err, connect.CodeNotFound)
	_, err = anon.Conv.ShareConversation(ctx, connect.NewRequest(&parleyv1.ShareConversationRequest{ConversationId: id}))
	wantCode(t, "share logged out", err, connect.CodeUnauthenticated)
	for _, bad := range []string{"", "x", strings.Repeat("A", 21) + "!", "../../etc/passwd"} {
		_, err := anon.Conv.GetSharedConversation(ctx, connect.NewRequest(&parleyv1.GetSharedConversationRequest{ShareId: bad}))
		wantCode(t, "share id "+bad, err, connect.CodeInvalidArgument)
	}
	_, err = anon.Conv.GetSharedConversation(ctx, connect.NewRequest(&parleyv1.GetSharedConversationRequest{ShareId: strings.Repeat("A", 22)}))
	wantCode(t, "unknown share id", err, connect.CodeNotFound)

	// Sharing again refreshes the snapshot under the same link.
	again, err := ac.Conv.ShareConversation(ctx, connect.NewRequest(&parleyv1.ShareConversationRequest{ConversationId: id}))
	if err != nil || again.Msg.GetShareId() != shareID || len(again.Msg.GetShared().GetMessages()) != 4 {
		t.Fatalf("re-share: %v %v", again, err)
	}
	if shared, err := read(anon); err != nil || len(shared.GetMessages()) != 4 {
		t.Fatalf("after re-share: %v %v", shared, err)
	}

	// Unshared: not found, for everyone; sharing again makes a new link.
	un, err := ac.Conv.UnshareConversation(ctx, connect.NewRequest(&parleyv1.UnshareConversationRequest{ConversationId: id}))
	if err != nil || !un.Msg.GetUnshared() {
		t.Fatalf("unshare: %v %v", un, err)
	}
	_, err = read(anon)
	wantCode(t, "read after unshare", err, connect.CodeNotFound)
	_, err = read(ac)
	wantCode(t, "owner reads after unshare", err, connect.CodeNotFound)
	un, err = ac.Conv.UnshareConversation(ctx, connect.NewRequest(&parleyv1.UnshareConversationRequest{ConversationId: id}))
	if err != nil || un.Msg.GetUnshared() {
		t.Fatalf("unshare twice: %v %v", un, err)
	}
	fresh, err := ac.Conv.ShareConversation(ctx, connect.NewRequest(&parleyv1.ShareConversationRequest{ConversationId: id}))
	if err != nil || fresh.Msg.GetShareId() == shareID {
		t.Fatalf("share after unshare: %v %v", fresh, err)
	}
	// Deleting the conversation takes its link.
	if _, err := ac.Conv.DeleteConversation(ctx, connect.NewRequest(&parleyv1.DeleteConversationRequest{ConversationId: id})); err != nil {
		t.Fatal(err)
	}
	_, err = anon.Conv.GetSharedConversation(ctx, connect.NewRequest(&parleyv1.GetSharedConversationRequest{ShareId: fresh.Msg.GetShareId()}))
	wantCode(t, "read after delete", err, connect.CodeNotFound)
}

// A conversation exports as Markdown and as JSON, over the RPC and as a
// download with Content-Disposition; only its owner can.
func TestExportConversation(t *testing.T) {
	s := startServer(t, fastAuth...)
	a, b := s.newAccount(t, "exporter@example.com"), s.newAccount(t, "thief@example.com")
	ctx := ctxTimeout(t, 60*time.Second)
	ac, bc := s.api(protocols[0], cred{cookie: a.Cookie}), s.api(protocols[0], cred{cookie: b.Cookie})
	conv, err := ac.Conv.CreateConversation(ctx, connect.NewRequest(&parleyv1.CreateConversationRequest{Title: "Soup: a history!"}))
	if err != nil {
		t.Fatal(err)
	}
	id := conv.Msg.GetConversation().GetConversationId()
	_, answer, _ := send(t, ctx, ac, &parleyv1.SendMessageRequest{ConversationId: id, Parts: textPart("Who invented soup?")})
	export := func(c apiClients, f parleyv1.ExportFormat) (*parleyv1.ExportConversationResponse, error) {
		res, err := c.Conv.ExportConversation(ctx, connect.NewRequest(&parleyv1.ExportConversationRequest{ConversationId: id, Format: f}))
		if err != nil {
			return nil, err
		}
		return res.Msg, nil
	}

	md, err := export(ac, parleyv1.ExportFormat_EXPORT_FORMAT_MARKDOWN)
	if err != nil {
		t.Fatal(err)
	}
	text := string(md.GetContent())
	if md.GetFilename() != "soup-a-history.md" || md.GetContentType() != "text/markdown; charset=utf-8" {
		t.Fatalf("markdown file %q %q", md.GetFilename(), md.GetContentType())
	}
	for _, want := range []string{"# Soup: a history!\n", "\n## User · ", "\nWho invented soup?\n", "\n## Assistant (sim-small) · ", "\n" + answer + "\n"} {
		if !strings.Contains(text, want) {
			t.Fatalf("markdown lacks %q:\n%s", want, text)
		}
	}

	js, err := export(ac, parleyv1.ExportFormat_EXPORT_FORMAT_JSON)
	if err != nil {
		t.Fatal(err)
	}
	var doc parleyv1.ConversationExport
	if err := protojson.Unmarshal(js.GetContent(), &doc); err != nil {
		t.Fatalf("JSON export: %v\n%s", err, js.GetContent())
	}
	list, err := ac.Conv.ListMessages(ctx, connect.NewRequest(&parleyv1.ListMessagesRequest{ConversationId: id}))
	if err != nil {
		t.Fatal(err)
	}
	if js.GetFilename() != "soup-a-history.json" || doc.GetConversation().GetTitle() != "Soup: a history!" || len(doc.GetMessages()) != len(list.Msg.GetMessages()) {
		t.Fatalf("JSON export %s: %v", js.GetFilename(), &doc)
	}
	for i, m := range doc.GetMessages() {
		if lm := list.Msg.GetMessages()[i]; m.GetMessageId() != lm.GetMessageId() || m.GetParts()[0].GetText() != lm.GetParts()[0].GetText() {
			t.Fatalf("exported message %d = %v, listed %v", i, m, lm)
		}
	}

	// The download route: the owner's session, a file to save.
	get := func(cookie, format string) (*http.Response, []byte) {
		req, _ := http.NewRequest("GET", s.BaseURL+"/export/"+id+"?format="+format, nil)
		if cookie != "" {
			req.AddCookie(&http.Cookie{Name: "Session_id", Value: cookie})
		}
		res, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer res.Body.Close()
		body, _ := io.ReadAll(res.Body)
		return res, body
	}
	res, body := get(a.Cookie, "json")
	if res.StatusCode != 200 || res.Header.Get("Content-Disposition") != `attachment; filename=soup-a-history.json` ||
		res.Header.Get("Content-Type") != "application/json" {
		t.Fatalf("GET export: %d %v", res.StatusCode, res.Header)
	}
	var viaGet parleyv1.ConversationExport
	if err := protojson.Unmarshal(body, &viaGet); err != nil || len(viaGet.GetMessages()) != 2 {
		t.Fatalf("GET export body: %v %s", err, body)
	}
	if res, body := get(a.Cookie, "markdown"); res.StatusCode != 200 || !strings.Contains(string(body), "\nWho invented soup?\n") ||
		res.Header.Get("Content-Disposition") != `attachment; filename=soup-a-history.md` {
		t.Fatalf("GET markdown: %d %v %s", res.StatusCode, res.Header, body)
	}
	if res, body := get("", "json"); res.StatusCode != 401 {
		t.Fatalf("GET export logged out: %d %s", res.StatusCode, body)
	}
	if res, body := get(b.Cookie, "json"); res.StatusCode != 404 || strings.Contains(string(body), "soup") {
		t.Fatalf("GET another user's export: %d %s", res.StatusCode, body)
	}
	if res, body := get(a.Cookie, "xml"); res.StatusCode != 400 || !strings.Contains(string(body), "format") {
		t.Fatalf("GET export as xml: %d %s", res.StatusCode, body)
	}

	_, err = export(bc, parleyv1.ExportFormat_EXPORT_FORMAT_JSON)
	wantCode(t, "export another user's conversation", err, connect.CodeNotFound)
	_, err = export(ac, parleyv1.ExportFormat_EXPORT_FORMAT_UNSPECIFIED)
	wantCode(t, "export without a format", err, connect.CodeInvalidArgument)
}

// Export and share show the active branch, as ListMessages does: after a
// regeneration, the new answer and not the one it replaced.
func TestExportAndShareFollowTheActiveBranch(t *testing.T) {
	s := startServer(t, fastAuth...)
	a := s.newAccount(t, "brancher@example.com")
	ctx := ctxTimeout(t, 60*time.Second)
	ac := s.api(protocols[0], cred{cookie: a.Cookie})
	first := mustSend(t, ctx, ac, &parleyv1.SendMessageRequest{Parts: textPart("Name a soup"), MaxOutputTokens: 8})
	convID := first.started.GetConversationId()
	again := mustRegenerate(t, ctx, ac, convID, first.started.GetMessageId())
	if again.started.GetMessageId() == first.started.GetMessageId() {
		t.Fatal("the regeneration reused the message id")
	}

	res, err := ac.Conv.ExportConversation(ctx, connect.NewRequest(&parleyv1.ExportConversationRequest{ConversationId: convID, Format: parleyv1.ExportFormat_EXPORT_FORMAT_JSON}))
	if err != nil {
		t.Fatal(err)
	}
	var doc parleyv1.ConversationExport
	if err := protojson.Unmarshal(res.Msg.GetContent(), &doc); err != nil {
		t.Fatal(err)
	}
	if n := len(doc.GetMessages()); n != 2 || doc.GetMessages()[1].GetMessageId() != again.started.GetMessageId() {
		t.Fatalf("export has %d messages %v, want the question and the regenerated answer %s", n, doc.GetMessages(), again.started.GetMessageId())
	}
	sh, err := ac.Conv.ShareConversation(ctx, connect.NewRequest(&parleyv1.ShareConversationRequest{ConversationId: convID}))
	if err != nil {
		t.Fatal(err)
	}
	if msgs := sh.Msg.GetShared().GetMessages(); len(msgs) != 2 || msgs[1].GetText() != again.text {
		t.Fatalf("share has %v, want the regenerated answer %q", msgs, again.text)
	}
}

// The share page read with plain HTTP, as a link preview or a reader
// without JavaScript would: the conversation's text, title and Open Graph
// tags, every piece of user text escaped, under the app's CSP.
func TestSharePageRenderedOnTheServer(t *testing.T) {
	s := startServer(t, fastAuth...)
	a := s.newAccount(t, "sharer@example.com")
	ctx := ctxTimeout(t, 60*time.Second)
	ac := s.api(protocols[0], cred{cookie: a.Cookie})
	title := `Plans "><script>alert(1)</script>`
	conv, err := ac.Conv.CreateConversation(ctx, connect.NewRequest(&parleyv1.CreateConversationRequest{Title: title}))
	if err != nil {
		t.Fatal(err)
	}
	id := conv.Msg.GetConversation().GetConversationId()
	question := "What should we cook? <img src=x onerror=alert(2)> [click](javascript:alert(3))"
	_, answer, _ := send(t, ctx, ac, &parleyv1.SendMessageRequest{ConversationId: id, Parts: textPart(question)})
	sh, err := ac.Conv.ShareConversation(ctx, connect.NewRequest(&parleyv1.ShareConversationRequest{ConversationId: id}))
	if err != nil {
		t.Fatal(err)
	}
	res, err := http.Get(s.BaseURL + "/share/" + sh.Msg.GetShareId())
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(res.Body)
	res.Body.Close()
	page := string(body)
	if res.StatusCode != 200 || !strings.HasPrefix(res.Header.Get("Content-Type"), "text/html") ||
		!strings.Contains(res.Header.Get("Content-Security-Policy"), "script-src 'self'") || res.Header.Get("X-Frame-Options") != "DENY" {
		t.Fatalf("GET /share/{id}: %d %v", res.StatusCode, res.Header)
	}
	escTitle := `Plans &#34;&gt;&lt;script&gt;alert(1)&lt;/script&gt;`
	for _, want := range []string{
		"<title>" + escTitle + " · Parley</title>",
		`<meta property="og:title" content="` + escTitle + `">`,
		`<meta name="twitter:card" content="summary">`,
		`<meta property="og:description" content="What should we cook? &lt;img src=x onerror=alert(2)&gt; [click](javascript:alert(3))">`,
		`<h1>` + escTitle + `</h1>`,
		`What should we cook? &lt;img src=x onerror=alert(2)&gt;`,
		`<script type="module" crossorigin src="/assets/`, // the app takes over when scripts run
	} {
		if !strings.Contains(page, want) {
			t.Errorf("the page lacks %q:\n%s", want, page)
		}
	}
	for _, bad := range []string{"<script>alert", "<img src=x", `href="javascript:`} {
		if strings.Contains(page, bad) {
			t.Errorf("the page holds %q unescaped:\n%s", bad, page)
		}
	}
	// The answer, as rendered Markdown, in the page.
	firstWords := strings.Join(strings.Fields(answer)[:3], " ")
	if !strings.Contains(page, `class="msg assistant"`) || !strings.Contains(page, firstWords) {
		t.Errorf("the answer (%q…) is not in the page:\n%s", firstWords, page)
	}
	// Unknown and revoked links: a 404 page that says so.
	for _, path := range []string{"/share/AAAAAAAAAAAAAAAAAAAAAA", "/share/%3Cscript%3E"} {
		res, err := http.Get(s.BaseURL + path)
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(res.Body)
		res.Body.Close()
		if res.StatusCode != http.StatusNotFound || !strings.Contains(string(b), "This link does not work") || strings.Contains(string(b), "<script>") {
			t.Errorf("GET %s: %d %s", path, res.StatusCode, b)
		}
	}
}
