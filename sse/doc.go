// Package sse is Parley's one text/event-stream codec: the Encoder writes the
// gateway's streaming output (the OpenAI-compatible API and the web client), the
// Decoder reads OpenAI-compatible upstreams, and openai.go holds the OpenAI chat
// completion wire types both sides exchange.
//
// The Decoder follows the WHATWG HTML "event stream interpretation" rules, with one
// addition: a bound on line length, so a broken upstream cannot exhaust memory.
package sse
