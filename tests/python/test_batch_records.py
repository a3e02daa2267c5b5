#!/usr/bin/env python3
"""Batch step records as trainers hold them: padded rows (right and left) and packed rows (document_ids, or
position_ids restarting at 0), written by python/draftgate_records.py from the batch tensors untrimmed and judged
by draftgate sequence by sequence. A correct batch passes every step-record check; a packed row whose target and
drafter forwards let attention cross the document boundary fails, naming the documents.

    /usr/bin/python3 tests/python/test_batch_records.py --draftgate build/draftgate
"""
import os
import random
import tempfile
import unittest

from step_record_checks import CHECKS, DRAFTGATE, run_checks  # noqa: E402  (first: torch or a skip)

import torch  # noqa: E402

import tiny_dflash as td  # noqa: E402
import train_and_record as tr  # noqa: E402
import draftgate_records as dg  # noqa: E402

ANCHORS = 6  # per sequence
LENGTHS = (96, 64, 80)  # the longest each sequence may be (training_sequence packs whole instances)


def steps(target, drafter, count, seed):
    """`count` independent sequences, each with its own correct recipe step (float32)."""
    rng, generator = random.Random(seed), torch.Generator().manual_seed(seed)
    out = []
    for length in LENGTHS[:count]:
        ids, mask = tr.training_sequence(rng, length)
        anchors = tr.sample_anchors(mask, ANCHORS, generator)
        record, _ = tr.drafter_step(target, drafter, ids, mask, anchors, None, 0)
        out.append(record)
    return out


def step_loss(parts):
    """Σ w·CE / Σ w over every block of the batch: the step's logged loss (weight_sum)."""
    return td.weighted_ce(torch.cat([p["drafter_logits"] for p in parts]), torch.cat([p["labels"] for p in parts]),
                          torch.cat([p["weights"] for p in parts])).item()


def padded(parts, left_rows=()):
    """One row per sequence, padded to the longest (on the left for `left_rows`); padded anchors masked out."""
    r, s = len(parts), max(p["input_ids"].shape[0] for p in parts)
    n = max(p["anchors"].shape[0] for p in parts)
    b, f, v = parts[0]["labels"].shape[1], parts[0]["fc_input"].shape[1], parts[0]["teacher_logits"].shape[1]
    t = dict(input_ids=torch.zeros(r, s, dtype=torch.long), loss_mask=torch.zeros(r, s, dtype=torch.long),
             attention_mask=torch.zeros(r, s, dtype=torch.long), anchors=torch.zeros(r, n, dtype=torch.long),
             anchor_mask=torch.zeros(r, n, dtype=torch.long), fc_input=torch.zeros(r, s, f),
             teacher_logits=torch.zeros(r, s, v), labels=torch.full((r, n, b), -100, dtype=torch.long),
             weights=torch.zeros(r, n, b), drafter_logits=torch.zeros(r, n, b, v))
    for row, p in enumerate(parts):
        length, anchors = p["input_ids"].shape[0], p["anchors"].shape[0]
        at = slice(s - length, s) if row in left_rows else slice(0, length)
        for key in ("input_ids", "loss_mask", "fc_input", "teacher_logits"):
            t[key][row, at] = p[key]
        t["attention_mask"][row, at] = 1
        t["anchors"][row, :anchors] = p["anchors"] + at.start
        t["anchor_mask"][row, :anchors] = 1
        for key in ("labels", "weights", "drafter_logits"):
            t[key][row, :anchors] = p[key]
    return t


def packed(parts, by="document_ids"):
    """The sequences end to end in one row; documents named by document_ids or by position_ids restarting at 0."""
    t = {key: torch.cat([p[key] for p in parts])[None] for key in
         ("input_ids", "loss_mask", "fc_input", "teacher_logits", "labels", "weights", "drafter_logits")}
    starts = torch.tensor([0] + [p["input_ids"].shape[0] for p in parts]).cumsum(0)[:-1]
    t["anchors"] = torch.cat([p["anchors"] + start for p, start in zip(parts, starts)])[None]
    if by == "document_ids":
        t["document_ids"] = torch.cat([torch.full((p["input_ids"].shape[0],), 10 + d)
                                       for d, p in enumerate(parts)])[None]
    t["position_ids"] = torch.cat([torch.arange(p["input_ids"].shape[0]) for p in parts])[None]
    return t


def packed_across_documents(target, drafter, parts):
    """The packing bug: one forward over the whole row, so target and drafter attend across documents."""
    row = packed(parts)
    ids, mask, anchors = row["input_ids"][0], row["loss_mask"][0], row["anchors"][0]
    logits, hs, _ = target.forward(ids)
    fc_input = torch.cat([hs[l + 1] for l in drafter.target_layer_ids], -1)
    b = drafter.block_size
    # Each document's own supervision (blocks stop at the document's end), as the correct trainer has it.
    weights = row["weights"][0]
    labels = torch.where(weights > 0, logits[td.block_rows(anchors, b, 0, ids.shape[0])].argmax(-1), 0)
    with td.computing_in(target.precision):
        drafter_logits = drafter.training_logits(target, fc_input, ids, anchors).detach()
    row.update(fc_input=fc_input[None], teacher_logits=logits[None], labels=labels[None],
               drafter_logits=drafter_logits[None])
    return row, td.weighted_ce(drafter_logits, labels, weights).item()


class BatchRecordTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        torch.manual_seed(0)
        family = tr.FAMILIES["qwen3"]
        cls.target_dir, cls.drafter_dir = (os.path.join(tr.REPO, p) for p in family)
        cls.target = tr.cached_target(cls.target_dir, "f32")
        cls.drafter = td.Drafter(cls.drafter_dir)
        cls.parts = steps(cls.target, cls.drafter, 3, seed=5)

    def setUp(self):
        self.dir = tempfile.TemporaryDirectory()

    def tearDown(self):
        self.dir.cleanup()

    def write(self, name, tensors, logged_loss):
        path = os.path.join(self.dir.name, name + ".safetensors")
        dg.write_step_record(path, **tensors, block_size=self.drafter.block_size, gamma=tr.GAMMA,
                             mask_token_id=self.drafter.mask_token_id, target_layer_ids=self.drafter.target_layer_ids,
                             loss="ce", logged_loss=logged_loss, teacher_dtype="f32", drafter_dtype="f32",
                             hidden_dtype="f32")
        return path

    def check(self, path):
        return run_checks(self.target_dir, self.drafter_dir, path)

    def test_the_writer_keeps_the_batch_as_given(self):
        t = padded(self.parts, left_rows=(1,))
        path = self.write("padded", t, step_loss(self.parts))
        tensors, metadata = td.read_safetensors(path)
        for key in ("input_ids", "attention_mask", "anchors", "anchor_mask", "labels"):
            self.assertTrue(torch.equal(tensors[key], t[key]), key)
        self.assertEqual(tuple(tensors["drafter_logits"].shape), tuple(t["drafter_logits"].shape))

    def test_bad_batches_are_named(self):
        t = padded(self.parts)
        gap = dict(t, attention_mask=t["attention_mask"].clone())
        gap["attention_mask"][0, 3] = 0
        for change, message in ((gap, "attention_mask row 0 is not one contiguous run"),
                                (dict(t, anchor_mask=t["anchor_mask"][:, :2]), "anchor_mask has shape"),
                                (dict(t, fc_input=t["fc_input"][:2]), "fc_input has shape"),
                                (dict(t, anchor_subset=[0]), "anchor_subset is for single-sequence records")):
            with self.subTest(message), self.assertRaises(ValueError) as caught:
                self.write("bad", change, 1.0)
            self.assertIn(message, str(caught.exception))

    @unittest.skipUnless(DRAFTGATE, "needs --draftgate")
    def test_correct_padded_and_packed_batches_pass_every_step_record_check(self):
        loss = step_loss(self.parts)
        for name, tensors, sequences in (
                ("padded-right", padded(self.parts), ["row 0", "row 1", "row 2"]),
                ("padded-left", padded(self.parts, left_rows=(0, 2)), ["row 0", "row 1", "row 2"]),
                ("packed-document-ids", packed(self.parts),
                 ["row 0, document 10", "row 0, document 11", "row 0, document 12"]),
                ("packed-position-ids", packed(self.parts, by="position_ids"),
                 ["row 0, document 0", "row 0, document 1", "row 0, document 2"])):
            done, results = self.check(self.write(name, tensors, loss))
            with self.subTest(name):
                self.assertEqual(done.returncode, 0, done.stdout + done.stderr)
                for check in CHECKS.split(","):
                    self.assertEqual(results[check]["status"], "pass", results[check]["message"])
                for check in ("target_logits_noise_free", "train_infer_consistency"):
                    judged = [s["sequence"] for s in results[check]["measured"]["sequences"]]
                    self.assertEqual(judged, sequences)

    @unittest.skipUnless(DRAFTGATE, "needs --draftgate")
    def test_a_logged_loss_of_one_row_only_fails_loss_type(self):
        done, results = self.check(self.write("one-row-loss", padded(self.parts), step_loss(self.parts[:1])))
        self.assertEqual(done.returncode, 1, done.stdout + done.stderr)
        self.assertEqual(results["loss_type"]["status"], "fail")
        self.assertEqual(results["target_logits_noise_free"]["status"], "pass")

    @unittest.skipUnless(DRAFTGATE, "needs --draftgate")
    def test_attention_across_packed_documents_fails_naming_the_documents(self):
        row, loss = packed_across_documents(self.target, self.drafter, self.parts)
        done, results = self.check(self.write("across-documents", row, loss))
        self.assertEqual(done.returncode, 1, done.stdout + done.stderr)
        for check in ("target_logits_noise_free", "train_infer_consistency"):
            result = results[check]
            self.assertEqual(result["status"], "fail", result["message"])
            statuses = {s["sequence"]: s["status"] for s in result["measured"]["sequences"]}
            # The first document sees nothing before it: only the later ones are wrong.
            self.assertEqual(statuses, {"row 0, document 10": "pass", "row 0, document 11": "fail",
                                        "row 0, document 12": "fail"}, result["message"])
            self.assertIn("2 of 3 sequences of 1 batch row fail: row 0, document 11: ", result["message"])


if __name__ == "__main__":
    unittest.main()
