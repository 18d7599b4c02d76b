#!/usr/bin/env python3
"""Writes the seed corpora of the fuzz harnesses (tests/fuzz/fuzz_readers.c): for each
reader a few small valid files and a few broken ones, from which libFuzzer mutates.
Usage: make_seeds.py DIR   (writes DIR/checkpoint, DIR/tokens, DIR/tokenizer, DIR/state,
DIR/cli, DIR/pairs, DIR/safetensors, DIR/config). The formats are those of doc/formats.md;
the files are tiny so that the fuzzer
runs fast, and each broken file is broken in one way the readers must name."""
import json
import os
import struct
import sys


def header(*slots):
    h = list(slots) + [0] * (256 - len(slots))
    return struct.pack("<256i", *h)


def floats(n, scale=0.02):
    return struct.pack(f"<{n}f", *[scale * ((i * 7919) % 13 - 6) for i in range(n)])


def checkpoint(maxT, V, L, NH, C, Vp, version=3, variants=()):
    """A model checkpoint: header, then the parameters (formats.md: version 3, 103, and 104
    with its checksum)."""
    nkv, pe = (variants[0], variants[1]) if variants else (NH, 0)
    hs = C // NH
    c3 = C + 2 * nkv * hs
    wpe = maxT * C if pe == 0 else 0
    P = Vp * C + wpe + L * (2 * C + c3 * C + c3 + C * C + C + 2 * C + 4 * C * C + 4 * C
                            + 4 * C * C + C) + 2 * C
    data = header(20240326, version, maxT, V, L, NH, C, Vp, *variants) + floats(P)
    return checksummed(data) if version == 104 else data


def tokens(ids, version=1, count=None):
    n = len(ids) if count is None else count
    return header(20240520, version, n) + struct.pack(f"<{len(ids)}H", *ids)


def tokenizer(toks, version=2, eot=0):
    body = b"".join(bytes([len(t)]) + t for t in toks)
    return header(20240328, version, len(toks), eot) + body


def crc32c(data, crc=0):
    """CRC-32C (util/crc32c.h), one byte at a time: the checksum of our formats' slot 255."""
    crc ^= 0xFFFFFFFF
    for b in data:
        crc ^= b
        for _ in range(8):
            crc = (crc >> 1) ^ (0x82F63B78 if crc & 1 else 0)
    return crc ^ 0xFFFFFFFF


def checksummed(data):
    """data (a header and its payload) with slot 255 set to the CRC-32C of the rest."""
    crc = crc32c(data[1024:], crc32c(data[:1020]))
    return data[:1020] + struct.pack("<I", crc) + data[1024:]


def state(n, version=3, count=None):
    """A training state for n parameters (the harness reads 4096): step 10, B 4, T 8."""
    c = n if count is None else count
    slots = [20241124, version, 10, 4, 8, c & 0xFFFFFFFF, c >> 32, 1, 0, 3, 0, 12345, 0,
             1337, 0, 1, 2000, 0]
    data = header(*slots[:13 if version == 1 else 18]) + floats(2 * n, 0.001)
    return checksummed(data) if version == 3 else data


def pairs(items, V=8, version=1, count=None, longest=None, first_line=1):
    """A pair token file (util/pairs.h): header, then per pair its lengths, source, target."""
    n = len(items) if count is None else count
    ms, mt = longest or (max(len(s) for s, _ in items), max(len(t) for _, t in items))
    body = b"".join(struct.pack(f"<2H{len(s) + len(t)}H", len(s), len(t), *s, *t) for s, t in items)
    return header(20241125, version, n, V, ms, mt, first_line) + body


def cli(*args):
    return b"\0".join(a.encode() for a in args)


def safetensors(tensors, meta=True):
    """tensors: [(name, dtype, shape, bytes)] -> a safetensors file (offsets in this order)."""
    header, off = ({"__metadata__": {"format": "pt"}} if meta else {}), 0
    for name, dtype, shape, data in tensors:
        header[name] = {"dtype": dtype, "shape": shape, "data_offsets": [off, off + len(data)]}
        off += len(data)
    text = json.dumps(header, separators=(",", ":")).encode()
    text += b" " * (-len(text) % 8)
    return struct.pack("<Q", len(text)) + text + b"".join(t[3] for t in tensors)


def hf_gpt2(dtype="F32", prefix="", head=False, buffers=False):
    """GPT-2 in Hugging Face's layout, of the shape of the harness's config.json:
    L=1 NH=2 C=8 maxT=4 V=5 (Conv1D weights (in, out))."""
    C, size = 8, {"F32": 4, "F16": 2, "BF16": 2}[dtype]
    shapes = [("wte.weight", [5, C]), ("wpe.weight", [4, C]), ("h.0.ln_1.weight", [C]),
              ("h.0.ln_1.bias", [C]), ("h.0.attn.c_attn.weight", [C, 3 * C]),
              ("h.0.attn.c_attn.bias", [3 * C]), ("h.0.attn.c_proj.weight", [C, C]),
              ("h.0.attn.c_proj.bias", [C]), ("h.0.ln_2.weight", [C]), ("h.0.ln_2.bias", [C]),
              ("h.0.mlp.c_fc.weight", [C, 4 * C]), ("h.0.mlp.c_fc.bias", [4 * C]),
              ("h.0.mlp.c_proj.weight", [4 * C, C]), ("h.0.mlp.c_proj.bias", [C]),
              ("ln_f.weight", [C]), ("ln_f.bias", [C])]
    out = []
    for name, shape in shapes:
        n = 1
        for d in shape:
            n *= d
        if dtype == "F32":
            data = floats(n)
        else:  # the upper halves of float32 values are bfloat16; as F16 they are other numbers
            data = b"".join(floats(n)[4 * i + 2:4 * i + 4] for i in range(n))
        out.append((prefix + name, dtype, shape, data))
        if name == "wte.weight" and head:
            out.append(("lm_head.weight", dtype, shape, data))
    if buffers:
        out.append((prefix + "h.0.attn.bias", "BOOL", [1, 1, 4, 4], bytes([1, 0, 0, 0, 1, 1, 0, 0,
                                                                            1, 1, 1, 0, 1, 1, 1, 1])))
        out.append((prefix + "h.0.attn.masked_bias", dtype, [], b"\0" * size))
    return safetensors(out)


def seeds():
    chars = [b"\n", b" ", b"a", b"b", b"\xc3\xa9"]
    ckpt = checkpoint(4, 5, 1, 2, 4, 8)
    return {
        "checkpoint": {
            "gpt2_tiny.bin": ckpt,
            "variants_gqa_rope.bin": checkpoint(4, 5, 1, 2, 4, 8, 103, (1, 1, 1, 1, 0)),
            "variants_checksummed.bin": checkpoint(4, 5, 1, 2, 4, 8, 104, (1, 1, 1, 1, 0)),
            "variants_sin_post.bin": checkpoint(4, 5, 2, 2, 4, 8, 103, (2, 2, 1, 0, 1)),
            "truncated.bin": ckpt[:-3],
            "bf16_version5.bin": header(20240326, 5, 4, 5, 1, 2, 4, 8),
            "huge_shape.bin": header(20240326, 3, 1 << 20, 50257, 1 << 10, 64, 1 << 14, 50304),
            "negative.bin": header(20240326, 3, 4, -5, 1, 2, 4, 8),
        },
        "tokens": {
            "ten.bin": tokens([0, 1, 2, 3, 4, 5, 6, 7, 8, 9]),
            "empty.bin": tokens([]),
            "lying_count.bin": tokens([1, 2, 3], count=1000),
            "outside_vocab.bin": tokens([1, 60000, 2]),
            "version2.bin": tokens([1, 2], version=2),
        },
        "tokenizer": {
            "char_v2.bin": tokenizer(chars, eot=0),
            "bpe_v1.bin": tokenizer([b"a", b"b", b"ab", b" ab", b"\xff"], version=1),
            "zero_length.bin": tokenizer([b"a", b""]) ,
            "truncated.bin": tokenizer(chars)[:-2],
            "huge_vocab.bin": header(20240328, 2, 1 << 30, 0),
        },
        "state": {
            "v3.bin": state(4096),
            "v2.bin": state(4096, version=2),
            "v1.bin": state(4096, version=1),
            "other_model.bin": state(4096, count=4095),
            "truncated.bin": state(4096)[:-7],
        },
        "pairs": {
            "three.bin": pairs([([3, 4, 5], [5, 4, 3]), ([6], [6]), ([7, 3], [3, 7])]),
            "long_target.bin": pairs([([3], [4] * 20), ([5, 6], [6, 5])]),
            "lying_count.bin": pairs([([3], [4])], count=1000),
            "outside_vocab.bin": pairs([([3, 9], [4])]),
            "special_token.bin": pairs([([3, 1], [4])]),
            "empty_source.bin": pairs([([], [4, 5])], longest=(1, 2)),
            "wrong_longest.bin": pairs([([3, 4], [5])], longest=(7, 1)),
            "truncated.bin": pairs([([3, 4, 5], [5, 4, 3])])[:-3],
        },
        "safetensors": {
            "f32.safetensors": hf_gpt2(),
            "f16_prefix_head_buffers.safetensors": hf_gpt2("F16", "transformer.", True, True),
            "bf16_buffers.safetensors": hf_gpt2("BF16", buffers=True),
            "truncated.safetensors": hf_gpt2()[:-5],
            "no_metadata_one_tensor.safetensors": safetensors([("x", "F32", [2], floats(2))], False),
            "escapes.safetensors": safetensors([("a\u00e9\n", "I8", [1, 2], b"\1\2")]),
            "huge_length.safetensors": struct.pack("<Q", 1 << 62) + b"{}",
        },
        # not a seed (its 11.7 MB would make libFuzzer mutate inputs that long): run_fuzz.sh
        # runs the safetensors harness on it once, within a time bound (a pairwise check of
        # the names took 105 s)
        "safetensors_slow": {
            "many_empty_tensors.safetensors": safetensors(
                [(f"t{i}", "F32", [0], b"") for i in range(200000)], False),
        },
        "config": {
            "gpt2.json": json.dumps({"activation_function": "gelu_new", "n_ctx": 1024,
                                     "n_embd": 768, "n_head": 12, "n_inner": None,
                                     "n_layer": 12, "n_positions": 1024, "vocab_size": 50257,
                                     "task_specific_params": {"text-generation": {
                                         "do_sample": True, "max_length": 50}},
                                     "layer_norm_epsilon": 1e-05}, indent=2).encode(),
            "missing.json": b'{"n_layer": 2, "n_head": 2.5}',
            "duplicate_key.json": b'{"n_layer": 2, "n_head": 2, "n_layer": 3}',
            "bad.json": b'{"n_layer": 01, "n_head": "\\u12"}',
        },
        "cli": {
            "train.txt": cli("-b", "4", "-t", "64", "-n", "10", "-o", "out", "-v", "5"),
            "variants.txt": cli("-kv", "2", "-pe", "rope", "-ln", "post", "-act", "relu",
                                "-causal", "0"),
            "generate.txt": cli("-e", "model.bin", "-g", "100", "-pr", "ROMEO:", "-am", "a.svg"),
            "nonsense.txt": cli("-b", "-4", "-t", "x", "-kv", "3", "-pe", "sin2"),
            "lonely_flag.txt": cli("-lr"),
            "hugging_face.txt": cli("-e", "gpt2/model.safetensors", "-x", "0", "-hf", "out/hf"),
            "llmc.txt": cli("-h", "0", "-b", "4", "-t", "64", "-d", "512", "-r", "0", "-z", "0", "-k", "cosine",
                            "-sl", "0.0", "-pn", "1", "-nk", "2", "-nm", "10", "-i", "shard_*.bin", "-x", "-1"),
            "llmc_refused.txt": cli("-h", "1", "-r", "1", "-pi", "tcp", "-zz", "3", "-h"),
        },
    }


def main():
    if len(sys.argv) != 2:
        sys.exit("usage: make_seeds.py DIR")
    for reader, files in seeds().items():
        d = os.path.join(sys.argv[1], reader)
        os.makedirs(d, exist_ok=True)
        for name, data in files.items():
            with open(os.path.join(d, name), "wb") as f:
                f.write(data)


if __name__ == "__main__":
    main()
