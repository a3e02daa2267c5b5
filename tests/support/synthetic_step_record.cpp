#include "synthetic_step_record.h"

#include "draftgate/io/checkpoint.h"
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

}  // namespace draftgate::testing
