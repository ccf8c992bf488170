// Package sse is Parley's one text/event-stream codec: the Encoder writes the
// gateway's streaming output (the compatible HTTP surfaces and the web
// client), the Decoder reads OpenAI-compatible upstreams, and the Adapter
// serves every server-streaming RPC as an event stream. The OpenAI wire types
// both sides exchange are in server/compat/openaiwire.
//
// The Decoder follows the WHATWG HTML "event stream interpretation" rules, with one
// addition: a bound on line length, so a broken upstream cannot exhaust memory.
package sse
