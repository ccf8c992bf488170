package api

import (
	"bytes"
	"errors"
	"html/template"
	"net/http"
	"strings"
	"unicode/utf8"

	"connectrpc.com/connect"
	"github.com/yuin/goldmark"
	"github.com/yuin/goldmark/extension"

	parleyv1 "github.com/parleyhq/parley/gen/parley/v1"
)

// SharePagePath serves a share link as a page that reads without
// JavaScript: the conversation rendered on the server, with the title and
// Open Graph and Twitter card tags a link preview reads; the app takes the
// page over when its scripts run.
const SharePagePath = "GET " + SharePath + "{share_id}"

// PageWriter writes a page rendered on the server in the web app's shell
// (webapp.Handler).
type PageWriter interface {
	WritePage(w http.ResponseWriter, status int, head, body template.HTML)
}

// markdown renders answers as the app does (GFM), without raw HTML (shown
// as text) or dangerous link schemes: goldmark's safe default.
var markdown = goldmark.New(goldmark.WithExtensions(extension.GFM))

var shareHead = template.Must(template.New("head").Parse(`<title>{{.Title}} · Parley</title>
<meta name="description" content="{{.Description}}">
<meta name="robots" content="noindex">
<meta property="og:type" content="article">
<meta property="og:site_name" content="Parley">
<meta property="og:title" content="{{.Title}}">
<meta property="og:description" content="{{.Description}}">
<meta name="twitter:card" content="summary">
<meta name="twitter:title" content="{{.Title}}">
<meta name="twitter:description" content="{{.Description}}">`))

var shareBody = template.Must(template.New("body").Parse(`<main id="shared" class="shared" data-server-rendered>
{{- if .Found}}
<header class="shared-head"><h1>{{.Title}}</h1><p class="muted">Shared {{.SharedAt}}{{if .Model}} · {{.Model}}{{end}} · read-only</p></header>
{{- range .Messages}}
{{- if .User}}
<div class="msg user"><div class="bubble">{{.Text}}{{range .Files}} <span class="chip">{{.}}</span>{{end}}</div></div>
{{- else}}
<div class="msg assistant"><div class="who">{{.Model}}</div><div class="md">{{.HTML}}</div></div>
{{- end}}
{{- end}}
<footer class="muted"><a href="/">Parley</a> — start your own conversation.</footer>
{{- else}}
<h1>This link does not work</h1><p class="error">{{.Error}}</p><p><a href="/">Go to Parley</a></p>
{{- end}}
</main>`))

type sharePageMessage struct {
	User        bool
	Text, Model string
	HTML        template.HTML
	Files       []string
}

// ServeSharePage serves SharePagePath through pages.
func (h *ConversationHandler) ServeSharePage(pages PageWriter) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		res, err := h.GetSharedConversation(r.Context(), connect.NewRequest(&parleyv1.GetSharedConversationRequest{ShareId: r.PathValue("share_id")}))
		data := struct {
			Found                               bool
			Title, Description, SharedAt, Model string
			Error                               string
			Messages                            []sharePageMessage
		}{Title: "Shared conversation"}
		status := http.StatusOK
		var ce *connect.Error
		switch {
		case err == nil:
			s := res.Msg.GetShared()
			data.Found, data.Model = true, s.GetModel()
			if s.GetTitle() != "" {
				data.Title = s.GetTitle()
			}
			data.SharedAt = s.GetSharedAt().AsTime().UTC().Format("2 January 2006")
			for _, m := range s.GetMessages() {
				pm := sharePageMessage{User: m.GetRole() == parleyv1.Role_ROLE_USER, Text: m.GetText(), Model: m.GetModel(), Files: m.GetAttachmentFilenames()}
				if !pm.User {
					if pm.Model == "" {
						pm.Model = "assistant"
					}
					var b bytes.Buffer
					if markdown.Convert([]byte(m.GetText()), &b) != nil {
						b.Reset()
						template.HTMLEscape(&b, []byte(m.GetText()))
					}
					pm.HTML = template.HTML(b.String()) // goldmark's output: raw HTML escaped, unsafe links dropped
				}
				if data.Description == "" && pm.User {
					data.Description = excerpt(m.GetText(), 200)
				}
				data.Messages = append(data.Messages, pm)
			}
		case errors.As(err, &ce) && (ce.Code() == connect.CodeNotFound || ce.Code() == connect.CodeInvalidArgument):
			status, data.Title, data.Error = http.StatusNotFound, "Not found", "This shared conversation does not exist, or its owner stopped sharing it."
		default:
			status, data.Title, data.Error = http.StatusInternalServerError, "Unavailable", "The conversation could not be read just now; try again."
		}
		if data.Description == "" {
			data.Description = "A conversation shared from Parley."
		}
		var head, body bytes.Buffer
		if err := shareHead.Execute(&head, data); err != nil {
			http.Error(w, "rendering the page failed", http.StatusInternalServerError)
			return
		}
		if err := shareBody.Execute(&body, data); err != nil {
			http.Error(w, "rendering the page failed", http.StatusInternalServerError)
			return
		}
		pages.WritePage(w, status, template.HTML(head.String()), template.HTML(body.String()))
	})
}

// excerpt is s on one line, cut at a word to at most n characters.
func excerpt(s string, n int) string {
	s = strings.Join(strings.Fields(s), " ")
	if utf8.RuneCountInString(s) <= n {
		return s
	}
	r := []rune(s)[:n]
	if i := strings.LastIndexByte(string(r), ' '); i > n/2 {
		return string(r)[:i] + "…"
	}
	return string(r) + "…"
}
