#!/usr/bin/env python3
"""Writes the seed corpora of the fuzz harnesses (tests/fuzz/fuzz_readers.c): for each
reader a few small valid files and a few broken ones, from which libFuzzer mutates.
Usage: make_seeds.py DIR   (writes DIR/checkpoint, DIR/tokens, DIR/tokenizer, DIR/state,
DIR/cli). The formats are those of doc/formats.md; the files are tiny so that the fuzzer
runs fast, and each broken file is broken in one way the readers must name."""
import os
import struct
import sys


def header(*slots):
    h = list(slots) + [0] * (256 - len(slots))
    return struct.pack("<256i", *h)


def floats(n, scale=0.02):
    return struct.pack(f"<{n}f", *[scale * ((i * 7919) % 13 - 6) for i in range(n)])


def checkpoint(maxT, V, L, NH, C, Vp, version=3, variants=()):
    """A model checkpoint: header, then the parameters (formats.md: version 3 and 103)."""
    nkv, pe = (variants[0], variants[1]) if variants else (NH, 0)
    hs = C // NH
    c3 = C + 2 * nkv * hs
    wpe = maxT * C if pe == 0 else 0
    P = Vp * C + wpe + L * (2 * C + c3 * C + c3 + C * C + C + 2 * C + 4 * C * C + 4 * C
                            + 4 * C * C + C) + 2 * C
    return header(20240326, version, maxT, V, L, NH, C, Vp, *variants) + floats(P)


def tokens(ids, version=1, count=None):
    n = len(ids) if count is None else count
    return header(20240520, version, n) + struct.pack(f"<{len(ids)}H", *ids)


def tokenizer(toks, version=2, eot=0):
    body = b"".join(bytes([len(t)]) + t for t in toks)
    return header(20240328, version, len(toks), eot) + body


def state(n, version=2, count=None):
    """A training state for n parameters (the harness reads 4096): step 10, B 4, T 8."""
    c = n if count is None else count
    slots = [20241124, version, 10, 4, 8, c & 0xFFFFFFFF, c >> 32, 1, 0, 3, 0, 12345, 0,
             1337, 0, 1, 2000, 0]
    return header(*slots) + floats(2 * n, 0.001)


def cli(*args):
    return b"\0".join(a.encode() for a in args)


def seeds():
    chars = [b"\n", b" ", b"a", b"b", b"\xc3\xa9"]
    ckpt = checkpoint(4, 5, 1, 2, 4, 8)
    return {
        "checkpoint": {
            "gpt2_tiny.bin": ckpt,
            "variants_gqa_rope.bin": checkpoint(4, 5, 1, 2, 4, 8, 103, (1, 1, 1, 1, 0)),
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
            "v2.bin": state(4096),
            "v1.bin": state(4096, version=1),
            "other_model.bin": state(4096, count=4095),
            "truncated.bin": state(4096)[:-7],
        },
        "cli": {
            "train.txt": cli("-b", "4", "-t", "64", "-n", "10", "-o", "out", "-v", "5"),
            "variants.txt": cli("-kv", "2", "-pe", "rope", "-ln", "post", "-act", "relu",
                                "-causal", "0"),
            "generate.txt": cli("-e", "model.bin", "-g", "100", "-pr", "ROMEO:", "-am", "a.svg"),
            "nonsense.txt": cli("-b", "-4", "-t", "x", "-kv", "3", "-pe", "sin2"),
            "lonely_flag.txt": cli("-lr"),
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
