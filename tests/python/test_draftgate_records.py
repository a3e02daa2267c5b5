#!/usr/bin/env python3
"""Unit tests of python/draftgate_records.py: files read back byte-exact (a small reader here, and draftgate
itself with --draftgate), metadata as documented, and every input error named.

    /usr/bin/python3 tests/python/test_draftgate_records.py [--draftgate build/draftgate]
"""
import json
import os
import subprocess
import tempfile
import unittest

from step_record_checks import DRAFTGATE  # noqa: E402  (first: torch or a skip)

import torch  # noqa: E402

import tiny_dflash as td  # noqa: E402
import draftgate_records as dg  # noqa: E402
FIXTURES = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "fixtures", "trained")
S, N, B, V, H = 12, 2, 4, 16, 8


def record_args(**changes):
    """A small consistent record: batch of one, labels -100 where the recipe's weight is 0."""
    g = torch.Generator().manual_seed(3)
    input_ids = torch.randint(0, V, (1, S), generator=g)
    loss_mask = torch.ones(1, S, dtype=torch.long)
    loss_mask[0, :3] = 0
    anchors = torch.tensor([[2, 9]])  # the second block runs past the end: weight 0 there
    weights = td.block_weights(input_ids[0], loss_mask[0], anchors[0], B, 4.0)
    labels = torch.randint(0, V, (N, B), generator=g).masked_fill(weights == 0, -100)
    args = dict(input_ids=input_ids, loss_mask=loss_mask, anchors=anchors,
                fc_input=torch.randn(1, S, 2 * H, generator=g), teacher_logits=torch.randn(1, S, V, generator=g),
                labels=labels[None], drafter_logits=torch.randn(1, N, B, V, generator=g), weights=weights,
                block_size=B, gamma=4.0, mask_token_id=V - 1, target_layer_ids=[0, 2], loss="ce", logged_loss=1.25,
                step=7)
    args.update(changes)
    return args


class StepRecordTest(unittest.TestCase):
    def setUp(self):
        self.dir = tempfile.TemporaryDirectory()
        self.path = os.path.join(self.dir.name, "record.safetensors")

    def tearDown(self):
        self.dir.cleanup()

    def test_round_trip_keeps_every_value_and_the_schema_metadata(self):
        args = record_args(teacher_dtype="f32", drafter_dtype="f32")
        dg.write_step_record(self.path, **args)
        tensors, meta = td.read_safetensors(self.path)
        self.assertEqual(meta, {"schema": "draftgate.step_record/1", "block_size": "4", "gamma": "4.0",
                                "mask_token_id": "15", "target_layer_ids": "0,2", "loss": "ce",
                                "logged_loss": "1.25", "step": "7", "teacher_dtype": "f32", "drafter_dtype": "f32"})
        for name in ("input_ids", "loss_mask", "anchors", "fc_input", "teacher_logits", "labels", "drafter_logits"):
            self.assertTrue(torch.equal(tensors[name], args[name][0]), name)
        self.assertTrue(torch.equal(tensors["weights"], args["weights"]))
        self.assertEqual(tensors["labels"].min().item(), -100)  # ignore_index kept as-is
        self.assertEqual({t.dtype for t in tensors.values()}, {torch.int64, torch.float32})
        self.assertEqual(os.listdir(self.dir.name), ["record.safetensors"])  # no temporary left behind

    def test_store_dtype_and_the_precision_the_tensors_imply(self):
        args = record_args(teacher_logits=record_args()["teacher_logits"].bfloat16(),
                           drafter_logits=record_args()["drafter_logits"].half())
        dg.write_step_record(self.path, **args)
        tensors, meta = td.read_safetensors(self.path)
        self.assertEqual(tensors["teacher_logits"].dtype, torch.bfloat16)
        self.assertEqual(tensors["drafter_logits"].dtype, torch.float32)  # f16 is stored f32
        self.assertEqual((meta["teacher_dtype"], meta["drafter_dtype"]), ("bf16", "f16"))
        self.assertEqual(tensors["fc_input"].dtype, torch.float32)

        dg.write_step_record(self.path, **record_args(), store_dtype="bf16", overwrite=True)
        tensors, meta = td.read_safetensors(self.path)
        for name in ("fc_input", "teacher_logits", "drafter_logits"):
            self.assertEqual(tensors[name].dtype, torch.bfloat16, name)
        self.assertEqual(tensors["weights"].dtype, torch.float32)
        self.assertNotIn("teacher_dtype", meta)  # float32 tensors outside autocast: the precision is unknown
        self.assertTrue(torch.equal(tensors["fc_input"], record_args()["fc_input"][0].bfloat16()))

    def test_an_active_autocast_names_the_precision_of_float32_outputs(self):
        with torch.autocast("cpu", dtype=torch.bfloat16):
            dg.write_step_record(self.path, **record_args())
        _, meta = td.read_safetensors(self.path)
        self.assertEqual((meta["teacher_dtype"], meta["drafter_dtype"]), ("bf16", "bf16"))

    def test_refuses_to_overwrite_unless_asked(self):
        dg.write_step_record(self.path, **record_args())
        with self.assertRaises(FileExistsError):
            dg.write_step_record(self.path, **record_args(loss="kl"))
        self.assertEqual(td.read_safetensors(self.path)[1]["loss"], "ce")
        dg.write_step_record(self.path, **record_args(loss="kl"), overwrite=True)
        self.assertEqual(td.read_safetensors(self.path)[1]["loss"], "kl")

    def test_bad_input_is_named(self):
        labels = record_args()["labels"].clone()
        labels[0, 0, 1] = -100  # k = 1 of the first anchor carries weight
        cases = {
            # Two rows make a batch record: every tensor then needs the rows.
            "loss_mask has shape [1, 12], expected [2, 12]": dict(input_ids=torch.zeros(2, S, dtype=torch.long)),
            "input_ids must be an integer tensor": dict(input_ids=torch.zeros(1, S)),
            "loss_mask has shape": dict(loss_mask=torch.ones(S - 1, dtype=torch.long)),
            "anchor 12 is outside": dict(anchors=torch.tensor([2, 12])),
            "fc_input has shape [12, 15]": dict(fc_input=torch.zeros(S, 15)),
            "teacher_logits has 11 rows": dict(teacher_logits=torch.zeros(S - 1, V)),
            "drafter_logits has shape": dict(drafter_logits=torch.zeros(N, B, V + 1)),
            "labels[0, 1] = -100 is negative (ignored) but carries loss weight": dict(labels=labels),
            "outside the vocabulary of 16": dict(labels=labels.clamp(min=0) + V),
            "weights has shape": dict(weights=torch.ones(N, B + 1)),
            "record teacher_logits or labels": dict(teacher_logits=None, labels=None),
            "block_size must be at least 2": dict(block_size=1),
            'loss must be "ce" or "kl"': dict(loss="mse"),
            "logged_loss must be a finite number": dict(logged_loss=float("nan")),
            "teacher_dtype must be one of f32, bf16, f16": dict(teacher_dtype="fp32"),
            "store_dtype must be": dict(store_dtype="f16"),
            "target_layer_ids is empty": dict(target_layer_ids=[]),
        }
        for message, change in cases.items():
            with self.subTest(message), self.assertRaises(ValueError) as caught:
                dg.write_step_record(self.path, **record_args(**change))
            self.assertIn(message, str(caught.exception))
        self.assertFalse(os.listdir(self.dir.name))

    def test_trainer_recipe_keys(self):
        # SpecForge: data labels, gamma None (uniform), no teacher; D-PACE with speculators' normalisation.
        dg.write_step_record(self.path, **record_args(teacher_logits=None, labels=None, gamma=None,
                                                      labels_source="data", weighting="dpace", dpace_alpha=0.25,
                                                      loss_normalization="mask_sum", hidden_dtype="bf16",
                                                      weights=None, fc_input_noise="uniform:0.05"))
        meta = td.read_safetensors(self.path)[1]
        self.assertEqual((meta["gamma"], meta["labels_source"], meta["weighting"], meta["dpace_alpha"],
                          meta["loss_normalization"], meta["hidden_dtype"], meta["fc_input_noise"]),
                         ("none", "data", "dpace", "0.25", "mask_sum", "bf16", "uniform:0.05"))
        os.remove(self.path)
        dg.write_step_record(self.path, **record_args())
        self.assertFalse({"labels_source", "weighting", "dpace_alpha", "loss_normalization", "fc_input_noise"}
                         & set(td.read_safetensors(self.path)[1]))
        os.remove(self.path)
        for message, change in {
                "labels_source must be one of teacher, data": dict(labels_source="both"),
                "weighting must be one of fixed, dpace": dict(weighting="dpace2"),
                'dpace_alpha needs a D-PACE weighting': dict(dpace_alpha=0.5),
                "dpace_alpha must be in [0, 1]": dict(weighting="dpace", dpace_alpha=2.0),
                "gamma must be positive (None for uniform weights)": dict(gamma=0.0),
                "hidden_dtype must be one of f32, bf16, f16": dict(hidden_dtype="fp8"),
                'fc_input_noise must be "uniform:<half width>" or "gaussian:<std>"': dict(fc_input_noise="uniform:0"),
                'fc_input_noise must be "uniform:<half width>"': dict(fc_input_noise="laplace:0.1"),
                'fc_input_noise must be': dict(fc_input_noise="uniform:x"),
                "got 'uniform:1_0'": dict(fc_input_noise="uniform:1_0"),  # float() takes these two
                "got 'uniform: 0.05'": dict(fc_input_noise="uniform: 0.05")}.items():
            with self.subTest(message), self.assertRaises(ValueError) as caught:
                dg.write_step_record(self.path, **record_args(**change))
            self.assertIn(message, str(caught.exception))

    @unittest.skipUnless(DRAFTGATE, "needs --draftgate")
    def test_draftgate_reads_it_and_recomputes_the_logged_loss(self):
        args = record_args()
        weights = args["weights"]
        for fill, name in ((0, "zero-filled"), (-100, "ignore-index")):
            labels = args["labels"][0].masked_fill(weights == 0, fill)
            logp = torch.log_softmax(args["drafter_logits"][0].double(), -1)
            nll = -logp.gather(-1, labels.clamp(min=0)[..., None])[..., 0]
            loss = ((nll * weights).sum() / weights.sum()).item()
            path = os.path.join(self.dir.name, f"{name}.safetensors")
            dg.write_step_record(path, **record_args(labels=labels, logged_loss=loss))
            report = os.path.join(self.dir.name, f"{name}.json")
            done = subprocess.run([DRAFTGATE, "check", "--step-record", path, "--only", "loss_type",
                                   "--report", report], capture_output=True, text=True)
            with self.subTest(name):
                self.assertEqual(done.returncode, 0, done.stdout + done.stderr)
                with open(report) as f:
                    result = json.load(f)["results"][0]
                self.assertEqual(result["measured"]["logged_loss_matches"], "ce")
                self.assertAlmostEqual(result["measured"]["recomputed_ce"], loss, places=6)


class IdentityTest(unittest.TestCase):
    """Records carry the identity of the checkpoints they were made with, computed as draftgate computes a
    golden's (the bundled golden recorded the fixture target's), and draftgate refuses them with others."""

    def setUp(self):
        self.dir = tempfile.TemporaryDirectory()
        self.path = os.path.join(self.dir.name, "record.safetensors")

    def tearDown(self):
        self.dir.cleanup()

    def test_the_identity_is_the_one_goldens_carry(self):
        golden = os.path.join(FIXTURES, "..", "..", "golden", "qwen3-reference.json")
        with open(golden) as f:
            recorded = json.load(f)["provenance"]["target"]["identity"]
        self.assertEqual(dg.checkpoint_identity(os.path.join(FIXTURES, "qwen3-target")), recorded)
        dg.write_step_record(self.path, **record_args(target_dir=os.path.join(FIXTURES, "qwen3-target"),
                                                      drafter_dir=os.path.join(FIXTURES, "qwen3-drafter-reference")))
        _, meta = td.read_safetensors(self.path)
        self.assertEqual(meta["target_config_sha256"], recorded["config_sha256"])
        self.assertEqual(meta["target_weights_fingerprint"], recorded["weights_fingerprint"])
        self.assertEqual(set(meta) & {"drafter_config_sha256", "drafter_weights_fingerprint"},
                         {"drafter_config_sha256", "drafter_weights_fingerprint"})
        with self.assertRaises(ValueError) as caught:
            dg.write_step_record(self.path, **record_args(target_dir=self.dir.name + "/missing", overwrite=True))
        self.assertIn("not a checkpoint directory", str(caught.exception))

    def test_target_layer_ids_in_the_metadata_form(self):
        dg.write_step_record(self.path, **record_args(target_layer_ids="0,2"))
        self.assertEqual(td.read_safetensors(self.path)[1]["target_layer_ids"], "0,2")
        with self.assertRaises(ValueError) as caught:
            dg.write_step_record(self.path, **record_args(target_layer_ids="0,x", overwrite=True))
        self.assertIn("target_layer_ids must be integers", str(caught.exception))

    @unittest.skipUnless(DRAFTGATE, "needs --draftgate")
    def test_draftgate_refuses_a_record_of_another_target_naming_both(self):
        dg.write_step_record(self.path, **record_args(target_dir=os.path.join(FIXTURES, "qwen35-target")))
        done = subprocess.run([DRAFTGATE, "check", "--target", os.path.join(FIXTURES, "qwen3-target"),
                               "--step-record", self.path, "--only", "loss_type"], capture_output=True, text=True)
        self.assertEqual(done.returncode, 2, done.stdout + done.stderr)
        self.assertEqual(done.stderr.count("\n"), 1, done.stderr)
        self.assertIn("this step record was made with the target of", done.stderr)
        self.assertIn("--target " + os.path.join(FIXTURES, "qwen3-target") + " is", done.stderr)


class SmallRecordTest(unittest.TestCase):
    """Records that stay small: teacher logits for every 4th position and every other anchor, written through
    teacher_positions / anchor_subset, read back and judged on what they hold."""

    def setUp(self):
        self.dir = tempfile.TemporaryDirectory()
        self.path = os.path.join(self.dir.name, "record.safetensors")

    def tearDown(self):
        self.dir.cleanup()

    def test_subsets_are_written_with_their_positions_and_the_step_s_anchor_count(self):
        args = record_args()
        dg.write_step_record(self.path, **args, teacher_positions=[1, 5, 6], anchor_subset=[1])
        tensors, metadata = td.read_safetensors(self.path)
        self.assertTrue(torch.equal(tensors["teacher_positions"], torch.tensor([1, 5, 6])))
        self.assertTrue(torch.equal(tensors["teacher_logits"], args["teacher_logits"][0][[1, 5, 6]]))
        self.assertTrue(torch.equal(tensors["anchors"], torch.tensor([9])))
        self.assertTrue(torch.equal(tensors["drafter_logits"], args["drafter_logits"][0][[1]]))
        self.assertTrue(torch.equal(tensors["labels"], args["labels"][0][[1]]))
        self.assertEqual(metadata["anchors_in_step"], "2")
        # Rows already selected are taken as they are; every position needs no teacher_positions.
        dg.write_step_record(self.path, **record_args(teacher_logits=args["teacher_logits"][0][[1, 5, 6]]),
                             teacher_positions=torch.tensor([1, 5, 6]), overwrite=True)
        self.assertTrue(torch.equal(td.read_safetensors(self.path)[0]["teacher_logits"],
                                    args["teacher_logits"][0][[1, 5, 6]]))
        dg.write_step_record(self.path, **args, teacher_positions=range(S), overwrite=True)
        self.assertNotIn("teacher_positions", td.read_safetensors(self.path)[0])

    def test_bad_subsets_are_named(self):
        for change, message in (
                (dict(teacher_positions=[3, 1]), "teacher_positions must be strictly increasing"),
                (dict(teacher_positions=[1, 1]), "teacher_positions must be strictly increasing"),
                (dict(teacher_positions=[0, S]), f"teacher_positions holds {S}, outside 0..{S - 1}"),
                (dict(teacher_positions=[]), "teacher_positions is empty"),
                (dict(teacher_positions=[0, 1], teacher_logits=torch.randn(3, V)), "teacher_logits has 3 rows"),
                (dict(teacher_positions=[0], teacher_logits=None), "teacher_positions needs teacher_logits"),
                (dict(anchor_subset=[1, 0]), "anchor_subset must be strictly increasing"),
                (dict(anchor_subset=[2]), "anchor_subset holds 2, outside 0..1")):
            with self.subTest(message), self.assertRaises(ValueError) as caught:
                dg.write_step_record(self.path, **record_args(**change))
            self.assertIn(message, str(caught.exception))

    @unittest.skipUnless(DRAFTGATE, "needs --draftgate")
    def test_the_checks_judge_the_subset_pass_the_reference_and_fail_teacher_noise(self):
        import train_and_record as tr
        checks = "target_logits_noise_free,loss_type,train_infer_consistency,fc_excludes_target_layer"
        for run, code in (("f32", 0), ("teacher-noise.f32", 1)):
            entry = tr.train_and_record("qwen3", run, self.dir.name, subset=True)[0]
            s = td.read_safetensors(entry["step_record"])[0]["input_ids"].shape[0]
            kept = len(range(0, s, tr.SUBSET_STRIDE))
            report = os.path.join(self.dir.name, run + ".json")
            done = subprocess.run([DRAFTGATE, "check", "--target", entry["target"], "--drafter", entry["drafter"],
                                   "--step-record", entry["step_record"], "--only", checks, "--report", report],
                                  capture_output=True, text=True)
            with self.subTest(run):
                self.assertEqual(done.returncode, code, done.stdout + done.stderr)
                with open(report) as f:
                    results = {r["check"]: r for r in json.load(f)["results"]}
                teacher = results["target_logits_noise_free"]
                self.assertIn(f"judged {kept} of {s} positions", teacher["message"])
                self.assertEqual(teacher["measured"]["positions_judged"], kept)
                for check in ("loss_type", "train_infer_consistency"):
                    self.assertIn(f"of {tr.ANCHORS // 2} anchors (recorded of the step's {tr.ANCHORS})",
                                  results[check]["message"])
                    self.assertEqual(results[check]["status"], "pass", results[check]["message"])
                self.assertEqual(results["fc_excludes_target_layer"]["status"], "pass")
                if code:  # the noise is found on the recorded rows, not only through the labels
                    self.assertEqual(teacher["status"], "fail")
                    self.assertIn("deviate from the target's by noise", teacher["message"])
                    self.assertGreater(teacher["measured"]["noise_ratio"], teacher["measured"]["noise_ratio_budget"])
                else:
                    self.assertEqual(teacher["status"], "pass", teacher["message"])


class ReferenceDumpTest(unittest.TestCase):
    def setUp(self):
        self.dir = tempfile.TemporaryDirectory()
        self.path = os.path.join(self.dir.name, "dump.safetensors")
        self.target = td.Target(os.path.join(FIXTURES, "qwen3-target"))
        self.tokens = torch.tensor([0, 2, 57, 11, 17, 38, 37, 15, 25, 1])
        logits, hidden_states, self.last = self.target.forward(self.tokens)
        # As transformers returns them: batch of one.
        self.logits, self.hidden_states = logits[None], tuple(h[None] for h in hidden_states)

    def tearDown(self):
        self.dir.cleanup()

    def test_tap_l_is_hidden_states_l_plus_1_and_the_final_layer_needs_its_raw_output(self):
        with self.assertRaises(ValueError) as caught:
            dg.write_reference_dump(self.path, hidden_states=self.hidden_states, logits=self.logits,
                                    tokens=self.tokens)
        self.assertIn("tap 3 is the final layer, but hidden_states[4] is after the final norm", str(caught.exception))
        dg.write_reference_dump(self.path, hidden_states=self.hidden_states, logits=self.logits, tokens=self.tokens,
                                taps=[0, 2], dtype="f32")
        tensors, meta = td.read_safetensors(self.path)
        self.assertEqual(sorted(tensors), ["hidden.0", "hidden.2", "logits"])
        self.assertTrue(torch.equal(tensors["hidden.0"], self.hidden_states[1][0]))
        self.assertTrue(torch.equal(tensors["hidden.2"], self.hidden_states[3][0]))
        self.assertEqual((meta["tokens"], meta["taps"], meta["dtype"]), ("0,2,57,11,17,38,37,15,25,1", "0,2", "f32"))
        self.assertIn("HF hidden_states[l+1]", meta["tap_convention"])
        with self.assertRaises(ValueError):
            dg.write_reference_dump(self.path, hidden_states=self.hidden_states, logits=self.logits,
                                    tokens=self.tokens[:-1], overwrite=True, final_layer_output=self.last)

    @unittest.skipUnless(DRAFTGATE, "needs --draftgate")
    def test_hidden_state_parity_passes_this_forward_and_fails_it_off_by_one(self):
        dg.write_reference_dump(self.path, hidden_states=self.hidden_states, logits=self.logits, tokens=self.tokens,
                                final_layer_output=self.last, dtype="f32", model="qwen3-target", family="qwen3")
        shifted = os.path.join(self.dir.name, "shifted.safetensors")
        # The classic mistake: tap l written from hidden_states[l].
        off_by_one = self.hidden_states[:1] + self.hidden_states[:-1]
        dg.write_reference_dump(shifted, hidden_states=off_by_one, logits=self.logits,
                                tokens=self.tokens, final_layer_output=self.last, dtype="f32")
        for path, code in ((self.path, 0), (shifted, 1)):
            done = subprocess.run([DRAFTGATE, "check", "--target", os.path.join(FIXTURES, "qwen3-target"),
                                   "--reference-dump", path, "--only", "hidden_state_parity"],
                                  capture_output=True, text=True)
            with self.subTest(path):
                self.assertEqual(done.returncode, code, done.stdout + done.stderr)


if __name__ == "__main__":
    unittest.main()
