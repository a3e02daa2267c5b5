#pragma once
// Training step records: what a trainer actually used at one step, in one safetensors file, so
// checks can validate a fix on the first steps before retraining.
//
// Tensors (batch of one sequence; S positions, N anchors, B block size, V vocabulary, F = taps ×
// target hidden):
//   input_ids       I64 [S]          the sequence
//   loss_mask       I64|U8|BOOL [S]  1 where a position may carry a label
//   anchors         I64 [N]          block anchors
//   fc_input        F32|BF16 [S, F]  the features fed to the drafter's fc (taps concatenated in
//   order) teacher_logits  F32|BF16 [S, V]  the teacher's logits per position (row p predicts token
//   p+1)   optional* labels          I64 [N, B]       the labels used (k = 0 ignored) optional*
//   drafter_logits  F32|BF16 [N, B, V] the drafter's block logits at this step optional weights F32
//   [N, B]       the per-element loss weights used                                optional
//   teacher_positions I64 [P]     the sequence positions of the teacher_logits rows (sorted,
//                                  unique); absent = every position (P = S)    optional
//   (* at least one of teacher_logits and labels, unless labels_source = data)
// __metadata__: schema = "draftgate.step_record/1", block_size, gamma, mask_token_id,
// target_layer_ids ("1,9,17"), loss ("ce" | "kl"), logged_loss (decimal), step (optional),
// teacher_dtype / drafter_dtype (optional, "f32" | "bf16" | "f16": the precision the trainer
// COMPUTED the teacher / drafter logits in — storage alone does not say).
// anchors_in_step (optional integer >= N): the step used that many anchors and the record holds N
// of them (logged_loss is then the loss over the recorded anchors).
// labels may hold negative ids (PyTorch's ignore_index -100) where the loss weight is 0.
// Trainer recipes (optional, absent = the defaults, which are what records before them meant):
//   gamma = "none" (or "null"): uniform weights (SpecForge's loss_decay_gamma default None);
//   labels_source = "teacher" (default: labels are the teacher's greedy tokens) | "data" (labels
//     are the data tokens input_ids[a+k], SpecForge; no teacher logits needed);
//   weighting = "fixed" (default: decay γ or uniform) | "dpace" (D-PACE, dpace_alpha, default
//     0.5) | "dpace-cumulative-confidence-only" | "dpace-continuation-value-only" (SpecForge's
//     D-PACE loss types of those names, recipe.h); loss_normalization = "weight_sum" (default) |
//     "mask_sum" | "rows" (recipe.h);
//   hidden_dtype = "f32" | "bf16" | "f16": the precision the target computed the captured
//     fc_input in (undeclared: judged as bf16);
//   fc_input_noise = "uniform:<half width>" | "gaussian:<std>" | "none" (default): noise the
//     trainer added to the captured states before fc (FcInputNoise); fc_input is then the
//     features as fed, after it.
// Batches (docs/step-records.md#batches): input_ids [R, S] holds R rows as the trainer batched
// them, every tensor above with a leading row dimension (anchors [R, N], labels / weights [R, N,
// B], drafter_logits [R, N, B, V], teacher_logits [R, S or P, V] with one teacher_positions [P]
// for every row), and optionally
//   attention_mask  I64|U8|BOOL [R, S]  1 on the row's tokens: one contiguous run (padding right or
//                                        left)
//   document_ids    I64 [R, S]   packed rows: each position's document (a contiguous run each;
//                                 attention never crosses one); a negative id is padding
// loss_mask holds 0s and 1s only, weights finite non-negative values (else the record is refused).
//   position_ids    I64 [R, S]   the positions the trainer gave the target: consecutive inside a
//                                 document (RoPE is relative, so any start is the same computation)
//   anchor_mask     I64|U8|BOOL [R, N]  1 on the anchors the step kept (SpecForge's keep mask)
// The reader splits a batch into its sequences (a row, or a document of a packed row), each a
// single-sequence record judged on its own.

#include <ATen/ATen.h>

#include <cstdint>
#include <filesystem>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "draftgate/train/recipe.h"

namespace draftgate::train {

inline constexpr const char* kStepRecordSchema = "draftgate.step_record/1";

// Where a record's labels come from.
enum class LabelsSource { kTeacher, kData };
const char* labels_source_name(LabelsSource source);  // "teacher" / "data"

// The precision a trainer computed a tensor in.
enum class ComputePrecision { kF32, kBF16, kF16 };
const char* precision_name(ComputePrecision precision);  // "f32", "bf16", "f16"

// An augmentation some trainers apply to the captured hidden states before fc, on an absolute
// scale: speculators' dataloader adds U(−noise_std, +noise_std) to every element (AddUniformNoise,
// --noise-std, 0.05 by default). The teacher and the labels stay clean; the drafter's logits are
// computed from the noised features.
struct FcInputNoise {
  enum class Law { kUniform, kGaussian };
  Law law = Law::kUniform;
  double scale = 0;  // the half width (uniform) or the standard deviation (gaussian)

  double std_dev() const;        // the noise's standard deviation
  std::string describe() const;  // as the metadata writes it: "uniform:0.05"
};

struct StepRecord {
  std::string path;
  std::vector<std::int64_t> input_ids;
  std::vector<std::int64_t> loss_mask;
  std::vector<std::int64_t> anchors;
  at::Tensor fc_input;        // float32 [S, F]
  at::Tensor teacher_logits;  // float32 [P, V] or undefined
  // The sequence position of each teacher_logits row: strictly increasing, inside the sequence;
  // 0…S−1 when the record holds a row per position (and stores no teacher_positions).
  std::vector<std::int64_t> teacher_positions;
  at::Tensor labels;          // int64 [N, B] or undefined
  at::Tensor drafter_logits;  // float32 [N, B, V] or undefined
  at::Tensor weights;         // float32 [N, B] or undefined
  std::int64_t block_size = 0;
  double gamma = 0;
  std::int64_t mask_token_id = 0;
  std::vector<std::int64_t> target_layer_ids;
  LossType loss = LossType::kHardCrossEntropy;
  double logged_loss = 0;
  std::optional<std::int64_t> step;
  std::optional<std::int64_t> anchors_in_step;       // the step's anchors when more than recorded
  std::map<std::string, std::string> stored_dtypes;  // tensor -> dtype as stored ("F32", "BF16")
  std::optional<ComputePrecision> teacher_dtype;     // as the trainer declared it
  std::optional<ComputePrecision> drafter_dtype;
  std::optional<ComputePrecision> hidden_dtype;  // the captured fc_input's
  std::optional<FcInputNoise> fc_input_noise;    // declared augmentation noise in fc_input
  LabelsSource labels_source = LabelsSource::kTeacher;
  Weighting weighting = Weighting::kFixed;
  double dpace_alpha = 0.5;
  Normalization normalization = Normalization::kWeightSum;
  // The batch row of each anchor (empty: one row) and the rows in the batch: the trainer's
  // per-row normalisations (Normalization) divide by them.
  std::vector<std::int64_t> row_of_anchor;
  std::int64_t rows = 1;

  // The loss recipe the record declares (loss, weighting, gamma, normalisation).
  LossRecipe recipe() const { return {loss, weighting, gamma, dpace_alpha, normalization}; }
};

// The recipe's block targets for the record, with the recorded labels where there are some: a
// negative recorded label (ignore_index) is an ignored element, weight 0. Under D-PACE the weight
// is the 0/1 supervision mask (the D-PACE factor depends on the drafter's CE: recipe_weights).
BlockTargets recorded_block_targets(const StepRecord& record);

// The recorded teacher logits of every block element, [N, B, V] (train::block_teacher_logits over
// the recorded rows), when the record holds the row of every element that carries loss;
// std::nullopt when a subset of positions leaves one out. Elements of weight 0 take any recorded
// row.
std::optional<at::Tensor> recorded_block_teacher_logits(const StepRecord& record,
                                                        const BlockTargets& targets);

// draftgate::Error naming the record and the key when input_ids holds an id outside `vocab`
// (`whose`: e.g. "the target's").
void require_ids_in_vocabulary(const StepRecord& record, std::int64_t vocab,
                               const std::string& whose);

// A record as its sequences. A single-sequence record is one sequence named "" whose `joined` is
// itself.
struct StepBatch {
  std::string path;
  bool batched = false;
  std::int64_t rows = 1;
  // Each sequence holding a kept anchor, as a single-sequence record whose path names the file and
  // the sequence ("step.safetensors (row 1, document 3)"); the names alone ("row 1, document 3").
  std::vector<StepRecord> sequences;
  std::vector<std::string> names;
  // Sequences with no kept anchor or nothing supervised: nothing of theirs can be judged.
  std::vector<std::string> unjudged;
  // Every sequence end to end, block_size unsupervised positions between them (so no block reads
  // past its own sequence), with row_of_anchor and rows: what the step's logged loss was over.
  StepRecord joined;
  // The joined loss mask with each gap holding the loss mask of the tokens that follow its
  // sequence in the batch row (the next packed document's; the gaps of joined.input_ids hold those
  // tokens): what a block crossing its sequence's end would be supervised on, as speculators'
  // anchor selection lets it. Empty when nothing follows any sequence.
  std::vector<std::int64_t> loss_mask_past_ends;
};

// Validates everything listed above; draftgate::Error naming the file and the problem (and the
// sequence, in a batch).
StepBatch read_step_batch(const std::filesystem::path& path);
// The metadata alone (what read_step_batch validates of it; no tensor read), for a plan made before
// any check runs.
StepRecord read_step_metadata(const std::filesystem::path& path);
// read_step_batch for a single-sequence record; a batch record is an Error saying so.
StepRecord read_step_record(const std::filesystem::path& path);
// Writes a record atomically (tensors stored as given; undefined optional tensors are omitted).
void write_step_record(const std::filesystem::path& path, const StepRecord& record);

}  // namespace draftgate::train
