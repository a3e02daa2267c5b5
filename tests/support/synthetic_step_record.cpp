#include "synthetic_step_record.h"

#include "draftgate/io/checkpoint.h"
#include "draftgate/io/safetensors.h"
#include "draftgate/model/dflash.h"
#include "draftgate/model/random_checkpoint.h"
#include "synthetic_layouts.h"

namespace draftgate::testing {
namespace fs = std::filesystem;
using train::BlockTargets;
using train::LossType;
using train::StepRecord;

const fs::path& training_step_models() {
  static const fs::path dir = [] {
    const auto d = fresh_dir("step_record");
    model::RandomTargetSpec t;
    t.dtype = at::kFloat;
    model::write_random_target(d / "target", t);
    model::RandomDrafterSpec dr;
    dr.dtype = at::kFloat;
    model::write_random_drafter(d / "drafter", dr);
    return d;
  }();
  return dir;
}

StepRecord training_step(LossType loss, const fs::path& dir) {
  const auto target_ckpt = io::Checkpoint::open(dir / "target");
  const auto drafter_ckpt = io::Checkpoint::open(dir / "drafter");
  const auto target = model::TargetModel::load(target_ckpt, {});
  const auto drafter = model::DFlashDrafter::load(drafter_ckpt, *target);
  StepRecord rec;
  for (int i = 0; i < 16; ++i) rec.input_ids.push_back((i * 13 + 7) % 250);
  rec.loss_mask.assign(16, 1);
  rec.loss_mask[0] = rec.loss_mask[1] = 0;  // the "prompt"
  rec.anchors = {2, 5, 9};
  rec.block_size = 8;
  rec.gamma = 4.0;
  rec.mask_token_id = drafter->config().mask_token_id;
  rec.target_layer_ids = drafter->config().target_layer_ids;
  rec.loss = loss;
  rec.teacher_dtype = rec.drafter_dtype = train::ComputePrecision::kF32;
  const auto r = target->forward(rec.input_ids, rec.target_layer_ids);
  std::vector<std::int64_t> rows(16);
  for (int i = 0; i < 16; ++i) rows[i] = i;
  rec.fc_input = drafter->features(r, rows);
  rec.teacher_logits = r.logits;
  rec.drafter_logits = drafter->training_logits(rec.fc_input, rec.input_ids, rec.anchors);
  BlockTargets targets = train::block_targets(rec.input_ids, rec.loss_mask, rec.anchors, 8, 4.0);
  // Hard labels: the target's greedy tokens (what regenerated data holds).
  targets.labels =
      train::block_teacher_logits(r.logits, rec.anchors, 8).argmax(-1) * (targets.weight > 0);
  rec.labels = targets.labels;
  rec.weights = targets.weight;
  rec.logged_loss =
      loss == LossType::kHardCrossEntropy
          ? train::weighted_cross_entropy(rec.drafter_logits.to(at::kDouble), targets)
                .item<double>()
          : train::weighted_kl(rec.drafter_logits.to(at::kDouble),
                               train::block_teacher_logits(r.logits, rec.anchors, 8), targets)
                .item<double>();
  rec.step = 3;
  return rec;
}

BatchFile write_batch(const std::string& name, const std::function<void(io::NamedTensors&)>& edit) {
  const fs::path dir = testing::fresh_dir("batch_" + name);
  const train::StepRecord rec = testing::training_step(train::LossType::kHardCrossEntropy);
  train::write_step_record(dir / "one.safetensors", rec);
  const auto one = io::SafetensorsFile::open(dir / "one.safetensors");
  const auto s = static_cast<std::int64_t>(rec.input_ids.size());
  const auto n = static_cast<std::int64_t>(rec.anchors.size());
  const std::int64_t t = 2 * s;  // the packed row's length; rows 0 and 1 pad to it
  const at::Tensor ids = at::tensor(rec.input_ids, at::kLong);
  const at::Tensor mask = at::tensor(rec.loss_mask, at::kLong);
  const at::Tensor anchors = at::tensor(rec.anchors, at::kLong);
  auto rows = [&](const at::Tensor& x, double fill) {  // [S, ...] -> [3, 2S, ...]
    std::vector<std::int64_t> shape = x.sizes().vec();
    shape[0] = t;
    shape.insert(shape.begin(), 3);
    at::Tensor out = at::full(shape, fill, x.options());
    out[0].narrow(0, 0, s).copy_(x);
    out[1].narrow(0, t - s, s).copy_(x);
    out[2].narrow(0, 0, s).copy_(x);
    out[2].narrow(0, s, s).copy_(x);
    return out;
  };
  at::Tensor attention = at::zeros({3, t}, at::kLong);
  attention[0].narrow(0, 0, s).fill_(1);
  attention[1].narrow(0, t - s, s).fill_(1);
  attention[2].fill_(1);
  at::Tensor documents = at::full({3, t}, -1, at::kLong);  // -1: padding, as speculators writes
  documents[0].narrow(0, 0, s).fill_(3);
  documents[1].narrow(0, t - s, s).fill_(5);
  documents[2].narrow(0, 0, s).fill_(7);
  documents[2].narrow(0, s, s).fill_(9);
  at::Tensor positions = at::arange(t, at::kLong).unsqueeze(0).repeat({3, 1}).contiguous();
  positions[1] -= t - s;
  positions[2].narrow(0, s, s) -= s;
  // Anchors [3, 2N]: rows 0 and 1 hold N kept and N padded; row 2 both documents' N.
  at::Tensor batch_anchors = at::zeros({3, 2 * n}, at::kLong);
  at::Tensor keep = at::zeros({3, 2 * n}, at::kLong);
  batch_anchors[0].narrow(0, 0, n).copy_(anchors);
  batch_anchors[1].narrow(0, 0, n).copy_(anchors + (t - s));
  batch_anchors[1].narrow(0, n, n).fill_(t - 1);  // padded anchors point anywhere
  batch_anchors[2].narrow(0, 0, n).copy_(anchors);
  batch_anchors[2].narrow(0, n, n).copy_(anchors + s);
  keep[0].narrow(0, 0, n).fill_(1);
  keep[1].narrow(0, 0, n).fill_(1);
  keep[2].fill_(1);
  auto per_anchor = [&](const at::Tensor& x, double fill) {  // [N, ...] -> [3, 2N, ...]
    std::vector<std::int64_t> shape = x.sizes().vec();
    shape[0] = 2 * n;
    shape.insert(shape.begin(), 3);
    at::Tensor out = at::full(shape, fill, x.options());
    for (std::int64_t r = 0; r < 3; ++r) out[r].narrow(0, 0, n).copy_(x);
    out[2].narrow(0, n, n).copy_(x);
    return out;
  };
  io::NamedTensors tensors = {{"input_ids", rows(ids, 0)},
                              {"loss_mask", rows(mask, 0)},
                              {"attention_mask", attention},
                              {"document_ids", documents},
                              {"position_ids", positions},
                              {"anchors", batch_anchors},
                              {"anchor_mask", keep},
                              {"fc_input", rows(rec.fc_input, 0)},
                              {"teacher_logits", rows(rec.teacher_logits, 0)},
                              {"labels", per_anchor(rec.labels, -100)},
                              {"weights", per_anchor(rec.weights, 0)},
                              {"drafter_logits", per_anchor(rec.drafter_logits, 0)}};
  if (edit) edit(tensors);
  // The same metadata: the step's loss over four copies of the sequence's blocks is the same mean.
  io::write_tensors(dir / (name + ".safetensors"), tensors, one->header().metadata);
  return {dir / (name + ".safetensors"), rec};
}

}  // namespace draftgate::testing
