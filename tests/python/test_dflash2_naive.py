#!/usr/bin/env python3
"""The `python` ctest for DFlash2: a naive re-computation of greedy speculative decoding with a DFlash2 drafter,
written from the z-lab reference's math (dflash/model.py @10129599: GroupedDynamicCausalConv, the DFlash2 decoder
layer, compute_logits, CandidateSelector.select at temperature 0), against `draftgate eval --record-drafts`.

    /usr/bin/python3 tests/python/test_dflash2_naive.py --draftgate build/draftgate --work DIR

Every draft step is recomputed from scratch (target forward over the committed tokens, drafter over all context
features, no caches), in float32. Asserts that each verify step's drafted tokens, the acceptance per step and the
output equal draftgate's, on a random DFlash2 drafter with a sliding causal layer (window shorter than the block) and
a full non-causal one, an input embedding scale, an output multiplier and soft-capping. Also asserts the output
equals plain greedy decoding of the target, and that DDTree with DFlash2 is refused (exit 2, one line). Exit 0 pass, 1 fail, 77 (ctest's skip) without python3-torch.
"""
import argparse
import json
import os
import subprocess
import sys

try:
    import torch
    import torch.nn.functional as F
except ImportError:
    print("skipped: python3-torch is not installed (ci/install-deps.sh installs it)")
    sys.exit(77)

import tiny_dflash

ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..")
TARGET = os.path.join(ROOT, "fixtures", "trained", "qwen3-target")
PROMPTS = [[0, 2, 57, 11, 17, 38, 37, 15, 25, 1], [0, 2, 42, 61, 11, 60, 37, 58, 1], [5, 9, 33, 2]]
MAX_NEW = 24
SHORTENED = []  # per shortened last block: whether its draft differs from the full block's first rows


class NaiveDflash2:
    """The DFlash2 drafter's draft step in float32, from the reference's formulas; weights read by their stored
    names (the codebooks without `.weight`, as the reference's checkpoints hold them)."""

    def __init__(self, path, target):
        with open(os.path.join(path, "config.json")) as f:
            c = json.load(f)
        d = c["dflash_config"]
        self.w = {n: t.float() for n, t in tiny_dflash.read_safetensors(os.path.join(path, "model.safetensors"))[0].items()}
        self.target = target
        self.block, self.mask, self.taps = d["block_size"], d["mask_token_id"], d["target_layer_ids"]
        self.group = d["conv_group_size"]
        self.top_k = d["selector_top_k"]
        self.scale = d.get("input_embedding_scale", 1.0)
        self.mult = d.get("output_multiplier", 1.0)
        self.cap = d.get("final_logit_softcapping")
        self.eps = c["rms_norm_eps"]
        self.nh, self.nkv, self.d = c["num_attention_heads"], c["num_key_value_heads"], c["head_dim"]
        theta = c["rope_parameters"]["rope_theta"] if "rope_parameters" in c else c["rope_theta"]
        self.inv_freq = 1.0 / (theta ** (torch.arange(0, self.d, 2).float() / self.d))
        self.layer_types = c["layer_types"]
        self.window = c.get("sliding_window")
        # z-lab: is_causal absent/null -> sliding layers causal, full layers not; else bool(is_causal) for all.
        is_causal = c.get("is_causal")
        self.causal = [t == "sliding_attention" if is_causal is None else bool(is_causal) for t in self.layer_types]

    def norm(self, x, name):
        return tiny_dflash.rms_norm(x, self.w[name], self.eps, one_plus=False)

    def conv_prepare(self, x, prefix):
        u, dynamic = tiny_dflash.conv_prepare(x[None], self.w[prefix + "base_kernel"],
                                              self.w[prefix + "kernel_projection.weight"], self.group)
        return u[0], dynamic

    def conv_finish(self, y, dynamic, prefix):
        return tiny_dflash.conv_finish(y[None], dynamic, self.w[prefix + "base_kernel"], self.group)[0]

    def visible(self, layer, s, b):
        q = torch.arange(s, s + b)[:, None]
        k = torch.arange(s + b)[None, :]
        v = torch.ones(b, s + b, dtype=torch.bool)
        if self.causal[layer]:
            v &= k <= q
        if self.layer_types[layer] == "sliding_attention":
            v &= q - k < self.window
            if not self.causal[layer]:
                v &= k - q < self.window
        return v

    def draft(self, features, anchor, b):
        """(logits [b-1, V], b-1 draft tokens) of the block [anchor, MASK x (b-1)] after context features [s, taps*H]."""
        w, s = self.w, features.shape[0]
        ctx = self.norm(F.linear(features, w["fc.weight"]), "hidden_norm.weight")
        ids = torch.tensor([anchor] + [self.mask] * (b - 1))
        h = self.target.embed[ids].float() * self.scale
        ctx_pos, blk_pos = torch.arange(s), torch.arange(s, s + b)
        for i in range(len(self.layer_types)):
            p = f"layers.{i}."
            a = p + "self_attn."
            u, finish_kernel = self.conv_prepare(self.norm(h, p + "input_layernorm.weight"), p + "attention_conv.")
            q = tiny_dflash.rope(self.norm(F.linear(u, w[a + "q_proj.weight"]).view(b, self.nh, self.d),
                                           a + "q_norm.weight"), blk_pos, self.inv_freq)
            # Context keys/values from the fc features (never convolved), block keys/values from the convolved rows.
            k = torch.cat((F.linear(ctx, w[a + "k_proj.weight"]), F.linear(u, w[a + "k_proj.weight"])))
            k = tiny_dflash.rope(self.norm(k.view(s + b, self.nkv, self.d), a + "k_norm.weight"),
                                 torch.cat((ctx_pos, blk_pos)), self.inv_freq)
            v = torch.cat((F.linear(ctx, w[a + "v_proj.weight"]), F.linear(u, w[a + "v_proj.weight"])))
            o = tiny_dflash.attend(q, k, v.view(s + b, self.nkv, self.d), self.visible(i, s, b))
            h = h + self.conv_finish(F.linear(o, w[a + "o_proj.weight"]), finish_kernel, p + "attention_conv.")
            m, finish_kernel = self.conv_prepare(self.norm(h, p + "post_attention_layernorm.weight"), p + "mlp_conv.")
            f = F.linear(F.silu(F.linear(m, w[p + "mlp.gate_proj.weight"])) * F.linear(m, w[p + "mlp.up_proj.weight"]),
                         w[p + "mlp.down_proj.weight"])
            h = h + self.conv_finish(f, finish_kernel, p + "mlp_conv.")
        y = self.norm(h[1:], "norm.weight")
        logits = tiny_dflash.capped_logits(y, self.target.lm_head.float(), self.mult, self.cap)
        # candidate_selector at temperature 0: greedy walk over each position's top-k from the anchor.
        unary, candidates = torch.topk(logits, self.top_k, dim=-1)
        projected = F.linear(y, w["candidate_selector.hidden_projection.weight"])
        previous, tokens = anchor, []
        for pos in range(b - 1):
            pairwise = w["candidate_selector.successor_codebook"][candidates[pos]] @ (
                w["candidate_selector.predecessor_codebook"][previous] * projected[pos])
            previous = int(candidates[pos][torch.argmax(unary[pos] + pairwise)])
            tokens.append(previous)
        return logits, tokens


def naive_speculative(target, drafter, prompt):
    """Greedy speculative decoding as the reference's dflash_generate (@10129599) runs it: the longest accepted
    prefix plus the target's bonus token per step; the block shortened to min(B, remaining + 1) rows and a step's
    acceptance = the tokens it produced (capped at MAX_NEW). Everything recomputed from the committed tokens."""
    logits, _, _ = target.forward(torch.tensor(prompt))
    output, drafts, acceptance = [int(logits[-1].argmax())], [], []
    while len(output) < MAX_NEW:
        committed = prompt + output[:-1]  # every position before the anchor
        _, hidden, _ = target.forward(torch.tensor(committed))
        features = torch.cat([hidden[t + 1] for t in drafter.taps], -1).float()
        remaining = MAX_NEW - len(output)
        rows = min(drafter.block, remaining + 1)
        _, tokens = drafter.draft(features, output[-1], rows)
        if rows < drafter.block:  # a shortened block; does it draft differently from a cut full block?
            SHORTENED.append(tokens != drafter.draft(features, output[-1], drafter.block)[1][:rows - 1])
        drafts.append(tokens)
        verify, _, _ = target.forward(torch.tensor(prompt + output + tokens))
        greedy = verify[len(prompt) + len(output) - 1:].argmax(-1).tolist()
        accepted = 0
        while accepted < len(tokens) and tokens[accepted] == greedy[accepted]:
            accepted += 1
        produced = min(accepted + 1, remaining)
        acceptance.append(produced)
        output += (tokens[:accepted] + [greedy[accepted]])[:produced]
    return output, drafts, acceptance


def greedy(target, prompt):
    out = []
    while len(out) < MAX_NEW:
        logits, _, _ = target.forward(torch.tensor(prompt + out))
        out.append(int(logits[-1].argmax()))
    return out


def run(cmd):
    done = subprocess.run(cmd, capture_output=True, text=True)
    if done.returncode != 0:
        sys.exit(f"FAIL: {' '.join(cmd)} exited {done.returncode}: {done.stderr.strip()}")


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--draftgate", required=True)
    parser.add_argument("--work", required=True)
    args = parser.parse_args()
    os.makedirs(args.work, exist_ok=True)
    drafter_dir = os.path.join(args.work, "dflash2-drafter")
    if os.path.exists(drafter_dir):
        for name in os.listdir(drafter_dir):
            os.unlink(os.path.join(drafter_dir, name))
        os.rmdir(drafter_dir)
    run([args.draftgate, "make-drafter", "--target", TARGET, "--version", "2", "--layers", "2", "--taps", "0,2",
         "--block-size", "6", "--seed", "7", "--out", drafter_dir])
    config_path = os.path.join(drafter_dir, "config.json")
    with open(config_path) as f:
        config = json.load(f)
    # Layer 0 sliding (causal: is_causal absent) with a window shorter than the block, layer 1 full (not causal).
    config["layer_types"] = ["sliding_attention", "full_attention"]
    config["sliding_window"] = 3
    config["use_sliding_window"] = True
    config.pop("is_causal", None)
    config["dflash_config"].update({"input_embedding_scale": 1.5, "output_multiplier": 0.7,
                                    "final_logit_softcapping": 4.0, "selector_top_k": 5})
    with open(config_path, "w") as f:
        json.dump(config, f, indent=2)
    prompts = os.path.join(args.work, "prompts.jsonl")
    with open(prompts, "w") as f:
        for i, p in enumerate(PROMPTS):
            f.write(json.dumps({"id": f"p{i}", "input_ids": p}) + "\n")
    result = os.path.join(args.work, "eval.json")
    if os.path.exists(result):
        os.unlink(result)
    run([args.draftgate, "--threads", "1", "eval", "--target", TARGET, "--drafter", drafter_dir, "--prompts", prompts,
         "--max-new", str(MAX_NEW), "--dtype", "f32", "--record-drafts", "--json", result])
    with open(result) as f:
        engine = {r["id"]: r for r in json.load(f)["per_prompt"]}
    failures = []
    refused = subprocess.run([args.draftgate, "eval", "--target", TARGET, "--drafter", drafter_dir, "--prompts",
                              prompts, "--max-new", "4", "--tree-budget", "4"], capture_output=True, text=True)
    if refused.returncode != 2 or len(refused.stderr.strip().splitlines()) != 1 or "DFlash2" not in refused.stderr:
        failures.append(f"DDTree with DFlash2: exit {refused.returncode}, stderr {refused.stderr!r} "
                        "(want exit 2 and one line naming DFlash2)")

    target = tiny_dflash.Target(TARGET, "f32")
    drafter = NaiveDflash2(drafter_dir, target)
    steps, accepted = 0, 0
    with torch.no_grad():
        for i, prompt in enumerate(PROMPTS):
            output, drafts, acceptance = naive_speculative(target, drafter, prompt)
            got = engine[f"p{i}"]
            steps += len(drafts)
            accepted += sum(acceptance) - len(acceptance)
            for step, (mine, theirs) in enumerate(zip(drafts, got["drafts"])):
                if mine != theirs:
                    failures.append(f"p{i} step {step}: naive drafts {mine}, draftgate {theirs}")
                    break
            if len(drafts) != len(got["drafts"]):
                failures.append(f"p{i}: naive {len(drafts)} steps, draftgate {len(got['drafts'])}")
            if acceptance != got["acceptance"]:
                failures.append(f"p{i}: acceptance naive {acceptance}, draftgate {got['acceptance']}")
            if output != got["output_ids"]:
                failures.append(f"p{i}: output naive {output}, draftgate {got['output_ids']}")
            if output != greedy(target, prompt):
                failures.append(f"p{i}: speculative output differs from plain greedy decoding")
    print(f"{len(PROMPTS)} prompts, {steps} draft steps, {accepted} drafts accepted, {len(SHORTENED)} shortened "
          f"blocks, {sum(SHORTENED)} drafting differently from a cut full block")
    if not any(SHORTENED):
        failures.append("no shortened last block drafted differently: the test does not exercise the shortening")
    for line in failures:
        print("FAIL:", line)
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
