package openai

import (
	"encoding/json"
	"reflect"
	"testing"

	"github.com/parleyhq/parley/server/compat/openaiwire"
)

var chunkCorpus = []string{
	// vLLM, SGLang, llama.cpp, Ollama and TGI shapes.
	`{"id":"chatcmpl-1","object":"chat.completion.chunk","created":1718000000,"model":"m","choices":[{"index":0,"delta":{"role":"assistant","content":""},"logprobs":null,"finish_reason":null}]}`,
	`{"id":"chatcmpl-1","object":"chat.completion.chunk","created":1718000000,"model":"m","choices":[{"index":0,"delta":{"content":" the"},"logprobs":null,"finish_reason":null}]}`,
	`{"id":"chatcmpl-1","object":"chat.completion.chunk","created":1718000000,"model":"m","choices":[{"index":0,"delta":{"content":" the"},"logprobs":null,"finish_reason":null,"stop_reason":null}]}`,
	`{"id":"chatcmpl-1","object":"chat.completion.chunk","created":1718000000,"model":"m","choices":[{"index":0,"delta":{},"logprobs":null,"finish_reason":"length","stop_reason":null}]}`,
	`{"id":"chatcmpl-1","object":"chat.completion.chunk","created":1718000000,"model":"m","choices":[{"index":0,"delta":{"content":""},"logprobs":null,"finish_reason":"stop","matched_stop":128009}]}`,
	`{"id":"1","object":"chat.completion.chunk","created":1,"model":"m","choices":[],"usage":{"prompt_tokens":5,"completion_tokens":3,"total_tokens":8}}`,
	`{"choices":[{"finish_reason":null,"index":0,"delta":{"content":"Hello"}}],"created":1718000000,"id":"chatcmpl-x","model":"gpt","system_fingerprint":"b1","object":"chat.completion.chunk","timings":{"prompt_n":1,"predicted_ms":2.5}}`,
	`{"id":"chatcmpl-1","object":"chat.completion.chunk","created":1,"model":"m","system_fingerprint":"fp_ollama","choices":[{"index":0,"delta":{"role":"assistant","content":"line\nbreak \"quoted\" \u00e9\ud83d\ude00"},"finish_reason":null}]}`,
	`{"id":"1","object":"chat.completion.chunk","created":1,"model":"m","choices":[{"index":0,"delta":{"content":"naïve café ☕"},"finish_reason":null}]}`,
	`{"id":"1","object":"chat.completion.chunk","created":1,"model":"m","choices":[{"index":0,"delta":{"content":"bad \xff utf8"},"finish_reason":null}]}`,
	`{"id":"1","object":"chat.completion.chunk","created":1,"model":"m","choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"id":"call_1","type":"function","function":{"name":"get_weather","arguments":""}}]},"finish_reason":null}]}`,
	`{"id":"1","object":"chat.completion.chunk","created":1,"model":"m","choices":[{"index":0,"delta":{"content":"hi"},"logprobs":{"content":[{"token":"hi","logprob":-0.1,"bytes":[104,105],"top_logprobs":[]}]},"finish_reason":null}]}`,
	`{"id":"1","object":"chat.completion.chunk","created":1,"model":"m","choices":[{"index":0,"delta":{"content":"a"},"finish_reason":null},{"index":1,"delta":{"content":"b"},"finish_reason":"stop"},{"index":2,"delta":null,"finish_reason":null}]}`,
	`{"id":"1","object":"chat.completion.chunk","created":1,"model":"m","choices":[{"index":0,"delta":{"reasoning_content":"think","content":null},"finish_reason":null}]}`,
	` { "id" : "1" , "choices" : [ { "index" : 0 , "delta" : { "content" : "spaced" } , "finish_reason" : null } ] } `,
	`{"id":"1","Choices":[{"index":0,"delta":{"content":"case"}}]}`,
	`{"id":"1","choices":[{"Index":2,"delta":{"Content":"case"}}]}`,
	`{"id":"1","choices":[{"index":0,"delta":{"content":"a"}}],"choices":[{"index":1,"delta":{"content":"b"}}]}`,
	`{"id":"1","choices":[{"index":0,"delta":{"content":"a","content":"b"}}]}`,
	`{"id":"1","extra":{"nested":[1,2,{"x":"y\"z"}],"e":1.5e3,"t":true},"choices":[{"index":0,"delta":{"content":"x"}}]}`,
	`{"id":"1","extra":{"bad" "json"},"choices":[]}`,
	`{"id":"1","choices":[{"index":0,"delta":{"content":"x"}}]} trailing`,
	`{"id":"1","choices":[{"index":-1,"delta":{"content":"x"}}]}`,
	`{"id":"1","choices":[{"index":1.0,"delta":{"content":"x"}}]}`,
	`{"id":"1","created":0123,"choices":[]}`,
	`{"id":"1","choices":[{"index":0,"delta":{"content":"\x"}}]}`,
	`{"error":{"message":"boom","type":"server_error"}}`,
	`{"id":[]}`, `{"created":"x"}`, `{"created":1.5}`, `{"created":99999999999}`, `{"object":null,"model":1}`,
	`[]`, `null`, `{}`, `{"choices":null}`, ``, `{`, `{"choices":[{"index":0,"delta":{"content":"unterminated}]}`,
}

// The fast path gives what encoding/json gives, and says so when it
// cannot.
func TestChunkParserMatchesEncodingJSON(t *testing.T) {
	var p chunkParser
	fast := 0
	for _, data := range chunkCorpus {
		checkChunk(t, &p, []byte(data))
		if p.fast([]byte(data)) {
			fast++
		}
	}
	if fast < 10 {
		t.Errorf("only %d of %d chunks took the fast path", fast, len(chunkCorpus))
	}
	// The common chunk takes the fast path.
	if !p.fast([]byte(chunkCorpus[1])) || !p.fast([]byte(chunkCorpus[2])) {
		t.Error("a plain content chunk left the fast path")
	}
}

// The common chunk costs one allocation: its text (a string of its own,
// which the events downstream may keep).
func TestChunkParserAllocatesOnlyTheText(t *testing.T) {
	var p chunkParser
	data := []byte(`{"id":"chatcmpl-1","object":"chat.completion.chunk","created":1,"model":"m","choices":[{"index":0,"delta":{"content":" rabbit"},"logprobs":null,"finish_reason":null}]}`)
	if n := testing.AllocsPerRun(100, func() {
		if c, err := p.parse(data); err != nil || c.Choices[0].Delta.Content != " rabbit" {
			t.Fatal(c, err)
		}
	}); n > 1 {
		t.Errorf("%.0f allocations for a chunk, want 1 (its text)", n)
	}
}

func checkChunk(t *testing.T, p *chunkParser, data []byte) {
	t.Helper()
	var want openaiwire.ChatCompletionChunk
	wantErr := json.Unmarshal(data, &want)
	got, err := p.parse(data)
	if (err != nil) != (wantErr != nil) {
		t.Fatalf("%s: err %v, encoding/json %v", data, err, wantErr)
	}
	if err != nil {
		return
	}
	// The fields the engine reads.
	type view struct {
		Choices []openaiwire.Choice
		Usage   *openaiwire.ChunkUsage
	}
	g, w := view{got.Choices, got.Usage}, view{want.Choices, want.Usage}
	if len(g.Choices) == 0 && len(w.Choices) == 0 {
		g.Choices, w.Choices = nil, nil
	}
	if !reflect.DeepEqual(g, w) {
		gj, _ := json.Marshal(g)
		wj, _ := json.Marshal(w)
		t.Errorf("%s:\n got %s\nwant %s", data, gj, wj)
	}
}

func FuzzChunkParser(f *testing.F) {
	for _, c := range chunkCorpus {
		f.Add([]byte(c))
	}
	var p chunkParser
	f.Fuzz(func(t *testing.T, data []byte) { checkChunk(t, &p, data) })
}

func BenchmarkChunkParse(b *testing.B) {
	data := []byte(chunkCorpus[2])
	b.Run("fast", func(b *testing.B) {
		var p chunkParser
		b.ReportAllocs()
		for b.Loop() {
			if _, err := p.parse(data); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("encoding/json", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			var c openaiwire.ChatCompletionChunk
			if err := json.Unmarshal(data, &c); err != nil {
				b.Fatal(err)
			}
		}
	})
}
