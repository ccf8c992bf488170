// Package api holds the Connect handlers of the public services. They are
// thin adapters: decode the request, validate it (apierr.InvalidArgument
// naming the field), call the core package that owns the behaviour (auth,
// chat, billing…), and map the result to the response message. The caller is
// authenticated before a handler runs: auth.FromContext gives the Principal.
// The compatible HTTP surfaces (OpenAI's and Anthropic's APIs under /v1) are
// in server/compat.
package api
