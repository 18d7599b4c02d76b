#!/usr/bin/python3
"""Reference tensors for the tests of the C GPT-2 trainer (llm.c binary formats).

Usage:  /usr/bin/python3 data/make_reference.py [--out DIR]     (default DIR = data/ref
        next to this script).  Needs torch (Debian python3-torch 1.13 works) and numpy.
Output is deterministic: re-running writes byte-identical files.

How the numbers are made
------------------------
GPT-2 is built from plain torch ops (embedding by indexing, F.layer_norm eps=1e-5,
x @ W.T + b, explicit causal-masked softmax attention scaled by 1/sqrt(hs),
F.gelu(approximate='tanh'), F.cross_entropy over logits[..., :V] only, output head tied
to wte) and autograd computes every gradient; no backward pass is written by hand (also
not for the block variants below: RoPE goes through complex128 autograd).
Parameters are drawn with a seeded torch.Generator, rounded to float32 (that is what the
checkpoint stores), then converted to float64; forward, backward and optimiser run in
float64 and results are stored as float32.
Init: weights/embeddings N(0, 0.1^2), biases N(0, 0.1^2), layernorm weights
1 + 0.3*N(0,1), layernorm biases N(0, 0.1^2). The padding rows V..Vp-1 of wte are random
and non-zero too (a C bug that lets padding into the softmax changes the loss); their
gradient is exactly zero.

Configurations
  a: V=65,  Vp=128, maxT=16, L=2, NH=2, C=32 (hs 16), B=3, T=11   plain GPT-2
  b: V=101, Vp=128, maxT=32, L=3, NH=6, C=48 (hs 8),  B=2, T=23   plain GPT-2
  c: V=65,  Vp=128, maxT=16, L=2, NH=4, C=32 (hs 8),  B=2, T=13
     NKV=2, pe=rope, ln=post, act=relu, causal=1
  d: V=70,  Vp=128, maxT=20, L=2, NH=3, C=36 (hs 12), B=2, T=17
     NKV=1, pe=sin, ln=pre, act=gelu, causal=0
  e: V=65,  Vp=128, maxT=16, L=2, NH=4, C=32 (hs 8),  B=2, T=13   GPT-2 with scale=0.7:
     the attention scores times 0.7 instead of 1/sqrt(8) = 0.354 (-as 0.7)
Seeds 1001, 2002, 3003, 4004, 5005; each config has its own torch.Generator, drawing the
parameters in checkpoint order (wpe only where it exists), then x, then y.
x and y are random ints in [0, V) of shape (B, T) (y is NOT x shifted; it is independent).

Block variants (plain GPT-2 = NKV=NH, pe=learned, ln=pre, act=gelu, causal=1)
  hs = C/NH throughout; the attention scale is 1/sqrt(hs) unless a config names another
  (scale, -as: e).
  NKV     key/value heads (grouped-query attention), NKV divides NH. qkvw is
          (L, (NH+2*NKV)*hs, C), qkvb (L, (NH+2*NKV)*hs); rows: NH*hs Q rows, then NKV*hs
          K rows, then NKV*hs V rows. qkv = a @ qkvw[l]^T + qkvb[l];
          q = qkv[:C], k = qkv[C : C+NKV*hs], v = qkv[C+NKV*hs :]; head j of each is the
          hs-slice [j*hs, (j+1)*hs). Query head h uses K/V head h // (NH/NKV)
          (consecutive groups, llama's repeat_kv). attproj still maps C -> C.
  pe      learned: h0 = wte[x] + wpe[t] (GPT-2).
          rope:    no wpe tensor anywhere (not in the checkpoint, the gradients or the
                   optimiser); h0 = wte[x]. In every layer q (all NH heads) and k
                   (NKV heads) are rotated per head after the bias, before the scores,
                   at position t = 0..T-1 (llama's precompute_freqs_cis(hs) and
                   apply_rotary_emb):
                     freq_i = 1 / 10000^(2i/hs), i = 0..hs/2-1;  a = t * freq_i
                     out[2i]   = x[2i]*cos(a) - x[2i+1]*sin(a)
                     out[2i+1] = x[2i]*sin(a) + x[2i+1]*cos(a)
                   (adjacent pairs of a head, NOT the halves). v is not rotated.
          sin:     no wpe tensor; h0 = wte[x] + PE[t], a fixed table, no scaling of wte:
                     PE[t, 2i] = sin(t / 10000^(2i/C)),  PE[t, 2i+1] = cos(t / 10000^(2i/C))
                   (i = 0..C/2-1; one frequency per column pair).
          The rope angles and the sin table are computed in float64 (never stored).
  ln      pre:  h = h + attn(LN1(h)); h = h + mlp(LN2(h))            (GPT-2)
          post: h = LN1(h + attn(h)); h = LN2(h + mlp(h))   (original Transformer: attn
                reads h directly, mlp reads LN1's output; LN1 = ln1w/ln1b, LN2 = ln2w/ln2b)
          Both: lnfw/lnfb after the last layer, then the tied head, as in GPT-2.
  act     gelu: tanh approximation (GPT-2); relu: max(0, u). Only the MLP non-linearity.
  causal  1: key t2 > query t excluded (GPT-2); 0: no mask, softmax over all T keys.
Self-checks run before anything is written (own generators, no effect on the files):
RoPE (complex) against the real rotation formula above, values and gradients; attention
with NKV=NH against plain multi-head and with NKV<NH against per-head loops using K/V head
h // (NH/NKV), causal and unmasked; a few entries of the sin table.

Files written (X in {a, b, c, d, e}); all little-endian, every file starts with 256 int32
----------------------------------------------------------------------------------------
ref_X_model.bin   llm.c checkpoint, header [0]=20240326 [1]=3 [2]=maxT [3]=V [4]=L
                  [5]=NH [6]=C [7]=Vp, rest 0 (a, b), then all 16 parameter tensors as
                  float32 in checkpoint order (see doc/formats.md).
                  A model with any block variant (c, d) has [1]=103 instead (llm.c's
                  loader refuses it rather than misreading it) and [8]=NKV
                  [9]=pe (0 learned, 1 rope, 2 sin) [10]=ln (0 pre, 1 post)
                  [11]=act (0 gelu, 1 relu) [12]=mask (0 causal, 1 none), rest 0;
                  then the tensors in the same order with the variant shapes, wpe
                  omitted when pe != learned (15 tensors):
                    c: 20240326 103 16 65 2 4 32 128 | 2 1 1 1 0   (27456 floats)
                    d: 20240326 103 20 70 2 3 36 128 | 1 2 0 0 1   (33168 floats)
                  A scale (e) is [14] = its float32's bits ([13], d_ff, 0 = 4C):
                    e: 20240326 103 16 65 2 4 32 128 | 4 0 0 0 0 0 0x3f333333
ref_X_state.bin   llm.c reference state version 2: header [0]=20240327 [1]=2 [2]=B [3]=T;
                  x (B*T int32), y (B*T int32), logits (B*T*V float32, NOT padded),
                  mean loss (1 float32), gradients of the mean loss w.r.t. every
                  parameter (float32, checkpoint order/shapes, so no wpe for c and d;
                  wte rows V..Vp-1 are 0).
ref_X_train.bin   training trajectory (this project's own format):
                  int32 header[256]: [0]=20241122 (magic) [1]=1 (version) [2]=B [3]=T
                      [4]=n steps (12) [5]=warmup steps (3), rest 0;
                  float32 hyper[16]: lr, beta1, beta2, eps, weight_decay, grad_clip,
                      final_lr_frac, then 9 zeros
                      (lr=1e-3, beta1=0.9, beta2=0.95, eps=1e-8, weight_decay=0.1,
                      final_lr_frac=0.1, grad_clip = half the step-0 gradient norm,
                      rounded to float32);
                  x (B*T int32), y (B*T int32): the same batch as the state file, reused
                      at every step;
                  losses float32[n], grad_norms float32[n], lrs float32[n].
                  Step s = 0..n-1, starting from the checkpoint's parameters:
                    forward on (x, y) -> losses[s]; backward;
                    grad_norms[s] = global L2 norm over all parameter gradients the
                      config has (before clipping; the zero padding rows of wte
                      included, harmlessly);
                    if norm > grad_clip: every gradient *= grad_clip / norm;
                    lr_s = lr*(s+1)/warmup                       if s < warmup
                         = lr_min + 0.5*(1+cos(pi*ratio))*(lr-lr_min) otherwise, with
                           ratio = (s-warmup)/(n-warmup), lr_min = lr*final_lr_frac;
                    lrs[s] = lr_s;
                    one AdamW step (torch.optim.AdamW semantics, float64):
                      m = b1*m + (1-b1)*g;  v = b2*v + (1-b2)*g^2   (t = s+1)
                      p = p - lr_s*( (m/(1-b1^t)) / (sqrt(v/(1-b2^t)) + eps) + wd*p )
                    with weight decay only on wte, wpe (where it exists), qkvw,
                    attprojw, fcw, fcprojw (wd = 0 for biases and layernorm parameters).
                  losses[0] equals the state file's loss. The hyperparameters used in
                  the computation are exactly the float32 values stored in the file
                  (converted to float64).
ref_a_dropout_state.bin   (config a only; none for b, c, d) same body as a version-2
                  state file (x, y, logits, loss, grads), but computed with dropout
                  active. Header
                  [0]=20240327 [1]=3 [2]=B [3]=T [4]=seed (4242) [5]=step (7)
                  [6]=p in parts per million (100000 = 0.1), rest 0.
                  Masks come from a counter-based generator (uint64, wrap-around):
                    splitmix64(z): z += 0x9E3779B97F4A7C15;
                                   z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9;
                                   z = (z ^ (z >> 27)) * 0x94D049BB133111EB;
                                   return z ^ (z >> 31)
                    site key k = splitmix64(splitmix64(splitmix64(seed) ^ step)
                                            ^ (layer*4 + site))
                    element  u = splitmix64(k ^ idx) >> 40        (24-bit integer)
                    keep iff u >= floor(p * 2^24)  (= 1677721 for p = 0.1);
                    kept values are multiplied by 1/(1-p), dropped ones become 0.
                  Sites:
                    0: embedding sum wte[x] + wpe (layer 0), idx = flat index in (B,T,C)
                    1: attention probabilities after softmax of layer l (before @ V),
                       idx = ((b*NH + h)*T + t)*T + t2 (masked positions are 0 anyway)
                    2: attention output projection (attproj out incl. bias) of layer l,
                       before the residual add, idx in (B,T,C)
                    3: MLP output projection (fcproj out incl. bias) of layer l, before
                       the residual add, idx in (B,T,C)
ref_s2s_Y_model.bin, ref_s2s_Y_state.bin, ref_s2s_Y_train.bin   (Y in {pre, post, es}),
ref_s2s_pre_dropout_state.bin
                  The encoder-decoder of train_seq2seq.c, with torch.nn.Transformer
                  itself as the oracle (batch_first, float64, dropout 0,
                  dim_feedforward 4C unless the config says d_ff, layer_norm_eps 1e-5,
                  train mode so that no fast path or nested tensor is used):
                    pre:  V=13 Vp=16 maxT=12 Le=2 Ld=2 NH=2 C=16, norm_first=True,
                          activation F.gelu(approximate="tanh"), learned wpe; seed 5005
                    post: the same shape, norm_first=False, F.relu, the sin table
                          above (no wpe); seed 6006
                    es:   -pe sin -es 1 -ff 2C: V=13 Vp=16 maxT=12 Le=2 Ld=2 NH=3 C=24
                          (hs 8), norm_first=True, the tanh GELU, the sin table, token
                          embeddings times sqrt(24) on the way in (not in the tied head),
                          dim_feedforward 48; seed 7007
                  Parameters drawn as for GPT-2 (0.1 N, layernorm weights 1 + 0.3 N,
                  wte padding rows non-zero) in checkpoint order, then the batch: B=3
                  pairs, sources of 7, 3, 10 and targets of 5, 9, 2 characters drawn
                  from 3..V-1, laid out as util/pairs.h's PairBatch: src (B,Ts=10) PAD (0)
                  after src_len; dec_in (B,Tt=10) = BOS (1), target, PAD; dec_tgt =
                  target, EOS (2), -1. Embeddings wte[src] + pos[0..Ts) and wte[dec_in]
                  + pos[0..Tt) (wte[...] times sqrt(C) in es only) enter nn.Transformer with
                  src_key_padding_mask = memory_key_padding_mask = (position >= src_len),
                  tgt_mask = the causal mask; logits = decoder output (after
                  decoder.norm) @ wte^T, the first V columns; loss = cross-entropy mean
                  over the positions with dec_tgt >= 0 (ignore_index -1). Our tensors
                  map onto nn.Transformer as doc/formats.md (version 200) says:
                  self_attn.in_proj = qkv, multihead_attn.in_proj = [xq; xkv], out_proj
                  = attproj / xproj, encoder norm1/norm2 = ln1/ln2, decoder
                  norm1/norm2/norm3 = ln1/lnx/ln2, linear1/linear2 = fc/fcproj,
                  encoder.norm = enc_lnf, decoder.norm = lnf; gradients are read back
                  from the module's .grad the same way. Self-checks: the same model
                  written out by hand with explicit masked attention gives the same
                  logits (< 1e-12), and padding the batch by 2 more positions changes
                  no real logit or the loss.
                  _model: checkpoint version 200: [0]=20240326 [1]=200 [2]=maxT [3]=V
                      [4]=Le [5]=NH [6]=C [7]=Vp [8]=NH [9]=pe (0 learned, 2 sin)
                      [10]=ln [11]=act [12]=0 [13]=Ld [14]=embedding scale (1 in es)
                      [15]=d_ff (0: 4C; 48 in es); the 38 tensors (37 without wpe).
                  _state: reference state version 200: [0]=20240327 [1]=200 [2]=B
                      [3]=Ts [4]=Tt; src (B*Ts int32), src_len (B), dec_in (B*Tt),
                      dec_tgt (B*Tt), logits (B*Tt*V float32, 0 at positions without
                      a target), the loss, every gradient (checkpoint order).
                  _train: trajectory version 200: [0]=20241122 [1]=200 [2]=B [3]=Ts
                      [4]=Tt [5]=n (12) [6]=warmup (3); hyper[16] as above; losses,
                      grad_norms, lrs (n float32 each); the batch is the state file's.
                      The steps are those of ref_X_train.bin, weight decay on wte, wpe
                      and every matrix (qkvw, attprojw, fcw, fcprojw of both stacks,
                      xqw, xkvw, xprojw), torch.optim.AdamW on the module's parameters.
                  _pre_dropout_state: the 'pre' model and batch with dropout at all
                      its 18 sites, which nn.Transformer cannot give (its masks come from
                      torch's generator), so from the model written out by hand
                      (s2s_by_hand, checked against nn.Transformer without dropout: logits
                      and gradients within 1e-12) with the counter-based masks above:
                      version 201, [5] seed 4242 [6] step 7 [7] p in ppm (100000); the
                      same body. Sites ("layer", site): the source's embedding (0, 0), the
                      target's (1, 0); sublayer s (encoder layer l: s = 2l self-attention,
                      2l+1 MLP; decoder layer l: s = 2Le+3l self-attention, +1 cross-
                      attention, +2 MLP): (s, 1) its attention probabilities, idx =
                      ((b*NH + h)*Tq + t)*Tk + t2; (s, 2) an attention branch's output and
                      (s, 3) an MLP branch's output, before the residual add, idx in (B,T,C).
ref_article002.txt  worked attention example (3 tokens, d=2, Q=X@Wq, K=X@Wk, V=X@Wv,
                  scores=Q@K^T, scaled=scores/sqrt(2), softmax rows, out=weights@V),
                  without and with a causal mask, float64, 9 significant digits.
"""

import argparse
import json
import math
import os
import struct
import sys

import numpy as np
import torch
import torch.nn.functional as F

torch.set_num_threads(1)

CONFIGS = {
    "a": dict(V=65, Vp=128, maxT=16, L=2, NH=2, C=32, B=3, T=11, seed=1001),
    "b": dict(V=101, Vp=128, maxT=32, L=3, NH=6, C=48, B=2, T=23, seed=2002),
    "c": dict(V=65, Vp=128, maxT=16, L=2, NH=4, C=32, B=2, T=13, seed=3003,
              NKV=2, pe="rope", ln="post", act="relu", causal=1),
    "d": dict(V=70, Vp=128, maxT=20, L=2, NH=3, C=36, B=2, T=17, seed=4004,
              NKV=1, pe="sin", ln="pre", act="gelu", causal=0),
    "e": dict(V=65, Vp=128, maxT=16, L=2, NH=4, C=32, B=2, T=13, seed=5005, scale=0.7),
}
PARAM_NAMES = ["wte", "wpe", "ln1w", "ln1b", "qkvw", "qkvb", "attprojw", "attprojb",
               "ln2w", "ln2b", "fcw", "fcb", "fcprojw", "fcprojb", "lnfw", "lnfb"]
DECAYED = {"wte", "wpe", "qkvw", "attprojw", "fcw", "fcprojw"}

# Block variants. A config that names none of these is plain GPT-2 (NKV defaults to NH).
VARIANT_DEFAULTS = dict(pe="learned", ln="pre", act="gelu", causal=1)
PE_CODES = {"learned": 0, "rope": 1, "sin": 2}   # checkpoint header slot 9
LN_CODES = {"pre": 0, "post": 1}                 # slot 10
ACT_CODES = {"gelu": 0, "relu": 1}               # slot 11
ROPE_THETA = SIN_BASE = 10000.0

N_STEPS, WARMUP = 12, 3
HYPER = dict(lr=1e-3, beta1=0.9, beta2=0.95, eps=1e-8, weight_decay=0.1,
             final_lr_frac=0.1)
DROP_SEED, DROP_STEP, DROP_PPM = 4242, 7, 100000


def f32(v):
    """Round a Python float to the nearest float32 value (returned as a Python float)."""
    return float(np.float32(v))


def variant(cfg):
    """The block-variant settings of a config, with the GPT-2 defaults filled in."""
    v = dict(VARIANT_DEFAULTS, NKV=cfg["NH"])
    v.update({k: cfg[k] for k in ("NKV", "pe", "ln", "act", "causal") if k in cfg})
    return v


def is_variant(cfg):
    """True when any block setting differs from GPT-2 (-> checkpoint version 103)."""
    return variant(cfg) != dict(VARIANT_DEFAULTS, NKV=cfg["NH"]) or "scale" in cfg


def check_config(cfg):
    v = variant(cfg)
    NH, C = cfg["NH"], cfg["C"]
    assert C % NH == 0 and NH % v["NKV"] == 0 and cfg["T"] <= cfg["maxT"]
    assert v["pe"] in PE_CODES and v["ln"] in LN_CODES and v["act"] in ACT_CODES
    assert v["causal"] in (0, 1)
    if v["pe"] == "rope":
        assert (C // NH) % 2 == 0, "rope pairs the elements of a head"
    if v["pe"] == "sin":
        assert C % 2 == 0, "sin table fills (sin, cos) column pairs"


def shapes(cfg):
    """name -> shape, in checkpoint order; wpe only exists for learned positions. The
    insertion order is also the order of the random draws, so for a plain GPT-2 config
    this must stay exactly {wte, wpe, ..., lnfb} with qkv width 3C."""
    V, Vp, maxT, L, C = cfg["V"], cfg["Vp"], cfg["maxT"], cfg["L"], cfg["C"]
    v = variant(cfg)
    hs = C // cfg["NH"]
    qkv = (cfg["NH"] + 2 * v["NKV"]) * hs  # = 3C when NKV == NH
    out = {"wte": (Vp, C)}
    if v["pe"] == "learned":
        out["wpe"] = (maxT, C)
    out.update({
        "ln1w": (L, C), "ln1b": (L, C),
        "qkvw": (L, qkv, C), "qkvb": (L, qkv), "attprojw": (L, C, C),
        "attprojb": (L, C), "ln2w": (L, C), "ln2b": (L, C), "fcw": (L, 4 * C, C),
        "fcb": (L, 4 * C), "fcprojw": (L, C, 4 * C), "fcprojb": (L, C),
        "lnfw": (C,), "lnfb": (C,),
    })
    return out


def param_names(cfg):
    """PARAM_NAMES minus the tensors this config does not have (wpe without learned pe)."""
    shp = shapes(cfg)
    return [n for n in PARAM_NAMES if n in shp]


def init_params(cfg, gen):
    """Draw parameters (float32 values), return dict name -> float32 tensor."""
    out = {}
    for name, shp in shapes(cfg).items():
        z = torch.randn(shp, generator=gen, dtype=torch.float64)
        if name in ("ln1w", "ln2w", "lnfw"):
            t = 1.0 + 0.3 * z
        else:  # weights, embeddings (incl. wte padding rows), biases, layernorm biases
            t = 0.1 * z
        out[name] = t.to(torch.float32)
    return out


# ----------------------------------------------------------------------------------------
# counter-based dropout masks (numpy, uint64 wrap-around)

M64 = (1 << 64) - 1


def splitmix64_scalar(z):
    z = (z + 0x9E3779B97F4A7C15) & M64
    z = ((z ^ (z >> 30)) * 0xBF58476D1CE4E5B9) & M64
    z = ((z ^ (z >> 27)) * 0x94D049BB133111EB) & M64
    return z ^ (z >> 31)


def splitmix64_np(z):
    z = np.asarray(z, dtype=np.uint64)
    with np.errstate(over="ignore"):
        z = z + np.uint64(0x9E3779B97F4A7C15)
        z = (z ^ (z >> np.uint64(30))) * np.uint64(0xBF58476D1CE4E5B9)
        z = (z ^ (z >> np.uint64(27))) * np.uint64(0x94D049BB133111EB)
        z = z ^ (z >> np.uint64(31))
    return z


def site_key(seed, step, layer, site):
    k = splitmix64_scalar(seed & M64)
    k = splitmix64_scalar(k ^ (step & M64))
    return splitmix64_scalar(k ^ (layer * 4 + site))


def drop_threshold(p):
    return int(np.uint32(math.floor(p * (1 << 24))))


def dropout_keep(seed, step, layer, site, shape, p):
    """Boolean keep-mask of the given shape (idx = flat row-major index)."""
    n = int(np.prod(shape))
    k = np.uint64(site_key(seed, step, layer, site))
    idx = np.arange(n, dtype=np.uint64)
    u = splitmix64_np(k ^ idx) >> np.uint64(40)
    return (u >= np.uint64(drop_threshold(p))).reshape(shape)


class Dropout:
    def __init__(self, seed, step, p):
        self.seed, self.step, self.p = seed, step, p
        self.scale = 1.0 / (1.0 - p)
        self.stats = []  # (layer, site, dropped fraction)

    def __call__(self, t, layer, site):
        keep = dropout_keep(self.seed, self.step, layer, site, tuple(t.shape), self.p)
        self.stats.append((layer, site, 1.0 - keep.mean()))
        mask = torch.from_numpy(keep.astype(np.float64) * self.scale)
        return t * mask


# ----------------------------------------------------------------------------------------
# model

def rope_freqs_cis(hs, T):
    """llama's precompute_freqs_cis in complex128: [t, i] = exp(1j * t * freqs[i]),
    freqs[i] = 1 / theta^(2i/hs), i = 0..hs/2-1, t = 0..T-1."""
    freqs = 1.0 / (ROPE_THETA ** (torch.arange(0, hs, 2, dtype=torch.float64) / hs))
    angles = torch.outer(torch.arange(T, dtype=torch.float64), freqs)  # (T, hs/2)
    return torch.polar(torch.ones_like(angles), angles)


def apply_rope(x, freqs_cis):
    """llama's apply_rotary_emb on x (B, T, nh, hs): the adjacent pairs (x[2i], x[2i+1])
    of each head are one complex number, multiplied by freqs_cis[t, i]. Complex autograd
    gives the backward; this is the oracle, the real formula is only the self-check."""
    B, T, nh, hs = x.shape
    xc = torch.view_as_complex(x.reshape(B, T, nh, hs // 2, 2))
    return torch.view_as_real(xc * freqs_cis.view(1, T, 1, hs // 2)).flatten(3)


def sin_table(T, C):
    """Fixed sinusoidal positions (T, C): [t, 2i] = sin(t / base^(2i/C)),
    [t, 2i+1] = cos(t / base^(2i/C)); both columns of a pair share one frequency."""
    even = torch.arange(0, C, 2, dtype=torch.float64)
    ang = torch.arange(T, dtype=torch.float64)[:, None] / (SIN_BASE ** (even / C))[None, :]
    pe = torch.empty(T, C, dtype=torch.float64)
    pe[:, 0::2] = torch.sin(ang)
    pe[:, 1::2] = torch.cos(ang)
    return pe


def repeat_kv(x, n_rep):
    """llama's repeat_kv: (B, T, NKV, hs) -> (B, T, NKV*n_rep, hs), each K/V head copied
    to n_rep consecutive query heads, so query head h reads K/V head h // n_rep."""
    B, T, nkv, hs = x.shape
    if n_rep == 1:  # plain multi-head: no op at all, keeps configs a/b bit-identical
        return x
    return x[:, :, :, None, :].expand(B, T, nkv, n_rep, hs).reshape(B, T, nkv * n_rep, hs)


def attention(q, k, v, causal, drop=None, layer=0, scale=None):
    """q (B,T,NH,hs), k and v (B,T,NKV,hs) -> (B,T,NH*hs), heads concatenated in order.
    Softmax of q.k/sqrt(hs) (or q.k times scale, -as) over keys (keys after the query
    excluded when causal)."""
    B, T, NH, hs = q.shape
    n_rep = NH // k.shape[2]
    q = q.transpose(1, 2)  # (B,NH,T,hs)
    k = repeat_kv(k, n_rep).transpose(1, 2)
    v = repeat_kv(v, n_rep).transpose(1, 2)
    att = (q @ k.transpose(-2, -1)) * (1.0 / math.sqrt(hs) if scale is None else scale)  # (B,NH,T,T)
    if causal:
        mask = torch.tril(torch.ones(T, T, dtype=torch.bool))
        att = att.masked_fill(~mask, float("-inf"))
    att = torch.softmax(att, dim=-1)
    if drop is not None:
        att = drop(att, layer, 1)
    return (att @ v).transpose(1, 2).reshape(B, T, NH * hs)


def forward(P, cfg, x, y, dropout=None):
    """P: dict of float64 tensors. Returns (logits[B,T,V], mean loss)."""
    V, L, NH, C = cfg["V"], cfg["L"], cfg["NH"], cfg["C"]
    var = variant(cfg)
    NKV, post = var["NKV"], var["ln"] == "post"
    B, T = x.shape
    hs = C // NH
    drop = dropout if dropout is not None else (lambda t, layer, site: t)
    act = {"gelu": lambda t: F.gelu(t, approximate="tanh"), "relu": F.relu}[var["act"]]
    if var["pe"] == "learned":
        h = P["wte"][x] + P["wpe"][torch.arange(T)]  # (B,T,C)
    elif var["pe"] == "sin":
        h = P["wte"][x] + sin_table(T, C)  # fixed table, not a parameter, no scaling
    else:  # rope: positions enter only through the rotation of q and k
        h = P["wte"][x]
    h = drop(h, 0, 0)
    freqs_cis = rope_freqs_cis(hs, T) if var["pe"] == "rope" else None
    for l in range(L):
        # pre-LN: attention reads LN1(h); post-LN: attention reads h and LN1 follows the add
        a = h if post else F.layer_norm(h, (C,), P["ln1w"][l], P["ln1b"][l], eps=1e-5)
        qkv = a @ P["qkvw"][l].T + P["qkvb"][l]  # (B,T,(NH+2*NKV)*hs): Q, K, V rows
        q = qkv[..., :C].reshape(B, T, NH, hs)
        k = qkv[..., C:C + NKV * hs].reshape(B, T, NKV, hs)
        v = qkv[..., C + NKV * hs:].reshape(B, T, NKV, hs)
        if freqs_cis is not None:  # after the bias, before the scores; V is not rotated
            q, k = apply_rope(q, freqs_cis), apply_rope(k, freqs_cis)
        o = attention(q, k, v, var["causal"], drop if dropout is not None else None, l,
                      None if "scale" not in cfg else f32(cfg["scale"]))
        o = o @ P["attprojw"][l].T + P["attprojb"][l]
        o = drop(o, l, 2)
        h = h + o
        if post:
            h = F.layer_norm(h, (C,), P["ln1w"][l], P["ln1b"][l], eps=1e-5)
        a = h if post else F.layer_norm(h, (C,), P["ln2w"][l], P["ln2b"][l], eps=1e-5)
        m = a @ P["fcw"][l].T + P["fcb"][l]
        m = act(m)
        m = m @ P["fcprojw"][l].T + P["fcprojb"][l]
        m = drop(m, l, 3)
        h = h + m
        if post:
            h = F.layer_norm(h, (C,), P["ln2w"][l], P["ln2b"][l], eps=1e-5)
    h = F.layer_norm(h, (C,), P["lnfw"], P["lnfb"], eps=1e-5)
    logits = h @ P["wte"].T  # (B,T,Vp), tied head
    logits = logits[..., :V]
    loss = F.cross_entropy(logits.reshape(B * T, V), y.reshape(B * T))
    return logits, loss


# ----------------------------------------------------------------------------------------
# self-checks of the variant building blocks against direct formulas

def check_rope(cfg):
    """apply_rope (complex) == the real rotation (x0 cos - x1 sin, x0 sin + x1 cos), values
    and gradients, on random (B,T,NH,hs) data from a generator of its own (the config's
    generator must not be disturbed)."""
    B, T, NH = cfg["B"], cfg["T"], cfg["NH"]
    hs = cfg["C"] // NH
    g = torch.Generator().manual_seed(777)
    x = torch.randn(B, T, NH, hs, generator=g, dtype=torch.float64, requires_grad=True)
    w = torch.randn(B, T, NH, hs, generator=g, dtype=torch.float64)
    got = apply_rope(x, rope_freqs_cis(hs, T))
    want = torch.empty(B, T, NH, hs, dtype=torch.float64)
    xd = x.detach()
    for t in range(T):
        for i in range(hs // 2):
            ang = t / ROPE_THETA ** (2 * i / hs)
            c, s = math.cos(ang), math.sin(ang)
            x0, x1 = xd[:, t, :, 2 * i], xd[:, t, :, 2 * i + 1]
            want[:, t, :, 2 * i] = x0 * c - x1 * s
            want[:, t, :, 2 * i + 1] = x0 * s + x1 * c
    assert torch.allclose(got, want, rtol=0, atol=1e-12), "rope != real rotation"
    # the backward of a rotation is the rotation by -angle
    (gx,) = torch.autograd.grad((got * w).sum(), x)
    want_g = torch.empty_like(gx)
    for t in range(T):
        for i in range(hs // 2):
            ang = t / ROPE_THETA ** (2 * i / hs)
            c, s = math.cos(ang), math.sin(ang)
            w0, w1 = w[:, t, :, 2 * i], w[:, t, :, 2 * i + 1]
            want_g[:, t, :, 2 * i] = w0 * c + w1 * s
            want_g[:, t, :, 2 * i + 1] = -w0 * s + w1 * c
    assert torch.allclose(gx, want_g, rtol=0, atol=1e-12), "rope backward"
    return (got - want).abs().max().item()


def check_gqa():
    """attention() with NKV == NH equals plain multi-head attention, and with NKV < NH
    equals per-head attention where query head h uses K/V head h // (NH // NKV); both
    written as explicit loops with their own softmax, with and without the causal mask."""
    g = torch.Generator().manual_seed(778)
    B, T, NH, hs = 2, 5, 6, 4

    def loop(q, k, v, causal):
        n_rep = NH // k.shape[2]
        out = torch.zeros(B, T, NH * hs, dtype=torch.float64)
        for b in range(B):
            for h in range(NH):
                kh = h // n_rep
                for t in range(T):
                    keys = range(t + 1) if causal else range(T)
                    sc = torch.stack([(q[b, t, h] * k[b, t2, kh]).sum() / math.sqrt(hs)
                                      for t2 in keys])
                    e = torch.exp(sc - sc.max())
                    p = e / e.sum()
                    out[b, t, h * hs:(h + 1) * hs] = sum(
                        p[j] * v[b, t2, kh] for j, t2 in enumerate(keys))
        return out

    for nkv in (NH, 3, 2, 1):
        q = torch.randn(B, T, NH, hs, generator=g, dtype=torch.float64)
        k = torch.randn(B, T, nkv, hs, generator=g, dtype=torch.float64)
        v = torch.randn(B, T, nkv, hs, generator=g, dtype=torch.float64)
        for causal in (1, 0):
            assert torch.allclose(attention(q, k, v, causal), loop(q, k, v, causal),
                                  rtol=0, atol=1e-12), f"gqa nkv={nkv} causal={causal}"


def check_sin_table():
    pe = sin_table(4, 6)
    assert (pe[0, 0::2] == 0).all() and (pe[0, 1::2] == 1).all()
    assert abs(pe[3, 0].item() - math.sin(3.0)) < 1e-15
    assert abs(pe[3, 1].item() - math.cos(3.0)) < 1e-15
    assert abs(pe[2, 4].item() - math.sin(2.0 / SIN_BASE ** (4 / 6))) < 1e-15
    assert abs(pe[2, 5].item() - math.cos(2.0 / SIN_BASE ** (4 / 6))) < 1e-15


def leaf64(P32, cfg):
    return {n: P32[n].to(torch.float64).clone().requires_grad_(True)
            for n in param_names(cfg)}


def forward_backward(P32, cfg, x, y, dropout=None):
    P = leaf64(P32, cfg)
    logits, loss = forward(P, cfg, x, y, dropout)
    loss.backward()
    return logits.detach(), loss.detach(), {n: P[n].grad.detach() for n in param_names(cfg)}


# ----------------------------------------------------------------------------------------
# writers

def header(vals):
    h = np.zeros(256, dtype="<i4")
    h[: len(vals)] = vals
    return h.tobytes()


def f32bytes(t):
    if isinstance(t, torch.Tensor):
        t = t.detach().cpu().numpy()
    return np.ascontiguousarray(np.asarray(t, dtype="<f4")).tobytes()


def i32bytes(t):
    if isinstance(t, torch.Tensor):
        t = t.cpu().numpy()
    return np.ascontiguousarray(np.asarray(t, dtype="<i4")).tobytes()


def model_header(cfg):
    """Checkpoint header values. Plain GPT-2: llm.c's version 3, slots 8.. zero. Any block
    variant: version 103 (llm.c's loader refuses it rather than misreading the tensors),
    slots 8..12 = NKV, pe, ln, act, mask (0 causal, 1 none)."""
    h = [20240326, 3, cfg["maxT"], cfg["V"], cfg["L"], cfg["NH"], cfg["C"], cfg["Vp"]]
    if is_variant(cfg):
        v = variant(cfg)
        h[1] = 103
        h += [v["NKV"], PE_CODES[v["pe"]], LN_CODES[v["ln"]], ACT_CODES[v["act"]],
              0 if v["causal"] else 1]
    if "scale" in cfg:  # slot 13 d_ff (0 = 4C), slot 14 the scale's float32 bits
        h += [0, int(np.frombuffer(np.float32(cfg["scale"]).tobytes(), "<i4")[0])]
    return h


def write_model(path, cfg, P32):
    with open(path, "wb") as f:
        f.write(header(model_header(cfg)))
        for n in param_names(cfg):
            f.write(f32bytes(P32[n]))


def write_state(path, cfg, hdr, x, y, logits, loss, grads):
    with open(path, "wb") as f:
        f.write(header(hdr))
        f.write(i32bytes(x))
        f.write(i32bytes(y))
        f.write(f32bytes(logits))
        f.write(f32bytes(np.array([loss.item()])))
        for n in param_names(cfg):
            f.write(f32bytes(grads[n]))


def lr_at(s, lr, n, warmup, final_frac):
    if s < warmup:
        return lr * (s + 1) / warmup
    ratio = (s - warmup) / (n - warmup)
    coeff = 0.5 * (1.0 + math.cos(math.pi * ratio))
    lr_min = lr * final_frac
    return lr_min + coeff * (lr - lr_min)


def trajectory(P32, cfg, x, y, step0_norm):
    hp = {k: f32(v) for k, v in HYPER.items()}  # use exactly the stored float32 values
    clip = f32(0.5 * step0_norm)
    P = leaf64(P32, cfg)
    names = param_names(cfg)  # no wpe tensor (hence no decay, no moments) without it
    groups = [
        {"params": [P[n] for n in names if n in DECAYED],
         "weight_decay": hp["weight_decay"]},
        {"params": [P[n] for n in names if n not in DECAYED], "weight_decay": 0.0},
    ]
    opt = torch.optim.AdamW(groups, lr=hp["lr"], betas=(hp["beta1"], hp["beta2"]),
                            eps=hp["eps"], foreach=False)
    steps = adamw_steps([P[n] for n in names], opt, hp, clip, lambda: forward(P, cfg, x, y)[1])
    return (hp, clip) + steps


def print_summary(loss, V, grads, names, norm0, clip, losses, norms, lrs, clipped):
    """The loss, each tensor's largest gradient and the trajectory, on stdout."""
    print(f"loss {loss.item():.9g}   (ln V = {math.log(V):.6g})")
    print("max |grad| per tensor:")
    width = max(9, max(len(n) for n in names))
    for n in names:
        print(f"  {n:{width}s} {grads[n].abs().max().item():.6g}")
    print(f"step-0 grad norm {norm0:.9g}; grad_clip {clip:.9g}")
    print(" step   loss          grad_norm     lr            clipped")
    for s in range(N_STEPS):
        print(f"  {s:2d}   {losses[s]:.9f}   {norms[s]:.9f}   {lrs[s]:.6e}  "
              f"{'yes' if clipped[s] else 'no'}")


def adamw_steps(params, opt, hp, clip, loss_fn):
    """N_STEPS steps: loss_fn() -> loss, backward, the global norm of the gradients of
    params (in that order), clipping to clip, the schedule's lr, opt.step(). Returns the
    lists losses, norms, lrs, clipped."""
    losses, norms, lrs, clipped = [], [], [], []
    for s in range(N_STEPS):
        opt.zero_grad(set_to_none=True)
        loss = loss_fn()
        loss.backward()
        grads = [p.grad for p in params]
        norm = math.sqrt(sum(float((g * g).sum()) for g in grads))
        did = norm > clip
        if did:
            sc = clip / norm
            with torch.no_grad():
                for g in grads:
                    g.mul_(sc)
        lr_s = lr_at(s, hp["lr"], N_STEPS, WARMUP, hp["final_lr_frac"])
        for g in opt.param_groups:
            g["lr"] = lr_s
        opt.step()
        losses.append(loss.item())
        norms.append(norm)
        lrs.append(lr_s)
        clipped.append(did)
    return losses, norms, lrs, clipped


def write_train(path, cfg, x, y, hp, clip, losses, norms, lrs):
    hyper = np.zeros(16, dtype="<f4")
    hyper[:7] = [hp["lr"], hp["beta1"], hp["beta2"], hp["eps"], hp["weight_decay"], clip,
                 hp["final_lr_frac"]]
    with open(path, "wb") as f:
        f.write(header([20241122, 1, cfg["B"], cfg["T"], N_STEPS, WARMUP]))
        f.write(hyper.tobytes())
        f.write(i32bytes(x))
        f.write(i32bytes(y))
        f.write(f32bytes(np.array(losses)))
        f.write(f32bytes(np.array(norms)))
        f.write(f32bytes(np.array(lrs)))


# ----------------------------------------------------------------------------------------
# read-back verification

# Checkpoint header slots 8..12 (NKV, pe, ln, act, mask) spelled out per config, as an
# independent check of model_header(); None = plain GPT-2 (version 3, slots 8.. zero).
EXPECTED_VARIANT_SLOTS = {"a": None, "b": None, "c": [2, 1, 1, 1, 0], "d": [1, 2, 0, 0, 1],
                          "e": [4, 0, 0, 0, 0, 0, 0x3F333333]}  # e: slot 14 = 0.7f's bits


def verify(out):
    for name, cfg in CONFIGS.items():
        V, Vp, B, T, C = cfg["V"], cfg["Vp"], cfg["B"], cfg["T"], cfg["C"]
        shp = shapes(cfg)
        names = param_names(cfg)
        assert names == list(shp), "shapes() not in checkpoint order"
        assert ("wpe" in names) == (variant(cfg)["pe"] == "learned")
        nparams = sum(int(np.prod(s)) for s in shp.values())
        # model
        raw = open(os.path.join(out, f"ref_{name}_model.bin"), "rb").read()
        assert len(raw) == 1024 + 4 * nparams, "model size"
        h = np.frombuffer(raw[:1024], "<i4")
        slots = EXPECTED_VARIANT_SLOTS[name]
        version = 3 if slots is None else 103
        assert list(h[:8]) == [20240326, version, cfg["maxT"], V, cfg["L"], cfg["NH"], C,
                               Vp]
        if slots is None:
            assert not h[8:].any()
        else:
            n = 8 + len(slots)
            assert list(h[8:n]) == slots and not h[n:].any(), name + ": variant slots"
        wte = np.frombuffer(raw[1024:1024 + 4 * Vp * C], "<f4").reshape(Vp, -1)
        assert (wte[V:] != 0).all(), "padding rows of wte must be non-zero"
        # read the parameters back in file order: recomputing from them must give the
        # state file's loss, logits and gradients bit for bit (checks order and offsets)
        P32, off = {}, 1024
        for n in names:
            cnt = int(np.prod(shp[n]))
            P32[n] = torch.from_numpy(np.frombuffer(raw, "<f4", cnt, off).copy())
            P32[n] = P32[n].reshape(shp[n])
            off += 4 * cnt
        st = open(os.path.join(out, f"ref_{name}_state.bin"), "rb").read()
        n_xy = B * T
        x, y = (torch.from_numpy(np.frombuffer(st, "<i4", n_xy, 1024 + 4 * n_xy * i)
                                 .astype(np.int64)).reshape(B, T) for i in (0, 1))
        logits, loss, grads = forward_backward(P32, cfg, x, y)
        body = (f32bytes(logits) + f32bytes(np.array([loss.item()]))
                + b"".join(f32bytes(grads[n]) for n in names))
        assert st[1024 + 8 * n_xy:] == body, name + ": model read back != state"
        # states
        files = [(f"ref_{name}_state.bin", [20240327, 2, B, T])]
        if name == "a":
            files.append((f"ref_{name}_dropout_state.bin",
                          [20240327, 3, B, T, DROP_SEED, DROP_STEP, DROP_PPM]))
        for fn, hexp in files:
            raw = open(os.path.join(out, fn), "rb").read()
            assert len(raw) == 1024 + 4 * (2 * B * T + B * T * V + 1 + nparams), fn
            h = np.frombuffer(raw[:1024], "<i4")
            assert list(h[:len(hexp)]) == hexp and not h[len(hexp):].any(), fn
            off = 1024 + 4 * (2 * B * T + B * T * V + 1)
            gwte = np.frombuffer(raw[off:off + 4 * Vp * C], "<f4").reshape(Vp, -1)
            assert (gwte[V:] == 0).all(), fn + ": wte grad padding rows not zero"
            assert not np.signbit(gwte[V:]).any(), fn + ": -0.0 in wte grad padding"
            assert np.isfinite(np.frombuffer(raw[1024:], "<f4")).all()
        # trajectory
        raw = open(os.path.join(out, f"ref_{name}_train.bin"), "rb").read()
        assert len(raw) == 1024 + 64 + 4 * (2 * B * T + 3 * N_STEPS), "train size"
        h = np.frombuffer(raw[:1024], "<i4")
        assert list(h[:6]) == [20241122, 1, B, T, N_STEPS, WARMUP] and not h[6:].any()
        xy_t = raw[1088:1088 + 8 * B * T]
        assert xy_t == st[1024:1024 + 8 * B * T], "train batch != state batch"
        loss_state = np.frombuffer(st, "<f4", 1, 1024 + 4 * (2 * B * T + B * T * V))[0]
        loss0 = np.frombuffer(raw, "<f4", 1, 1088 + 8 * B * T)[0]
        assert loss0 == loss_state, "losses[0] != state loss"
    print("verify: all headers (incl. variant slots 8-12), sizes, padding-row gradients, "
          "model read-back and cross-file checks OK")


# ----------------------------------------------------------------------------------------
# worked article example

def article_example(out):
    X = np.array([[0.1, 0.2], [0.3, 0.4], [0.5, 0.6]])
    Wq = np.array([[0.1, 0.2], [0.3, 0.4]])
    Wk = np.array([[0.5, 0.6], [0.7, 0.8]])
    Wv = np.array([[0.9, 1.0], [1.1, 1.2]])
    Q, K, Vm = X @ Wq, X @ Wk, X @ Wv
    scores = Q @ K.T
    scaled = scores / math.sqrt(2.0)

    def softmax(a):
        e = np.exp(a - a.max(axis=-1, keepdims=True))
        return e / e.sum(axis=-1, keepdims=True)

    w = softmax(scaled)
    o = w @ Vm
    masked = np.where(np.tril(np.ones((3, 3), dtype=bool)), scaled, -np.inf)
    wc = softmax(masked)
    oc = wc @ Vm

    def fmt(name, M):
        lines = [f"{name} {M.shape[0]} {M.shape[1]}"]
        for row in M:
            lines.append(" ".join(("-inf" if np.isneginf(v) else f"{v:.9g}") for v in row))
        return "\n".join(lines)

    parts = [
        "# Worked attention example (3 tokens, d=2), float64, 9 significant digits.",
        "# Q = X@Wq, K = X@Wk, V = X@Wv (no transposes); scores = Q@K^T;",
        "# scaled = scores/sqrt(2); weights = softmax(scaled, rows); out = weights@V.",
        "# Each block: '<name> <rows> <cols>' then one line per row.",
        "", fmt("X", X), fmt("Wq", Wq), fmt("Wk", Wk), fmt("Wv", Wv),
        fmt("Q", Q), fmt("K", K), fmt("V", Vm), fmt("scores", scores),
        fmt("scaled", scaled),
        "", "# without mask", fmt("weights", w), fmt("out", o),
        "", "# with causal mask (key j > query i excluded)",
        fmt("scaled_causal", masked), fmt("weights_causal", wc), fmt("out_causal", oc),
    ]
    text = "\n".join(parts) + "\n"
    with open(os.path.join(out, "ref_article002.txt"), "w") as f:
        f.write(text)
    print("== article example (ref_article002.txt) ==")
    print(text)


# ----------------------------------------------------------------------------------------
# the encoder-decoder (train_seq2seq.c): torch.nn.Transformer itself as the oracle

S2S_CONFIGS = {
    "pre": dict(V=13, Vp=16, maxT=12, Le=2, Ld=2, NH=2, C=16, seed=5005,
                pe="learned", ln="pre", act="gelu"),
    "post": dict(V=13, Vp=16, maxT=12, Le=2, Ld=2, NH=2, C=16, seed=6006,
                 pe="sin", ln="post", act="relu"),
    # -pe sin -es 1 (E15's remedy) and -ff 2C (article 003's toy width). C = 24: sqrt(C) =
    # 4.899 is not a power of two, nor C/4, hs or sqrt(hs), so a wrong factor cannot pass
    "es": dict(V=13, Vp=16, maxT=12, Le=2, Ld=2, NH=3, C=24, seed=7007,
               pe="sin", ln="pre", act="gelu", es=1, ff=48),
}
S2S_SRC_LENS, S2S_TGT_LENS = [7, 3, 10], [5, 9, 2]  # B = 3; Ts = 10, Tt = 9 + 1 = 10
PAD, BOS, EOS = 0, 1, 2
# the 38 tensors of a version-200 checkpoint, in file order (doc/formats.md)
S2S_LAYER = ["ln1w", "ln1b", "qkvw", "qkvb", "attprojw", "attprojb"]
S2S_MLP = ["ln2w", "ln2b", "fcw", "fcb", "fcprojw", "fcprojb"]
S2S_CROSS = ["lnxw", "lnxb", "xqw", "xqb", "xkvw", "xkvb", "xprojw", "xprojb"]
S2S_NAMES = (["wte", "wpe"] + ["e_" + n for n in S2S_LAYER + S2S_MLP] + ["enc_lnfw", "enc_lnfb"]
             + ["d_" + n for n in S2S_LAYER + S2S_CROSS + S2S_MLP] + ["lnfw", "lnfb"])
S2S_DECAYED = {"wte", "wpe", "e_qkvw", "e_attprojw", "e_fcw", "e_fcprojw", "d_qkvw",
               "d_attprojw", "d_xqw", "d_xkvw", "d_xprojw", "d_fcw", "d_fcprojw"}


def s2s_ff(cfg):
    """The MLPs' hidden width d_ff: -ff, or 4C."""
    return cfg.get("ff", 4 * cfg["C"])


def s2s_tokens(wte, tokens, cfg):
    """wte[tokens], times sqrt(C) with -es 1 (the original Transformer's scale; not in the
    tied head). Without it no multiplication at all: the other configs' files stay as they were."""
    e = wte[tokens]
    return e * math.sqrt(cfg["C"]) if cfg.get("es") else e


def s2s_shapes(cfg):
    """name -> shape in checkpoint order (no wpe with sinusoids)."""
    Vp, C, Le, Ld, FF = cfg["Vp"], cfg["C"], cfg["Le"], cfg["Ld"], s2s_ff(cfg)
    per = {"ln1w": (C,), "ln1b": (C,), "qkvw": (3 * C, C), "qkvb": (3 * C,),
           "attprojw": (C, C), "attprojb": (C,), "ln2w": (C,), "ln2b": (C,),
           "fcw": (FF, C), "fcb": (FF,), "fcprojw": (C, FF), "fcprojb": (C,),
           "lnxw": (C,), "lnxb": (C,), "xqw": (C, C), "xqb": (C,), "xkvw": (2 * C, C),
           "xkvb": (2 * C,), "xprojw": (C, C), "xprojb": (C,)}
    out = {}
    for n in S2S_NAMES:
        if n == "wte":
            out[n] = (Vp, C)
        elif n == "wpe":
            if cfg["pe"] == "learned":
                out[n] = (cfg["maxT"], C)
        elif n in ("enc_lnfw", "enc_lnfb", "lnfw", "lnfb"):
            out[n] = (C,)
        else:
            out[n] = ((Le if n[0] == "e" else Ld),) + per[n[2:]]
    return out


def s2s_init(cfg, gen):
    """float32 parameters drawn as the GPT-2 references' (layernorm weights 1 + 0.3 N)."""
    out = {}
    for name, shp in s2s_shapes(cfg).items():
        z = torch.randn(shp, generator=gen, dtype=torch.float64)
        is_lnw = name.endswith("w") and "ln" in name
        out[name] = (1.0 + 0.3 * z if is_lnw else 0.1 * z).to(torch.float32)
    return out


def s2s_batch(cfg, gen):
    """A padded batch as util/pairs.h lays it out: src (B,Ts) PAD after src_len; dec_in =
    BOS, target, PAD...; dec_tgt = target, EOS, -1...; characters drawn from 3..V-1."""
    B, Ts, Tt = len(S2S_SRC_LENS), max(S2S_SRC_LENS), max(S2S_TGT_LENS) + 1
    src = torch.full((B, Ts), PAD, dtype=torch.int64)
    dec_in = torch.full((B, Tt), PAD, dtype=torch.int64)
    dec_tgt = torch.full((B, Tt), -1, dtype=torch.int64)
    for b, (s, t) in enumerate(zip(S2S_SRC_LENS, S2S_TGT_LENS)):
        src[b, :s] = torch.randint(3, cfg["V"], (s,), generator=gen)
        tgt = torch.randint(3, cfg["V"], (t,), generator=gen)
        dec_in[b, 0], dec_in[b, 1:t + 1] = BOS, tgt
        dec_tgt[b, :t], dec_tgt[b, t] = tgt, EOS
    return src, torch.tensor(S2S_SRC_LENS), dec_in, dec_tgt


def s2s_module(cfg):
    """nn.Transformer in float64, batch_first, dropout 0, the config's norm order and
    activation (GELU: the tanh form, as ours). Train mode: no fast path, no nested tensors."""
    act = {"gelu": lambda t: F.gelu(t, approximate="tanh"), "relu": F.relu}[cfg["act"]]
    tr = torch.nn.Transformer(d_model=cfg["C"], nhead=cfg["NH"], num_encoder_layers=cfg["Le"],
                              num_decoder_layers=cfg["Ld"], dim_feedforward=s2s_ff(cfg),
                              dropout=0.0, activation=act, layer_norm_eps=1e-5,
                              batch_first=True, norm_first=cfg["ln"] == "pre",
                              dtype=torch.float64)
    return tr.train()


def s2s_module_map(tr, cfg):
    """name -> list of (module tensor, slice of our layer-l tensor): where each of our
    tensors lives in nn.Transformer (S2S_SPEC.md / doc/formats.md's mapping)."""
    C, m = cfg["C"], {}
    for l, lay in enumerate(tr.encoder.layers):
        for ours, t in [("ln1w", lay.norm1.weight), ("ln1b", lay.norm1.bias),
                        ("qkvw", lay.self_attn.in_proj_weight),
                        ("qkvb", lay.self_attn.in_proj_bias),
                        ("attprojw", lay.self_attn.out_proj.weight),
                        ("attprojb", lay.self_attn.out_proj.bias),
                        ("ln2w", lay.norm2.weight), ("ln2b", lay.norm2.bias),
                        ("fcw", lay.linear1.weight), ("fcb", lay.linear1.bias),
                        ("fcprojw", lay.linear2.weight), ("fcprojb", lay.linear2.bias)]:
            m.setdefault("e_" + ours, []).append((l, t, slice(None)))
    for l, lay in enumerate(tr.decoder.layers):
        x = lay.multihead_attn
        for ours, t, sl in [("ln1w", lay.norm1.weight, None), ("ln1b", lay.norm1.bias, None),
                            ("qkvw", lay.self_attn.in_proj_weight, None),
                            ("qkvb", lay.self_attn.in_proj_bias, None),
                            ("attprojw", lay.self_attn.out_proj.weight, None),
                            ("attprojb", lay.self_attn.out_proj.bias, None),
                            ("lnxw", lay.norm2.weight, None), ("lnxb", lay.norm2.bias, None),
                            ("xqw", x.in_proj_weight, slice(0, C)),
                            ("xqb", x.in_proj_bias, slice(0, C)),
                            ("xkvw", x.in_proj_weight, slice(C, 3 * C)),
                            ("xkvb", x.in_proj_bias, slice(C, 3 * C)),
                            ("xprojw", x.out_proj.weight, None),
                            ("xprojb", x.out_proj.bias, None),
                            ("ln2w", lay.norm3.weight, None), ("ln2b", lay.norm3.bias, None),
                            ("fcw", lay.linear1.weight, None), ("fcb", lay.linear1.bias, None),
                            ("fcprojw", lay.linear2.weight, None),
                            ("fcprojb", lay.linear2.bias, None)]:
            m.setdefault("d_" + ours, []).append((l, t, sl if sl else slice(None)))
    m["enc_lnfw"] = [(None, tr.encoder.norm.weight, slice(None))]
    m["enc_lnfb"] = [(None, tr.encoder.norm.bias, slice(None))]
    m["lnfw"] = [(None, tr.decoder.norm.weight, slice(None))]
    m["lnfb"] = [(None, tr.decoder.norm.bias, slice(None))]
    return m


def s2s_load(tr, cfg, P32):
    """Our float32 tensors into nn.Transformer (float64); returns the embedding leaves
    (wte, and wpe where it exists), which live outside nn.Transformer."""
    with torch.no_grad():
        for name, places in s2s_module_map(tr, cfg).items():
            for l, t, sl in places:
                t[sl] = (P32[name] if l is None else P32[name][l]).to(torch.float64)
    emb = {n: P32[n].to(torch.float64).clone().requires_grad_(True)
           for n in ("wte", "wpe") if n in P32}
    # every nn.Transformer parameter is one of ours: nothing left at its own init
    ours = {id(t) for places in s2s_module_map(tr, cfg).values() for _, t, _ in places}
    assert ours == {id(p) for p in tr.parameters()}, "a parameter of nn.Transformer is unmapped"
    return emb


def s2s_grads(tr, cfg, emb):
    """Our gradient tensors, gathered from nn.Transformer's .grad (and the embeddings')."""
    out = {n: emb[n].grad.detach().clone() for n in emb}
    for name, places in s2s_module_map(tr, cfg).items():
        if places[0][0] is None:
            out[name] = places[0][1].grad[places[0][2]].detach().clone()
        else:
            out[name] = torch.stack([t.grad[sl].detach() for _, t, sl in places])
    return {n: out[n] for n in s2s_shapes(cfg)}


def s2s_positions(emb, cfg, T):
    if cfg["pe"] == "learned":
        return emb["wpe"][:T]
    return sin_table(T, cfg["C"])  # the GPT-2 references' table: a fixed (T,C) added


def s2s_forward(tr, cfg, emb, src, src_len, dec_in, dec_tgt):
    """Logits (B,Tt,V) and the mean loss over the positions with a target (dec_tgt >= 0).
    Embeddings wte[token] + positions for source and target (wte[token] times sqrt(C) with
    -es 1, the config's "es"); the head is tied: the decoder's output (after its final layernorm) @ wte^T."""
    B, Ts = src.shape
    Tt = dec_in.shape[1]
    wte = emb["wte"]
    x_src = s2s_tokens(wte, src, cfg) + s2s_positions(emb, cfg, Ts)
    x_tgt = s2s_tokens(wte, dec_in, cfg) + s2s_positions(emb, cfg, Tt)
    pad = torch.arange(Ts)[None, :] >= src_len[:, None]  # True = padding: ignored as a key
    causal = tr.generate_square_subsequent_mask(Tt).to(torch.float64)
    h = tr(x_src, x_tgt, tgt_mask=causal, src_key_padding_mask=pad,
           memory_key_padding_mask=pad)
    logits = (h @ wte.T)[..., :cfg["V"]]
    loss = F.cross_entropy(logits.reshape(-1, cfg["V"]), dec_tgt.reshape(-1), ignore_index=-1)
    return logits, loss


def s2s_by_hand(cfg, P, src, src_len, dec_in, drop=None):
    """The same model written out with explicit tensors in our layout (float64): with
    drop None, a self-check of how nn.Transformer is driven (masks, the in_proj split,
    the norm order); with drop (a Dropout), the dropout reference, which nn.Transformer
    cannot give (its masks come from torch's generator). The dropout sites of
    train_seq2seq.c: "layer" = 0 and 1 for the source's and the target's embedding
    (site 0), else the index s of the sublayer (encoder layer l: 2l self-attention,
    2l+1 MLP; decoder layer l: 2Le+3l self, +1 cross, +2 MLP) with site 1 the attention
    probabilities (B,NH,Tq,Tk), site 2 an attention branch's output (after its
    projection) and site 3 an MLP branch's output, before the residual add."""
    C, NH = cfg["C"], cfg["NH"]
    hs, post = C // NH, cfg["ln"] == "post"
    act = {"gelu": lambda t: F.gelu(t, approximate="tanh"), "relu": F.relu}[cfg["act"]]
    ln = lambda t, w, b: F.layer_norm(t, (C,), w, b, eps=1e-5)
    dropped = drop if drop is not None else (lambda t, layer, site: t)

    def attend(q, k, v, allowed, s):  # q (B,Tq,C), k v (B,Tk,C); allowed (B or 1, Tq, Tk)
        B, Tq, Tk = q.shape[0], q.shape[1], k.shape[1]
        q = q.reshape(B, Tq, NH, hs).transpose(1, 2)
        k = k.reshape(B, Tk, NH, hs).transpose(1, 2)
        v = v.reshape(B, Tk, NH, hs).transpose(1, 2)
        att = (q @ k.transpose(-2, -1)) / math.sqrt(hs)
        att = torch.softmax(att.masked_fill(~allowed[:, None], float("-inf")), dim=-1)
        att = dropped(att, s, 1)
        return (att @ v).transpose(1, 2).reshape(B, Tq, C)

    def sub(x, w, b, f, s, site):  # pre-LN: x + f(ln(x)); post-LN: ln(x + f(x))
        g = lambda a: dropped(f(a), s, site)
        return ln(x + g(x), w, b) if post else x + g(ln(x, w, b))

    def mlp(p, l):
        return lambda a: act(a @ P[p + "fcw"][l].T + P[p + "fcb"][l]) @ P[p + "fcprojw"][l].T \
            + P[p + "fcprojb"][l]

    def self_att(p, l, allowed, s):
        def f(a):
            qkv = a @ P[p + "qkvw"][l].T + P[p + "qkvb"][l]
            o = attend(qkv[..., :C], qkv[..., C:2 * C], qkv[..., 2 * C:], allowed, s)
            return o @ P[p + "attprojw"][l].T + P[p + "attprojb"][l]
        return f

    B, Ts = src.shape
    Tt, Le = dec_in.shape[1], cfg["Le"]
    emb = {"wte": P["wte"], "wpe": P.get("wpe")}
    key_ok = (torch.arange(Ts)[None, :] < src_len[:, None])[:, None, :]  # (B,1,Ts)
    x = dropped(s2s_tokens(P["wte"], src, cfg) + s2s_positions(emb, cfg, Ts), 0, 0)
    for l in range(Le):
        x = sub(x, P["e_ln1w"][l], P["e_ln1b"][l],
                self_att("e_", l, key_ok.expand(B, Ts, Ts), 2 * l), 2 * l, 2)
        x = sub(x, P["e_ln2w"][l], P["e_ln2b"][l], mlp("e_", l), 2 * l + 1, 3)
    memory = ln(x, P["enc_lnfw"], P["enc_lnfb"])
    y = dropped(s2s_tokens(P["wte"], dec_in, cfg) + s2s_positions(emb, cfg, Tt), 1, 0)
    causal = torch.tril(torch.ones(Tt, Tt, dtype=torch.bool))[None]
    for l in range(cfg["Ld"]):
        s = 2 * Le + 3 * l
        y = sub(y, P["d_ln1w"][l], P["d_ln1b"][l], self_att("d_", l, causal, s), s, 2)

        def cross(a, l=l, s=s + 1):
            q = a @ P["d_xqw"][l].T + P["d_xqb"][l]
            kv = memory @ P["d_xkvw"][l].T + P["d_xkvb"][l]
            o = attend(q, kv[..., :C], kv[..., C:], key_ok.expand(B, Tt, Ts), s)
            return o @ P["d_xprojw"][l].T + P["d_xprojb"][l]
        y = sub(y, P["d_lnxw"][l], P["d_lnxb"][l], cross, s + 1, 2)
        y = sub(y, P["d_ln2w"][l], P["d_ln2b"][l], mlp("d_", l), s + 2, 3)
    return (ln(y, P["lnfw"], P["lnfb"]) @ P["wte"].T)[..., :cfg["V"]]


def s2s_by_hand_backward(cfg, P32, batch, drop=None):
    """Logits, loss and gradients of the hand-written model (autograd, float64)."""
    src, src_len, dec_in, dec_tgt = batch
    P = {n: P32[n].to(torch.float64).clone().requires_grad_(True) for n in s2s_shapes(cfg)}
    logits = s2s_by_hand(cfg, P, src, src_len, dec_in, drop)
    loss = F.cross_entropy(logits.reshape(-1, cfg["V"]), dec_tgt.reshape(-1), ignore_index=-1)
    loss.backward()
    return logits.detach(), loss.detach(), {n: P[n].grad.detach() for n in P}


def s2s_model_header(cfg):
    """Version 200 (train_seq2seq.c, doc/formats.md): [2] maxT [3] V [4] Le [5] NH [6] C
    [7] Vp [8] key/value heads (= NH) [9] positions [10] layernorm [11] activation
    [12] mask (0) [13] Ld [14] embedding scale (1: -es 1) [15] d_ff (0: 4C)."""
    ff = s2s_ff(cfg)
    return [20240326, 200, cfg["maxT"], cfg["V"], cfg["Le"], cfg["NH"], cfg["C"], cfg["Vp"],
            cfg["NH"], PE_CODES[cfg["pe"]], LN_CODES[cfg["ln"]], ACT_CODES[cfg["act"]], 0,
            cfg["Ld"], cfg.get("es", 0), 0 if ff == 4 * cfg["C"] else ff]


def s2s_trajectory(tr, cfg, emb, batch, step0_norm):
    """12 AdamW steps on the one batch, as trajectory() does for GPT-2: the same
    hyperparameters, schedule, clipping at half the step-0 norm, and decay of the
    embeddings and matrices only (S2S_DECAYED)."""
    hp = {k: f32(v) for k, v in HYPER.items()}
    clip = f32(0.5 * step0_norm)
    mapping = s2s_module_map(tr, cfg)
    decayed = {id(t) for n, places in mapping.items() if n in S2S_DECAYED for _, t, _ in places}
    decayed |= {id(e) for e in emb.values()}  # wte, wpe
    params = list(emb.values()) + list(tr.parameters())
    # xq and xkv share one in_proj tensor, both decayed; every bias is in a tensor of its own
    groups = [{"params": [p for p in params if id(p) in decayed],
               "weight_decay": hp["weight_decay"]},
              {"params": [p for p in params if id(p) not in decayed], "weight_decay": 0.0}]
    opt = torch.optim.AdamW(groups, lr=hp["lr"], betas=(hp["beta1"], hp["beta2"]),
                            eps=hp["eps"], foreach=False)
    steps = adamw_steps(params, opt, hp, clip, lambda: s2s_forward(tr, cfg, emb, *batch)[1])
    return (hp, clip) + steps


def s2s_write_state(path, cfg, hdr, batch, logits, loss, grads):
    """A reference state, version 200 (201 with dropout): the batch, the logits (0 at
    the positions without a target), the loss, every gradient in checkpoint order."""
    real = (batch[3] >= 0)[..., None]
    with open(path, "wb") as f:
        f.write(header(hdr))
        for t in batch:
            f.write(i32bytes(t))
        f.write(f32bytes(logits.detach() * real))
        f.write(f32bytes(np.array([loss.item()])))
        for n in s2s_shapes(cfg):
            f.write(f32bytes(grads[n]))


def seq2seq_references(out):
    """ref_s2s_{pre,post}_{model,state,train}.bin: see the docstring."""
    for name, cfg in S2S_CONFIGS.items():
        gen = torch.Generator().manual_seed(cfg["seed"])
        P32 = s2s_init(cfg, gen)
        batch = s2s_batch(cfg, gen)
        src, src_len, dec_in, dec_tgt = batch
        B, Ts, Tt, V = src.shape[0], src.shape[1], dec_in.shape[1], cfg["V"]
        assert Ts <= cfg["maxT"] and Tt <= cfg["maxT"]
        with open(os.path.join(out, f"ref_s2s_{name}_model.bin"), "wb") as f:
            f.write(header(s2s_model_header(cfg)))
            for n in s2s_shapes(cfg):
                f.write(f32bytes(P32[n]))

        tr = s2s_module(cfg)
        emb = s2s_load(tr, cfg, P32)
        logits, loss = s2s_forward(tr, cfg, emb, *batch)
        loss.backward()
        grads = s2s_grads(tr, cfg, emb)
        real = dec_tgt >= 0
        # the self-check: our layout written out by hand gives the same logits and gradients
        hand_logits, _, hand_grads = s2s_by_hand_backward(cfg, P32, batch)
        err = (hand_logits - logits.detach()).abs().max().item()
        gerr = max((hand_grads[n] - grads[n]).abs().max().item() for n in grads)
        assert err < 1e-12 and gerr < 1e-12, f"{name}: nn.Transformer != by hand ({err}, {gerr})"
        assert (grads["wte"][V:] == 0).all()
        # padding changes nothing real: the same pairs padded by 2 more positions
        src2 = torch.cat([src, torch.full((B, 2), PAD)], 1)
        dec_in2 = torch.cat([dec_in, torch.full((B, 2), PAD)], 1)
        dec_tgt2 = torch.cat([dec_tgt, torch.full((B, 2), -1)], 1)
        with torch.no_grad():
            logits2, loss2 = s2s_forward(tr, cfg, emb, src2, src_len, dec_in2, dec_tgt2)
        pad_err = (logits2[:, :Tt][real] - logits.detach()[real]).abs().max().item()
        assert pad_err < 1e-12 and abs(loss2.item() - loss.item()) < 1e-12, name + ": padding"

        s2s_write_state(os.path.join(out, f"ref_s2s_{name}_state.bin"), cfg,
                        [20240327, 200, B, Ts, Tt], batch, logits, loss, grads)
        if name == "pre":  # dropout: the model by hand with train_seq2seq.c's masks
            dr = Dropout(DROP_SEED, DROP_STEP, DROP_PPM / 1e6)
            dlogits, dloss, dgrads = s2s_by_hand_backward(cfg, P32, batch, dr)
            assert all(0.03 < frac < 0.2 for _, _, frac in dr.stats) and len(dr.stats) == 18
            s2s_write_state(os.path.join(out, f"ref_s2s_{name}_dropout_state.bin"), cfg,
                            [20240327, 201, B, Ts, Tt, DROP_SEED, DROP_STEP, DROP_PPM], batch,
                            dlogits, dloss, dgrads)
            print(f"-- dropout (seed {DROP_SEED}, step {DROP_STEP}, p {DROP_PPM / 1e6}) at "
                  f"{len(dr.stats)} sites: loss {dloss.item():.9g} (no dropout "
                  f"{loss.item():.9g})")
        norm0 = math.sqrt(sum(float((g * g).sum()) for g in grads.values()))

        tr = s2s_module(cfg)  # afresh from the checkpoint's values
        emb = s2s_load(tr, cfg, P32)
        hp, clip, losses, norms, lrs, clipped = s2s_trajectory(tr, cfg, emb, batch, norm0)
        assert abs(losses[0] - loss.item()) < 1e-12 and abs(norms[0] - norm0) < 1e-9 * norm0
        hyper = np.zeros(16, dtype="<f4")
        hyper[:7] = [hp["lr"], hp["beta1"], hp["beta2"], hp["eps"], hp["weight_decay"], clip,
                     hp["final_lr_frac"]]
        with open(os.path.join(out, f"ref_s2s_{name}_train.bin"), "wb") as f:
            f.write(header([20241122, 200, B, Ts, Tt, N_STEPS, WARMUP]))
            f.write(hyper.tobytes())
            for arr in (losses, norms, lrs):
                f.write(f32bytes(np.array(arr)))

        print(f"== encoder-decoder {name}: V={V} Vp={cfg['Vp']} maxT={cfg['maxT']} "
              f"Le={cfg['Le']} Ld={cfg['Ld']} NH={cfg['NH']} C={cfg['C']}, {cfg['ln']}-LN, "
              f"{cfg['act']}, {cfg['pe']} positions"
              f"{', embeddings x sqrt(C)' if cfg.get('es') else ''}, d_ff {s2s_ff(cfg)}; "
              f"B={B} Ts={Ts} Tt={Tt} ==")
        print(f"sources {S2S_SRC_LENS}, targets {S2S_TGT_LENS} (+ EOS); {int(real.sum())} "
              f"positions with a target")
        print(f"nn.Transformer vs by hand: max |logit diff| {err:.3g}, |grad diff| {gerr:.3g}; "
              f"padded by 2 more: {pad_err:.3g}")
        print_summary(loss, V, grads, list(s2s_shapes(cfg)), norm0, clip, losses, norms, lrs,
                      clipped)
        print()


def verify_seq2seq(out):
    """Read the files back: sizes, headers, and the checkpoint's tensors recomputed through
    nn.Transformer give the state file's body bit for bit."""
    for name, cfg in S2S_CONFIGS.items():
        shp = s2s_shapes(cfg)
        raw = open(os.path.join(out, f"ref_s2s_{name}_model.bin"), "rb").read()
        nparams = sum(int(np.prod(s)) for s in shp.values())
        assert len(raw) == 1024 + 4 * nparams, name + ": model size"
        h = np.frombuffer(raw[:1024], "<i4")
        assert list(h[:16]) == s2s_model_header(cfg) and not h[16:].any()
        P32, off = {}, 1024
        for n, s in shp.items():
            cnt = int(np.prod(s))
            P32[n] = torch.from_numpy(np.frombuffer(raw, "<f4", cnt, off).copy()).reshape(s)
            off += 4 * cnt
        st = open(os.path.join(out, f"ref_s2s_{name}_state.bin"), "rb").read()
        hs = np.frombuffer(st[:1024], "<i4")
        B, Ts, Tt = (int(v) for v in hs[2:5])
        assert list(hs[:2]) == [20240327, 200] and not hs[5:].any()
        ints = np.frombuffer(st, "<i4", B * Ts + B + 2 * B * Tt, 1024).astype(np.int64)
        src = torch.from_numpy(ints[:B * Ts]).reshape(B, Ts)
        src_len = torch.from_numpy(ints[B * Ts:B * Ts + B])
        dec_in = torch.from_numpy(ints[B * Ts + B:B * Ts + B + B * Tt]).reshape(B, Tt)
        dec_tgt = torch.from_numpy(ints[B * Ts + B + B * Tt:]).reshape(B, Tt)
        tr = s2s_module(cfg)
        emb = s2s_load(tr, cfg, P32)
        logits, loss = s2s_forward(tr, cfg, emb, src, src_len, dec_in, dec_tgt)
        loss.backward()
        grads = s2s_grads(tr, cfg, emb)
        real = (dec_tgt >= 0)[..., None]
        body = (f32bytes(logits.detach() * real) + f32bytes(np.array([loss.item()]))
                + b"".join(f32bytes(grads[n]) for n in shp))
        assert st[1024 + 4 * len(ints):] == body, name + ": model read back != state"
        if name == "pre":
            dst = open(os.path.join(out, f"ref_s2s_{name}_dropout_state.bin"), "rb").read()
            hd = np.frombuffer(dst[:1024], "<i4")
            assert list(hd[:8]) == [20240327, 201, B, Ts, Tt, DROP_SEED, DROP_STEP, DROP_PPM]
            n_head = 1024 + 4 * len(ints)  # the header and the batch: the same as the state's
            assert not hd[8:].any() and dst[1024:n_head] == st[1024:n_head]
            batch = (src, src_len, dec_in, dec_tgt)
            dr = Dropout(DROP_SEED, DROP_STEP, DROP_PPM / 1e6)
            dlogits, dloss, dgrads = s2s_by_hand_backward(cfg, P32, batch, dr)
            body = (f32bytes(dlogits * real) + f32bytes(np.array([dloss.item()]))
                    + b"".join(f32bytes(dgrads[n]) for n in shp))
            assert dst[1024 + 4 * len(ints):] == body, name + ": dropout state read back"
        tr_raw = open(os.path.join(out, f"ref_s2s_{name}_train.bin"), "rb").read()
        assert len(tr_raw) == 1024 + 64 + 12 * N_STEPS
        ht = np.frombuffer(tr_raw[:1024], "<i4")
        assert list(ht[:7]) == [20241122, 200, B, Ts, Tt, N_STEPS, WARMUP] and not ht[7:].any()
        assert np.frombuffer(tr_raw, "<f4", 1, 1088)[0] == np.float32(loss.item())
    print("verify: encoder-decoder headers, sizes and model read-back OK")
# Hugging Face's GPT-2 layout (model.safetensors + config.json), for -e model.safetensors

# Small GPT-2s written as transformers' GPT2LMHeadModel stores them: Conv1D weights (in, out),
# the mask buffers h.N.attn.bias and h.N.attn.masked_bias, the vocabulary unpadded (V rows);
# with and without the "transformer." prefix (the prefixed one also has the tied
# lm_head.weight), F32, F16 and BF16 (the one without config.json: its shape is inferred,
# NH = C/64). The parameters are drawn as init_params does, with wte's padding rows zero (the
# file has none), then rounded to the file's dtype; the state file (version 2, as
# ref_X_state.bin) holds the logits, loss and gradients computed in float64 from exactly
# the values the file stores, in our layout (checkpoint order, Vp rows).
HF_CONFIGS = {
    "hf_gpt2_f32": dict(V=65, Vp=128, maxT=16, L=2, NH=2, C=32, B=2, T=9, seed=5005,
                        dtype="F32", prefix="", config=True),
    "hf_gpt2_prefix_f16": dict(V=65, Vp=128, maxT=16, L=2, NH=2, C=32, B=2, T=9, seed=6006,
                               dtype="F16", prefix="transformer.", config=True),
    "hf_gpt2_noconfig_bf16": dict(V=65, Vp=128, maxT=16, L=1, NH=1, C=64, B=2, T=7,
                                  seed=7007, dtype="BF16", prefix="", config=False),
}
HF_TORCH_DTYPES = {"F32": torch.float32, "F16": torch.float16, "BF16": torch.bfloat16}


def hf_tensors(P, cfg):
    """Our parameters (float64 or float32 tensors) -> {Hugging Face name: tensor}."""
    V, L = cfg["V"], cfg["L"]
    out = {"wte.weight": P["wte"][:V], "wpe.weight": P["wpe"]}
    for l in range(L):
        h = f"h.{l}."
        out.update({
            h + "ln_1.weight": P["ln1w"][l], h + "ln_1.bias": P["ln1b"][l],
            h + "attn.c_attn.weight": P["qkvw"][l].T, h + "attn.c_attn.bias": P["qkvb"][l],
            h + "attn.c_proj.weight": P["attprojw"][l].T, h + "attn.c_proj.bias": P["attprojb"][l],
            h + "ln_2.weight": P["ln2w"][l], h + "ln_2.bias": P["ln2b"][l],
            h + "mlp.c_fc.weight": P["fcw"][l].T, h + "mlp.c_fc.bias": P["fcb"][l],
            h + "mlp.c_proj.weight": P["fcprojw"][l].T, h + "mlp.c_proj.bias": P["fcprojb"][l],
        })
    out.update({"ln_f.weight": P["lnfw"], "ln_f.bias": P["lnfb"]})
    return out


def hf_forward(W, cfg, x, prefix):
    """GPT2LMHeadModel's forward, written from transformers' GPT2Attention/GPT2MLP on the
    file's tensors (Conv1D: y = x W + b; the mask buffer and masked_bias as it uses them);
    the self-check that hf_tensors() maps our layout right. Returns logits (B,T,V)."""
    C, NH = cfg["C"], cfg["NH"]
    B, T = x.shape
    hs = C // NH
    g = lambda n: W[prefix + n].to(torch.float64)
    h = g("wte.weight")[x] + g("wpe.weight")[:T]
    for l in range(cfg["L"]):
        p = f"h.{l}."
        a = F.layer_norm(h, (C,), g(p + "ln_1.weight"), g(p + "ln_1.bias"), eps=1e-5)
        q, k, v = (a @ g(p + "attn.c_attn.weight") + g(p + "attn.c_attn.bias")).split(C, dim=2)
        q, k, v = (t.view(B, T, NH, hs).transpose(1, 2) for t in (q, k, v))
        w = q @ k.transpose(-1, -2) / math.sqrt(hs)
        mask = W[prefix + p + "attn.bias"][:, :, :T, :T].bool()
        w = torch.where(mask, w, W[prefix + p + "attn.masked_bias"].to(torch.float64))
        o = (torch.softmax(w, dim=-1) @ v).transpose(1, 2).reshape(B, T, C)
        h = h + o @ g(p + "attn.c_proj.weight") + g(p + "attn.c_proj.bias")
        a = F.layer_norm(h, (C,), g(p + "ln_2.weight"), g(p + "ln_2.bias"), eps=1e-5)
        m = F.gelu(a @ g(p + "mlp.c_fc.weight") + g(p + "mlp.c_fc.bias"), approximate="tanh")
        h = h + m @ g(p + "mlp.c_proj.weight") + g(p + "mlp.c_proj.bias")
    h = F.layer_norm(h, (C,), g("ln_f.weight"), g("ln_f.bias"), eps=1e-5)
    return h @ g("wte.weight").T


def tensor_bytes(t, dtype):
    """A tensor's little-endian bytes in a safetensors dtype (BF16 through its int16 view)."""
    t = t.detach().contiguous()
    if dtype == "BF16":
        return t.to(torch.bfloat16).view(torch.int16).numpy().astype("<i2").tobytes()
    if dtype == "BOOL":
        return t.to(torch.bool).numpy().tobytes()
    return t.to(HF_TORCH_DTYPES[dtype]).numpy().astype({"F32": "<f4", "F16": "<f2"}[dtype]).tobytes()


def write_safetensors(path, tensors):
    """tensors: {name: (tensor, dtype)} -> the safetensors format: 8-byte length, JSON
    header (metadata first, then the tensors in name order, offsets increasing; padded with
    spaces to a multiple of 8), the data."""
    header, blobs, off = {"__metadata__": {"format": "pt"}}, [], 0
    for name in sorted(tensors):
        t, dtype = tensors[name]
        b = tensor_bytes(t, dtype)
        header[name] = {"dtype": dtype, "shape": list(t.shape), "data_offsets": [off, off + len(b)]}
        blobs.append(b)
        off += len(b)
    text = json.dumps(header, separators=(",", ":")).encode()
    text += b" " * (-len(text) % 8)
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(text)) + text + b"".join(blobs))


def hf_config_json(cfg):
    """config.json as transformers writes it for GPT-2 (nested values and nulls included)."""
    return json.dumps({
        "activation_function": "gelu_new", "architectures": ["GPT2LMHeadModel"],
        "attn_pdrop": 0.1, "bos_token_id": cfg["V"] - 1, "embd_pdrop": 0.1,
        "eos_token_id": cfg["V"] - 1, "initializer_range": 0.02, "layer_norm_epsilon": 1e-05,
        "model_type": "gpt2", "n_ctx": cfg["maxT"], "n_embd": cfg["C"], "n_head": cfg["NH"],
        "n_inner": None, "n_layer": cfg["L"], "n_positions": cfg["maxT"],
        "resid_pdrop": 0.1, "scale_attn_weights": True, "summary_activation": None,
        "task_specific_params": {"text-generation": {"do_sample": True, "max_length": 50}},
        "torch_dtype": "float32", "transformers_version": "4.36.2", "use_cache": True,
        "vocab_size": cfg["V"]}, indent=2, sort_keys=True) + "\n"


def hf_references(out):
    for name, cfg in HF_CONFIGS.items():
        gen = torch.Generator().manual_seed(cfg["seed"])
        P32 = init_params(cfg, gen)
        P32["wte"][cfg["V"]:] = 0  # the file has V rows; ours are padded with zeros
        dtype, prefix, maxT = cfg["dtype"], cfg["prefix"], cfg["maxT"]
        P = {n: t.to(HF_TORCH_DTYPES[dtype]).to(torch.float32) for n, t in P32.items()}
        B, T, V = cfg["B"], cfg["T"], cfg["V"]
        x = torch.randint(0, V, (B, T), generator=gen, dtype=torch.int64)
        y = torch.randint(0, V, (B, T), generator=gen, dtype=torch.int64)
        W = {prefix + n: (t, dtype) for n, t in hf_tensors(P, cfg).items()}
        for l in range(cfg["L"]):  # the buffers: bool in recent transformers, float before
            tril = torch.tril(torch.ones(maxT, maxT)).view(1, 1, maxT, maxT)
            W[f"{prefix}h.{l}.attn.bias"] = (tril, "BOOL" if dtype == "F16" else dtype)
            W[f"{prefix}h.{l}.attn.masked_bias"] = (torch.tensor(-1e4), dtype)
        if prefix:  # GPT2LMHeadModel's own state dict: the tied head, unprefixed
            W["lm_head.weight"] = (P["wte"][:V], dtype)
        d = os.path.join(out, name)
        os.makedirs(d, exist_ok=True)
        write_safetensors(os.path.join(d, "model.safetensors"), W)
        if cfg["config"]:
            with open(os.path.join(d, "config.json"), "w") as f:
                f.write(hf_config_json(cfg))
        logits, loss, grads = forward_backward(P, cfg, x, y)
        hf_logits = hf_forward({n: t for n, (t, _) in W.items()}, cfg, x, prefix)
        err = (hf_logits - logits).abs().max().item()
        assert err < 1e-12, f"{name}: GPT2LMHeadModel's forward differs from ours by {err}"
        write_state(os.path.join(d, "state.bin"), cfg, [20240327, 2, B, T], x, y, logits,
                    loss, grads)
        print(f"== {name}: {dtype}, prefix '{prefix}', "
              f"{'config.json' if cfg['config'] else 'no config.json'}: L={cfg['L']} "
              f"NH={cfg['NH']} C={cfg['C']} V={V} maxT={maxT} B={B} T={T}: loss "
              f"{loss.item():.9g}; the forward from the file's tensors as GPT2LMHeadModel "
              f"computes it matches ours (max |diff| {err:.2g})")


# ----------------------------------------------------------------------------------------

def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--out", default=os.path.join(os.path.dirname(os.path.abspath(__file__)),
                                                  "ref"))
    args = ap.parse_args()
    out = args.out
    os.makedirs(out, exist_ok=True)

    # splitmix64 self-test: the well-known first output of splitmix64 seeded with 0
    assert splitmix64_scalar(0) == 0xE220A8397B1DCDAF
    assert int(splitmix64_np(np.uint64(0))) == 0xE220A8397B1DCDAF

    # variant building blocks against direct formulas (own generators, nothing written)
    check_gqa()
    check_sin_table()
    for name, cfg in CONFIGS.items():
        check_config(cfg)
        if variant(cfg)["pe"] == "rope":
            err = check_rope(cfg)
            print(f"rope self-check (config {name} shapes): complex == real rotation, "
                  f"max |diff| {err:.3g}")
    print("gqa self-check: NKV == NH equals plain multi-head; NKV < NH equals query head "
          "h -> K/V head h // (NH/NKV); causal and unmasked")
    print()

    for name, cfg in CONFIGS.items():
        gen = torch.Generator().manual_seed(cfg["seed"])
        P32 = init_params(cfg, gen)
        B, T, V = cfg["B"], cfg["T"], cfg["V"]
        x = torch.randint(0, V, (B, T), generator=gen, dtype=torch.int64)
        y = torch.randint(0, V, (B, T), generator=gen, dtype=torch.int64)

        write_model(os.path.join(out, f"ref_{name}_model.bin"), cfg, P32)
        logits, loss, grads = forward_backward(P32, cfg, x, y)
        assert (grads["wte"][V:] == 0).all()
        write_state(os.path.join(out, f"ref_{name}_state.bin"), cfg, [20240327, 2, B, T],
                    x, y, logits, loss, grads)
        norm0 = math.sqrt(sum(float((g * g).sum()) for g in grads.values()))

        hp, clip, losses, norms, lrs, clipped = trajectory(P32, cfg, x, y, norm0)
        assert abs(losses[0] - loss.item()) < 1e-12
        write_train(os.path.join(out, f"ref_{name}_train.bin"), cfg, x, y, hp, clip,
                    losses, norms, lrs)

        var = variant(cfg)
        print(f"== config {name}: V={V} Vp={cfg['Vp']} maxT={cfg['maxT']} L={cfg['L']} "
              f"NH={cfg['NH']} C={cfg['C']} B={B} T={T} ==")
        print(f"block: NKV={var['NKV']} pe={var['pe']} ln={var['ln']} act={var['act']} "
              f"causal={var['causal']}; checkpoint version {model_header(cfg)[1]}, "
              f"{len(param_names(cfg))} tensors"
              f"{'' if 'wpe' in param_names(cfg) else ' (no wpe)'}")
        print_summary(loss, V, grads, param_names(cfg), norm0, clip, losses, norms, lrs, clipped)
        print(f"clipped in {sum(clipped)}/{N_STEPS} steps")

        if name == "a":
            p = DROP_PPM / 1e6
            dr = Dropout(DROP_SEED, DROP_STEP, p)
            dlogits, dloss, dgrads = forward_backward(P32, cfg, x, y, dropout=dr)
            assert (dgrads["wte"][V:] == 0).all()
            write_state(os.path.join(out, f"ref_{name}_dropout_state.bin"), cfg,
                        [20240327, 3, B, T, DROP_SEED, DROP_STEP, DROP_PPM],
                        x, y, dlogits, dloss, dgrads)
            print(f"-- dropout (seed {DROP_SEED}, step {DROP_STEP}, p {p}, threshold "
                  f"{drop_threshold(p)}): loss {dloss.item():.9g} "
                  f"(no dropout {loss.item():.9g})")
            print(f"   site key (layer 0, site 0) = 0x{site_key(DROP_SEED, DROP_STEP, 0, 0):016X}")
            print("   dropped fraction per (layer, site):")
            for layer, site, frac in dr.stats:
                print(f"     layer {layer} site {site}: {frac:.4f}")
                assert 0.03 < frac < 0.2
            # cross-check the vectorised mask against the scalar implementation
            k = site_key(DROP_SEED, DROP_STEP, 1, 2)
            keep = dropout_keep(DROP_SEED, DROP_STEP, 1, 2, (B, T, cfg["C"]), p).ravel()
            for i in range(0, keep.size, 37):
                u = splitmix64_scalar(k ^ i) >> 40
                assert keep[i] == (u >= drop_threshold(p))
        print()

    seq2seq_references(out)
    article_example(out)
    verify(out)
    verify_seq2seq(out)
    hf_references(out)
    total = 0
    for fn in sorted(os.listdir(out)):
        sz = os.path.getsize(os.path.join(out, fn))
        total += sz
        print(f"  {fn:28s} {sz:8d} bytes")
    print(f"  total {total} bytes")


if __name__ == "__main__":
    main()
