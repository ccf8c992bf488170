// Package tokenize is the one tokenizer of the process: OpenAI's o200k_base BPE,
// loaded offline from the file embedded in tiktoken-go-loader, used for every token
// count in the system (quotas, usage estimates, the simulated engine, affinity keys).
//
// It re-implements tiktoken's pre-tokenizer as a hand-written scanner and its
// byte-pair merge without per-piece allocation, so counting a kilobyte costs
// microseconds rather than the regexp2-based library's tens of microseconds. The
// output is identical to tiktoken-go's (the tests check it against the library).
package tokenize
