#!/usr/bin/env python3
"""Side-by-side performance peer for draftgate's target engines.

A plain eager PyTorch implementation of the same math (Qwen3 dense, Qwen3.5 hybrid with Gated DeltaNet),
written the way transformers' reference code is: chunked GDN with zero padding for prefill, recurrent GDN and a
KV cache for decode. Runs on Debian's python3-torch; never a runtime dependency of draftgate.

    /usr/bin/python3 peer_target.py MODEL_DIR --threads 2 [--prefill 128] [--context 64]

prints one JSON object: prefill tokens/s, decode-step latency, peak RSS.
"""
import argparse
import json
import mmap
import os
import resource
import struct
import sys
import time

import torch
import torch.nn.functional as F

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "support"))
import target_families  # noqa: E402

# This peer's formulas per family of the table: hybrid = Qwen3.5's (1 + w) norms, gated q_proj, partial RoPE and
# Gated DeltaNet; qk_norm = per-head q/k RMSNorm before RoPE (not Llama's). A family missing here is a KeyError.
# moe = routed experts (Qwen3MoeSparseMoeBlock) where Qwen3MoeDecoderLayer makes the layer sparse; shared =
# Qwen3_5MoeSparseMoeBlock's (modeling_qwen3_5_moe.py): always renormalised, plus the sigmoid-gated shared expert.
FORMULAS = {"qwen3": {"hybrid": False, "qk_norm": True}, "qwen3_5": {"hybrid": True, "qk_norm": True},
            "llama": {"hybrid": False, "qk_norm": False},
            "qwen3_moe": {"hybrid": False, "qk_norm": True, "moe": True},
            "qwen3_5_moe": {"hybrid": True, "qk_norm": True, "moe": True, "shared": True}}

DTYPES = {"F32": torch.float32, "BF16": torch.bfloat16, "F16": torch.float16}


def load_safetensors(path):
    """{name: tensor} over a private mapping of the file (pages read on first touch and shared with the page
    cache, as draftgate maps a checkpoint), so a model larger than half of memory loads."""
    with open(path, "rb") as f:
        (n,) = struct.unpack("<Q", f.read(8))
        header = json.loads(f.read(n))
        mapped = mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_COPY)
    mapped.madvise(mmap.MADV_HUGEPAGE)  # as draftgate advises its mappings: 2 MB pages where the kernel has them
    base = 8 + n
    out = {}
    for name, e in header.items():
        if name == "__metadata__":
            continue
        b, end = e["data_offsets"]
        dtype = DTYPES[e["dtype"]]
        count = (end - b) // torch.empty((), dtype=dtype).element_size()
        t = torch.frombuffer(mapped, dtype=dtype, count=count, offset=base + b) if count else \
            torch.empty(0, dtype=dtype)
        out[name] = t.reshape(e["shape"])
    return out


def split_fused_experts(w):
    """Experts stored fused (Qwen3.5 / 3.6 MoE releases: experts.gate_up_proj [E, 2I, H], experts.down_proj
    [E, H, I]) into the per-expert names, as vLLM's qwen3_5_moe loader splits them (chunk(2, dim=-2))."""
    for name in [n for n in w if n.endswith("experts.gate_up_proj")]:
        p = name[:-len("gate_up_proj")]
        gate, up = w.pop(name).chunk(2, dim=-2)
        down = w.pop(p + "down_proj")
        for e in range(gate.shape[0]):
            w[f"{p}{e}.gate_proj.weight"], w[f"{p}{e}.up_proj.weight"] = gate[e], up[e]
            w[f"{p}{e}.down_proj.weight"] = down[e]
    return w


def rms(x, w, eps, one_plus):
    xf = x.float()
    xf = xf * torch.rsqrt(xf.pow(2).mean(-1, keepdim=True) + eps)
    if one_plus:
        return (xf * (1.0 + w.float())).to(x.dtype)
    return w * xf.to(x.dtype)


def rotate_half(x):
    h = x.shape[-1] // 2
    return torch.cat((-x[..., h:], x[..., :h]), dim=-1)


def rope(x, pos, inv_freq):
    """x [heads, T, d] rotated at positions pos: NeoX halves over the first 2 * len(inv_freq) dims of d (partial
    rotary leaves the rest)."""
    freqs = pos.float()[:, None] * inv_freq[None, :]
    emb = torch.cat((freqs, freqs), -1)
    cos, sin = emb.cos().to(x.dtype), emb.sin().to(x.dtype)
    r = cos.shape[-1]
    return torch.cat((x[..., :r] * cos + rotate_half(x[..., :r]) * sin, x[..., r:]), -1)


def l2norm(x, eps=1e-6):
    return x * torch.rsqrt((x * x).sum(-1, keepdim=True) + eps)


def chunk_gated_delta_rule(q, k, v, g, beta, state, chunk=64):
    # q, k, v: [H, T, d] float32; g, beta: [H, T]; transformers' torch_chunk_gated_delta_rule, zero-padded.
    T = q.shape[1]
    pad = (chunk - T % chunk) % chunk
    q, k, v = [F.pad(x, (0, 0, 0, pad)) for x in (q, k, v)]
    beta, g = F.pad(beta, (0, pad)), F.pad(g, (0, pad))
    H, L, dk = k.shape
    dv = v.shape[-1]
    v_beta, k_beta = v * beta[..., None], k * beta[..., None]
    q, k, v, k_beta, v_beta = [x.reshape(H, -1, chunk, x.shape[-1]) for x in (q, k, v, k_beta, v_beta)]
    g = g.reshape(H, -1, chunk).cumsum(-1)
    mask = torch.triu(torch.ones(chunk, chunk, dtype=torch.bool), diagonal=0)
    decay = ((g[..., :, None] - g[..., None, :]).tril().exp()).tril()
    attn = -((k_beta @ k.transpose(-1, -2)) * decay).masked_fill(mask, 0)
    for i in range(1, chunk):
        row = attn[..., i, :i].clone()
        sub = attn[..., :i, :i].clone()
        attn[..., i, :i] = row + (row.unsqueeze(-1) * sub).sum(-2)
    attn = attn + torch.eye(chunk)
    value = attn @ v_beta
    k_cumdecay = attn @ (k_beta * g.exp()[..., None])
    out = torch.zeros_like(value)
    upper = torch.triu(torch.ones(chunk, chunk, dtype=torch.bool), diagonal=1)
    for i in range(L // chunk):
        q_i, k_i = q[:, i], k[:, i]
        a = (q_i @ k_i.transpose(-1, -2) * decay[:, i]).masked_fill_(upper, 0)
        v_new = value[:, i] - k_cumdecay[:, i] @ state
        out[:, i] = (q_i * g[:, i, :, None].exp()) @ state + a @ v_new
        state = state * g[:, i, -1, None, None].exp() + (k_i * (g[:, i, -1, None] - g[:, i]).exp()[..., None]).transpose(-1, -2) @ v_new
    return out.reshape(H, -1, dv)[:, :T], state


def recurrent_step(q, k, v, g, beta, state):
    # q, k: [H, dk]; v: [H, dv]; g, beta: [H]
    state = state * g.exp()[:, None, None]
    mem = (state * k[..., None]).sum(-2)
    delta = (v - mem) * beta[:, None]
    state = state + k[..., None] * delta[:, None, :]
    return (state * q[..., None]).sum(-2), state


class Target:
    def __init__(self, path):
        with open(f"{path}/config.json") as f:
            cfg = json.load(f)
        self.c = c = cfg.get("text_config", cfg)
        formulas = FORMULAS[target_families.family_of(c)]
        self.hybrid, self.qk_norm = formulas["hybrid"], formulas["qk_norm"]
        self.moe, self.shared = formulas.get("moe", False), formulas.get("shared", False)
        w = split_fused_experts(load_safetensors(f"{path}/model.safetensors"))
        root = target_families.decoder_root(w)
        self.w, self.root = w, root
        self.embed = w[root + "embed_tokens.weight"]
        self.norm = w[root + "norm.weight"]
        self.head = w.get("lm_head.weight", self.embed)
        self.eps = c["rms_norm_eps"]
        self.nh, self.nkv, self.d = c["num_attention_heads"], c["num_key_value_heads"], c["head_dim"]
        if self.hybrid:
            rot = int(self.d * c["partial_rotary_factor"])
            theta = c["rope_parameters"]["rope_theta"]
        else:
            rot, theta = self.d, c["rope_theta"]
        self.inv_freq = 1.0 / (theta ** (torch.arange(0, rot, 2, dtype=torch.int64).float() / rot))
        self.types = c["layer_types"]

    def p(self, i):
        return f"{self.root}layers.{i}."

    def swiglu(self, p, x):
        w = self.w
        return F.linear(F.silu(F.linear(x, w[p + "gate_proj.weight"])) * F.linear(x, w[p + "up_proj.weight"]),
                        w[p + "down_proj.weight"])

    def sparse(self, i):
        c = self.c
        return (i not in (c.get("mlp_only_layers") or []) and c.get("num_experts", 0) > 0
                and (i + 1) % c.get("decoder_sparse_step", 1) == 0)

    def routed(self, i, x):
        """One position at a time: softmax over the router logits in float32, torch.topk, renormalised when
        norm_topk_prob, the chosen experts' weighted sum."""
        c, p = self.c, self.p(i) + "mlp."
        probs = F.softmax(F.linear(x, self.w[p + "gate.weight"]).float(), dim=-1)
        top, chosen = torch.topk(probs, c["num_experts_per_tok"], dim=-1)
        if self.shared or c.get("norm_topk_prob", False):
            top = top / top.sum(-1, keepdim=True)
        out = torch.zeros_like(x)
        for t in range(x.shape[0]):
            for j in range(top.shape[1]):
                e = int(chosen[t, j])
                out[t] += top[t, j].to(x.dtype) * self.swiglu(f"{p}experts.{e}.", x[t:t + 1])[0]
            if self.shared:
                gate = torch.sigmoid(F.linear(x[t:t + 1], self.w[p + "shared_expert_gate.weight"]))[0]
                out[t] += gate * self.swiglu(p + "shared_expert.", x[t:t + 1])[0]
        return out

    def attention(self, i, x, pos, cache):
        w, p = self.w, self.p(i) + "self_attn."
        T = x.shape[0]
        q = F.linear(x, w[p + "q_proj.weight"])
        gate = None
        if self.hybrid:
            q, gate = torch.chunk(q.view(T, self.nh, 2 * self.d), 2, dim=-1)
            gate = gate.reshape(T, -1)
        q, k = q.reshape(T, self.nh, self.d), F.linear(x, w[p + "k_proj.weight"]).view(T, self.nkv, self.d)
        if self.qk_norm:
            q = rms(q, w[p + "q_norm.weight"], self.eps, self.hybrid)
            k = rms(k, w[p + "k_norm.weight"], self.eps, self.hybrid)
        q, k = q.transpose(0, 1), k.transpose(0, 1)
        v = F.linear(x, w[p + "v_proj.weight"]).view(T, self.nkv, self.d).transpose(0, 1)
        q, k = rope(q, pos, self.inv_freq), rope(k, pos, self.inv_freq)
        if cache is not None:
            k, v = torch.cat((cache[0], k), 1), torch.cat((cache[1], v), 1)
        g = self.nh // self.nkv
        kk, vv = k.repeat_interleave(g, 0), v.repeat_interleave(g, 0)
        s = (q @ kk.transpose(-1, -2)) * self.d ** -0.5
        S = kk.shape[1]
        if T > 1:
            mask = torch.ones(T, S, dtype=torch.bool).tril(S - T)
            s = s.masked_fill(~mask, float("-inf"))
        o = (F.softmax(s, dim=-1, dtype=torch.float32).to(x.dtype) @ vv).transpose(0, 1).reshape(T, -1)
        if gate is not None:
            o = o * torch.sigmoid(gate)
        return F.linear(o, w[p + "o_proj.weight"]), (k, v)

    def gdn(self, i, x, cache):
        w, p, c = self.w, self.p(i) + "linear_attn.", self.c
        T = x.shape[0]
        nk, nv, dk, dv = c["linear_num_key_heads"], c["linear_num_value_heads"], c["linear_key_head_dim"], c["linear_value_head_dim"]
        K = c["linear_conv_kernel_dim"]
        raw = F.linear(x, w[p + "in_proj_qkv.weight"])
        conv_state, state = cache if cache is not None else (torch.zeros(K - 1, raw.shape[-1], dtype=x.dtype), torch.zeros(nv, dk, dv))
        seq = torch.cat((conv_state, raw), 0)
        mixed = F.silu(F.conv1d(seq.t()[None], w[p + "conv1d.weight"], groups=raw.shape[-1])[0].t())
        q, k, v = torch.split(mixed, [nk * dk, nk * dk, nv * dv], -1)
        q, k, v = q.reshape(T, nk, dk), k.reshape(T, nk, dk), v.reshape(T, nv, dv)
        beta = torch.sigmoid(F.linear(x, w[p + "in_proj_b.weight"]))
        g = -w[p + "A_log"].float().exp() * F.softplus(F.linear(x, w[p + "in_proj_a.weight"]).float() + w[p + "dt_bias"])
        if nv > nk:
            q, k = q.repeat_interleave(nv // nk, 1), k.repeat_interleave(nv // nk, 1)
        q = l2norm(q.float()) * dk ** -0.5
        k = l2norm(k.float())
        v, beta = v.float(), beta.float()
        if T == 1:
            o, state = recurrent_step(q[0], k[0], v[0], g[0], beta[0], state)
            o = o[None]
        else:
            o, state = chunk_gated_delta_rule(q.transpose(0, 1), k.transpose(0, 1), v.transpose(0, 1), g.t(), beta.t(), state)
            o = o.transpose(0, 1)
        z = F.linear(x, w[p + "in_proj_z.weight"]).view(T, nv, dv)
        nw = w[p + "norm.weight"]
        of = o.float()
        of = of * torch.rsqrt(of.pow(2).mean(-1, keepdim=True) + self.eps)
        o = (nw * of.to(x.dtype)) * F.silu(z.float())
        return F.linear(o.to(x.dtype).reshape(T, -1), w[p + "out_proj.weight"]), (seq[-(K - 1):], state)

    @torch.inference_mode()
    def forward(self, ids, start, caches, taps=()):
        """Logits [T, vocab] float32 and the new caches; with taps, also {layer: its output [T, hidden]}."""
        x = self.embed[ids]
        pos = torch.arange(start, start + len(ids))
        new, hidden = [], {}
        for i, t in enumerate(self.types):
            w, p = self.w, self.p(i)
            h = rms(x, w[p + "input_layernorm.weight"], self.eps, self.hybrid)
            cache = caches[i] if caches else None
            out, nc = self.gdn(i, h, cache) if t == "linear_attention" else self.attention(i, h, pos, cache)
            new.append(nc)
            x = x + out
            h = rms(x, w[p + "post_attention_layernorm.weight"], self.eps, self.hybrid)
            x = x + (self.routed(i, h) if self.moe and self.sparse(i) else self.swiglu(p + "mlp.", h))
            if i in taps:
                hidden[i] = x
        logits = F.linear(rms(x, self.norm, self.eps, self.hybrid), self.head).float()
        return (logits, new, hidden) if taps else (logits, new)


def time_it(fn, min_time):
    fn()
    n, start = 0, time.perf_counter()
    while True:
        fn()
        n += 1
        elapsed = time.perf_counter() - start
        if elapsed >= min_time and n >= 3:
            return elapsed / n


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("model")
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--prefill", type=int, default=128)
    ap.add_argument("--context", type=int, default=64)
    ap.add_argument("--min-time", type=float, default=2.0)
    ap.add_argument("--check", help="a `draftgate forward` dump: recompute its logits and report the difference")
    a = ap.parse_args()
    torch.set_num_threads(a.threads)
    m = Target(a.model)
    if a.check:
        dump = load_safetensors(a.check)
        with open(a.check, "rb") as f:
            (n,) = struct.unpack("<Q", f.read(8))
            meta = json.loads(f.read(n))["__metadata__"]
        tokens = torch.tensor([int(t) for t in meta["tokens"].split(",")])
        logits, _ = m.forward(tokens, 0, None)
        ref = dump["logits"]
        err = ((logits - ref).abs().max() / ref.abs().max()).item()
        top1 = (logits.argmax(-1) == ref.argmax(-1)).float().mean().item()
        print(json.dumps({"logits_rel_err": err, "top1_agreement": top1}))
        return
    vocab = m.embed.shape[0]
    ids = torch.arange(a.prefill) * 7919 % vocab
    prefill = time_it(lambda: m.forward(ids, 0, None), a.min_time)
    ctx = torch.arange(a.context) * 7919 % vocab
    _, caches = m.forward(ctx, 0, None)
    step = time_it(lambda: m.forward(torch.tensor([5]), a.context, caches), a.min_time)
    verify = {str(b): 1e3 * time_it(lambda: m.forward(torch.arange(b) * 7919 % vocab, a.context, caches),
                                    a.min_time) for b in (8, 16)}
    print(json.dumps({
        "prefill_tokens_per_s": a.prefill / prefill,
        "decode_step_ms": step * 1e3,
        "verify_step_ms": verify,
        "peak_rss_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024,
        "threads": a.threads,
    }))


if __name__ == "__main__":
    main()
