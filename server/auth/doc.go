// Package auth turns a request's credentials — the Session_id cookie or an
// API key bearer token — into a Principal, and owns passwords, sessions and
// keys.
package auth
