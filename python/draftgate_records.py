"""Trainer-side writers for draftgate's input files; depends on torch only.

``write_step_record`` writes a training step record (schema ``draftgate.step_record/1``, see
docs/step-records.md): what a DFlash trainer fed and computed at one step, for ``draftgate check
--step-record``. ``write_reference_dump`` writes a target forward in the format of ``draftgate forward --out``,
for ``draftgate check --reference-dump`` (hidden_state_parity). Both write safetensors atomically (temporary file,
fsync, rename), through the ``safetensors`` package when it is installed and a built-in writer otherwise, and
refuse to replace an existing file unless ``overwrite=True``.

Import it from a draftgate checkout: ``PYTHONPATH=/path/to/draftgate/python`` or
``sys.path.insert(0, "/path/to/draftgate/python")``, then ``import draftgate_records``.

Example, inside a DFlash training step (batch of one sequence; tensors may be [1, ...] or unbatched)::

    import torch
    import draftgate_records as dg

    with torch.autocast("cuda", dtype=torch.bfloat16):           # the target and drafter compute in bf16
        out = target(input_ids, output_hidden_states=True)
        hs = out.hidden_states                                  # hs[0] = embeddings, tap l = hs[l + 1]
        fc_input = torch.cat([hs[l + 1] for l in taps], -1)     # exactly what enters the drafter's fc
        teacher_logits = out.logits
        drafter_logits = drafter(fc_input, input_ids, anchors)  # [1, N, B, V]
        loss = weighted_ce(drafter_logits, labels, weights)     # labels hold -100 where the weight is 0

    dg.write_step_record(
        f"records/step-{step:06d}.safetensors",
        input_ids=input_ids, loss_mask=loss_mask, anchors=anchors, fc_input=fc_input,
        teacher_logits=teacher_logits, labels=labels, drafter_logits=drafter_logits, weights=weights,
        block_size=8, gamma=4.0, mask_token_id=mask_id, target_layer_ids=taps,
        loss="ce", logged_loss=loss, step=step,
        teacher_dtype="bf16", drafter_dtype="bf16")             # autocast: say so, the outputs may be f32

    # then: draftgate check --target TARGET --drafter THE_DRAFTER_WEIGHTS_OF_THIS_STEP \\
    #           --step-record records/step-000010.safetensors

Precision keys. ``teacher_dtype`` and ``drafter_dtype`` (``f32``, ``bf16`` or ``f16``) say the precision the
trainer COMPUTED the teacher logits and the drafter logits in, which sets the budgets the checks hold them to; the
dtype a tensor is stored in does not say it (a bf16 forward cast up with ``.float()`` is stored f32). When omitted
they are inferred from bf16 or f16 tensors; from float32 tensors nothing can be inferred, so the key is written
only when ``torch.autocast`` is active at the call (its dtype) and left out otherwise. Under autocast the outputs
of some ops are float32 while the matmuls ran in bf16: autocast users must pass the keys explicitly.

Labels. PyTorch's ``ignore_index`` (-100, or any negative id) is kept as-is wherever the element's loss weight is
0 (the recorded ``weights``, or the recipe's when none are recorded); a negative label that carries weight is an
error.
"""

import hashlib
import json
import math
import os
import re
import secrets
import struct

import torch

SCHEMA = "draftgate.step_record/1"
PRECISIONS = ("f32", "bf16", "f16")
TAP_CONVENTION = "hidden.<l> = output of decoder layer l (HF hidden_states[l+1]), before the final norm"

_NAMES = {torch.float32: "F32", torch.bfloat16: "BF16", torch.int64: "I64"}
_PRECISION_OF = {torch.bfloat16: "bf16", torch.float16: "f16"}
_STORE = {"f32": torch.float32, "bf16": torch.bfloat16}
# D-PACE and SpecForge's variant loss types of it (weights P, and W / P: _dpace_weight).
_DPACE = ("dpace", "dpace-cumulative-confidence-only", "dpace-continuation-value-only")


def write_step_record(path, *, input_ids, loss_mask, anchors, fc_input, teacher_logits=None, labels=None,
                      drafter_logits=None, weights=None, block_size, gamma, mask_token_id, target_layer_ids,
                      loss, logged_loss, step=None, teacher_dtype=None, drafter_dtype=None, store_dtype=None,
                      teacher_positions=None, anchor_subset=None, target_dir=None, drafter_dir=None,
                      overwrite=False, labels_source=None, weighting=None, dpace_alpha=None,
                      loss_normalization=None, hidden_dtype=None, attention_mask=None, document_ids=None,
                      position_ids=None, anchor_mask=None, fc_input_noise=None):
    """Writes one step record; ValueError (naming the argument) on inconsistent input.

    Shapes (a leading batch dimension of 1 is dropped): input_ids, loss_mask [S]; anchors [N]; fc_input [S, F]
    with F a multiple of len(target_layer_ids); teacher_logits [S, V]; labels, weights [N, B]; drafter_logits
    [N, B, V]. At least one of teacher_logits and labels. store_dtype: None keeps each float tensor's dtype
    (float16 and float64 are stored float32), "f32" or "bf16" stores them all so; weights are always float32.
    Tensor values are written as they are (NaN included: judging them is the checks' job).

    Records that stay small (a 248k vocabulary makes every logits row about 0.5 MB in bf16):
    teacher_positions (sorted, unique sequence positions) keeps the teacher logits of those positions only,
    from teacher_logits [S, V] or already [len(teacher_positions), V]; anchor_subset (sorted, unique indices
    into anchors) keeps those anchors only, with their labels, weights and drafter_logits, and records how
    many anchors the step had (anchors_in_step). With anchor_subset, logged_loss must be the loss of the kept
    anchors: the trainer's loss function on the kept rows, e.g. ``loss_fn(drafter_logits[:, idx], ...)``.

    Batches, as the trainer holds them (no trimming): input_ids, loss_mask [R, S] with R > 1, or any of
    attention_mask [R, S] (1 on tokens, padding right or left), document_ids [R, S] (packed rows: attention
    never crosses a document), position_ids [R, S] (as given to the target; restarting at 0 marks a new document
    when there are no document_ids) and anchor_mask [R, N] (1 on kept anchors); then anchors [R, N], fc_input
    [R, S, F], teacher_logits [R, S, V] (or [R, P, V] with teacher_positions [P] for every row), labels and
    weights [R, N, B], drafter_logits [R, N, B, V], and logged_loss is the step's loss over the whole batch.

    Trainers that add noise to the captured hidden states before fc (speculators: U(-noise_std, +noise_std), its
    --noise-std 0.05 by default) record fc_input as fed, after the noise, and declare it: fc_input_noise
    "uniform:<half width>" or "gaussian:<std>" (None or "none": no noise).
    """
    block_size = _integer("block_size", block_size)
    if block_size < 2:
        raise ValueError(f"block_size must be at least 2, got {block_size}")
    if gamma is not None:
        gamma = _finite("gamma", gamma)
        if gamma <= 0:
            raise ValueError(f"gamma must be positive (None for uniform weights), got {gamma}")
    recipe = {}
    for key, value, allowed in (("labels_source", labels_source, ("teacher", "data")),
                                ("weighting", weighting, ("fixed",) + _DPACE),
                                ("loss_normalization", loss_normalization, ("weight_sum", "mask_sum", "rows"))):
        if value is not None:
            if value not in allowed:
                raise ValueError(f"{key} must be one of {', '.join(allowed)}, got {value!r}")
            recipe[key] = value
    if dpace_alpha is not None:
        if weighting not in _DPACE:
            raise ValueError('dpace_alpha needs a D-PACE weighting ("dpace" or a SpecForge variant)')
        dpace_alpha = _finite("dpace_alpha", dpace_alpha)
        if not 0 <= dpace_alpha <= 1:
            raise ValueError(f"dpace_alpha must be in [0, 1], got {dpace_alpha}")
    if weighting in _DPACE:
        recipe["dpace_alpha"] = repr(0.5 if dpace_alpha is None else dpace_alpha)
    if fc_input_noise not in (None, "none"):
        law, _, scale = str(fc_input_noise).partition(":")
        # ASCII digits only (float() also takes "1_0", spaces and other scripts' digits).
        ok = (law in ("uniform", "gaussian") and re.fullmatch(r"([0-9]+\.?[0-9]*|\.[0-9]+)([eE][+-]?[0-9]+)?", scale)
              is not None and math.isfinite(float(scale)) and float(scale) > 0)
        if not ok:
            raise ValueError('fc_input_noise must be "uniform:<half width>" or "gaussian:<std>" (a positive '
                             f'number; speculators\' default --noise-std 0.05 is "uniform:0.05"), got {fc_input_noise!r}')
        recipe["fc_input_noise"] = f"{law}:{float(scale)!r}"
    if loss not in ("ce", "kl"):
        raise ValueError(f'loss must be "ce" or "kl", got {loss!r}')
    taps = _taps(target_layer_ids)
    if not taps:
        raise ValueError("target_layer_ids is empty")
    if teacher_logits is None and labels is None and labels_source != "data":
        raise ValueError("record teacher_logits or labels (or both): what the loss was computed against "
                         '(labels_source="data": the sequence itself)')
    if teacher_positions is not None and teacher_logits is None:
        raise ValueError("teacher_positions needs teacher_logits")
    if store_dtype not in (None, "f32", "bf16"):
        raise ValueError(f'store_dtype must be None, "f32" or "bf16", got {store_dtype!r}')

    batch = {key: value for key, value in (("attention_mask", attention_mask), ("document_ids", document_ids),
                                           ("position_ids", position_ids), ("anchor_mask", anchor_mask))
             if value is not None}
    if batch or _rows(input_ids) > 1:
        if anchor_subset is not None:
            raise ValueError("anchor_subset is for single-sequence records; mark a batch's dropped anchors 0 in "
                             "anchor_mask")
        tensors = _batch_tensors(input_ids=input_ids, loss_mask=loss_mask, anchors=anchors, fc_input=fc_input,
                                 teacher_logits=teacher_logits, labels=labels, drafter_logits=drafter_logits,
                                 weights=weights, block_size=block_size, taps=taps, store_dtype=store_dtype,
                                 teacher_positions=teacher_positions, batch=batch)
        anchors_in_step = None
    else:
        tensors, anchors_in_step = _sequence_tensors(
            input_ids=input_ids, loss_mask=loss_mask, anchors=anchors, fc_input=fc_input,
            teacher_logits=teacher_logits, labels=labels, drafter_logits=drafter_logits, weights=weights,
            block_size=block_size, gamma=gamma, weighting=weighting, taps=taps, store_dtype=store_dtype,
            teacher_positions=teacher_positions, anchor_subset=anchor_subset)

    metadata = {
        "schema": SCHEMA,
        "block_size": str(block_size),
        "gamma": "none" if gamma is None else repr(gamma),
        "mask_token_id": str(_integer("mask_token_id", mask_token_id)),
        "target_layer_ids": ",".join(map(str, taps)),
        "loss": loss,
        "logged_loss": repr(_finite("logged_loss", logged_loss)),
    }
    if step is not None:
        metadata["step"] = str(_integer("step", step))
    if anchors_in_step is not None:
        metadata["anchors_in_step"] = str(anchors_in_step)
    for role, directory in (("target", target_dir), ("drafter", drafter_dir)):
        if directory is not None:
            identity = checkpoint_identity(directory)
            metadata[f"{role}_config_sha256"] = identity["config_sha256"]
            metadata[f"{role}_weights_fingerprint"] = identity["weights_fingerprint"]
    metadata.update(recipe)
    for key, claimed, tensor in (("teacher_dtype", teacher_dtype, teacher_logits),
                                 ("drafter_dtype", drafter_dtype, drafter_logits),
                                 ("hidden_dtype", hidden_dtype, fc_input)):
        precision = _precision(key, claimed, tensor)
        if precision is not None:
            metadata[key] = precision
    write_safetensors(path, tensors, metadata, overwrite=overwrite)


def _sequence_tensors(*, input_ids, loss_mask, anchors, fc_input, teacher_logits, labels, drafter_logits, weights,
                      block_size, gamma, weighting, taps, store_dtype, teacher_positions, anchor_subset):
    """The tensors of a single-sequence record, validated; and anchors_in_step (None without a subset)."""
    ids = _ints("input_ids", input_ids, 1)
    s = ids.shape[0]
    if s == 0:
        raise ValueError("input_ids is empty")
    if (ids < 0).any():
        raise ValueError(f"input_ids holds a negative token id at position {int((ids < 0).nonzero()[0])}")
    mask = _ints("loss_mask", loss_mask, 1, allow_bool=True)
    _expect_shape("loss_mask", mask, (s,))
    anchor_ids = _ints("anchors", anchors, 1)
    anchors_in_step = None
    if anchor_subset is not None:
        keep = _subset("anchor_subset", anchor_subset, anchor_ids.shape[0])
        anchors_in_step = anchor_ids.shape[0]
        anchor_ids = anchor_ids[keep]
        labels = None if labels is None else _ints("labels", labels, 2)[keep]
        weights = None if weights is None else _floats("weights", weights, 2)[keep]
        drafter_logits = None if drafter_logits is None else _floats("drafter_logits", drafter_logits, 3)[keep]
    n = anchor_ids.shape[0]
    outside = (anchor_ids < 0) | (anchor_ids >= s)
    if outside.any():
        raise ValueError(f"anchor {int(anchor_ids[outside][0])} is outside the sequence (0..{s - 1})")
    features = _floats("fc_input", fc_input, 2)
    if features.shape[0] != s or features.shape[1] % len(taps) != 0:
        raise ValueError(f"fc_input has shape {list(features.shape)}; expected [{s}, taps x hidden] for "
                         f"{len(taps)} taps")

    vocab = None
    tensors = {"input_ids": ids, "loss_mask": mask, "anchors": anchor_ids}
    if teacher_logits is not None:
        teacher = _floats("teacher_logits", teacher_logits, 2)
        if teacher_positions is not None:
            rows = _subset("teacher_positions", teacher_positions, s)
            if teacher.shape[0] == s:
                teacher = teacher[rows]
            elif teacher.shape[0] != rows.shape[0]:
                raise ValueError(f"teacher_logits has {teacher.shape[0]} rows: expected {s} (every position) or "
                                 f"{rows.shape[0]} (one per teacher_positions entry)")
            if rows.shape[0] < s:
                tensors["teacher_positions"] = rows
        elif teacher.shape[0] != s:
            raise ValueError(f"teacher_logits has {teacher.shape[0]} rows for {s} input_ids "
                             "(pass teacher_positions for a subset)")
        vocab = teacher.shape[1]
    if drafter_logits is not None:
        drafter = _floats("drafter_logits", drafter_logits, 3)
        _expect_shape("drafter_logits", drafter, (n, block_size, vocab if vocab is not None else drafter.shape[2]))
        vocab = drafter.shape[2]
    if weights is not None:
        weight = _floats("weights", weights, 2).float()
        _expect_shape("weights", weight, (n, block_size))
    else:
        # D-PACE's factor is the drafter's: the recipe's weight is then the supervision mask.
        weight = _recipe_weights(ids, mask, anchor_ids, block_size, None if weighting in _DPACE else gamma)
    if labels is not None:
        label_ids = _ints("labels", labels, 2)
        _expect_shape("labels", label_ids, (n, block_size))
        ignored_but_weighted = (label_ids < 0) & (weight != 0)
        if ignored_but_weighted.any():
            j, k = (int(i) for i in ignored_but_weighted.nonzero()[0])
            raise ValueError(f"labels[{j}, {k}] = {int(label_ids[j, k])} is negative (ignored) but carries loss "
                             f"weight {float(weight[j, k])}")
        if vocab is not None and (label_ids >= vocab).any():
            raise ValueError(f"labels hold id {int(label_ids.max())}, outside the vocabulary of {vocab}")
        tensors["labels"] = label_ids

    tensors["fc_input"] = _stored(features, store_dtype)
    if teacher_logits is not None:
        tensors["teacher_logits"] = _stored(teacher, store_dtype)
    if drafter_logits is not None:
        tensors["drafter_logits"] = _stored(drafter, store_dtype)
    if weights is not None:
        tensors["weights"] = weight

    return tensors, anchors_in_step


def _rows(value):
    t = value if isinstance(value, torch.Tensor) else torch.as_tensor(value)
    return t.shape[0] if t.dim() == 2 else 1


def _batch_tensors(*, input_ids, loss_mask, anchors, fc_input, teacher_logits, labels, drafter_logits, weights,
                   block_size, taps, store_dtype, teacher_positions, batch):
    """The tensors of a batch record as the trainer holds them ([R, S] ...), shapes and masks validated; draftgate's
    reader checks each sequence's content and names the row and document."""
    def tensor(name, value, rank, floating):
        t = value if isinstance(value, torch.Tensor) else torch.as_tensor(value)
        t = t.detach().cpu().contiguous()
        if t.dim() != rank:
            raise ValueError(f"{name} has shape {list(t.shape)}; a batch record expects rank {rank}")
        if floating != t.is_floating_point() or (t.dtype == torch.bool and name not in _MASKS):
            raise ValueError(f"{name} must be a {'floating-point' if floating else 'integer'} tensor, got {t.dtype}")
        return t if floating else t.long()

    ids = tensor("input_ids", input_ids, 2, False)
    r, s = ids.shape
    if r == 0 or s == 0:
        raise ValueError(f"input_ids has shape {list(ids.shape)}: no sequence")
    tensors = {"input_ids": ids, "loss_mask": tensor("loss_mask", loss_mask, 2, False)}
    _expect_shape("loss_mask", tensors["loss_mask"], (r, s))
    for name in ("attention_mask", "document_ids", "position_ids"):
        if name in batch:
            tensors[name] = tensor(name, batch[name], 2, False)
            _expect_shape(name, tensors[name], (r, s))
    if "attention_mask" in tensors:
        for row, mask in enumerate(tensors["attention_mask"]):
            on = mask.nonzero().flatten()
            if ((mask != 0) & (mask != 1)).any():
                raise ValueError("attention_mask holds values other than 0 and 1")
            if on.numel() and int(on[-1] - on[0] + 1) != on.numel():
                raise ValueError(f"attention_mask row {row} is not one contiguous run of tokens")
    tensors["anchors"] = tensor("anchors", anchors, 2, False)
    n = tensors["anchors"].shape[1]
    _expect_shape("anchors", tensors["anchors"], (r, n))
    if "anchor_mask" in batch:
        tensors["anchor_mask"] = tensor("anchor_mask", batch["anchor_mask"], 2, False)
        _expect_shape("anchor_mask", tensors["anchor_mask"], (r, n))
    features = tensor("fc_input", fc_input, 3, True)
    if features.shape[:2] != (r, s) or features.shape[2] % len(taps) != 0:
        raise ValueError(f"fc_input has shape {list(features.shape)}; expected [{r}, {s}, taps x hidden] for "
                         f"{len(taps)} taps")
    tensors["fc_input"] = _stored(features, store_dtype)
    if labels is not None:
        tensors["labels"] = tensor("labels", labels, 3, False)
        _expect_shape("labels", tensors["labels"], (r, n, block_size))
    if weights is not None:
        tensors["weights"] = tensor("weights", weights, 3, True).float()
        _expect_shape("weights", tensors["weights"], (r, n, block_size))
    if teacher_logits is not None:
        teacher = tensor("teacher_logits", teacher_logits, 3, True)
        if teacher_positions is not None:
            rows = _subset("teacher_positions", teacher_positions, s)
            teacher = teacher[:, rows] if teacher.shape[1] == s else teacher
            _expect_shape("teacher_logits", teacher, (r, rows.shape[0], teacher.shape[2]))
            if rows.shape[0] < s:
                tensors["teacher_positions"] = rows
        _expect_shape("teacher_logits", teacher, (r, teacher.shape[1], teacher.shape[2]))
        tensors["teacher_logits"] = _stored(teacher, store_dtype)
    if drafter_logits is not None:
        drafter = tensor("drafter_logits", drafter_logits, 4, True)
        _expect_shape("drafter_logits", drafter, (r, n, block_size, drafter.shape[3]))
        tensors["drafter_logits"] = _stored(drafter, store_dtype)
    return tensors


_MASKS = ("loss_mask", "attention_mask", "anchor_mask")


def checkpoint_identity(directory):
    """A checkpoint directory's identity as draftgate computes it (harness/src/golden/golden.cpp,
    target_identity; goldens carry it as provenance.target.identity): {"config_sha256": SHA-256 of
    config.json ("" without one), "weights_fingerprint": SHA-256 over each *.safetensors file in name order
    of its name, size, header and 16 samples of 64 KiB spread over its data}. Cheap on a 50 GB target."""
    if not os.path.isdir(directory):
        raise ValueError(f"{directory}: not a checkpoint directory")
    fingerprint = hashlib.sha256()
    samples, sample_bytes = 16, 64 << 10
    shards = sorted(name for name in os.listdir(directory)
                    if name.endswith(".safetensors") and os.path.isfile(os.path.join(directory, name)))
    for name in shards:
        size = os.path.getsize(os.path.join(directory, name))
        fingerprint.update(f"{name}\n{size}\n".encode())
        with open(os.path.join(directory, name), "rb") as f:
            header = int.from_bytes(f.read(8).ljust(8, b"\0"), "little")
            data = min(size, 8 + min(header, size))
            f.seek(0)
            fingerprint.update(f.read(data))
            span = size - data
            for k in range(samples if span > 0 else 0):
                f.seek(data + span * k // samples)
                fingerprint.update(f.read(min(sample_bytes, span)))
    config = os.path.join(directory, "config.json")
    config_sha = ""
    if os.path.isfile(config):
        with open(config, "rb") as f:
            config_sha = hashlib.sha256(f.read()).hexdigest()
    return {"config_sha256": config_sha, "weights_fingerprint": fingerprint.hexdigest()}


def write_reference_dump(path, *, hidden_states, logits, tokens, taps=None, final_layer_output=None,
                         last_is_post_norm=True, model="", family="", dtype="", device="", gdn="",
                         overwrite=False):
    """Writes a target forward in the format of ``draftgate forward --out`` (tensors ``logits`` and
    ``hidden.<l>``, float32; metadata naming the tokens, taps and their convention).

    hidden_states: an HF ``output_hidden_states`` tuple of L + 1 entries, [1, T, H] or [T, H]: entry 0 is the
    embeddings and the output of decoder layer l (tap l) is entry l + 1. In transformers the last entry is the
    final layer's output AFTER the final norm (last_is_post_norm=True, the default), so it is never written as
    tap L − 1: pass the raw output of the last decoder layer as final_layer_output (a forward hook on
    ``model.model.layers[-1]``, or ``model.model.language_model.layers[-1]`` for Qwen3.5, captures it), or leave
    L − 1 out of taps. hidden_state_parity needs every layer, which taps=None (the default) means.
    logits [1, T, V] or [T, V]; tokens: the T input ids. dtype: the precision of the forward (f32, bf16, f16;
    inferred from bf16/f16 tensors or an active autocast, else left out — pass it under autocast).
    """
    if len(hidden_states) < 2:
        raise ValueError("hidden_states must hold the embeddings and at least one layer's output")
    layers = len(hidden_states) - 1
    token_ids = _ints("tokens", tokens, 1)
    t = token_ids.shape[0]
    if t == 0 or (token_ids < 0).any():
        raise ValueError("tokens must be a non-empty list of non-negative ids")
    logit_rows = _floats("logits", logits, 2)
    if logit_rows.shape[0] != t:
        raise ValueError(f"logits have {logit_rows.shape[0]} rows for {t} tokens")
    taps = list(range(layers)) if taps is None else [_integer("taps", l) for l in taps]
    if len(set(taps)) != len(taps):
        raise ValueError(f"taps {taps} repeat a layer")
    tensors = {"logits": logit_rows.float()}
    for l in taps:
        if not 0 <= l < layers:
            raise ValueError(f"tap {l} is not a layer of this {layers}-layer model (0..{layers - 1})")
        if l == layers - 1 and last_is_post_norm:
            if final_layer_output is None:
                raise ValueError(
                    f"tap {l} is the final layer, but hidden_states[{layers}] is after the final norm (transformers' "
                    f"convention): pass the raw output of the last decoder layer as final_layer_output, or set "
                    f"last_is_post_norm=False if your tuple holds it")
            hidden = _floats("final_layer_output", final_layer_output, 2)
        else:
            hidden = _floats(f"hidden_states[{l + 1}]", hidden_states[l + 1], 2)
        if hidden.shape[0] != t:
            raise ValueError(f"the hidden state of tap {l} has {hidden.shape[0]} rows for {t} tokens")
        tensors[f"hidden.{l}"] = hidden.float()
    if not dtype:
        dtype = _precision("dtype", None, logits) or _precision("dtype", None, hidden_states[-1]) or ""
    elif dtype not in PRECISIONS:
        raise ValueError(f"dtype must be one of {', '.join(PRECISIONS)}, got {dtype!r}")
    metadata = {
        "producer": "draftgate_records.py",
        "model": str(model),
        "family": str(family),
        "device": str(device),
        "gdn": str(gdn),
        "tokens": ",".join(str(int(i)) for i in token_ids),
        "taps": ",".join(map(str, taps)),
        "tap_convention": TAP_CONVENTION,
    }
    if dtype:
        metadata["dtype"] = dtype
    write_safetensors(path, tensors, metadata, overwrite=overwrite)


def write_safetensors(path, tensors, metadata, *, overwrite=False):
    """Writes {name: tensor} (float32, bfloat16 or int64) and a string map atomically; the writer both use (e.g.
    for a drafter checkpoint's model.safetensors)."""
    path = os.fspath(path)
    if os.path.exists(path) and not overwrite:
        raise FileExistsError(f"{path} exists; pass overwrite=True to replace it")
    tensors = {name: t.detach().cpu().contiguous() for name, t in tensors.items()}
    # Beside the destination so the rename is atomic; created like any file (0666 less the umask).
    tmp = f"{path}.{os.getpid()}.{secrets.token_hex(4)}.tmp"
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o666)
    try:
        with os.fdopen(fd, "wb") as f:
            try:
                from safetensors.torch import save as encode_with_package
                f.write(encode_with_package(tensors, metadata=metadata))
            except ImportError:
                for part in _encode(tensors, metadata):
                    f.write(part)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)
    except BaseException:
        os.unlink(tmp)
        raise


def _taps(value):
    # The metadata's own form ("1,9,17", as the README's table shows it) or a sequence of ints.
    if isinstance(value, str):
        parts = [p.strip() for p in value.split(",")]
        if not all(p.lstrip("-").isdigit() for p in parts):
            raise ValueError(f'target_layer_ids must be integers ("1,9,17" or [1, 9, 17]), got {value!r}')
        return [int(p) for p in parts]
    return [_integer("target_layer_ids", t) for t in value]


def _integer(name, value):
    if isinstance(value, torch.Tensor):
        if value.numel() != 1 or value.is_floating_point():
            raise ValueError(f"{name} must be an integer, got a tensor of shape {list(value.shape)}")
        value = value.item()
    if isinstance(value, bool) or int(value) != value:
        raise ValueError(f"{name} must be an integer, got {value!r}")
    return int(value)


def _finite(name, value):
    value = float(value.detach().item() if isinstance(value, torch.Tensor) else value)
    if not math.isfinite(value):
        raise ValueError(f"{name} must be a finite number, got {value}")
    return value


def _unbatched(name, value, rank):
    t = value if isinstance(value, torch.Tensor) else torch.as_tensor(value)
    t = t.detach().cpu()
    if t.dim() == rank + 1:
        if t.shape[0] != 1:
            raise ValueError(f"{name} holds a batch of {t.shape[0]}; a record holds one sequence: pass one row")
        t = t[0]
    if t.dim() != rank:
        raise ValueError(f"{name} has shape {list(t.shape)}; expected rank {rank} (or {rank + 1} with batch 1)")
    return t.contiguous()


def _ints(name, value, rank, allow_bool=False):
    t = _unbatched(name, value, rank)
    if t.is_floating_point() or t.is_complex() or (t.dtype == torch.bool and not allow_bool):
        raise ValueError(f"{name} must be an integer tensor, got {t.dtype}")
    return t.long()


def _floats(name, value, rank):
    t = _unbatched(name, value, rank)
    if not t.is_floating_point():
        raise ValueError(f"{name} must be a floating-point tensor, got {t.dtype}")
    return t


def _subset(name, value, size):
    """Sorted, unique indices in [0, size), at least one."""
    value = value if isinstance(value, torch.Tensor) else list(value)
    if len(value) == 0:
        raise ValueError(f"{name} is empty")
    t = _ints(name, value, 1)
    if ((t < 0) | (t >= size)).any():
        raise ValueError(f"{name} holds {int(t[(t < 0) | (t >= size)][0])}, outside 0..{size - 1}")
    if t.numel() > 1 and not bool((t[1:] > t[:-1]).all()):
        raise ValueError(f"{name} must be strictly increasing (sorted, no repeats)")
    return t


def _expect_shape(name, t, shape):
    if tuple(t.shape) != tuple(shape):
        raise ValueError(f"{name} has shape {list(t.shape)}, expected {list(shape)}")


def _recipe_weights(ids, mask, anchors, block_size, gamma):
    # w_k = exp(-(k-1)/gamma) (1 when gamma is None) for k >= 1 where a+k is inside the sequence and on the loss
    # mask; 0 elsewhere.
    k = torch.arange(block_size)
    position = anchors[:, None] + k[None, :]
    inside = position < ids.shape[0]
    on_mask = torch.zeros_like(inside)
    on_mask[inside] = mask[position[inside]] != 0
    decay = (torch.ones(block_size) if gamma is None
             else torch.exp(-(k - 1).clamp(min=0).double() / gamma).float())
    return torch.where(on_mask & (k[None, :] > 0), decay.expand_as(position), torch.zeros(()))


def _stored(t, store_dtype):
    if store_dtype is not None:
        return t.to(_STORE[store_dtype])
    return t if t.dtype in (torch.float32, torch.bfloat16) else t.float()


def _precision(key, claimed, tensor):
    if claimed is not None:
        if claimed not in PRECISIONS:
            raise ValueError(f"{key} must be one of {', '.join(PRECISIONS)}, got {claimed!r}")
        return claimed
    if tensor is None:
        return None
    dtype = tensor.dtype if isinstance(tensor, torch.Tensor) else None
    if dtype in _PRECISION_OF:
        return _PRECISION_OF[dtype]
    # A float32 output under an active autocast was computed by its lower-precision matmuls.
    return _PRECISION_OF.get(_active_autocast_dtype())


def _active_autocast_dtype():
    for device in ("cuda", "cpu"):
        try:  # torch >= 2.4
            enabled, dtype = torch.is_autocast_enabled(device), torch.get_autocast_dtype(device)
        except (TypeError, AttributeError):
            enabled, dtype = ((torch.is_autocast_enabled(), torch.get_autocast_gpu_dtype()) if device == "cuda"
                              else (torch.is_autocast_cpu_enabled(), torch.get_autocast_cpu_dtype()))
        if enabled:
            return dtype
    return None


def _raw_bytes(t):
    if t.dtype == torch.bfloat16:  # numpy has no bfloat16: its 2-byte words as int16
        return t.view(torch.int16).numpy().astype("<i2").tobytes()
    return t.numpy().astype({torch.float32: "<f4", torch.int64: "<i8"}[t.dtype]).tobytes()


def _encode(tensors, metadata):
    header = {"__metadata__": metadata}
    offset = 0
    for name, t in tensors.items():
        size = t.numel() * t.element_size()
        header[name] = {"dtype": _NAMES[t.dtype], "shape": list(t.shape), "data_offsets": [offset, offset + size]}
        offset += size
    text = json.dumps(header, separators=(",", ":")).encode()
    text += b" " * (-len(text) % 8)  # the data buffer starts 8-byte aligned, as the safetensors package writes it
    return [struct.pack("<Q", len(text)), text] + [_raw_bytes(t) for t in tensors.values()]
