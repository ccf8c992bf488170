#!/usr/bin/env python3
"""A tiny llama-architecture GGUF with random weights over a real vocabulary.

llama.cpp ships vocabulary-only GGUF files (models/ggml-vocab-*.gguf) for its
tokenizer tests: the tokens, merges, special ids, pre-tokenizer and chat
template of a real model, and no tensors. This copies that tokenizer metadata
into a new file with a 2-layer, 64-wide llama network of seeded random
weights, so llama-server tokenizes and applies the chat template exactly as
for the real model while generation costs almost nothing on a CPU. The
answers are nonsense tokens; they are deterministic at temperature 0.

Used by scripts/llama.sh model; needs the gguf and numpy packages.
"""
import argparse

import gguf
import numpy as np


def copy_tokenizer(reader: gguf.GGUFReader, writer: gguf.GGUFWriter) -> int:
    n_vocab = 0
    for key, field in reader.fields.items():
        if not key.startswith("tokenizer."):
            continue
        vtype = field.types[0]
        if vtype == gguf.GGUFValueType.ARRAY:
            sub = field.types[1]
            val = field.contents()
            writer.add_key_value(key, val, vtype, sub_type=sub)
            if key == "tokenizer.ggml.tokens":
                n_vocab = len(val)
        else:
            writer.add_key_value(key, field.contents(), vtype)
    if not n_vocab:
        raise SystemExit("the vocabulary file has no tokenizer.ggml.tokens")
    return n_vocab


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--vocab", required=True, help="a ggml-vocab-*.gguf file")
    ap.add_argument("--out", required=True)
    ap.add_argument("--layers", type=int, default=2)
    ap.add_argument("--dim", type=int, default=64)
    ap.add_argument("--heads", type=int, default=4)
    ap.add_argument("--kv-heads", type=int, default=2)
    ap.add_argument("--ff", type=int, default=192)
    ap.add_argument("--ctx", type=int, default=4096)
    ap.add_argument("--seed", type=int, default=17)
    a = ap.parse_args()

    reader = gguf.GGUFReader(a.vocab)
    w = gguf.GGUFWriter(a.out, "llama")
    w.add_name("parley-tiny-" + str(reader.fields["general.name"].contents()))
    n_vocab = copy_tokenizer(reader, w)
    head_dim = a.dim // a.heads
    w.add_vocab_size(n_vocab)
    w.add_context_length(a.ctx)
    w.add_embedding_length(a.dim)
    w.add_block_count(a.layers)
    w.add_feed_forward_length(a.ff)
    w.add_head_count(a.heads)
    w.add_head_count_kv(a.kv_heads)
    w.add_rope_dimension_count(head_dim)
    w.add_rope_freq_base(10000.0)
    w.add_layer_norm_rms_eps(1e-5)
    w.add_file_type(gguf.LlamaFileType.MOSTLY_F16)

    rng = np.random.default_rng(a.seed)

    def rand(*shape, scale=0.5, dtype=np.float16):
        return (rng.standard_normal(shape, dtype=np.float32) * scale).astype(dtype)

    def ones(n):
        return np.ones(n, dtype=np.float32)

    # numpy shapes are (rows, cols); ggml's ne is the reverse.
    kv = head_dim * a.kv_heads
    w.add_tensor("token_embd.weight", rand(n_vocab, a.dim))
    w.add_tensor("output_norm.weight", ones(a.dim))
    w.add_tensor("output.weight", rand(n_vocab, a.dim, scale=1.0))
    for i in range(a.layers):
        p = f"blk.{i}."
        w.add_tensor(p + "attn_norm.weight", ones(a.dim))
        w.add_tensor(p + "attn_q.weight", rand(a.dim, a.dim, scale=0.2))
        w.add_tensor(p + "attn_k.weight", rand(kv, a.dim, scale=0.2))
        w.add_tensor(p + "attn_v.weight", rand(kv, a.dim, scale=0.2))
        w.add_tensor(p + "attn_output.weight", rand(a.dim, a.dim, scale=0.2))
        w.add_tensor(p + "ffn_norm.weight", ones(a.dim))
        w.add_tensor(p + "ffn_gate.weight", rand(a.ff, a.dim, scale=0.2))
        w.add_tensor(p + "ffn_up.weight", rand(a.ff, a.dim, scale=0.2))
        w.add_tensor(p + "ffn_down.weight", rand(a.dim, a.ff, scale=0.2))

    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_tensors_to_file()
    w.close()
    print(f"{a.out}: llama, {a.layers} layers, dim {a.dim}, vocab {n_vocab}")


if __name__ == "__main__":
    main()
