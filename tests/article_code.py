#!/usr/bin/env python3
"""
tests/article_code.py: what article 003's code section does when it is run as written
(doc/errata.md, E32, E33 and the printed encoder output under "Checked and correct"), and
the same layer rebuilt in C from train_seq2seq.c's own layers (tests/article003_layer.c,
which this script builds with make): the weights PyTorch draws with the article's seed go
to it as a checkpoint, and its output is compared with the article's printed numbers where
they are right and with what the article's code computes where they are not (E32).
A C test cannot run PyTorch, so .ci/run runs this with /usr/bin/python3 (torch 1.13), from
any folder. The computations are ours, written from the article's steps; only the article's
settings (seed 42, d_model 4, 2 heads, feed-forward 8, 3 positions, batch 1, no dropout), its
printed numbers and the one name it misspells are taken from it. Last line: "N passed, M failed".
"""
import os
import struct
import subprocess
import tempfile

import torch
import torch.nn.functional as F
from torch import nn

passed = failed = 0


def check(ok, msg):
    global passed, failed
    print(("PASS " if ok else "FAIL ") + msg)
    if ok:
        passed += 1
    else:
        failed += 1


D, H, FF, T, B = 4, 2, 8, 3, 1
HD = D // H


def encoder_by_hand(layer, x):
    """Post-LN encoder layer from the layer's parameters, step by step; returns (out, weights)."""
    x_flat = x.reshape(T * B, D)
    q, k, v = F.linear(x_flat, layer.self_attn.in_proj_weight, layer.self_attn.in_proj_bias).split(D, 1)

    def heads(m):  # (T*B, D) -> (B*H, T, HD)
        return m.reshape(T, B, H, HD).permute(1, 2, 0, 3).reshape(B * H, T, HD)

    q, k, v = heads(q), heads(k), heads(v)
    weights = torch.softmax(q @ k.transpose(1, 2) / HD ** 0.5, dim=-1)
    att = (weights @ v).reshape(B, H, T, HD).permute(2, 0, 1, 3).reshape(T * B, D)
    att = F.linear(att, layer.self_attn.out_proj.weight, layer.self_attn.out_proj.bias).reshape(T, B, D)
    n1 = F.layer_norm(x + att, (D,), layer.norm1.weight, layer.norm1.bias)
    ffn = F.linear(F.relu(F.linear(n1.reshape(T * B, D), layer.linear1.weight, layer.linear1.bias)),
                   layer.linear2.weight, layer.linear2.bias).reshape(T, B, D)
    return F.layer_norm(n1 + ffn, (D,), layer.norm2.weight, layer.norm2.bias), weights


# the article's names: encoder_input, encoder_layer, memory, normalized2, attn_weights
torch.manual_seed(42)
encoder_input = torch.randn(T, B, D)
encoder_layer = nn.TransformerEncoderLayer(d_model=D, nhead=H, dim_feedforward=FF, dropout=0.0)
with torch.no_grad():
    memory = encoder_layer(encoder_input)
    # the article's printed memory (its first output cell)
    printed = torch.tensor([[-1.0328, -0.9185, 0.6710, 1.2804], [-1.4175, -0.1948, 1.3775, 0.2347],
                            [-1.0022, -0.8035, 0.3029, 1.5028]]).reshape(T, B, D)
    err = (memory - printed).abs().max().item()
    check(err < 6e-5, f"checked, article 003 code: seed 42 reproduces the printed memory (error {err:.1e})")

    normalized2, attn_weights = encoder_by_hand(encoder_layer, encoder_input)
    same = torch.allclose(normalized2, memory)
    layer_of_memory = encoder_layer  # kept for the C rebuild below
    # E32: the article builds the layer again before its hand-written steps; a new
    # TransformerEncoderLayer draws new random weights, so the steps no longer give memory
    encoder_layer = nn.TransformerEncoderLayer(d_model=D, nhead=H, dim_feedforward=FF, dropout=0.0)
    normalized2, attn_weights_rebuilt = encoder_by_hand(encoder_layer, encoder_input)
    off = (normalized2 - memory).abs().max().item()
    check(same and not torch.allclose(normalized2, memory) and off > 0.1,
          f"E32 article 003 code: the hand-written layer matches memory with the layer that made it "
          f"(allclose {same}); with the layer built again, as written, allclose is False (off by {off:.2f})")

    # E33: the code binds attn_weights; the row sums are then asked of atten_weights
    names = {"attn_weights": attn_weights}
    try:
        eval("atten_weights.sum(dim=-1)", {}, names)
        misspelt = "runs"
    except NameError:
        misspelt = "NameError"
    sums = eval("attn_weights.sum(dim=-1)", {}, names)
    check(misspelt == "NameError" and tuple(sums.shape) == (B * H, T) and (sums - 1).abs().max() < 1e-6,
          f"E33 article 003 code: atten_weights.sum(dim=-1) gives {misspelt}; attn_weights.sum(dim=-1) "
          f"is the printed (2, 3) of ones")

    # E41: the steps name the output projections out_proj_weight, self_out_proj_weight and
    # cross_out_proj_weight; in_proj_weight is a tensor of nn.MultiheadAttention, but out_proj is a
    # Linear inside it, so PyTorch's names are self_attn.out_proj.weight and, for the decoder's
    # cross-attention, multihead_attn.out_proj.weight
    enc_names = {n for n, _ in layer_of_memory.named_parameters()}
    with torch.random.fork_rng():  # the draws below (the C rebuild's decoder) stay as they were
        dec_names = {n for n, _ in nn.TransformerDecoderLayer(d_model=D, nhead=H, dim_feedforward=FF,
                                                              dropout=0.0).named_parameters()}
    said = {"out_proj_weight", "self_out_proj_weight", "cross_out_proj_weight"}
    check("self_attn.in_proj_weight" in enc_names and "self_attn.out_proj.weight" in enc_names and
          {"self_attn.out_proj.weight", "multihead_attn.out_proj.weight"} <= dec_names and
          not any(n.split(".")[-1] in said or n in said for n in enc_names | dec_names),
          "E41 article 003 code: nn.Transformer's output projections are self_attn.out_proj.weight and "
          "multihead_attn.out_proj.weight (in_proj_weight is a tensor, out_proj a Linear); no parameter "
          "is named out_proj_weight, self_out_proj_weight or cross_out_proj_weight")


# ----------------------------------------------------------------------------------------
# The layer rebuilt in C: tests/article003_layer runs train_seq2seq.c's layers (-ff 8 = 2d,
# -ln post, -act relu, -nh 2, -nc 4) on the weights above. The article's code has no decoder
# (its decoder section gives the steps, then says the decoder is built like the encoder), so
# a decoder layer of the same settings is drawn after the article's draws, fed 4 positions and
# the memory under the causal mask, and compared with nn.TransformerDecoderLayer itself: no
# printed numbers exist for it. Tolerance against PyTorch: 1e-6 absolute, float32 both sides
# (values of order 1; the sums differ only in their order).
TD = 4
TOL_TORCH = 1e-6
ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def checkpoint(enc, dec, enc_in, dec_in):
    """A version-200 checkpoint of train_seq2seq.c (doc/formats.md): 1 + 1 layers, C = D,
    NH = H, d_ff = FF (slot 15), post-LN, ReLU, learned positions all 0; wte rows 3.. are the
    encoder's input rows, then the decoder's, so that token 3 + t embeds to input row t. The
    final layernorms (enc_lnf, lnf) are nn.Transformer's, not the article's: 1 and 0, unread."""
    V, maxT = 3 + T + TD, max(T, TD)
    h = [20240326, 200, maxT, V, 1, H, D, V, H, 0, 1, 1, 0, 1, 0, FF] + [0] * 240
    ones, zeros = torch.ones(D), torch.zeros(D)
    wte = torch.cat([torch.zeros(3, D), enc_in.reshape(T, D), dec_in.reshape(TD, D)])
    sa, xa = dec.self_attn, dec.multihead_attn
    ea = enc.self_attn
    tensors = [wte, torch.zeros(maxT, D),  # in train_seq2seq.c's order, S2S_PARAMETER_NAMES
               enc.norm1.weight, enc.norm1.bias, ea.in_proj_weight, ea.in_proj_bias, ea.out_proj.weight,
               ea.out_proj.bias, enc.norm2.weight, enc.norm2.bias, enc.linear1.weight, enc.linear1.bias,
               enc.linear2.weight, enc.linear2.bias, ones, zeros,
               dec.norm1.weight, dec.norm1.bias, sa.in_proj_weight, sa.in_proj_bias, sa.out_proj.weight,
               sa.out_proj.bias, dec.norm2.weight, dec.norm2.bias,  # norm2: before the cross-attention
               xa.in_proj_weight[:D], xa.in_proj_bias[:D], xa.in_proj_weight[D:], xa.in_proj_bias[D:],
               xa.out_proj.weight, xa.out_proj.bias, dec.norm3.weight, dec.norm3.bias, dec.linear1.weight,
               dec.linear1.bias, dec.linear2.weight, dec.linear2.bias, ones, zeros]
    body = b"".join(struct.pack(f"<{t.numel()}f", *t.detach().flatten().tolist()) for t in tensors)
    return struct.pack("<256i", *h) + body


def run_c(enc, dec, enc_in, dec_in):
    """tests/article003_layer's output: name -> tensor (encoder_output (T, D), encoder_attention
    (H*T, T), decoder_output (TD, D)); None when it cannot be built or run."""
    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, "article003_layer.bin")
        with open(path, "wb") as f:
            f.write(checkpoint(enc, dec, enc_in, dec_in))
        run = subprocess.run([os.path.join(ROOT, "tests", "article003_layer"), path, str(T), str(TD)],
                             capture_output=True, text=True)
    if run.returncode != 0:
        print(run.stdout + run.stderr)
        return None
    out, lines = {}, run.stdout.split("\n")
    while lines and lines[0]:
        name, rows, cols = lines[0].split()
        rows, cols = int(rows), int(cols)
        out[name] = torch.tensor([[float(v) for v in ln.split()] for ln in lines[1:1 + rows]])
        assert out[name].shape == (rows, cols), name
        lines = lines[1 + rows:]
    return out


build = subprocess.run(["make", "-s", "-C", ROOT, "tests/article003_layer"], capture_output=True, text=True)
check(build.returncode == 0, "tests/article003_layer built (make tests/article003_layer)"
      + ("" if build.returncode == 0 else ": " + build.stdout + build.stderr))
with torch.no_grad():
    decoder_layer = nn.TransformerDecoderLayer(d_model=D, nhead=H, dim_feedforward=FF, dropout=0.0)
    decoder_input = torch.randn(TD, B, D)
    causal = nn.Transformer.generate_square_subsequent_mask(TD)
    decoded = decoder_layer(decoder_input, memory, tgt_mask=causal).reshape(TD, D)
    ours = rebuilt = None
    if build.returncode == 0:  # on the layer that made memory, and on the one built again (E32)
        ours = run_c(layer_of_memory, decoder_layer, encoder_input, decoder_input)
        rebuilt = run_c(encoder_layer, decoder_layer, encoder_input, decoder_input) if ours else None
    if ours is None or rebuilt is None:
        check(False, "tests/article003_layer ran on the checkpoints of the article's layer")
    else:
        flat = memory.reshape(T, D)
        err = (ours["encoder_output"] - printed.reshape(T, D)).abs().max().item()
        err_torch = (ours["encoder_output"] - flat).abs().max().item()
        check(err < 6e-5 and err_torch < TOL_TORCH,
              f"article 003 code, its encoder layer rebuilt in C (train_seq2seq.c's layers, -ff 8 = 2d, "
              f"post-LN, ReLU) on the seed-42 weights: the printed memory to its 4 decimals (error "
              f"{err:.1e}), PyTorch's memory within {err_torch:.1e} (tolerance {TOL_TORCH:.0e})")
        # the article's attn_weights, (B*h, T, T), printed only as their row sums, a (2, 3) tensor of
        # ones: its hand-written steps on the layer that made memory, and (as written, E32) on the
        # layer built again
        w, w2 = ours["encoder_attention"], rebuilt["encoder_attention"]
        err_w = max((w - attn_weights.reshape(H * T, T)).abs().max().item(),
                    (w2 - attn_weights_rebuilt.reshape(H * T, T)).abs().max().item())
        err_sum = max((w.sum(-1) - 1).abs().max().item(), (w2.sum(-1) - 1).abs().max().item())
        check(err_w < TOL_TORCH and err_sum < 5e-5,
              f"article 003 code: the C encoder's attention weights are the article's attn_weights within "
              f"{err_w:.1e} (both layers); their row sums are the printed ones (off by {err_sum:.1e})")
        # E32: the article's second print of normalized2 repeats memory; run as written, its steps read
        # the layer built again, and our layers on that layer's weights give what the code computes
        err_code = (rebuilt["encoder_output"] - normalized2.reshape(T, D)).abs().max().item()
        off_print = (rebuilt["encoder_output"] - printed.reshape(T, D)).abs().max().item()
        check(err_code < TOL_TORCH and off_print > 0.1,
              f"E32 article 003 code, in C: on the layer built again, our layers give the code's "
              f"normalized2 within {err_code:.1e}, not the printed numbers (off by {off_print:.2f})")
        err_dec = (ours["decoder_output"] - decoded).abs().max().item()
        check(err_dec < TOL_TORCH,
              f"article 003's decoder layer (no code or numbers in the article): our layers (masked "
              f"self-attention, cross-attention on the memory, feed-forward 8, post-LN, ReLU) against "
              f"nn.TransformerDecoderLayer with the causal mask, {TD} positions: within {err_dec:.1e}")

print(f"{passed} passed, {failed} failed")
raise SystemExit(1 if failed else 0)
