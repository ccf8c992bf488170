// Package compat serves the compatible HTTP surfaces over the same core as
// the Connect services: OpenAI's API (POST /v1/chat/completions, the
// legacy /v1/completions, /v1/embeddings, GET /v1/models and the Responses
// API under /v1/responses) and Anthropic's Messages API (POST /v1/messages
// and /v1/messages/count_tokens). New returns one http.Handler owning these
// routes; the gateway mounts it at /v1/, and any other path there is a 404
// in OpenAI's error JSON.
//
// Each surface is a thin translation: decode its JSON (decodeBody, which
// refuses, or with --openai-unsupported=drop drops, the fields Parley cannot
// honour), map it onto a chat.Request with field names as the caller spelt
// them, call chat.Core.Complete, and write the answer in the surface's form.
// openai.go, completions.go, embeddings.go, models.go, responses.go and
// anthropic.go hold one surface each (with *_request.go their request
// mapping); surface.go holds what they share.
//
// A streamed answer goes through one runner, runStream (stream.go): the
// keep-alive while the stream is quiet, Complete, then a failure before
// anything went out answered with its HTTP status (overload, balance), a
// failure after it or a generation cut short (a worker failed, the server
// is stopping) ending the stream with the surface's error, never passed off
// as a whole answer, and otherwise the stream's end. Each surface supplies
// an encoder with start, delta, finish, fail and ping: openAIStream
// (chat.completion.chunk, with a hand-written per-token path in
// openai_fast.go), completionsStream (text_completion chunks, one
// generation per prompt), responseStream (the Responses API's typed
// events) and anthropicStream (the Messages API's events). All are built on
// chunkWriter, which holds the headers back until the first event.
//
// Stored responses and their chains are kept by the core
// (chat.Core.SaveResponse, LoadResponse, DeleteResponse); this package only
// names them (resp_ ids) and shows them as the API does. The OpenAI chat
// completion wire types, shared with the worker's OpenAI engine, are in the
// leaf package openaiwire.
package compat
