#!/usr/bin/env python3
"""
tests/article_code.py: what article 003's code section does when it is run as written
(doc/errata.md, E32, E33 and the printed encoder output under "Checked and correct").
A C test cannot run PyTorch, so .ci/run runs this with /usr/bin/python3 (torch 1.13).
The computations are ours, written from the article's steps; only the article's settings
(seed 42, d_model 4, 2 heads, feed-forward 8, 3 positions, batch 1, no dropout), its printed
numbers and the one name it misspells are taken from it. Last line: "N passed, M failed".
"""
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
    # E32: the article builds the layer again before its hand-written steps; a new
    # TransformerEncoderLayer draws new random weights, so the steps no longer give memory
    encoder_layer = nn.TransformerEncoderLayer(d_model=D, nhead=H, dim_feedforward=FF, dropout=0.0)
    normalized2, _ = encoder_by_hand(encoder_layer, encoder_input)
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

print(f"{passed} passed, {failed} failed")
raise SystemExit(1 if failed else 0)
