package compat

import (
	"bytes"
	"encoding/json"
	"strconv"
	"sync"

	"github.com/parleyhq/parley/server/compat/openaiwire"
)

// The per-token path of a streamed chat completion: a chunk whose one
// choice adds text (or, first, the assistant role) is most of what a
// stream is, so it is written by hand, byte for byte what encoding/json
// writes for the same openaiwire.ChatCompletionChunk (openai_fast_test.go checks
// it), without reflection or allocation.

// appendDeltaChunk appends the JSON of c with the one choice
// {index, delta: {role, content}, finish_reason: null}, as json.Marshal
// would (empty role and content omitted).
func appendDeltaChunk(dst []byte, c *openaiwire.ChatCompletionChunk, index int, role, content string) []byte {
	dst = append(dst, `{"id":`...)
	dst = appendJSONString(dst, c.ID)
	dst = append(dst, `,"object":`...)
	dst = appendJSONString(dst, c.Object)
	dst = append(dst, `,"created":`...)
	dst = strconv.AppendInt(dst, c.Created, 10)
	dst = append(dst, `,"model":`...)
	dst = appendJSONString(dst, c.Model)
	if c.SystemFingerprint != "" {
		dst = append(dst, `,"system_fingerprint":`...)
		dst = appendJSONString(dst, c.SystemFingerprint)
	}
	dst = append(dst, `,"choices":[{"index":`...)
	dst = strconv.AppendInt(dst, int64(index), 10)
	dst = append(dst, `,"delta":{`...)
	sep := false
	if role != "" {
		dst = append(dst, `"role":`...)
		dst = appendJSONString(dst, role)
		sep = true
	}
	if content != "" {
		if sep {
			dst = append(dst, ',')
		}
		dst = append(dst, `"content":`...)
		dst = appendJSONString(dst, content)
	}
	return append(dst, `},"finish_reason":null}]}`...)
}

// appendJSONString appends s as encoding/json writes a string (HTML
// characters escaped): plain printable ASCII as it is, anything else
// through encoding/json itself.
func appendJSONString(dst []byte, s string) []byte {
	for i := 0; i < len(s); i++ {
		if c := s[i]; c < 0x20 || c > 0x7e || c == '"' || c == '\\' || c == '<' || c == '>' || c == '&' {
			b, _ := json.Marshal(s)
			return append(dst, b...)
		}
	}
	dst = append(dst, '"')
	dst = append(dst, s...)
	return append(dst, '"')
}

// deltaChunk writes a chunk of c's stream with one choice adding role
// and content, flushing it to the client when flush is set (else it goes
// with the next flush).
func (c *chunkWriter) deltaChunk(chunk *openaiwire.ChatCompletionChunk, index int, role, content string, flush bool) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.open()
	b := deltaBufs.Get().(*[]byte)
	*b = appendDeltaChunk((*b)[:0], chunk, index, role, content)
	err := c.enc.WriteData(*b, flush)
	deltaBufs.Put(b)
	return err
}

// deltaBufs are deltaChunk's buffers: taken for a write, not kept by each
// open stream between its tokens.
var deltaBufs = sync.Pool{New: func() any {
	b := make([]byte, 0, 512)
	return &b
}}

// writeBuffered writes v as an event without flushing it.
func (c *chunkWriter) writeBuffered(v any) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.open()
	c.scratch.Reset()
	if err := json.NewEncoder(&c.scratch).Encode(v); err != nil {
		return err
	}
	return c.enc.WriteData(bytes.TrimSuffix(c.scratch.Bytes(), []byte("\n")), false)
}

// doneBuffered ends the stream with [DONE], handing everything buffered
// to the response without flushing it: the server sends it with the
// response's end, in one write.
func (c *chunkWriter) doneBuffered() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if err := c.enc.WriteData([]byte("[DONE]"), false); err != nil {
		return err
	}
	return c.enc.FlushBuffer()
}
