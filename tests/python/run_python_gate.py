#!/usr/bin/env python3
"""The `python` ctest: a pure-PyTorch DFlash trainer (train_and_record.py) writes step records through
python/draftgate_records.py, and draftgate judges each one with the four step-record checks.

    /usr/bin/python3 tests/python/run_python_gate.py --draftgate build/draftgate --work DIR [--jobs 2]

Asserts that every correct record (float32, -100 labels, bf16 and autocast stored f32 and bf16) passes all four
checks and that every seeded bug fails the check that must catch it. Prints a record x check verdict table with the key
measured numbers, and writes DIR/README.txt: each record, its exact draftgate command and the check it must fail
(and DIR/suites/, one suite per record with those expectations).
Exit 0 when every assertion holds, 1 otherwise, 77 (ctest's skip) without python3-torch.
"""
import argparse
import concurrent.futures
import json
import os
import shlex
import subprocess
import sys
import time

try:
    import torch
except ImportError:
    print("skipped: python3-torch is not installed (ci/install-deps.sh installs it)")
    sys.exit(77)

import train_and_record

CHECKS = ["target_logits_noise_free", "fc_excludes_target_layer", "loss_type", "train_infer_consistency"]
SHORT = {"target_logits_noise_free": "teacher", "fc_excludes_target_layer": "fc", "loss_type": "loss",
         "train_infer_consistency": "train/infer"}


def command(draftgate, entry):
    """The draftgate command that judges one record (README.txt shows it; the driver runs suites, same checks)."""
    return [draftgate, "check", "--target", entry["target"], "--drafter", entry["drafter"], "--step-record",
            entry["step_record"], "--only", ",".join(CHECKS)]


def write_suite(work, entry):
    """A suite file for one record, with the verdicts the assertions demand as its `expect`."""
    expect = {c: expected(entry, c) for c in CHECKS if expected(entry, c)}
    suite = {"schema": "draftgate.suite/1", "name": entry["name"],
             "artifacts": {k: entry[k] for k in ("target", "drafter", "step_record")},
             "checks": [{"check": c} for c in CHECKS], "expect": expect}
    path = os.path.join(work, "suites", entry["name"].replace("/", "__") + ".json")
    with open(path, "w") as f:
        json.dump(suite, f, indent=1)
    return path


def judge(draftgate, suites, report):
    """{suite name: {check: result}} for a batch of suites run by one draftgate process (libtorch loads once). A
    suite draftgate refuses to open stops the whole batch: then each suite runs alone, and one that still gives no
    report has every check an error carrying draftgate's message."""
    if os.path.exists(report):
        os.unlink(report)
    done = subprocess.run([draftgate, "--threads", "1", "check", "--report", report]
                          + [arg for suite in suites for arg in ("--suite", suite)], capture_output=True, text=True)
    if os.path.exists(report):
        with open(report) as f:
            return {run["name"]: {r["check"]: r for r in run["results"]} for run in json.load(f)["suites"]}
    if len(suites) > 1:
        return {name: results for i, suite in enumerate(suites)
                for name, results in judge(draftgate, [suite], f"{report}.{i}").items()}
    with open(suites[0]) as f:
        name = json.load(f)["name"]
    why = (done.stderr.strip().splitlines() or [f"exit {done.returncode}"])[-1]
    return {name: {c: {"status": "error", "message": why, "measured": {}} for c in CHECKS}}


def expected(entry, check):
    """The verdict the assertion demands, or None where the record says nothing about that check."""
    if entry["bug"] is None:
        return "pass"
    return "fail" if check == entry["must_fail"] else None


def key_numbers(results):
    def number(check, key, digits=3):
        value = results[check].get("measured", {}).get(key)
        return f"{value:.{digits}g}" if isinstance(value, (int, float)) else "-"
    slices = results["fc_excludes_target_layer"].get("measured", {}).get("fed_slices") or []
    sources = ",".join({-1: "emb", None: "?"}.get(s.get("came_from"), str(s.get("came_from"))) for s in slices)
    return (f"noise {number('target_logits_noise_free', 'noise_ratio')} "
            f"labels {number('target_logits_noise_free', 'label_agreement')} | fed [{sources or '-'}] | "
            f"logged {number('loss_type', 'logged_loss', 4)} ce {number('loss_type', 'recomputed_ce', 4)} "
            f"kl {number('loss_type', 'recomputed_kl', 4)} | "
            f"t/i {number('train_infer_consistency', 'max_rel_diff')} "
            f"top1 {number('train_infer_consistency', 'top1_agreement')}")


def write_readme(work, draftgate, manifest):
    lines = ["Step records written by tests/python/train_and_record.py (a pure-PyTorch DFlash trainer) through",
             "python/draftgate_records.py, with the drafter weights that produced each record's logits.",
             "Correct records must pass all four step-record checks; each seeded bug must fail the named check.",
             "<run> = <bug>.<trainer precision>, or the correct trainers f32, f32-ignore-index (labels -100 where",
             "the weight is 0), bf16 and autocast. Precisions: f32; bf16 = the target's weights cast to bfloat16,",
             "the drafter (f32 master weights) under torch.autocast(bfloat16); autocast = target and drafter f32",
             "weights under torch.autocast(bfloat16). Both bf16 kinds record teacher_dtype = drafter_dtype = bf16.",
             "record-store-<dtype> = how the float tensors were stored (.float()'d, or bf16).", "",
             "All at once (exit 0 iff every verdict is the expected one; suites/ holds one suite per record):",
             f"  {shlex.quote(draftgate)} check --suite {shlex.quote(os.path.abspath(work))}/suites/*.json "
             "--verify-expectations", "", "One by one:", ""]
    for entry in manifest:
        must = f"must FAIL {entry['must_fail']}" if entry["bug"] else "must PASS all four"
        lines += [f"{entry['name']}: {must}", "  " + shlex.join(command(draftgate, entry)), ""]
    with open(os.path.join(work, "README.txt"), "w") as f:
        f.write("\n".join(lines))


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--draftgate", required=True)
    ap.add_argument("--work", required=True, help="where the records, drafters and reports go")
    ap.add_argument("--jobs", type=int, default=2)
    a = ap.parse_args()
    started = time.monotonic()
    torch.set_num_threads(1)
    os.makedirs(a.work, exist_ok=True)
    manifest = [entry for family in train_and_record.FAMILIES for run in train_and_record.runs()
                for entry in train_and_record.train_and_record(family, run, a.work)]
    with open(os.path.join(a.work, "manifest.json"), "w") as f:
        json.dump(manifest, f, indent=1)
    os.makedirs(os.path.join(a.work, "suites"), exist_ok=True)
    suites = [write_suite(a.work, entry) for entry in manifest]
    write_readme(a.work, os.path.abspath(a.draftgate), manifest)
    trained = time.monotonic()
    batches = [suites[i::a.jobs] for i in range(a.jobs)]
    with concurrent.futures.ThreadPoolExecutor(a.jobs) as pool:
        reports = [os.path.join(a.work, f"report-{i}.json") for i in range(a.jobs)]
        judged = {}
        for verdicts_of_batch in pool.map(lambda b: judge(a.draftgate, *b), zip(batches, reports)):
            judged.update(verdicts_of_batch)
    verdicts = [judged[entry["name"]] for entry in manifest]

    width = max(len(e["name"]) for e in manifest)
    print(f"{'record':<{width}}  " + "  ".join(f"{SHORT[c]:<11}" for c in CHECKS) + "  key numbers")
    violations = []
    for entry, results in zip(manifest, verdicts):
        cells = []
        for check in CHECKS:
            status, want = results[check]["status"], expected(entry, check)
            wrong = want is not None and status != want
            cells.append(f"{status.upper() + ('!' if wrong else ''):<11}")
            if wrong:
                violations.append(f"{entry['name']}: {check} is {status}, expected {want}: "
                                  f"{results[check].get('message', '')}")
        print(f"{entry['name']:<{width}}  " + "  ".join(cells) + "  " + key_numbers(results))
    print(f"\n{len(manifest)} records: trained and written in {trained - started:.1f} s, judged in "
          f"{time.monotonic() - trained:.1f} s; '!' marks a verdict that is not the expected one")
    for v in violations:
        print("VIOLATION " + v)
    return 1 if violations else 0


if __name__ == "__main__":
    sys.exit(main())
