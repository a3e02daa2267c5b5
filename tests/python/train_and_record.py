#!/usr/bin/env python3
"""A minimal pure-PyTorch DFlash training loop on the bundled tiny targets that writes step records through
python/draftgate_records.py: correct trainers (float32, with 0 or PyTorch's -100 as the label where the weight is
0; bf16 weights and bf16 autocast, each stored f32 and bf16) and the same trainers with one seeded bug each. Each
run trains a few steps from the reference drafter and records its last step together with the drafter weights
that produced the recorded logits.

    /usr/bin/python3 tests/python/train_and_record.py --out DIR [--family qwen3 qwen35] [--run NAME ...]
        [--drafter DIR]

--drafter starts every run from that drafter instead of the family's reference: a DFlash2 drafter trains through
the DFlash2 training-mode forward, and its runs may also seed DFLASH2_BUGS (test_dflash2_records.py does).

writes DIR/<family>/<run>/{drafter/, record-store-f32.safetensors[, record-store-bf16.safetensors]} and
DIR/manifest.json (every record, its draftgate check artifacts and the check its bug must fail).
"""
import argparse
import json
import os
import random
import shutil
import sys

import torch

import tiny_dflash as td

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "python"))
import draftgate_records  # noqa: E402

REPO = os.path.abspath(os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", ".."))
FAMILIES = {
    "qwen3": ("fixtures/trained/qwen3-target", "fixtures/trained/qwen3-drafter-reference"),
    "qwen35": ("fixtures/trained/qwen35-target", "fixtures/trained/qwen35-drafter-reference"),
    "qwen35moe": ("fixtures/trained/qwen35moe-target", "fixtures/trained/qwen35moe-drafter-reference"),
}
GAMMA = 4.0
SEQUENCE_LENGTH = 128
ANCHORS = 16
TRAIN_STEPS = 2  # optimizer steps before the recorded one
SUBSET_STRIDE = 4  # records with subset=True keep the teacher logits of every 4th position
# Of the teacher logits' RMS: above the bf16 detection limit on qwen3, 0.058 (2 x the 0.029 spread a bf16 forward
# explains there, docs/step-records.md "Precision"); 5% is below that limit and a bf16 qwen3 record with it passes.
TEACHER_NOISE = 0.10

# Seeded bugs and the step-record check each must fail.
BUGS = {
    "teacher-noise": "target_logits_noise_free",          # Gaussian noise on the teacher logits (and so labels)
    "teacher-without-final-norm": "target_logits_noise_free",  # lm_head(h_last) without the final norm
    "final-layer-tap": "fc_excludes_target_layer",       # taps declare and feed the final layer (HF hs[L], post-norm)
    "final-hidden-fed": "fc_excludes_target_layer",      # declared taps fine, the last slice fed HF hidden_states[-1]
    "tap-off-by-one": "fc_excludes_target_layer",        # fc fed hidden_states[l] instead of hidden_states[l + 1]
    "kl-loss": "loss_type",                              # soft KL trained and logged (metadata "kl"), recipe is CE
    "kl-mislabelled": "loss_type",                       # KL trained and logged, metadata claims "ce"
    "anchor-inclusive-context": "train_infer_consistency",  # the context visible through the anchor
    "causal-block": "train_infer_consistency",           # causal mask inside the block
    "shifted-labels": "target_logits_noise_free",        # labels one token later than the recipe's
}
# DFlash2 drafters only (a no-op on DFlash): all anchors' blocks fed through the reference forward as one
# sequence, so each block's convolutions also read the end of the block before it.
DFLASH2_BUGS = {"conv-across-blocks": "train_infer_consistency"}
ALL_BUGS = {**BUGS, **DFLASH2_BUGS}
# A run: (bug or None, trainer precision, label fill where the weight is 0); it writes one record per store dtype.
# Trainer precisions: float32; "bf16", the target's weights cast to bfloat16 and the drafter under autocast;
# "autocast", target and drafter float32 weights under torch.autocast(bfloat16). Stored .float()'d and as bf16.
STORES = {"f32": ["f32"], "bf16": ["f32", "bf16"], "autocast": ["f32", "bf16"]}


def runs(bugs=BUGS):
    out = {"f32": (None, "f32", 0), "f32-ignore-index": (None, "f32", -100), "bf16": (None, "bf16", 0),
           "autocast": (None, "autocast", 0)}
    for bug in bugs:
        for precision in STORES:
            out[f"{bug}.{precision}"] = (bug, precision, 0)
    return out


# The fixtures' task mix: [SEP, tag, args..., EQUALS] answer SEP, packed; loss on answer tokens only.
SEP, EQUALS, FIRST_TAG, FIRST_SYMBOL, SYMBOLS = 0, 1, 2, 8, 55


def instance(rng):
    task = rng.randrange(5)
    if task < 3:  # copy, reverse, sort
        args = [FIRST_SYMBOL + rng.randrange(SYMBOLS) for _ in range(rng.randint(4, 9))]
        answer = [list(args), args[::-1], sorted(args)][task]
    elif task == 3:  # count from a start by 1..3, ten terms
        start, step = rng.randrange(SYMBOLS), rng.randint(1, 3)
        args = [FIRST_SYMBOL + start, FIRST_SYMBOL + step]
        answer = [FIRST_SYMBOL + (start + i * step) % SYMBOLS for i in range(10)]
    else:  # a pattern of 2..4 symbols repeated to twelve tokens
        args = [FIRST_SYMBOL + rng.randrange(SYMBOLS) for _ in range(rng.randint(2, 4))]
        answer = [args[i % len(args)] for i in range(12)]
    return [SEP, FIRST_TAG + task] + args + [EQUALS], answer + [SEP]


def training_sequence(rng, max_length):
    ids, mask = [], []
    while True:
        prompt, answer = instance(rng)
        prompt = prompt[1:] if ids else prompt  # the previous answer ended with SEP
        if ids and len(ids) + len(prompt) + len(answer) > max_length:
            return torch.tensor(ids), torch.tensor(mask)
        ids += prompt + answer
        mask += [0] * len(prompt) + [1] * len(answer)


def sample_anchors(loss_mask, count, generator):
    # Positions whose next token carries loss, without replacement, sorted.
    candidates = (loss_mask[1:] != 0).nonzero().flatten()
    chosen = candidates[torch.randperm(candidates.shape[0], generator=generator)[:count]]
    return chosen.sort().values


def drafter_step(target, drafter, input_ids, loss_mask, anchors, bug, fill_label):
    """One recipe step (or the bugged one): what the record holds, and the loss to back-propagate."""
    logits, hs, last_layer_output = target.forward(input_ids)
    taps = drafter.target_layer_ids
    if bug == "tap-off-by-one":
        fed = [hs[l] for l in taps]
    elif bug == "final-hidden-fed":
        fed = [hs[l + 1] for l in taps[:-1]] + [hs[-1]]
    else:
        fed = [hs[l + 1] for l in taps]
    fc_input = torch.cat(fed, -1)
    teacher = logits
    if bug == "teacher-without-final-norm":
        teacher = target.head(last_layer_output)
    if bug == "teacher-noise":
        noise_generator = torch.Generator().manual_seed(7)
        rms = teacher.float().pow(2).mean().sqrt()
        teacher = (teacher.float() + TEACHER_NOISE * rms * torch.randn(teacher.shape, generator=noise_generator)) \
            .to(teacher.dtype)
    b, s = drafter.block_size, input_ids.shape[0]
    weights = td.block_weights(input_ids, loss_mask, anchors, b, GAMMA)
    offset = 1 if bug == "shifted-labels" else 0
    labels = teacher[td.block_rows(anchors, b, offset, s)].argmax(-1)
    labels = torch.where(weights > 0, labels, torch.full_like(labels, fill_label))
    with td.computing_in(target.precision):
        drafter_logits = drafter.training_logits(target, fc_input, input_ids, anchors,
                                                 context_through_anchor=bug == "anchor-inclusive-context",
                                                 causal_block=bug == "causal-block",
                                                 conv_across_blocks=bug == "conv-across-blocks")
    if bug in ("kl-loss", "kl-mislabelled"):
        loss = td.weighted_kl(drafter_logits, teacher[td.block_rows(anchors, b, 0, s)], weights)
    else:
        loss = td.weighted_ce(drafter_logits, labels, weights)
    record = dict(input_ids=input_ids, loss_mask=loss_mask, anchors=anchors, fc_input=fc_input,
                  teacher_logits=teacher, labels=labels, drafter_logits=drafter_logits.detach(), weights=weights,
                  loss="kl" if bug == "kl-loss" else "ce", logged_loss=loss.item())
    return record, loss


def train_and_record(family, run, out_dir, subset=False, drafter_dir=None):
    """Trains one run, writes its drafter and its records; returns one manifest entry per record. subset: the
    records keep the teacher logits of every SUBSET_STRIDE-th position and every other anchor (the loss logged
    over the kept anchors), as a trainer keeping records small would. drafter_dir: the drafter to start from
    instead of the family's reference (a DFlash2 drafter for the DFlash2 runs)."""
    bug, precision, fill_label = runs(ALL_BUGS)[run]
    target_dir, reference_dir = (os.path.join(REPO, p) for p in FAMILIES[family])
    drafter_dir = drafter_dir or reference_dir
    torch.manual_seed(0)
    target = cached_target(target_dir, precision)
    drafter = td.Drafter(drafter_dir)
    config = json.loads(json.dumps(drafter.config))
    if bug == "final-layer-tap":  # the trainer's config names the final layer; HF's hs[L] is what it feeds
        drafter.target_layer_ids[-1] = target.num_layers - 1
        config["dflash_config"]["target_layer_ids"] = drafter.target_layer_ids
    optimizer = torch.optim.AdamW(drafter.parameters(), lr=1e-4, weight_decay=0.0)
    rng = random.Random(f"{family}-data")  # the same data for every run of a family
    anchor_generator = torch.Generator().manual_seed(11)
    for step in range(TRAIN_STEPS + 1):
        input_ids, loss_mask = training_sequence(rng, SEQUENCE_LENGTH)
        anchors = sample_anchors(loss_mask, ANCHORS, anchor_generator)
        record, loss = drafter_step(target, drafter, input_ids, loss_mask, anchors, bug, fill_label)
        if step == TRAIN_STEPS:
            break  # the recorded step: these weights produced its logits
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()

    run_dir = os.path.join(out_dir, family, run)
    shutil.rmtree(run_dir, ignore_errors=True)
    drafter.save(os.path.join(run_dir, "drafter"), config)
    entries = []
    computed = "f32" if precision == "f32" else "bf16"
    extra = {}
    if subset:
        kept = torch.arange(0, record["anchors"].shape[0], 2)
        extra = dict(teacher_positions=range(0, record["input_ids"].shape[0], SUBSET_STRIDE), anchor_subset=kept)
        if record["loss"] == "ce":
            record["logged_loss"] = td.weighted_ce(record["drafter_logits"][kept], record["labels"][kept],
                                                   record["weights"][kept]).item()
    for store in STORES[precision]:
        path = os.path.join(run_dir, f"record-store-{store}.safetensors")
        draftgate_records.write_step_record(
            path, **record, **extra, block_size=drafter.block_size, gamma=GAMMA, mask_token_id=drafter.mask_token_id,
            target_layer_ids=drafter.target_layer_ids, step=TRAIN_STEPS, teacher_dtype=computed,
            drafter_dtype=computed, store_dtype=store)
        entries.append({"name": f"{family}/{run}/store-{store}", "family": family, "run": run, "bug": bug,
                        "trainer_precision": precision, "stored": store, "label_fill": fill_label,
                        "must_fail": ALL_BUGS.get(bug), "target": target_dir,
                        "drafter": os.path.join(run_dir, "drafter"), "step_record": path})
    return entries


_targets = {}


def cached_target(directory, precision):
    """One Target per checkpoint and precision, its forwards memoised: every run of a family sees the same data."""
    key = (directory, precision)
    if key not in _targets:
        target = td.Target(directory, precision)
        forward, results = target.forward, {}

        def memoised(input_ids):
            ids = tuple(input_ids.tolist())
            if ids not in results:
                results[ids] = forward(input_ids)
            return results[ids]

        target.forward = memoised
        _targets[key] = target
    return _targets[key]


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", required=True)
    ap.add_argument("--family", nargs="+", default=list(FAMILIES), choices=list(FAMILIES))
    ap.add_argument("--run", nargs="+", default=list(runs()), choices=list(runs(ALL_BUGS)))
    ap.add_argument("--drafter", help="the drafter to start from instead of each family's reference")
    ap.add_argument("--threads", type=int, default=1)
    a = ap.parse_args()
    torch.set_num_threads(a.threads)
    manifest = [entry for f in a.family for r in a.run
                for entry in train_and_record(f, r, a.out, drafter_dir=a.drafter)]
    with open(os.path.join(a.out, "manifest.json"), "w") as f:
        json.dump(manifest, f, indent=1)


if __name__ == "__main__":
    main()
