#!/usr/bin/env python3
"""The `python` ctest for DFlash2 step records: the pure-PyTorch trainer (train_and_record.py) trains a random
DFlash2 drafter (full-attention layers, conv kernel 2, an input embedding scale, an output multiplier and
soft-capping) on the bundled qwen3 target with its own training-mode forward (tiny_dflash.Drafter: each block's
convolutions over its own rows, from the z-lab formulas) and writes step records; draftgate judges them.

    /usr/bin/python3 tests/python/test_dflash2_records.py --draftgate build/draftgate --work DIR

Asserts: the correct float32 and bf16 records pass all four step-record checks; the trainer bug that feeds all
anchors' blocks through the forward as one sequence (each block's convolutions reading the block before it) fails
train_infer_consistency, and in float32 the failure names the anchor and block position where the trainer's own
logits move most under that bug. Exit 0 pass, 1 fail, 77 (ctest's skip) without python3-torch.
"""
import argparse
import json
import os
import shutil
import subprocess
import sys

try:
    import torch
except ImportError:
    print("skipped: python3-torch is not installed (ci/install-deps.sh installs it)")
    sys.exit(77)

import run_python_gate as gate
import tiny_dflash as td
import train_and_record as tr

RUNS = ["f32", "bf16", "conv-across-blocks.f32", "conv-across-blocks.bf16"]


def make_drafter(draftgate, directory):
    shutil.rmtree(directory, ignore_errors=True)
    done = subprocess.run([draftgate, "make-drafter", "--target", os.path.join(tr.REPO, tr.FAMILIES["qwen3"][0]),
                           "--version", "2", "--seed", "5", "--out", directory], capture_output=True, text=True)
    if done.returncode != 0:
        sys.exit(f"FAIL: make-drafter exited {done.returncode}: {done.stderr.strip()}")
    path = os.path.join(directory, "config.json")
    with open(path) as f:
        config = json.load(f)
    assert config["dflash_config"]["conv_kernel_size"] > 1
    config["layer_types"] = ["full_attention"] * config["num_hidden_layers"]  # training mode refuses sliding
    config["dflash_config"].update({"input_embedding_scale": 1.5, "output_multiplier": 0.7,
                                    "final_logit_softcapping": 4.0})
    with open(path, "w") as f:
        json.dump(config, f, indent=2)


def where_the_bug_shows(entry):
    """(anchor, block position) where the recorded drafter's logits move most when the convolutions cross block
    boundaries, recomputed here in float32 from the record's inputs."""
    record, _ = td.read_safetensors(entry["step_record"])
    target = tr.cached_target(entry["target"], "f32")
    drafter = td.Drafter(entry["drafter"])
    with torch.no_grad():
        args = (target, record["fc_input"].float(), record["input_ids"], record["anchors"])
        diff = (drafter.training_logits(*args, conv_across_blocks=True)
                - drafter.training_logits(*args)).abs().amax(-1)[:, 1:]
    worst = int(diff.argmax())
    return int(record["anchors"][worst // diff.shape[1]]), worst % diff.shape[1] + 1


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--draftgate", required=True)
    ap.add_argument("--work", required=True)
    a = ap.parse_args()
    torch.set_num_threads(1)
    os.makedirs(os.path.join(a.work, "suites"), exist_ok=True)
    drafter = os.path.join(a.work, "dflash2-drafter")
    make_drafter(a.draftgate, drafter)
    manifest = [entry for run in RUNS for entry in tr.train_and_record("qwen3", run, a.work, drafter_dir=drafter)]
    judged = gate.judge(a.draftgate, [gate.write_suite(a.work, e) for e in manifest],
                        os.path.join(a.work, "report.json"))
    failures = []
    for entry in manifest:
        results = judged[entry["name"]]
        for check in gate.CHECKS:
            want, got = gate.expected(entry, check), results[check]
            if want is not None and got["status"] != want:
                failures.append(f"{entry['name']}: {check} is {got['status']}, expected {want}: "
                                f"{got.get('message', '')}")
        consistency = results["train_infer_consistency"]
        print(f"{entry['name']}: train_infer_consistency {consistency['status']}, max_rel_diff "
              f"{consistency['measured'].get('max_rel_diff')}")
        if entry["bug"] and entry["trainer_precision"] == "f32":
            anchor, position = where_the_bug_shows(entry)
            named = f"worst at anchor {anchor} block position {position}"
            if named not in consistency.get("message", ""):
                failures.append(f"{entry['name']}: the message does not name where the bug shows ({named}): "
                                f"{consistency.get('message', '')}")
    for line in failures:
        print("FAIL:", line)
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
