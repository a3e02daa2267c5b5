"""Eager PyTorch Qwen3 / Qwen3.5 targets and a trainable DFlash drafter, written from the published semantics
(transformers' Qwen3 / Qwen3.5 math, the z-lab DFlash reference), independent of draftgate's C++ engines. Small
and slow by design: the tiny bundled fixtures only.

The target returns HF-style hidden states: a tuple of L + 1 entries, [0] the embeddings, [l + 1] the output of
decoder layer l, and the last entry AFTER the final norm, as transformers returns it.
"""
import contextlib
import json
import os
import struct
import sys

import torch
import torch.nn.functional as F

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "python"))
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "support"))
import draftgate_records  # noqa: E402
import target_families  # noqa: E402

DTYPES = {"F32": torch.float32, "BF16": torch.bfloat16, "F16": torch.float16, "I64": torch.int64,
          "U8": torch.uint8, "BOOL": torch.bool}


def read_safetensors(path):
    """{name: tensor}, metadata."""
    with open(path, "rb") as f:
        data = f.read()
    (n,) = struct.unpack("<Q", data[:8])
    header = json.loads(data[8:8 + n])
    metadata = header.pop("__metadata__", {})
    out = {}
    for name, e in header.items():
        begin, end = e["data_offsets"]
        raw = bytearray(data[8 + n + begin:8 + n + end])
        out[name] = torch.frombuffer(raw, dtype=DTYPES[e["dtype"]]).reshape(e["shape"]) if raw else \
            torch.zeros(e["shape"], dtype=DTYPES[e["dtype"]])
    return out, metadata


def rms_norm(x, w, eps, one_plus):
    # Normalised in float32, as transformers does; Qwen3.5 scales by (1 + w), Qwen3 and the drafter by w.
    xf = x.float()
    xf = xf * torch.rsqrt(xf.pow(2).mean(-1, keepdim=True) + eps)
    if one_plus:
        return (xf * (1.0 + w.float())).to(x.dtype)
    return w * xf.to(x.dtype)


def rope(x, positions, inv_freq):
    # NeoX half-split rotary on the first 2·len(inv_freq) dims of the last axis; x is [T, heads, d].
    freqs = positions.float()[:, None] * inv_freq[None, :]
    emb = torch.cat((freqs, freqs), -1)[:, None, :]
    cos, sin = emb.cos().to(x.dtype), emb.sin().to(x.dtype)
    r = cos.shape[-1]
    rot = x[..., :r]
    half = torch.cat((-rot[..., r // 2:], rot[..., :r // 2]), -1)
    return torch.cat((rot * cos + half * sin, x[..., r:]), -1)


def attend(q, k, v, visible):
    # q [Tq, nh, d], k/v [Tk, nkv, d], visible [Tq, Tk] bool; softmax in float32.
    group = q.shape[1] // k.shape[1]
    k, v = k.repeat_interleave(group, 1), v.repeat_interleave(group, 1)
    scores = torch.einsum("qhd,khd->hqk", q, k) * q.shape[-1] ** -0.5
    scores = scores.masked_fill(~visible, float("-inf"))
    probs = F.softmax(scores, dim=-1, dtype=torch.float32).to(v.dtype)
    return torch.einsum("hqk,khd->qhd", probs, v).reshape(q.shape[0], -1)


def grouped_dynamic_conv(x, dynamic, base, group):
    """z-lab `_grouped_dynamic_convolve`, written as its sum: out[n, t, c] = Σ_{o < K, t−o ≥ 0} (base[o, c] +
    dynamic[n, t, o, c // group]) · x[n, t−o, c] over x [N, T, H], dynamic [N, T, K, H / group], base [K, H]. The
    rows of each n only: zeros before its row 0."""
    rows = []
    for t in range(x.shape[1]):
        row = torch.zeros_like(x[:, t])
        for o in range(min(base.shape[0], t + 1)):
            row = row + (base[o].to(x.dtype) + dynamic[:, t, o].repeat_interleave(group, -1)) * x[:, t - o]
        rows.append(row)
    return torch.stack(rows, 1)


def conv_prepare(x, base_kernel, kernel_projection, group):
    """GroupedDynamicCausalConv.prepare on x [N, T, H]: (x convolved with half 0, the dynamic kernel of half 1)."""
    kernel = base_kernel.shape[1]
    dynamic = F.linear(x, kernel_projection).view(*x.shape[:-1], 2, kernel, x.shape[-1] // group)
    return grouped_dynamic_conv(x, dynamic[..., 0, :, :], base_kernel[0], group), dynamic[..., 1, :, :]


def conv_finish(y, dynamic, base_kernel, group):
    """GroupedDynamicCausalConv.finish: the sublayer output y [N, T, H] convolved with half 1."""
    return grouped_dynamic_conv(y, dynamic, base_kernel[1], group)


def capped_logits(y, lm_head, multiplier, cap):
    """z-lab `compute_logits`: lm_head × output_multiplier, then cap·tanh(ℓ/cap) where a cap is set (> 0)."""
    logits = F.linear(y, lm_head) * multiplier
    return torch.tanh(logits / cap) * cap if cap is not None and cap > 0 else logits


def gated_delta_rule(q, k, v, g, beta):
    # Recurrent form over [T, H, d] float32 inputs: S ← S·exp(g) + k ⊗ β(v − Sᵀk); o = Sᵀq.
    state = torch.zeros(q.shape[1], q.shape[2], v.shape[2])
    out = []
    for t in range(q.shape[0]):
        state = state * g[t].exp()[:, None, None]
        delta = (v[t] - (state * k[t][..., None]).sum(-2)) * beta[t][:, None]
        state = state + k[t][..., None] * delta[:, None, :]
        out.append((state * q[t][..., None]).sum(-2))
    return torch.stack(out)


def computing_in(precision):
    """The context a trainer of `precision` runs its forwards in: bf16 matmuls under autocast, or plain float32."""
    return contextlib.nullcontext() if precision == "f32" else torch.autocast("cpu", dtype=torch.bfloat16)


# This reference's formulas per family of the table (transformers' modeling_qwen3 / modeling_qwen3_5 /
# modeling_llama): hybrid means (1 + w) norms, a gated q_proj, partial RoPE under rope_parameters and Gated DeltaNet
# layers; qk_norm a per-head RMSNorm of q and k before RoPE. A family missing here is a KeyError naming it
# (test_target_families.py runs every family of the table).
# moe: Qwen3MoeSparseMoeBlock on the layers Qwen3MoeDecoderLayer makes sparse (modeling_qwen3_moe.py).
# shared: Qwen3_5MoeSparseMoeBlock (modeling_qwen3_5_moe.py) instead: the top-k weights always renormalised, plus
# sigmoid(shared_expert_gate(x)) * shared_expert(x).
FORMULAS = {"qwen3": {"hybrid": False, "qk_norm": True}, "qwen3_5": {"hybrid": True, "qk_norm": True},
            "llama": {"hybrid": False, "qk_norm": False},
            "qwen3_moe": {"hybrid": False, "qk_norm": True, "moe": True},
            "qwen3_5_moe": {"hybrid": True, "qk_norm": True, "moe": True, "shared": True}}


def sparse_moe_layer(c, i):
    """Qwen3MoeDecoderLayer.__init__: routed experts unless i is in mlp_only_layers, when num_experts > 0 and
    (i + 1) % decoder_sparse_step == 0."""
    return (i not in (c.get("mlp_only_layers") or []) and c.get("num_experts", 0) > 0
            and (i + 1) % c.get("decoder_sparse_step", 1) == 0)


def swiglu(w, p, x):
    return F.linear(F.silu(F.linear(x, w[p + "gate_proj.weight"])) * F.linear(x, w[p + "up_proj.weight"]),
                    w[p + "down_proj.weight"])


def routed_expert(w, p, e, x):
    """Expert e of the block at p: per expert (Qwen3-MoE releases) or, stored fused as Qwen3.5 / 3.6 MoE releases
    do, as transformers' Qwen3_5MoeExperts computes it: linear(x, gate_up_proj[e]).chunk(2, -1), then down_proj[e]."""
    fused = w.get(p + "experts.gate_up_proj")
    if fused is None:
        return swiglu(w, f"{p}experts.{e}.", x)
    gate, up = F.linear(x, fused[e]).chunk(2, dim=-1)
    return F.linear(F.silu(gate) * up, w[p + "experts.down_proj"][e])


def sparse_moe(w, c, p, x, shared=False):
    """Qwen3MoeSparseMoeBlock.forward: float32 softmax over the router logits, torch.topk, renormalised when
    norm_topk_prob, each chosen expert weighted and added in expert order. `shared`: Qwen3_5MoeSparseMoeBlock."""
    probs = F.softmax(F.linear(x, w[p + "gate.weight"]), dim=-1, dtype=torch.float)
    top, chosen = torch.topk(probs, c["num_experts_per_tok"], dim=-1)
    if shared or c.get("norm_topk_prob", False):
        top = top / top.sum(-1, keepdim=True)
    top = top.to(x.dtype)
    out = torch.zeros_like(x)
    for e in range(c["num_experts"]):
        rows, slots = torch.where(chosen == e)
        if len(rows):
            out.index_add_(0, rows, routed_expert(w, p, e, x[rows]) * top[rows, slots, None])
    if shared:
        gate = torch.sigmoid(F.linear(x, w[p + "shared_expert_gate.weight"]))
        out = out + gate * swiglu(w, p + "shared_expert.", x)
    return out


class Target:
    """A frozen Qwen3 or Qwen3.5 target computing in `precision`: "f32"; "bf16", its weights cast to bfloat16 (as
    trainers load a GPU target); or "autocast", float32 weights under torch.autocast(bfloat16)."""

    def __init__(self, path, precision="f32"):
        dtype = torch.bfloat16 if precision == "bf16" else torch.float32
        with open(os.path.join(path, "config.json")) as f:
            cfg = json.load(f)
        self.c = c = cfg.get("text_config", cfg)
        self.family = target_families.family_of(c)
        self.hybrid = FORMULAS[self.family]["hybrid"]
        self.qk_norm = FORMULAS[self.family]["qk_norm"]
        weights, _ = read_safetensors(os.path.join(path, "model.safetensors"))
        self.w = {name: t.to(dtype) for name, t in weights.items()}
        self.root = target_families.decoder_root(self.w)
        self.precision = precision
        self.embed = self.w[self.root + "embed_tokens.weight"]
        self.final_norm = self.w[self.root + "norm.weight"]
        self.lm_head = self.w.get("lm_head.weight", self.embed)
        self.eps = c["rms_norm_eps"]
        self.num_layers = c["num_hidden_layers"]
        self.nh, self.nkv, self.d = c["num_attention_heads"], c["num_key_value_heads"], c["head_dim"]
        if self.hybrid:
            rotary, theta = int(self.d * c["partial_rotary_factor"]), c["rope_parameters"]["rope_theta"]
        else:
            rotary, theta = self.d, c["rope_theta"]
        self.inv_freq = 1.0 / (theta ** (torch.arange(0, rotary, 2).float() / rotary))
        self.layer_types = c.get("layer_types") or ["full_attention"] * self.num_layers

    def norm(self, x, w):
        return rms_norm(x, w, self.eps, self.hybrid)

    def head_norm(self, x, name):
        return self.norm(x, self.w[name]) if self.qk_norm else x

    def attention(self, p, x):
        w, t = self.w, x.shape[0]
        q = F.linear(x, w[p + "q_proj.weight"])
        gate = None
        if self.hybrid:  # q_proj holds [query | gate] per head
            q, gate = torch.chunk(q.view(t, self.nh, 2 * self.d), 2, dim=-1)
            gate = gate.reshape(t, -1)
        pos = torch.arange(t)
        q = rope(self.head_norm(q.reshape(t, self.nh, self.d), p + "q_norm.weight"), pos, self.inv_freq)
        k = rope(self.head_norm(F.linear(x, w[p + "k_proj.weight"]).view(t, self.nkv, self.d), p + "k_norm.weight"),
                 pos, self.inv_freq)
        v = F.linear(x, w[p + "v_proj.weight"]).view(t, self.nkv, self.d)
        o = attend(q, k, v, torch.ones(t, t, dtype=torch.bool).tril())
        if gate is not None:
            o = o * torch.sigmoid(gate)
        return F.linear(o, w[p + "o_proj.weight"])

    def gated_delta_net(self, p, x):
        w, c, t = self.w, self.c, x.shape[0]
        nk, nv = c["linear_num_key_heads"], c["linear_num_value_heads"]
        dk, dv = c["linear_key_head_dim"], c["linear_value_head_dim"]
        raw = F.linear(x, w[p + "in_proj_qkv.weight"])
        conv = w[p + "conv1d.weight"]
        mixed = F.silu(F.conv1d(F.pad(raw.t()[None], (conv.shape[-1] - 1, 0)), conv, groups=raw.shape[-1])[0].t())
        q, k, v = torch.split(mixed, [nk * dk, nk * dk, nv * dv], -1)
        q, k, v = q.reshape(t, nk, dk), k.reshape(t, nk, dk), v.reshape(t, nv, dv)
        beta = torch.sigmoid(F.linear(x, w[p + "in_proj_b.weight"])).float()
        g = -w[p + "A_log"].float().exp() * F.softplus(F.linear(x, w[p + "in_proj_a.weight"]).float()
                                                       + w[p + "dt_bias"].float())
        q, k = q.repeat_interleave(nv // nk, 1), k.repeat_interleave(nv // nk, 1)  # each K head serves nv/nk V heads
        q = F.normalize(q.float(), dim=-1, eps=1e-6) * dk ** -0.5
        k = F.normalize(k.float(), dim=-1, eps=1e-6)
        o = gated_delta_rule(q, k, v.float(), g, beta)
        z = F.linear(x, w[p + "in_proj_z.weight"]).view(t, nv, dv)
        o = rms_norm(o.to(x.dtype), w[p + "norm.weight"], self.eps, one_plus=False)
        o = (o.float() * F.silu(z.float())).to(x.dtype)
        return F.linear(o.reshape(t, -1), w[p + "out_proj.weight"])

    def forward(self, input_ids):
        """(logits [S, V], HF-style hidden_states tuple, raw output of the last layer)."""
        with torch.no_grad(), self.computing():
            return self._forward(input_ids)

    def head(self, hidden):
        """lm_head alone, in the target's precision (a teacher that skips the final norm uses it)."""
        with torch.no_grad(), self.computing():
            return F.linear(hidden, self.lm_head)

    def computing(self):
        # bf16 weights compute in bf16 by themselves; autocast only for float32 weights.
        return computing_in("f32" if self.precision == "bf16" else self.precision)

    def _forward(self, input_ids):
        w = self.w
        x = self.embed[input_ids]
        hidden_states = [x]
        for i, kind in enumerate(self.layer_types):
            p = f"{self.root}layers.{i}."
            h = self.norm(x, w[p + "input_layernorm.weight"])
            if kind == "linear_attention":
                x = x + self.gated_delta_net(p + "linear_attn.", h)
            else:
                x = x + self.attention(p + "self_attn.", h)
            h = self.norm(x, w[p + "post_attention_layernorm.weight"])
            moe = FORMULAS[self.family].get("moe", False) and sparse_moe_layer(self.c, i)
            shared = FORMULAS[self.family].get("shared", False)
            x = x + (sparse_moe(w, self.c, p + "mlp.", h, shared) if moe else swiglu(w, p + "mlp.", h))
            hidden_states.append(x)
        last_layer_output = hidden_states[-1]
        normed = self.norm(x, self.final_norm)
        hidden_states[-1] = normed  # transformers' convention: the last entry is after the final norm
        return F.linear(normed, self.lm_head), tuple(hidden_states), last_layer_output


class Drafter(torch.nn.Module):
    """A DFlash drafter (z-lab layout: fc, hidden_norm, Qwen3 layers, norm) with float32 master weights; the
    embedding and lm_head are the target's, frozen. A DFlash2 drafter (dflash_config.conv_kernel_size) also has
    each layer's attention and MLP between the halves of its grouped dynamic causal convolution; its
    candidate_selector is loaded and saved but takes no part in the training logits."""

    def __init__(self, path):
        super().__init__()
        with open(os.path.join(path, "config.json")) as f:
            self.config = json.load(f)
        c = self.config
        weights, _ = read_safetensors(os.path.join(path, "model.safetensors"))
        self.names = sorted(weights)
        self.params = torch.nn.ParameterDict(
            {name.replace(".", "__"): torch.nn.Parameter(t.float().clone()) for name, t in weights.items()})
        d = c["dflash_config"]
        self.block_size = c.get("block_size", d.get("block_size"))
        self.mask_token_id = d["mask_token_id"]
        self.target_layer_ids = list(d["target_layer_ids"])
        self.conv_group = d.get("conv_group_size") if "conv_kernel_size" in d else None  # DFlash2 only
        self.embedding_scale = d.get("input_embedding_scale", c.get("input_embedding_scale", 1.0))
        self.output_multiplier = d.get("output_multiplier", c.get("output_multiplier", 1.0))
        self.softcap = d.get("final_logit_softcapping", c.get("final_logit_softcapping"))
        self.eps = c["rms_norm_eps"]
        self.nh, self.nkv, self.d = c["num_attention_heads"], c["num_key_value_heads"], c["head_dim"]
        theta = c["rope_parameters"]["rope_theta"] if "rope_parameters" in c else c["rope_theta"]
        self.inv_freq = 1.0 / (theta ** (torch.arange(0, self.d, 2).float() / self.d))

    def weight(self, name):
        return self.params[name.replace(".", "__")]

    def state(self):
        return {name: self.weight(name).detach().clone() for name in self.names}

    def save(self, directory, config=None):
        os.makedirs(directory, exist_ok=True)
        with open(os.path.join(directory, "config.json"), "w") as f:
            json.dump(config or self.config, f, indent=2)
        draftgate_records.write_safetensors(os.path.join(directory, "model.safetensors"), self.state(),
                                            {"format": "pt"}, overwrite=True)

    def norm(self, x, name):
        return rms_norm(x, self.weight(name), self.eps, one_plus=False)

    def around(self, conv, x, blocks, sublayer):
        """sublayer(x) between the halves of the DFlash2 convolution `conv` ("layers.N.attention_conv."), which
        runs over the rows of each of `blocks` blocks of x [rows, H]; sublayer(x) alone for DFlash (v1)."""
        if self.conv_group is None:
            return sublayer(x)
        base, projection = self.weight(conv + "base_kernel"), self.weight(conv + "kernel_projection.weight")
        u, dynamic = conv_prepare(x.view(blocks, -1, x.shape[-1]), base, projection, self.conv_group)
        y = sublayer(u.reshape(x.shape))
        return conv_finish(y.view(u.shape), dynamic, base, self.conv_group).reshape(x.shape)

    def training_logits(self, target, fc_input, input_ids, anchors, context_through_anchor=False,
                        causal_block=False, conv_across_blocks=False, sliding_as_full=False):
        """[N, B, V]: every anchor's block [anchor, MASK × (B−1)] at positions a…a+B−1, attending to the context
        strictly before the anchor (through it, with the bug) and to its whole block (causally, with the bug).
        A sliding_attention layer (config layer_types, sliding_window w; is_causal absent, so z-lab makes it
        causal) sees only keys fewer than w positions behind its query, context and block alike, causal inside
        the block, as SpecForge's create_dflash_sdpa_mask (dflash_family_model.py @a6b6b023 :47-131) for
        w >= B; with the bug it runs as a full layer. DFlash2: the convolutions over each block's own rows (over
        all N·B rows as one sequence, with the bug)."""
        s, n, b = input_ids.shape[0], anchors.shape[0], self.block_size
        block_ids = torch.full((n, b), self.mask_token_id, dtype=torch.long)
        block_ids[:, 0] = input_ids[anchors]
        block_pos = (anchors[:, None] + torch.arange(b)[None, :]).reshape(-1)
        visible_context = anchors + (1 if context_through_anchor else 0)
        context_mask = torch.arange(s)[None, :] < visible_context[:, None]  # [N, S]
        own_block = torch.ones(b, b, dtype=torch.bool)
        if causal_block:
            own_block = own_block.tril()
        block_mask = torch.block_diag(*[own_block] * n)  # no block sees another
        visible = torch.cat((context_mask.repeat_interleave(b, 0), block_mask), 1)
        layer_types = self.config.get("layer_types") or ["full_attention"] * self.config["num_hidden_layers"]
        if "sliding_attention" in layer_types and not sliding_as_full:
            window = self.config["sliding_window"]
            query = block_pos[:, None]  # [N·B, 1]: each block row's position a+q
            key = torch.cat((torch.arange(s), block_pos))[None, :]
            sliding_visible = visible & (query - key < window) & (key <= query)

        ctx = self.norm(F.linear(fc_input, self.weight("fc.weight")), "hidden_norm.weight")
        ctx_pos = torch.arange(s)
        h = target.embed[block_ids.reshape(-1)].float() * self.embedding_scale
        blocks = 1 if conv_across_blocks else n

        def attention(a, u, visible):
            q = F.linear(u, self.weight(a + "q_proj.weight")).view(-1, self.nh, self.d)
            q = rope(self.norm(q, a + "q_norm.weight"), block_pos, self.inv_freq)
            k_ctx = F.linear(ctx, self.weight(a + "k_proj.weight")).view(s, self.nkv, self.d)
            k_blk = F.linear(u, self.weight(a + "k_proj.weight")).view(-1, self.nkv, self.d)
            k = torch.cat((rope(self.norm(k_ctx, a + "k_norm.weight"), ctx_pos, self.inv_freq),
                           rope(self.norm(k_blk, a + "k_norm.weight"), block_pos, self.inv_freq)))
            v = torch.cat((F.linear(ctx, self.weight(a + "v_proj.weight")),
                           F.linear(u, self.weight(a + "v_proj.weight")))).view(-1, self.nkv, self.d)
            o = attend(q, k.to(q.dtype), v.to(q.dtype), visible)
            return F.linear(o, self.weight(a + "o_proj.weight"))

        def mlp(p, m):
            gate = F.linear(m, self.weight(p + "mlp.gate_proj.weight"))
            up = F.linear(m, self.weight(p + "mlp.up_proj.weight"))
            return F.linear(F.silu(gate) * up, self.weight(p + "mlp.down_proj.weight"))

        for i in range(self.config["num_hidden_layers"]):
            p = f"layers.{i}."
            seen = sliding_visible if layer_types[i] == "sliding_attention" and not sliding_as_full else visible
            h = h + self.around(p + "attention_conv.", self.norm(h, p + "input_layernorm.weight"), blocks,
                                lambda u: attention(p + "self_attn.", u, seen))
            h = h + self.around(p + "mlp_conv.", self.norm(h, p + "post_attention_layernorm.weight"), blocks,
                                lambda m: mlp(p, m))
        y = self.norm(h, "norm.weight")
        return capped_logits(y, target.lm_head.float(), self.output_multiplier, self.softcap).view(n, b, -1)


def position_weights(block_size, gamma):
    k = torch.arange(block_size, dtype=torch.float64)
    w = torch.exp(-(k - 1) / gamma)
    w[0] = 0
    return w.float()


def block_weights(input_ids, loss_mask, anchors, block_size, gamma):
    """[N, B]: w_k where a+k is inside the sequence and on the loss mask, else 0 (and 0 at k = 0)."""
    pos = anchors[:, None] + torch.arange(block_size)[None, :]
    inside = pos < input_ids.shape[0]
    on_mask = torch.zeros_like(inside)
    on_mask[inside] = loss_mask[pos[inside]] != 0
    return torch.where(on_mask, position_weights(block_size, gamma).expand(pos.shape), torch.zeros(()))


def block_rows(anchors, block_size, offset, length):
    """Row a+k−1+offset (clamped into the sequence) per block element: the teacher row that predicts a+k."""
    k = torch.arange(block_size)[None, :]
    return (anchors[:, None] + (k - 1 + offset).clamp(min=0)).clamp(max=length - 1)


def weighted_ce(logits, labels, weights):
    nll = F.cross_entropy(logits.float().flatten(0, 1), labels.flatten(), ignore_index=-100, reduction="none")
    return (nll * weights.flatten()).sum() / weights.sum()


def weighted_kl(logits, teacher_block_logits, weights):
    logq = F.log_softmax(logits.float(), -1)
    logp = F.log_softmax(teacher_block_logits.float(), -1)
    return ((logp.exp() * (logp - logq)).sum(-1) * weights).sum() / weights.sum()
