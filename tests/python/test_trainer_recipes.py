#!/usr/bin/env python3
"""Trainer integration, tested like a user (issue 26 item 5): two pure-PyTorch mini-trainers, each following its
recipe from the trainer's source as docs/step-records.md describes it, write whole-batch step records through
python/draftgate_records.py, and draftgate judges them on the bundled qwen3 target and reference drafter.

- SpecForge (`training.strategy: dflash`): right-padded rows, anchors sampled where the anchor and the next token
  are supervised (padded anchors carried by anchor_mask), data labels, no teacher; uniform weights normalised by
  their sum, and the D-PACE variant normalised by the number of rows.
- speculators: packed rows (document_ids; each document's target and drafter forwards on their own), the
  verifier's greedy tokens as labels, D-PACE (alpha 0.5) or fixed decay gamma 4, normalised per row by its
  supervised count (mask_sum); with its input augmentation (uniform noise on fc's features, declared as
  fc_input_noise) too.

Every correct run, in float32 and bf16, passes every step-record check, and so does a SpecForge run with a
sliding drafter layer; every seeded bug (noisy or off-by-one or final-layer hidden states, shifted labels, decay
or KL where neither is configured, a wrong mask id, a sliding layer run as full, attention across packed
documents; augmentation noise undeclared, above the declared, or recorded before it was added) fails the check
named for it. The step's logits come from the reference drafter (or its weights under
a changed config) without training: the drafter the checks are given.

    /usr/bin/python3 tests/python/test_trainer_recipes.py --draftgate build/draftgate
"""
import json
import math
import os
import random
import tempfile
import unittest

from step_record_checks import CHECKS, DRAFTGATE, run_checks  # noqa: E402  (first: torch or a skip)

import torch  # noqa: E402
import torch.nn.functional as F  # noqa: E402

import tiny_dflash as td  # noqa: E402
import train_and_record as tr  # noqa: E402
import draftgate_records as dg  # noqa: E402

TARGET_DIR, DRAFTER_DIR = (os.path.join(tr.REPO, p) for p in tr.FAMILIES["qwen3"])
SPECFORGE, SPECULATORS = "specforge", "speculators"
# Noise on the captured hidden states, of their RMS: 10% is above every precision's budget for fc_input (and below
# fc_excludes_target_layer's max_nmse, so it is target_logits_noise_free's to catch, for both label sources).
HIDDEN_NOISE = 0.10
WRONG_MASK_ID = tr.SEP  # the pad token fed where the drafter's mask token belongs
DPACE_ALPHA = 0.5  # both trainers' default
SPECFORGE_NUM_ANCHORS = 10
SPECFORGE_LENGTHS = (72, 56, 16)  # the last row is short: fewer valid anchors than the width, so some are padded
SPECULATORS_DOCUMENTS = ((40, 32), (48, 24))  # each packed row's document lengths (rows of equal length)
SPECULATORS_ANCHORS = 3  # per document
# speculators' select_anchors keeps anchors up to the packed row's end and reads the loss mask on the row: a
# block near a document's end is supervised on the next document's tokens (with its weights recorded too).
CROSSING = ("blocks-cross-documents", "blocks-cross-documents-weights")
SLIDING_WINDOW = 12  # > the block size 8: SpecForge leaves the block unwindowed, equal then to inference
UNCONFIGURED_GAMMA = 7.0  # the decay of the "decay where none is configured" bug (a trainer default)
# speculators' input augmentation (train/noise_transforms.py AddUniformNoise, --noise-std 0.05 by default): fc is
# fed the captured states plus U(-0.05, +0.05). Its runs, by how many times the declared noise is added; the record
# holds the fed features with the noise declared, except: undeclared, or the clean states recorded instead.
NOISE_STD = 0.05
INPUT_NOISE = {"input-noise": 1, "input-noise-undeclared": 1, "input-noise-recorded-before": 1,
               "input-noise-over-declared": 10}


def element_ce(logits, labels):
    """[..., B] cross-entropy per block element (0 where the label is -100)."""
    ce = F.cross_entropy(logits.float().flatten(0, -2), labels.flatten(), ignore_index=-100, reduction="none")
    return ce.view(labels.shape)


def element_kl(logits, teacher_block_logits):
    """[..., B] KL(teacher ‖ drafter) per block element: the soft loss of the KL bug."""
    logq, logp = F.log_softmax(logits.float(), -1), F.log_softmax(teacher_block_logits.float(), -1)
    return (logp.exp() * (logp - logq)).sum(-1)


def supervision(input_ids, loss_mask, anchors, block_size):
    """[N, B] 0/1: k > 0, a+k inside the sequence and on the loss mask (uniform weights, gamma = inf)."""
    return td.block_weights(input_ids, loss_mask, anchors, block_size, math.inf)


def dpace_weights(ce, m, alpha):
    """D-PACE, from its definition (SpecForge dflash_family_model.py @a6b6b023 :245-275 `_dpace_weight`;
    speculators losses/utils.py @c05b95b3 :64-112 `dpace_loss_decay`): s_k = (1-α)·exp(-CE_k) + α where
    supervised (1 elsewhere), P_k = Π_{j≤k} s_j, W_k = Σ_{j≥k} P_j·m_j; weight m·W, detached."""
    s = torch.where(m > 0, (1 - alpha) * torch.exp(-ce.detach()) + alpha, torch.ones(()))
    p = s.cumprod(-1)
    return m * (p * m).flip(-1).cumsum(-1).flip(-1)


def captured(target, input_ids, taps, bug, noise=0.0):
    """(teacher logits, fc_input) of one sequence: the target's forward, the taps as fc reads them (`noise` of
    their RMS added with the noise bug)."""
    logits, hs, _ = target.forward(input_ids)
    fc_input = torch.cat([hs[l] if bug == "tap-off-by-one" else hs[l + 1] for l in taps], -1)
    if bug == "hidden-noise":
        generator = torch.Generator().manual_seed(3)
        rms = fc_input.float().pow(2).mean().sqrt()
        fc_input = (fc_input.float() + noise * rms * torch.randn(fc_input.shape, generator=generator)) \
            .to(fc_input.dtype)
    return logits, fc_input


def fed_features(fc_input, bug, generator):
    """What fc is fed: with the input-noise runs, `tensor + 2 * (rand_like(tensor) - 0.5) * std` (the noise drawn
    in the tensor's dtype, as rand_like draws it)."""
    if bug not in INPUT_NOISE:
        return fc_input
    u = torch.rand(fc_input.shape, generator=generator, dtype=fc_input.dtype)
    return fc_input + 2 * (u - 0.5) * NOISE_STD * INPUT_NOISE[bug]


def drafter_forward(target, drafter, fc_input, input_ids, anchors, bug):
    """The drafter's block logits [N, B, V] in the trainer's precision (the wrong mask id, or sliding layers run as
    full, with those bugs)."""
    mask_id, window = drafter.mask_token_id, drafter.config.get("sliding_window")
    drafter.mask_token_id = WRONG_MASK_ID if bug == "wrong-mask-id" else mask_id
    if bug == "sliding-window-dropped":  # a window no row reaches: the causal block kept, the window gone
        drafter.config["sliding_window"] = input_ids.shape[0] + drafter.block_size
    try:
        with torch.no_grad(), td.computing_in(target.precision):
            return drafter.training_logits(target, fc_input, input_ids, anchors,
                                           sliding_as_full=bug == "sliding-as-full")
    finally:
        drafter.mask_token_id = mask_id
        if window is not None:
            drafter.config["sliding_window"] = window


def specforge_anchors(loss_mask, width, generator):
    """SpecForge `OnlineDFlashModel._sample_anchor_positions` (dflash_family_model.py @0124aa92): candidates a with
    loss_mask[a] and loss_mask[a+1], `width` of them at random, sorted; a row with fewer pads with anchor 0 and
    keep 0 (`block_keep_mask`)."""
    valid = ((loss_mask[:-1] != 0) & (loss_mask[1:] != 0)).nonzero().flatten()
    chosen = valid[torch.randperm(valid.shape[0], generator=generator)[:width]].sort().values
    anchors, keep = torch.zeros(width, dtype=torch.long), torch.zeros(width, dtype=torch.long)
    anchors[:chosen.shape[0]], keep[:chosen.shape[0]] = chosen, 1
    return anchors, keep


def specforge_step(target, drafter, loss_type, bug, seed=21):
    """One SpecForge step on a right-padded batch (`OnlineDFlashModel.forward`, dflash_family_model.py @a6b6b023):
    the record's tensors and the trainer's scalar. loss_type "dflash": weights m (`loss_decay_gamma` None,
    :351-362; with the decay bug exp(-(k-1)/7)), Σℓw / Σw (:455-458); "dpace": weights m·W (:245-275), Σℓw / rows
    (:455-458)."""
    rng, generator = random.Random(seed), torch.Generator().manual_seed(seed)
    sequences = [tr.training_sequence(rng, length) for length in SPECFORGE_LENGTHS]
    r, s, b = len(sequences), max(ids.shape[0] for ids, _ in sequences), drafter.block_size
    n = SPECFORGE_NUM_ANCHORS
    taps = drafter.target_layer_ids
    t = dict(input_ids=torch.zeros(r, s, dtype=torch.long), loss_mask=torch.zeros(r, s, dtype=torch.long),
             attention_mask=torch.zeros(r, s, dtype=torch.long), anchors=torch.zeros(r, n, dtype=torch.long),
             anchor_mask=torch.zeros(r, n, dtype=torch.long), labels=torch.full((r, n, b), -100, dtype=torch.long))
    fc_rows, logit_rows, weight_rows, element_rows = [], [], [], []
    for row, (ids, mask) in enumerate(sequences):
        length = ids.shape[0]
        anchors, keep = specforge_anchors(mask, n, generator)
        _, fc_input = captured(target, ids, taps, bug, HIDDEN_NOISE)
        # Right padding after every token: the causal target and the drafter's context (< anchor) never see it,
        # so each row's own forward is the padded row's.
        logits = drafter_forward(target, drafter, fc_input, ids, anchors, bug) * keep[:, None, None]
        m = supervision(ids, mask, anchors, b) * keep[:, None]
        # Data labels: block row k of anchor a predicts input_ids[a+k] (one later with the shift bug).
        shift = 1 if bug == "shifted-labels" else 0
        at = (anchors[:, None] + torch.arange(b)[None, :] + shift).clamp(max=length - 1)
        labels = torch.where(m > 0, ids[at], torch.full_like(at, -100))
        ce = element_ce(logits, labels)
        if loss_type == "dpace":
            w = dpace_weights(ce, m, DPACE_ALPHA)
        elif bug == "decay-unconfigured":
            w = m * td.position_weights(b, UNCONFIGURED_GAMMA)
        else:
            w = m
        fc_rows.append(F.pad(fc_input, (0, 0, 0, s - length)))
        logit_rows.append(logits)
        weight_rows.append(w)
        element_rows.append(ce * w)
        t["input_ids"][row, :length], t["loss_mask"][row, :length] = ids, mask
        t["attention_mask"][row, :length] = 1
        t["anchors"][row], t["anchor_mask"][row], t["labels"][row] = anchors, keep, labels
    assert (t["anchor_mask"] == 0).any(), "the short row must pad anchors"
    t["fc_input"], t["drafter_logits"] = torch.stack(fc_rows), torch.stack(logit_rows)
    total = torch.stack(element_rows).sum()
    loss = total / (r if loss_type == "dpace" else torch.stack(weight_rows).sum())
    recipe = dict(gamma=None, labels_source="data", weighting="dpace" if loss_type == "dpace" else None,
                  dpace_alpha=DPACE_ALPHA if loss_type == "dpace" else None,
                  loss_normalization="rows" if loss_type == "dpace" else None, loss="ce")
    return t, recipe, loss.item()


def speculators_step(target, drafter, weighting, bug, seed=31):
    """One speculators step on packed rows (`src/speculators/models/dflash/core.py`): each document's verifier
    forward and drafter forward on its own (attention never crosses a document; with the boundary bug, one forward
    over the whole row), the verifier's greedy tokens as targets, D-PACE or fixed-exp-decay gamma 4 weights
    (losses/utils.py @c05b95b3 :17-112), per row Σℓw / (Σm + 1e-5), the mean over rows (:290-304)."""
    rng, generator = random.Random(seed), torch.Generator().manual_seed(seed)
    b, taps = drafter.block_size, drafter.target_layer_ids
    rows = []
    for lengths in SPECULATORS_DOCUMENTS:
        documents = []
        for i, length in enumerate(lengths):
            ids, mask = tr.training_sequence(rng, length + 24)
            ids, mask = ids[:length], mask[:length]
            if bug in CROSSING and i + 1 < len(lengths):  # text data (every token on the loss mask), and
                mask = torch.ones_like(mask)  # an anchor two tokens before the document's end
                anchors = tr.sample_anchors(mask[:-2], SPECULATORS_ANCHORS - 1, generator)
                documents.append((ids, mask, torch.cat([anchors, torch.tensor([length - 2])])))
                continue
            if bug in CROSSING:
                mask = torch.ones_like(mask)
            documents.append((ids, mask, tr.sample_anchors(mask, SPECULATORS_ANCHORS, generator)))
        rows.append(documents)
    t = {key: [] for key in ("input_ids", "loss_mask", "document_ids", "position_ids", "anchors", "fc_input",
                             "teacher_logits", "labels", "drafter_logits")}
    row_losses = []
    for documents in rows:
        starts = torch.tensor([0] + [ids.shape[0] for ids, _, _ in documents]).cumsum(0)
        ids = torch.cat([d[0] for d in documents])
        mask = torch.cat([d[1] for d in documents])
        anchors = torch.cat([d[2] + start for d, start in zip(documents, starts)])
        # Each document's own supervision: its blocks stop at its end. With the crossing bug, as speculators'
        # select_anchors and aligned loss mask do: read on the packed row, a block near a document's end is
        # supervised on the next document's first tokens.
        crossing = bug in CROSSING
        m = (supervision(ids, mask, anchors, b) if crossing else
             torch.cat([supervision(d_ids, d_mask, d_anchors, b) for d_ids, d_mask, d_anchors in documents]))
        if bug == "document-boundary":
            teacher, fc_input = captured(target, ids, taps, bug, HIDDEN_NOISE)
            logits = drafter_forward(target, drafter, fc_input, ids, anchors, bug)
        else:
            parts = [captured(target, d_ids, taps, bug, HIDDEN_NOISE) for d_ids, _, _ in documents]
            fed = [fed_features(p[1], bug, generator) for p in parts]
            teacher = torch.cat([p[0] for p in parts])
            fc_input = torch.cat([p[1] for p in parts] if bug == "input-noise-recorded-before" else fed)
            logits = torch.cat([drafter_forward(target, drafter, f, d_ids, d_anchors, bug)
                                for f, (d_ids, _, d_anchors) in zip(fed, documents)])
        # The verifier's row a+k-1 predicts a+k (row a+k with the shift bug), within the anchor's document.
        shift = 1 if bug == "shifted-labels" else 0
        at = (td.block_rows(anchors, b, shift, ids.shape[0]) if crossing else
              torch.cat([td.block_rows(d_anchors, b, shift, d_ids.shape[0]) + start
                         for (d_ids, _, d_anchors), start in zip(documents, starts)]))
        labels = torch.where(m > 0, teacher[at].argmax(-1), torch.full_like(at, -100))
        ce = element_ce(logits, labels)
        w = dpace_weights(ce, m, DPACE_ALPHA) if weighting == "dpace" else m * td.position_weights(b, 4.0)
        element = element_kl(logits, teacher[at]) if bug == "kl-as-ce" else ce
        row_losses.append((element * w).sum() / (m.sum() + 1e-5))
        document_ids = torch.cat([torch.full((d[0].shape[0],), j) for j, d in enumerate(documents)])
        for key, value in (("input_ids", ids), ("loss_mask", mask), ("document_ids", document_ids),
                           ("position_ids", torch.cat([torch.arange(d[0].shape[0]) for d in documents])),
                           ("anchors", anchors), ("fc_input", fc_input), ("teacher_logits", teacher),
                           ("labels", labels), ("drafter_logits", logits)) + (
                              (("weights", w),) if bug == "blocks-cross-documents-weights" else ()):
            t.setdefault(key, []).append(value)
    t = {key: torch.stack(value) for key, value in t.items()}
    recipe = dict(gamma=4.0 if weighting == "fixed" else None, labels_source="teacher", weighting=weighting,
                  dpace_alpha=DPACE_ALPHA if weighting == "dpace" else None, loss_normalization="mask_sum",
                  loss="ce")
    if bug in INPUT_NOISE and bug != "input-noise-undeclared":
        recipe["fc_input_noise"] = f"uniform:{NOISE_STD}"
    return t, recipe, torch.stack(row_losses).mean().item()


# (trainer, variant, bug, precision) -> the check the bug must fail (None: every check passes).
RUNS = {
    (SPECFORGE, "dflash", None, "f32"): None,
    (SPECFORGE, "dflash", None, "bf16"): None,
    (SPECFORGE, "dpace", None, "f32"): None,
    (SPECFORGE, "dpace", None, "bf16"): None,
    (SPECFORGE, "dflash", "hidden-noise", "f32"): ["target_logits_noise_free"],
    (SPECFORGE, "dflash", "hidden-noise", "bf16"): ["target_logits_noise_free"],
    (SPECFORGE, "dflash", "tap-off-by-one", "f32"): ["fc_excludes_target_layer"],
    (SPECFORGE, "dflash", "final-layer-tap", "f32"): ["fc_excludes_target_layer"],
    (SPECFORGE, "dflash", "shifted-labels", "f32"): ["target_logits_noise_free"],
    (SPECFORGE, "dflash", "decay-unconfigured", "f32"): ["loss_type"],
    (SPECFORGE, "dflash", "wrong-mask-id", "f32"): ["train_infer_consistency"],
    (SPECULATORS, "dpace", None, "f32"): None,
    (SPECULATORS, "dpace", None, "bf16"): None,
    (SPECULATORS, "fixed", None, "f32"): None,
    (SPECULATORS, "fixed", None, "bf16"): None,
    (SPECULATORS, "dpace", "hidden-noise", "f32"): ["target_logits_noise_free"],
    (SPECULATORS, "dpace", "hidden-noise", "bf16"): ["target_logits_noise_free"],
    (SPECULATORS, "dpace", "tap-off-by-one", "f32"): ["fc_excludes_target_layer"],
    (SPECULATORS, "dpace", "final-layer-tap", "f32"): ["fc_excludes_target_layer"],
    (SPECULATORS, "dpace", "shifted-labels", "f32"): ["target_logits_noise_free"],
    (SPECULATORS, "fixed", "kl-as-ce", "f32"): ["loss_type"],
    (SPECULATORS, "dpace", "wrong-mask-id", "f32"): ["train_infer_consistency"],
    (SPECULATORS, "dpace", "document-boundary", "f32"): ["target_logits_noise_free", "train_infer_consistency"],
    (SPECULATORS, "dpace", "document-boundary", "bf16"): ["target_logits_noise_free", "train_infer_consistency"],
    (SPECULATORS, "dpace", "blocks-cross-documents", "f32"): ["loss_type"],
    (SPECULATORS, "fixed", "blocks-cross-documents", "f32"): ["loss_type"],
    (SPECULATORS, "dpace", "blocks-cross-documents-weights", "f32"): ["loss_type"],
    (SPECULATORS, "dpace", "input-noise", "f32"): None,
    (SPECULATORS, "dpace", "input-noise", "bf16"): None,
    (SPECULATORS, "dpace", "input-noise-undeclared", "f32"): ["target_logits_noise_free"],
    (SPECULATORS, "dpace", "input-noise-recorded-before", "f32"): ["train_infer_consistency"],
    (SPECULATORS, "dpace", "input-noise-over-declared", "f32"): ["target_logits_noise_free"],
}


class TrainerRecipeTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        torch.set_num_threads(1)
        torch.manual_seed(0)
        cls.drafter = td.Drafter(DRAFTER_DIR)
        cls.dir = tempfile.TemporaryDirectory()

    @classmethod
    def tearDownClass(cls):
        cls.dir.cleanup()

    def drafter_with(self, name, **changes):
        """The reference drafter's weights under a config with `changes` ({key: value}, or dflash_config's taps):
        (its directory, the Drafter)."""
        config = json.loads(json.dumps(self.drafter.config))
        taps = changes.pop("target_layer_ids", None)
        if taps is not None:
            config["dflash_config"]["target_layer_ids"] = taps
        config.update(changes)
        directory = os.path.join(self.dir.name, name)
        self.drafter.save(directory, config)
        return directory, td.Drafter(directory)

    def record(self, trainer, variant, bug, precision, drafter_dir=DRAFTER_DIR, drafter=None):
        """(the step record, the drafter directory to check it with)."""
        target = tr.cached_target(TARGET_DIR, precision)
        name = f"{os.path.basename(drafter_dir)}-{trainer}-{variant}-{bug or 'correct'}-{precision}"
        drafter = drafter or self.drafter
        if bug == "final-layer-tap":  # the trainer's config names the final layer; HF's hs[L] (post-norm) is fed
            drafter_dir, drafter = self.drafter_with(
                name + "-drafter", target_layer_ids=drafter.target_layer_ids[:-1] + [target.num_layers - 1])
        step = specforge_step if trainer == SPECFORGE else speculators_step
        tensors, recipe, loss = step(target, drafter, variant, bug)
        path = os.path.join(self.dir.name, name + ".safetensors")
        dg.write_step_record(path, **tensors, **recipe, block_size=drafter.block_size,
                             mask_token_id=drafter.mask_token_id, target_layer_ids=drafter.target_layer_ids,
                             logged_loss=loss, step=0, teacher_dtype=precision if trainer == SPECULATORS else None,
                             drafter_dtype=precision, hidden_dtype=precision)
        return path, drafter_dir

    def check(self, path, drafter_dir):
        return run_checks(TARGET_DIR, drafter_dir, path)

    def judge(self, runs, **drafter):
        for (trainer, variant, bug, precision), must_fail in runs.items():
            with self.subTest(trainer=trainer, variant=variant, bug=bug, precision=precision):
                done, results = self.check(*self.record(trainer, variant, bug, precision, **drafter))
                summary = "\n".join(f"{c}: {r['status']}: {r['message']}" for c, r in results.items())
                self.assertEqual(sorted(results), sorted(CHECKS.split(",")), done.stdout + done.stderr)
                if must_fail is None:
                    self.assertEqual(done.returncode, 0, summary)
                    for check, result in results.items():
                        self.assertEqual(result["status"], "pass", f"{check}: {result['message']}")
                    continue
                self.assertEqual(done.returncode, 1, summary)
                for check in must_fail:
                    self.assertEqual(results[check]["status"], "fail", f"{check}: {results[check]['message']}")
                    if bug == "document-boundary":
                        self.assertIn("document", results[check]["message"])
                    if bug in ("sliding-window-dropped", "sliding-as-full"):
                        self.assertIn("drafter layer 0 (sliding_attention, window", results[check]["message"])
                    if bug == "sliding-as-full":
                        self.assertIn("bidirectional block", results[check]["message"])
                    if bug in CROSSING and check == "loss_type":
                        self.assertIn("supervised past the end of their anchor's sequence", results[check]["message"])
                    if bug == "wrong-mask-id":
                        self.assertIn(f"mask_token_id {self.drafter.mask_token_id}", results[check]["message"])
                    if bug == "hidden-noise":
                        self.assertIn("fc_input slice", results[check]["message"])
                    if bug in INPUT_NOISE:  # the declaration named: to add it, or that it was not met
                        self.assertIn("fc_input_noise", results[check]["message"])
                    if bug == "input-noise-over-declared":
                        self.assertIn("more noise than the trainer declares", results[check]["message"])
                if bug in ("tap-off-by-one", "final-layer-tap"):  # the target's own states, from another layer
                    noise_free = results["target_logits_noise_free"]
                    self.assertEqual(noise_free["status"], "pass", noise_free["message"])
                    self.assertIn("not noise: a tap-indexing error", noise_free["message"])

    @unittest.skipUnless(DRAFTGATE, "needs --draftgate")
    def test_specforge_recipe(self):
        self.judge({key: fail for key, fail in RUNS.items() if key[0] == SPECFORGE})

    @unittest.skipUnless(DRAFTGATE, "needs --draftgate")
    def test_specforge_sliding_layer(self):
        """A drafter whose first layer slides (window >= B, where SpecForge's mask and inference agree): the
        correct training mask passes; the layer run as a full one (SpecForge's mask without sliding_window: no
        window, bidirectional block) and the window alone dropped fail train_infer_consistency naming the layer."""
        directory, drafter = self.drafter_with("sliding-drafter", layer_types=["sliding_attention", "full_attention"],
                                               sliding_window=SLIDING_WINDOW, use_sliding_window=True)
        self.judge({(SPECFORGE, "dflash", None, "f32"): None,
                    (SPECFORGE, "dflash", "sliding-as-full", "f32"): ["train_infer_consistency"],
                    (SPECFORGE, "dflash", "sliding-window-dropped", "f32"): ["train_infer_consistency"]},
                   drafter_dir=directory, drafter=drafter)

    @unittest.skipUnless(DRAFTGATE, "needs --draftgate")
    def test_speculators_recipe(self):
        self.judge({key: fail for key, fail in RUNS.items() if key[0] == SPECULATORS})


if __name__ == "__main__":
    unittest.main()
