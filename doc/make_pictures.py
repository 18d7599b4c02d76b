#!/usr/bin/python3
"""Draws the two pictures of doc/README.md from a finished default run.

    /usr/bin/python3 doc/make_pictures.py [--model CKPT] [--log LOG] [--prompt TEXT]

Defaults: the checkpoint out/model_00002000.bin and the log out/default.log of a
default run, made in the repository's root with
    mkdir -p out && ./train_gpt2 > out/default.log
(the default model: L=4, NH=4, C=128, T=64, 2000 steps). The defaults are found from
the repository's root, so the script runs from anywhere; it uses ./train_gpt2 of the
repository, which must be built (make).

doc/attention_maps.png  the attention probabilities of every layer (rows) and head
                        (columns) on the prompt, written by the program itself with
                        `./train_gpt2 -e CKPT -x 0 -pr PROMPT -am FILE.pgm` (sqrt scale:
                        white = 1); the script only converts the PGM and labels it.
doc/loss_curve.png      train loss per step and validation loss every 250 steps,
                        parsed from the log.

It also prints, per head, where the attention goes on average (previous character,
itself, the first character, the newline, the last space), which is what doc/README.md's
description of the maps is based on.

Needs numpy; matplotlib (Debian: apt-get install python3-matplotlib) for labelled
figures. Without matplotlib it writes plain PNGs with zlib (no labels).
"""
import argparse
import os
import re
import struct
import subprocess
import sys
import tempfile
import zlib

import numpy as np

DOC = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(DOC)
PROMPT = "ROMEO:\nBut soft, what light through yonder window breaks?"


def read_pgm(path):
    """Returns a (H, W) uint8 array of a binary PGM (P5) with optional comment lines."""
    with open(path, "rb") as f:
        data = f.read()
    fields, pos = [], 0
    while len(fields) < 4:  # magic, width, height, maxval; '#' starts a comment
        while data[pos:pos + 1].isspace():
            pos += 1
        if data[pos:pos + 1] == b"#":
            pos = data.index(b"\n", pos) + 1
            continue
        end = pos
        while not data[end:end + 1].isspace():
            end += 1
        fields.append(data[pos:end])
        pos = end
    pos += 1  # the single whitespace after maxval
    if fields[0] != b"P5" or int(fields[3]) != 255:
        sys.exit("%s: not an 8-bit binary PGM" % path)
    w, h = int(fields[1]), int(fields[2])
    return np.frombuffer(data[pos:pos + w * h], dtype=np.uint8).reshape(h, w)


def write_png_gray(path, img):
    """A grayscale PNG by hand: signature, IHDR, one zlib IDAT, IEND."""
    h, w = img.shape
    raw = b"".join(b"\x00" + img[y].tobytes() for y in range(h))  # filter type 0 per row

    def chunk(kind, body):
        return struct.pack(">I", len(body)) + kind + body + struct.pack(">I", zlib.crc32(kind + body) & 0xFFFFFFFF)

    with open(path, "wb") as f:
        f.write(b"\x89PNG\r\n\x1a\n")
        f.write(chunk(b"IHDR", struct.pack(">IIBBBBB", w, h, 8, 0, 0, 0, 0)))
        f.write(chunk(b"IDAT", zlib.compress(raw, 9)))
        f.write(chunk(b"IEND", b""))


def attention_tiles(img, L, NH, T, gap=4):
    """Recovers the (L, NH, T, T) probabilities from the PGM grid (pixel = 255 sqrt(p))."""
    tile = (img.shape[1] - (NH - 1) * gap) // NH
    zoom = tile // T
    probs = np.zeros((L, NH, T, T))
    for l in range(L):
        for h in range(NH):
            y0, x0 = l * (tile + gap), h * (tile + gap)
            t = img[y0:y0 + T * zoom:zoom, x0:x0 + T * zoom:zoom].astype(float) / 255.0
            probs[l, h] = t * t
    return probs


def describe_heads(probs, prompt):
    """Prints where each head looks, averaged over the query positions."""
    L, NH, T, _ = probs.shape
    newline = prompt.index("\n") if "\n" in prompt else None
    print("where each head's attention goes (mean probability over the queries that can see it):")
    print("layer head  prev   self   first  newline last-space")
    for l in range(L):
        for h in range(NH):
            p = probs[l, h]
            prev = np.mean([p[t, t - 1] for t in range(1, T)])
            self_ = np.mean([p[t, t] for t in range(T)])
            first = np.mean([p[t, 0] for t in range(8, T)])
            nl = np.mean([p[t, newline] for t in range(newline + 1, T)]) if newline is not None else float("nan")
            spaces = []
            for t in range(T):
                s = prompt.rfind(" ", 0, t)  # the last space strictly before t
                if s >= 0:
                    spaces.append(p[t, s])
            print("%5d %4d  %.3f  %.3f  %.3f  %.3f   %.3f" % (l, h, prev, self_, first, nl, np.mean(spaces)))


def attention_picture(img, probs, prompt, out):
    L, NH, T, _ = probs.shape
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        write_png_gray(out, img)
        return
    fig, axes = plt.subplots(L, NH, figsize=(2.1 * NH + 0.6, 2.1 * L + 0.8), dpi=100)
    for l in range(L):
        for h in range(NH):
            ax = axes[l][h]
            ax.imshow(np.sqrt(probs[l, h]), cmap="gray", vmin=0, vmax=1, interpolation="nearest")
            ax.set_xticks([])
            ax.set_yticks([])
            if l == 0:
                ax.set_title("head %d" % h, fontsize=10)
            if h == 0:
                ax.set_ylabel("layer %d\nquery" % l, fontsize=10)
            if l == L - 1:
                ax.set_xlabel("key", fontsize=9)
    shown = prompt.replace("\n", "\\n")
    fig.suptitle("attention probabilities (sqrt scale, white = 1), %d characters:\n\"%s\"" % (T, shown), fontsize=9)
    fig.tight_layout()
    fig.savefig(out)
    plt.close(fig)


def parse_log(path):
    train, val = [], []
    with open(path) as f:
        for line in f:
            m = re.match(r"step\s+(\d+)/\d+ \| loss ([0-9.]+)", line)
            if m:  # "step k/N | loss": the forward of step k-1, i.e. after k-1 updates
                train.append((int(m.group(1)) - 1, float(m.group(2))))
                continue
            m = re.match(r"step\s+(\d+) \| val loss ([0-9.]+)", line)
            if m:  # "step s | val loss": measured after s updates
                val.append((int(m.group(1)), float(m.group(2))))
    if not train:
        sys.exit("%s: no training lines ('step k/N | loss ...')" % path)
    return np.array(train), np.array(val)


def loss_picture(train, val, out):
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        loss_picture_by_hand(train, val, out)
        return
    fig, ax = plt.subplots(figsize=(8, 4.5), dpi=100)
    ax.plot(train[:, 0], train[:, 1], color="#9bbcd9", linewidth=0.6, label="train loss (each step, one batch)")
    k = 50
    if len(train) > k:
        smooth = np.convolve(train[:, 1], np.ones(k) / k, mode="valid")
        ax.plot(train[k - 1:, 0], smooth, color="#1f4e79", linewidth=1.5, label="train loss, mean of the last %d steps" % k)
    if len(val):
        ax.plot(val[:, 0], val[:, 1], "o-", color="#c0392b", markersize=4, label="validation loss (whole val file)")
        ax.annotate("%.3f" % val[-1, 1], (val[-1, 0], val[-1, 1]), textcoords="offset points", xytext=(-10, 8), fontsize=9, color="#c0392b")
    ax.set_xlabel("updates done")
    ax.set_ylabel("cross-entropy (nats per character)")
    ax.set_title("default run: L=4, NH=4, C=128, B=12, T=64, AdamW lr 1e-3 (warmup 100, cosine)")
    ax.set_ylim(1.0, max(4.5, float(train[:, 1].max()) + 0.1))
    ax.grid(alpha=0.3)
    ax.legend()
    fig.tight_layout()
    fig.savefig(out)
    plt.close(fig)


def loss_picture_by_hand(train, val, out, w=800, h=450, pad=40):
    """The fallback: polylines rasterised into a grayscale image."""
    img = np.full((h, w), 255, dtype=np.uint8)
    x_max = max(train[:, 0].max(), val[:, 0].max() if len(val) else 0)
    y_lo, y_hi = 1.0, max(4.5, float(train[:, 1].max()))

    def xy(x, y):
        return pad + (w - 2 * pad) * x / x_max, h - pad - (h - 2 * pad) * (y - y_lo) / (y_hi - y_lo)

    def line(p, q, value):
        n = int(max(abs(q[0] - p[0]), abs(q[1] - p[1]))) + 1
        for s in np.linspace(0, 1, n + 1):
            x, y = int(p[0] + s * (q[0] - p[0])), int(p[1] + s * (q[1] - p[1]))
            if 0 <= x < w and 0 <= y < h:
                img[y, x] = value

    line(xy(0, y_lo), xy(x_max, y_lo), 0)
    line(xy(0, y_lo), xy(0, y_hi), 0)
    for a, b in zip(train[:-1], train[1:]):
        line(xy(*a), xy(*b), 170)
    for a, b in zip(val[:-1], val[1:]):
        line(xy(*a), xy(*b), 0)
    write_png_gray(out, img)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--model", default=os.path.join(ROOT, "out", "model_00002000.bin"))
    ap.add_argument("--log", default=os.path.join(ROOT, "out", "default.log"))
    ap.add_argument("--prompt", default=PROMPT)
    args = ap.parse_args()
    if len(args.prompt) > 64:
        sys.exit("the prompt must fit the default model's T = 64 characters")

    with tempfile.TemporaryDirectory() as tmp:
        pgm = os.path.join(tmp, "attention_maps.pgm")
        cmd = [os.path.join(ROOT, "train_gpt2"), "-e", args.model, "-x", "0", "-pr", args.prompt, "-am", pgm]
        r = subprocess.run(cmd, cwd=ROOT, capture_output=True, text=True)
        if r.returncode != 0:
            sys.exit("%s failed:\n%s%s" % (" ".join(cmd), r.stdout, r.stderr))
        m = re.search(r"model: L=(\d+) NH=(\d+)", r.stdout)
        L, NH = int(m.group(1)), int(m.group(2))
        img = read_pgm(pgm)
    probs = attention_tiles(img, L, NH, len(args.prompt))
    describe_heads(probs, args.prompt)
    attention_picture(img, probs, args.prompt, os.path.join(DOC, "attention_maps.png"))
    train, val = parse_log(args.log)
    loss_picture(train, val, os.path.join(DOC, "loss_curve.png"))
    print("final train loss (mean of the last 50 steps) %.4f, final val loss %.4f"
          % (train[-50:, 1].mean(), val[-1, 1] if len(val) else float("nan")))
    for name in ("attention_maps.png", "loss_curve.png"):
        print("wrote doc/%s (%d KB)" % (name, os.path.getsize(os.path.join(DOC, name)) // 1024))


if __name__ == "__main__":
    main()
