"""What the step-record tests share: python3-torch or a skip (exit 77, as ctest's SKIP_RETURN_CODE), the draftgate
binary from --draftgate (removed from sys.argv before unittest reads it), python/draftgate_records.py on the path,
and one run of the four step-record checks."""
import json
import os
import subprocess
import sys

try:
    import torch  # noqa: F401  (the tests' modules import it next)
except ImportError:
    print("skipped: python3-torch is not installed (ci/install-deps.sh installs it)")
    sys.exit(77)

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "python"))

DRAFTGATE = None  # the tests that run draftgate need --draftgate
if "--draftgate" in sys.argv:
    _at = sys.argv.index("--draftgate")
    DRAFTGATE = os.path.abspath(sys.argv[_at + 1])
    del sys.argv[_at:_at + 2]

CHECKS = "target_logits_noise_free,loss_type,train_infer_consistency,fc_excludes_target_layer"


def run_checks(target_dir, drafter_dir, record):
    """`draftgate check --only CHECKS` on the record: (the finished process, {check: its JSON result})."""
    report = record + ".json"
    done = subprocess.run([DRAFTGATE, "check", "--target", target_dir, "--drafter", drafter_dir,
                           "--step-record", record, "--only", CHECKS, "--report", report],
                          capture_output=True, text=True)
    results = {}
    if os.path.exists(report):
        with open(report) as f:
            results = {r["check"]: r for r in json.load(f)["results"]}
    return done, results
