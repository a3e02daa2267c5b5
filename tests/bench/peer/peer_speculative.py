#!/usr/bin/env python3
"""Side-by-side peer for draftgate's speculative loop (tests/bench/eval_bench.cpp, BM_SpeculativeLoop).

The loop of z-lab's `dflash_generate`, greedy, in eager PyTorch on the peer target (peer_target.py) and a DFlash
drafter written the same way: prefill with the drafter's taps; draft a block [bonus, MASK x (B-1)] that attends
to every committed position's fc features and to its whole block; verify it in one cached target pass; accept
the longest prefix matching the target's argmax, take the bonus token, crop the target's K/V to the committed
positions and feed their taps to the drafter. Targets without linear attention only (a GDN state cannot be
cropped by slicing).

    /usr/bin/python3 peer_speculative.py TARGET_DIR DRAFTER_DIR --threads 2 [--tokens 64] [--prompt 16]

prints one JSON object: tokens/s, tau, the target / drafter / bookkeeping split, greedy ms per token.
"""
import argparse
import json
import os
import resource
import sys
import time

import torch
import torch.nn.functional as F

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from peer_target import Target, load_safetensors, rms, rope  # noqa: E402


class Drafter:
    """A DFlash drafter (z-lab layout: fc, hidden_norm, Qwen3 layers with q/k norms, norm) using the target's
    embedding and lm_head, with a per-layer K/V cache of the committed context."""

    def __init__(self, path, target):
        with open(os.path.join(path, "config.json")) as f:
            c = json.load(f)
        d = c["dflash_config"]
        self.w = load_safetensors(os.path.join(path, "model.safetensors"))
        self.target = target
        self.block = c.get("block_size", d.get("block_size"))
        self.mask, self.taps = d["mask_token_id"], list(d["target_layer_ids"])
        self.eps, self.layers = c["rms_norm_eps"], c["num_hidden_layers"]
        self.nh, self.nkv, self.d = c["num_attention_heads"], c["num_key_value_heads"], c["head_dim"]
        self.inv_freq = 1.0 / (c["rope_theta"] ** (torch.arange(0, self.d, 2, dtype=torch.int64).float() / self.d))
        self.kv = [None] * self.layers
        self.context = 0

    def norm(self, x, name):
        return rms(x, self.w[name], self.eps, False)

    def keys_values(self, p, u, pos):
        t = u.shape[0]
        k = self.norm(F.linear(u, self.w[p + "k_proj.weight"]).view(t, self.nkv, self.d), p + "k_norm.weight")
        v = F.linear(u, self.w[p + "v_proj.weight"]).view(t, self.nkv, self.d)
        return rope(k.transpose(0, 1), pos, self.inv_freq), v.transpose(0, 1)

    @torch.inference_mode()
    def add_context(self, hidden, rows):
        feats = torch.cat([hidden[t][rows] for t in self.taps], -1)
        x = self.norm(F.linear(feats, self.w["fc.weight"]), "hidden_norm.weight")
        pos = torch.arange(self.context, self.context + x.shape[0])
        for i in range(self.layers):
            k, v = self.keys_values(f"layers.{i}.self_attn.", x, pos)
            if self.kv[i] is not None:
                k, v = torch.cat((self.kv[i][0], k), 1), torch.cat((self.kv[i][1], v), 1)
            self.kv[i] = (k, v)
        self.context += x.shape[0]

    @torch.inference_mode()
    def propose(self, anchor, rows):
        """The rows - 1 draft tokens after anchor: a block [anchor, MASK ...] at the next positions."""
        ids = torch.tensor([anchor] + [self.mask] * (rows - 1))
        h = self.target.embed[ids]
        pos = torch.arange(self.context, self.context + rows)
        g = self.nh // self.nkv
        for i in range(self.layers):
            p = f"layers.{i}."
            u = self.norm(h, p + "input_layernorm.weight")
            a = p + "self_attn."
            q = self.norm(F.linear(u, self.w[a + "q_proj.weight"]).view(rows, self.nh, self.d), a + "q_norm.weight")
            q = rope(q.transpose(0, 1), pos, self.inv_freq)
            kb, vb = self.keys_values(a, u, pos)
            k, v = torch.cat((self.kv[i][0], kb), 1), torch.cat((self.kv[i][1], vb), 1)
            s = (q @ k.repeat_interleave(g, 0).transpose(-1, -2)) * self.d ** -0.5  # the block sees all keys
            o = (F.softmax(s, dim=-1, dtype=torch.float32).to(h.dtype) @ v.repeat_interleave(g, 0))
            h = h + F.linear(o.transpose(0, 1).reshape(rows, -1), self.w[a + "o_proj.weight"])
            m = self.norm(h, p + "post_attention_layernorm.weight")
            gate, up = F.linear(m, self.w[p + "mlp.gate_proj.weight"]), F.linear(m, self.w[p + "mlp.up_proj.weight"])
            h = h + F.linear(F.silu(gate) * up, self.w[p + "mlp.down_proj.weight"])
        y = self.norm(h[1:], "norm.weight")
        return F.linear(y, self.target.head).argmax(-1).tolist()


def crop(caches, length):
    return [(k[:, :length], v[:, :length]) for k, v in caches]


def speculate(target, drafter, prompt, max_new):
    split = {"target": 0.0, "drafter": 0.0}
    start = time.perf_counter()

    def timed(part, fn):
        t = time.perf_counter()
        out = fn()
        split[part] += time.perf_counter() - t
        return out

    logits, caches, hidden = timed("target", lambda: target.forward(torch.tensor(prompt), 0, None, drafter.taps))
    bonus, committed = int(logits[-1].argmax()), len(prompt)
    output, steps = [bonus], []
    timed("drafter", lambda: drafter.add_context(hidden, torch.arange(len(prompt))))
    while len(output) < max_new:
        rows = min(drafter.block, max_new - len(output) + 1)
        drafts = timed("drafter", lambda: drafter.propose(bonus, rows))
        tokens = [bonus] + drafts

        def verify():
            logits, new, hidden = target.forward(torch.tensor(tokens), committed, caches, drafter.taps)
            posterior = logits.argmax(-1).tolist()
            accepted = 0
            while accepted < len(drafts) and drafts[accepted] == posterior[accepted]:
                accepted += 1
            return crop(new, committed + accepted + 1), hidden, posterior, accepted

        caches, hidden, posterior, accepted = timed("target", verify)
        bonus = posterior[accepted]
        produced = (tokens[1:accepted + 1] + [bonus])[:max_new - len(output)]
        output += produced
        steps.append(len(produced))
        timed("drafter", lambda: drafter.add_context(hidden, torch.arange(accepted + 1)))
        committed += accepted + 1
    return output, steps, time.perf_counter() - start, split


@torch.inference_mode()
def greedy(target, prompt, max_new):
    start = time.perf_counter()
    logits, caches = target.forward(torch.tensor(prompt), 0, None)
    out = [int(logits[-1].argmax())]
    while len(out) < max_new:
        logits, caches = target.forward(torch.tensor([out[-1]]), len(prompt) + len(out) - 1, caches)
        out.append(int(logits[-1].argmax()))
    return out, time.perf_counter() - start


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("target")
    ap.add_argument("drafter")
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--tokens", type=int, default=64)
    ap.add_argument("--prompt", type=int, default=16)
    a = ap.parse_args()
    torch.set_num_threads(a.threads)
    target = Target(a.target)
    if target.hybrid:
        sys.exit("peer_speculative.py: linear-attention targets are not supported (a GDN state cannot be cropped)")
    drafter = Drafter(a.drafter, target)
    prompt = list(range(1, a.prompt + 1))  # eval_bench's prompt: token ids 1..16
    output, steps, seconds, split = speculate(target, drafter, prompt, a.tokens)
    greedy_out, greedy_s = greedy(target, prompt, a.tokens)
    print(json.dumps({
        "tokens_per_s": len(output) / seconds,
        "ms_per_token": 1e3 * seconds / len(output),
        "tau": len(output) / len(steps),
        "steps": len(steps),
        "target_share": split["target"] / seconds,
        "drafter_share": split["drafter"] / seconds,
        "bookkeeping_share": 1 - (split["target"] + split["drafter"]) / seconds,
        "greedy_ms_per_token": 1e3 * greedy_s / len(greedy_out),
        "output_matches_greedy": output == greedy_out,
        "peak_rss_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024,
        "threads": a.threads,
    }))


if __name__ == "__main__":
    main()
