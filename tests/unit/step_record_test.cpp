// Training step records: a real (synthetic) training step written, read back, and its logged loss
// recomputed; every malformed record rejected with a message naming the file.

#include "draftgate/train/step_record.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cmath>

#include "draftgate/io/checkpoint.h"
#include "draftgate/io/safetensors.h"
#include "draftgate/model/dflash.h"
#include "draftgate/model/random_checkpoint.h"
#include "draftgate/model/tensor_view.h"
#include "error_text.h"
#include "synthetic_layouts.h"
#include "synthetic_step_record.h"

namespace draftgate::train {
namespace {

using testing::BatchFile;
using testing::error_of;
using ::testing::HasSubstr;
using testing::write_batch;
namespace fs = std::filesystem;

TEST(StepRecord, RoundTripAndLoggedLossRecomputes) {
  for (LossType loss : {LossType::kHardCrossEntropy, LossType::kSoftKl}) {
    const StepRecord written = testing::training_step(loss);
    const fs::path path = testing::fresh_dir("records") / "step.safetensors";
    write_step_record(path, written);
    const StepRecord back = read_step_record(path);
    EXPECT_EQ(back.input_ids, written.input_ids);
    EXPECT_EQ(back.anchors, written.anchors);
    EXPECT_EQ(back.target_layer_ids, written.target_layer_ids);
    EXPECT_EQ(back.loss, loss);
    EXPECT_EQ(back.step, 3);
    EXPECT_TRUE(at::equal(back.drafter_logits, written.drafter_logits));
    BlockTargets t =
        block_targets(back.input_ids, back.loss_mask, back.anchors, back.block_size, back.gamma);
    t.labels = back.labels;
    const double recomputed =
        loss == LossType::kHardCrossEntropy
            ? weighted_cross_entropy(back.drafter_logits.to(at::kDouble), t).item<double>()
            : weighted_kl(back.drafter_logits.to(at::kDouble),
                          block_teacher_logits(back.teacher_logits, back.anchors, back.block_size),
                          t)
                  .item<double>();
    EXPECT_DOUBLE_EQ(recomputed, back.logged_loss) << loss_name(loss);
  }
}

TEST(StepRecord, IgnoreIndexLabelsWhereTheWeightIsZeroAreIgnoredAndDeclaredPrecisionsRoundTrip) {
  StepRecord written = testing::training_step(LossType::kHardCrossEntropy);
  written.labels = written.labels.masked_fill(written.weights == 0, -100);
  written.teacher_dtype = ComputePrecision::kBF16;
  written.drafter_dtype = std::nullopt;
  const fs::path path = testing::fresh_dir("ignore_index") / "step.safetensors";
  write_step_record(path, written);
  const StepRecord back = read_step_record(path);
  EXPECT_EQ(back.teacher_dtype, ComputePrecision::kBF16);
  EXPECT_EQ(back.drafter_dtype, std::nullopt);
  EXPECT_TRUE((back.labels == -100).any().item<bool>());
  const BlockTargets t = recorded_block_targets(back);
  EXPECT_TRUE((t.labels >= 0).all().item<bool>());
  EXPECT_TRUE(at::equal(t.weight, written.weights));
  EXPECT_DOUBLE_EQ(weighted_cross_entropy(back.drafter_logits.to(at::kDouble), t).item<double>(),
                   back.logged_loss);
}

// The trainer-recipe keys round-trip, written only where they differ from the defaults; gamma
// "none" is uniform.
TEST(StepRecord, TrainerRecipeKeysRoundTrip) {
  StepRecord written = testing::training_step(LossType::kHardCrossEntropy);
  const fs::path dir = testing::fresh_dir("recipe_keys");
  write_step_record(dir / "default.safetensors", written);
  const auto defaults = io::SafetensorsFile::open(dir / "default.safetensors")->header().metadata;
  for (const char* key : {"labels_source", "weighting", "dpace_alpha", "loss_normalization",
                          "hidden_dtype", "fc_input_noise"})
    EXPECT_EQ(defaults.count(key), 0u) << key;
  written.labels_source = LabelsSource::kData;
  written.weighting = Weighting::kDpace;
  written.dpace_alpha = 0.25;
  written.normalization = Normalization::kMaskSum;
  written.hidden_dtype = ComputePrecision::kBF16;
  written.fc_input_noise = FcInputNoise{FcInputNoise::Law::kUniform, 0.05};
  written.gamma = 0;
  written.weights = at::Tensor();
  write_step_record(dir / "recipe.safetensors", written);
  const auto meta = io::SafetensorsFile::open(dir / "recipe.safetensors")->header().metadata;
  EXPECT_EQ(meta.at("gamma"), "none");
  EXPECT_EQ(meta.at("labels_source"), "data");
  EXPECT_EQ(meta.at("loss_normalization"), "mask_sum");
  EXPECT_EQ(meta.at("fc_input_noise"), "uniform:0.05");
  const StepRecord back = read_step_record(dir / "recipe.safetensors");
  EXPECT_EQ(back.labels_source, LabelsSource::kData);
  EXPECT_EQ(back.weighting, Weighting::kDpace);
  EXPECT_DOUBLE_EQ(back.dpace_alpha, 0.25);
  EXPECT_EQ(back.normalization, Normalization::kMaskSum);
  EXPECT_EQ(back.hidden_dtype, ComputePrecision::kBF16);
  ASSERT_TRUE(back.fc_input_noise.has_value());
  EXPECT_EQ(back.fc_input_noise->law, FcInputNoise::Law::kUniform);
  EXPECT_DOUBLE_EQ(back.fc_input_noise->scale, 0.05);
  EXPECT_DOUBLE_EQ(back.fc_input_noise->std_dev(), 0.05 / std::sqrt(3.0));  // U(−a, a)
  EXPECT_DOUBLE_EQ((FcInputNoise{FcInputNoise::Law::kGaussian, 0.2}.std_dev()), 0.2);
  EXPECT_EQ(back.gamma, 0.0);
  // Under D-PACE the targets carry the plain supervision mask.
  const BlockTargets t = recorded_block_targets(back);
  EXPECT_TRUE(((t.weight == 0) | (t.weight == 1)).all().item<bool>());
}

TEST(StepRecord, ATeacherSubsetAndAnAnchorSubsetRoundTrip) {
  StepRecord written = testing::training_step(LossType::kHardCrossEntropy);
  written.teacher_positions = {0, 3, 8, 15};
  written.teacher_logits =
      written.teacher_logits.index_select(0, at::tensor(written.teacher_positions, at::kLong));
  written.anchors_in_step = 512;
  const fs::path path = testing::fresh_dir("teacher_subset") / "step.safetensors";
  write_step_record(path, written);
  const StepRecord back = read_step_record(path);
  EXPECT_EQ(back.teacher_positions, written.teacher_positions);
  EXPECT_TRUE(at::equal(back.teacher_logits, written.teacher_logits));
  EXPECT_EQ(back.anchors_in_step, 512);
  // Every position: no teacher_positions stored, 0…S−1 on reading.
  const fs::path whole = path.parent_path() / "whole.safetensors";
  write_step_record(whole, testing::training_step(LossType::kHardCrossEntropy));
  EXPECT_EQ(io::SafetensorsFile::open(whole)->header().find("teacher_positions"), nullptr);
  EXPECT_EQ(read_step_record(whole).teacher_positions.size(), 16u);
  EXPECT_EQ(read_step_record(whole).teacher_positions.back(), 15);
}

using RecordEdit = std::function<void(io::NamedTensors&, std::map<std::string, std::string>&)>;

// A correct training step's record rewritten to `out` with its tensors and metadata changed by
// `edit`.
void write_edited_record(const fs::path& out, const RecordEdit& edit) {
  static const fs::path good = [] {
    const fs::path p = testing::fresh_dir("good_record") / "step.safetensors";
    write_step_record(p, testing::training_step(LossType::kHardCrossEntropy));
    return p;
  }();
  io::NamedTensors tensors;
  const auto file = io::SafetensorsFile::open(good);
  for (const auto& info : file->header().tensors)
    tensors.emplace_back(info.name, io::tensor_view(file, info).clone());
  auto meta = file->header().metadata;
  edit(tensors, meta);
  io::write_tensors(out, tensors, meta);
}

// A trainer's own metadata (safetensors' "format", a run's settings) is not a typo of the format's.
TEST(StepRecord, KeepsATrainersOwnMetadataKeys) {
  const fs::path own = testing::fresh_dir("own_metadata") / "own.safetensors";
  write_edited_record(own, [](auto&, auto& meta) {
    for (const char* key : {"format", "steps", "batch_size", "lr", "seed", "run_id", "losses",
                            "target_layers", "epoch", "logged_losses"})
      meta[key] = "1";
  });
  EXPECT_EQ(read_step_record(own).block_size, 8);
}

struct BadRecord {
  std::string label;
  RecordEdit edit;
  std::string message;
};
void PrintTo(const BadRecord& c, std::ostream* os) { *os << c.label; }

class BadRecordTest : public ::testing::TestWithParam<BadRecord> {};

TEST_P(BadRecordTest, IsRejectedNamingTheFile) {
  const fs::path bad = testing::fresh_dir("bad_record_" + GetParam().label) / "step.safetensors";
  write_edited_record(bad, GetParam().edit);
  const std::string e = error_of([&] { read_step_record(bad); });
  EXPECT_THAT(e, HasSubstr(bad.string() + ": "));
  EXPECT_THAT(e, HasSubstr(GetParam().message));
}

at::Tensor& tensor_named(io::NamedTensors& t, const std::string& name) {
  for (auto& p : t)
    if (p.first == name) return p.second;
  throw std::logic_error("no tensor " + name);
}

void drop(io::NamedTensors& t, const std::string& name) {
  t.erase(std::remove_if(t.begin(), t.end(), [&](const auto& p) { return p.first == name; }),
          t.end());
}
void replace(io::NamedTensors& t, const std::string& name, const at::Tensor& value) {
  for (auto& p : t)
    if (p.first == name) p.second = value;
}

// Keeps the teacher rows of `positions` (any order: the catalogue also writes malformed ones).
void subset_teacher(io::NamedTensors& t, const std::vector<std::int64_t>& positions) {
  const at::Tensor index = at::tensor(positions, at::kLong);
  for (auto& p : t)
    if (p.first == "teacher_logits") p.second = p.second.index_select(0, index.clamp_max(15));
  t.emplace_back("teacher_positions", index);
}

INSTANTIATE_TEST_SUITE_P(
    Catalogue, BadRecordTest,
    ::testing::Values(
        BadRecord{"no_schema", [](auto&, auto& meta) { meta.erase("schema"); },
                  "missing __metadata__ \"schema\""},
        BadRecord{"other_schema",
                  [](auto&, auto& meta) { meta["schema"] = "draftgate.step_record/9"; },
                  "is not draftgate.step_record/1"},
        BadRecord{"bad_loss", [](auto&, auto& meta) { meta["loss"] = "mse"; },
                  "loss \"mse\" is neither"},
        BadRecord{"bad_logged_loss", [](auto&, auto& meta) { meta["logged_loss"] = "nan"; },
                  "is not a finite number"},
        BadRecord{"bad_taps", [](auto&, auto& meta) { meta["target_layer_ids"] = "0,x"; },
                  "not a comma-separated id list"},
        // Found by an outside tester: each was read as something else.
        BadRecord{"taps_trailing_comma",
                  [](auto&, auto& meta) { meta["target_layer_ids"] = "0,2,"; },
                  "target_layer_ids \"0,2,\" is not a comma-separated id list"},
        BadRecord{"block_size_a_float", [](auto&, auto& meta) { meta["block_size"] = "8.0"; },
                  "__metadata__ \"block_size\" = \"8.0\" must be an integer"},
        BadRecord{"block_size_beyond_int64",
                  [](auto&, auto& meta) { meta["block_size"] = "99999999999999999999"; },
                  "\"block_size\" = \"99999999999999999999\" does not fit a 64-bit integer"},
        BadRecord{"negative_step", [](auto&, auto& meta) { meta["step"] = "-3"; },
                  "step -3 is negative"},
        // A misspelt key would leave the key it meant at its default.
        BadRecord{"british_normalisation",
                  [](auto&, auto& meta) { meta["loss_normalisation"] = "rows"; },
                  "__metadata__ key \"loss_normalisation\" is not a step-record key: did you "
                  "mean \"loss_normalization\"?"},
        BadRecord{"key_in_other_case",
                  [](auto&, auto& meta) { meta["Labels-Source"] = "data"; },
                  "key \"Labels-Source\" is not a step-record key: did you mean \"labels_source\"?"},
        BadRecord{"key_one_letter_off",
                  [](auto&, auto& meta) { meta["teacher_type"] = "f32"; },
                  "did you mean \"teacher_dtype\"?"},
        BadRecord{"no_fc_input", [](auto& tensors, auto&) { drop(tensors, "fc_input"); },
                  "missing tensor \"fc_input\""},
        BadRecord{"unknown_tensor",
                  [](auto& tensors, auto&) {
                    tensors.emplace_back("cu_seqlens", at::tensor({0, 16}, at::kLong));
                  },
                  "tensor \"cu_seqlens\" is not a step-record tensor"},
        BadRecord{"no_teacher_or_labels",
                  [](auto& tensors, auto&) {
                    drop(tensors, "teacher_logits");
                    drop(tensors, "labels");
                  },
                  "neither teacher_logits nor labels"},
        BadRecord{
            "short_loss_mask",
            [](auto& tensors, auto&) { replace(tensors, "loss_mask", at::ones({15}, at::kLong)); },
            "loss_mask has 15 entries for 16 input_ids"},
        BadRecord{
            "anchor_out_of_range",
            [](auto& tensors, auto&) {
              replace(tensors, "anchors", at::tensor(std::vector<std::int64_t>{2, 40}, at::kLong));
            },
            "anchor 40 is outside the sequence (0..15)"},
        BadRecord{"labels_shape",
                  [](auto& tensors, auto&) {
                    replace(tensors, "labels", at::zeros({3, 7}, at::kLong));
                  },
                  "tensor \"labels\" has shape [3, 7], expected [3, 8]"},
        BadRecord{"float_ids",
                  [](auto& tensors, auto&) {
                    replace(tensors, "input_ids", at::zeros({16}, at::kFloat));
                  },
                  "tensor \"input_ids\" has dtype F32"},
        BadRecord{"vocab_mismatch",
                  [](auto& tensors, auto&) {
                    replace(tensors, "drafter_logits", at::zeros({3, 8, 100}, at::kFloat));
                  },
                  "drafter_logits vocabulary 100 != teacher_logits vocabulary 256"},
        // PyTorch conventions: ignore_index only where nothing is learned, ids inside the
        // vocabulary.
        BadRecord{"ignored_label_with_weight",
                  [](auto& tensors, auto&) {
                    for (auto& [name, tensor] : tensors)
                      if (name == "labels") tensor = tensor.clone().index_put_({1, 3}, -100);
                  },
                  "labels[1, 3] is negative (ignored) where the loss weight is"},
        BadRecord{"label_outside_vocabulary",
                  [](auto& tensors, auto&) {
                    for (auto& [name, tensor] : tensors)
                      if (name == "labels") tensor = tensor.clone().index_put_({0, 2}, 256);
                  },
                  "labels hold id 256, outside the logits' vocabulary of 256"},
        BadRecord{
            "all_zero_loss_mask",
            [](auto& tensors, auto&) { replace(tensors, "loss_mask", at::zeros({16}, at::kLong)); },
            "loss_mask is all zeros: no position carries a label"},
        BadRecord{"no_anchors",
                  [](auto& tensors, auto&) {
                    replace(tensors, "anchors", at::zeros({0}, at::kLong));
                    replace(tensors, "labels", at::zeros({0, 8}, at::kLong));
                    replace(tensors, "weights", at::zeros({0, 8}, at::kFloat));
                    replace(tensors, "drafter_logits", at::zeros({0, 8, 256}, at::kFloat));
                  },
                  "anchors is empty: the record holds no block to check"},
        // A teacher for a subset of positions: one sorted, unique position per row.
        BadRecord{"teacher_positions_unsorted",
                  [](auto& tensors, auto&) {
                    subset_teacher(tensors, {1, 9, 4});
                  },
                  "tensor \"teacher_positions\" must be strictly increasing (sorted, no repeats): "
                  "entry 2 is 4 after 9"},
        BadRecord{"teacher_positions_duplicate",
                  [](auto& tensors, auto&) {
                    subset_teacher(tensors, {1, 4, 4});
                  },
                  "tensor \"teacher_positions\" must be strictly increasing"},
        BadRecord{"teacher_positions_out_of_range",
                  [](auto& tensors, auto&) {
                    subset_teacher(tensors, {1, 4, 16});
                  },
                  "tensor \"teacher_positions\" holds position 16, outside the sequence (0..15)"},
        BadRecord{"teacher_positions_length",
                  [](auto& tensors, auto&) {
                    subset_teacher(tensors, {1, 4, 7});
                    replace(tensors, "teacher_positions",
                            at::tensor(std::vector<std::int64_t>{1, 4}, at::kLong));
                  },
                  "tensor \"teacher_positions\" has 2 entries for 3 teacher_logits rows"},
        BadRecord{"teacher_positions_float",
                  [](auto& tensors, auto&) {
                    subset_teacher(tensors, {1, 4, 7});
                    replace(tensors, "teacher_positions", at::zeros({3}, at::kFloat));
                  },
                  "tensor \"teacher_positions\" has dtype F32"},
        BadRecord{"teacher_subset_without_positions",
                  [](auto& tensors, auto&) {
                    subset_teacher(tensors, {1, 4, 7});
                    drop(tensors, "teacher_positions");
                  },
                  "teacher_logits has 3 rows for 16 input_ids"},
        BadRecord{"teacher_positions_without_teacher",
                  [](auto& tensors, auto&) {
                    subset_teacher(tensors, {1, 4, 7});
                    drop(tensors, "teacher_logits");
                  },
                  "tensor \"teacher_positions\" is recorded without teacher_logits"},
        BadRecord{"anchors_in_step_too_few",
                  [](auto&, auto& meta) { meta["anchors_in_step"] = "2"; },
                  "__metadata__ \"anchors_in_step\" = 2 is fewer than the 3 anchors recorded"},
        BadRecord{"unknown_precision", [](auto&, auto& meta) { meta["teacher_dtype"] = "fp8"; },
                  "__metadata__ \"teacher_dtype\" = \"fp8\" is not f32, bf16 or f16"},
        BadRecord{"negative_mask_token", [](auto&, auto& meta) { meta["mask_token_id"] = "-1"; },
                  "mask_token_id -1 is negative"},
        BadRecord{"fc_input_noise_without_scale",
                  [](auto&, auto& meta) { meta["fc_input_noise"] = "uniform"; },
                  "__metadata__ \"fc_input_noise\" = \"uniform\" is not uniform:<half width>, "
                  "gaussian:<std> (a positive number) or none"},
        BadRecord{"fc_input_noise_unknown_law",
                  [](auto&, auto& meta) { meta["fc_input_noise"] = "laplace:0.1"; },
                  "\"fc_input_noise\" = \"laplace:0.1\" is not uniform:<half width>"},
        BadRecord{"fc_input_noise_negative",
                  [](auto&, auto& meta) { meta["fc_input_noise"] = "gaussian:-0.1"; },
                  "\"fc_input_noise\" = \"gaussian:-0.1\" is not"},
        BadRecord{"fc_input_noise_with_a_space",
                  [](auto&, auto& meta) { meta["fc_input_noise"] = "uniform: 0.05"; },
                  "\"fc_input_noise\" = \"uniform: 0.05\" is not"},
        BadRecord{"fc_input_noise_trailing_text",
                  [](auto&, auto& meta) { meta["fc_input_noise"] = "uniform:0.05x"; },
                  "\"fc_input_noise\" = \"uniform:0.05x\" is not"}),
    [](const auto& p) { return p.param.label; });

TEST(StepBatch, PaddedAndPackedRowsSplitIntoTheirSequences) {
  const BatchFile b = write_batch("split");
  const StepBatch batch = read_step_batch(b.path);
  EXPECT_TRUE(batch.batched);
  EXPECT_EQ(batch.rows, 3);
  EXPECT_THAT(batch.names,
              ::testing::ElementsAre("row 0", "row 1", "row 2, document 7", "row 2, document 9"));
  EXPECT_TRUE(batch.unjudged.empty());
  for (const StepRecord& seq : batch.sequences) {
    EXPECT_EQ(seq.input_ids, b.sequence.input_ids) << seq.path;
    EXPECT_EQ(seq.anchors, b.sequence.anchors) << seq.path;
    EXPECT_TRUE(at::equal(seq.fc_input, b.sequence.fc_input)) << seq.path;
    EXPECT_TRUE(at::equal(seq.teacher_logits, b.sequence.teacher_logits)) << seq.path;
    EXPECT_TRUE(at::equal(seq.drafter_logits, b.sequence.drafter_logits)) << seq.path;
    EXPECT_TRUE(at::equal(seq.labels, b.sequence.labels)) << seq.path;
  }
  EXPECT_EQ(batch.sequences[1].path, b.path.string() + " (row 1)");
  // Joined: four copies of the sequence's blocks, rows 0, 1, 2, 2; its loss is the sequence's.
  const StepRecord& joined = batch.joined;
  const auto n = b.sequence.anchors.size();
  ASSERT_EQ(joined.anchors.size(), 4 * n);
  EXPECT_EQ(joined.row_of_anchor[0], 0);
  EXPECT_EQ(joined.row_of_anchor[3 * n], 2);
  EXPECT_EQ(joined.rows, 3);
  const BlockTargets one = recorded_block_targets(b.sequence), all = recorded_block_targets(joined);
  EXPECT_TRUE(at::equal(all.weight, one.weight.repeat({4, 1})));
  EXPECT_NEAR(weighted_cross_entropy(joined.drafter_logits.to(at::kDouble), all).item<double>(),
              b.sequence.logged_loss, 1e-6);
  // A batch record is not a single-sequence one.
  EXPECT_THAT(error_of([&] { read_step_record(b.path); }), HasSubstr("holds a batch of 3 rows"));
}

// Each gap of the joined record holds what follows its sequence in the row (row 2's document 7 is
// followed by document 9's first tokens; rows 0 and 1 by padding, which is no token): what a block
// crossing a packed document's end is supervised on (loss_type's speculators hypothesis).
TEST(StepBatch, TheJoinedRecordKeepsWhatFollowsEachPackedDocument) {
  const BatchFile b = write_batch("following");
  const StepBatch batch = read_step_batch(b.path);
  const auto s = static_cast<std::int64_t>(b.sequence.input_ids.size());
  const std::int64_t gap = b.sequence.block_size, reach = gap - 1;
  ASSERT_EQ(batch.loss_mask_past_ends.size(), batch.joined.input_ids.size());
  for (std::int64_t sequence = 0; sequence < 4; ++sequence) {
    const std::int64_t end = sequence * (s + gap) + s;  // the gap after this sequence
    for (std::int64_t i = 0; i < gap; ++i) {
      const bool follows = sequence == 2 && i < reach;  // document 9 after document 7
      const auto at = static_cast<std::size_t>(end + i);
      EXPECT_EQ(batch.joined.input_ids[at], follows ? b.sequence.input_ids[i] : 0) << sequence;
      EXPECT_EQ(batch.loss_mask_past_ends[at], follows ? b.sequence.loss_mask[i] : 0) << sequence;
      EXPECT_EQ(batch.joined.loss_mask[at], 0) << sequence;  // the recipe's: nothing past an end
    }
  }
}

TEST(StepBatch, PositionIdsRestartingMarkDocumentsWithoutDocumentIds) {
  const BatchFile b =
      write_batch("positions", [](io::NamedTensors& tensors) { drop(tensors, "document_ids"); });
  EXPECT_THAT(read_step_batch(b.path).names,
              ::testing::ElementsAre("row 0", "row 1", "row 2, document 0", "row 2, document 1"));
}

// speculators' collator (train/data.py): no attention_mask, padding zero-filled, so its positions
// are 0 and its document_ids -1: the padding is no document and its positions are not checked;
// a kept anchor there is named.
TEST(StepBatch, DocumentMinusOneIsPaddingWhosePositionsAreNotChecked) {
  auto speculators_padding = [](io::NamedTensors& tensors) {
    drop(tensors, "attention_mask");
    at::Tensor& positions = tensor_named(tensors, "position_ids");
    const std::int64_t half = positions.size(1) / 2;
    positions[0].narrow(0, half, half).fill_(0);
    positions[1].narrow(0, 0, half).fill_(0);
  };
  const BatchFile b = write_batch("speculators_padding", speculators_padding);
  const StepBatch batch = read_step_batch(b.path);
  EXPECT_THAT(batch.names,
              ::testing::ElementsAre("row 0", "row 1", "row 2, document 7", "row 2, document 9"));
  for (const StepRecord& seq : batch.sequences) EXPECT_EQ(seq.input_ids, b.sequence.input_ids);
  const BatchFile kept = write_batch("anchor_in_padding", [&](io::NamedTensors& tensors) {
    speculators_padding(tensors);
    at::Tensor& anchors = tensor_named(tensors, "anchors");
    const std::int64_t last = tensor_named(tensors, "input_ids").size(1) - 1;
    anchors[0][anchors.size(1) - 1] = last;  // row 0's padding: its second half
    tensor_named(tensors, "anchor_mask")[0][anchors.size(1) - 1] = 1;
  });
  EXPECT_THAT(error_of([&] { read_step_batch(kept.path); }),
              HasSubstr("is in row 0's padding (document_ids -1)"));
}

TEST(StepBatch, SequencesWithNothingToJudgeAreListed) {
  const BatchFile b = write_batch("unjudged", [](io::NamedTensors& t) {
    for (auto& [name, value] : t)
      if (name == "anchor_mask") value[2].narrow(0, 0, value.size(1) / 2).fill_(0);
  });
  const StepBatch batch = read_step_batch(b.path);
  EXPECT_THAT(batch.unjudged, ::testing::ElementsAre("row 2, document 7 (no kept anchor)"));
  EXPECT_EQ(batch.sequences.size(), 3u);
}

struct BadBatch {
  std::string label;
  std::function<void(io::NamedTensors&)> edit;
  std::string message;
};
void PrintTo(const BadBatch& c, std::ostream* os) { *os << c.label; }
class BadBatchTest : public ::testing::TestWithParam<BadBatch> {};

TEST_P(BadBatchTest, IsRejectedNamingTheFileAndTheRow) {
  const BatchFile b = write_batch("bad_" + GetParam().label, GetParam().edit);
  const std::string e = error_of([&] { read_step_batch(b.path); });
  EXPECT_THAT(e, HasSubstr(b.path.string()));
  EXPECT_THAT(e, HasSubstr(GetParam().message));
}

INSTANTIATE_TEST_SUITE_P(
    Catalogue, BadBatchTest,
    ::testing::Values(
        BadBatch{"padding_inside",
                 [](auto& tensors) { tensor_named(tensors, "attention_mask")[2][5] = 0; },
                 "tensor \"attention_mask\" row 2 is not one contiguous run of tokens"},
        BadBatch{"mask_values",
                 [](auto& tensors) { tensor_named(tensors, "attention_mask")[0][0] = 2; },
                 "tensor \"attention_mask\" holds values other than 0 and 1"},
        BadBatch{"loss_mask_values",
                 [](auto& tensors) { tensor_named(tensors, "loss_mask")[0][3] = 2; },
                 "tensor \"loss_mask\" holds values other than 0 and 1"},
        BadBatch{"weight_nan",
                 [](auto& tensors) { tensor_named(tensors, "weights")[1][2][3] = NAN; },
                 "tensor \"weights\" [1, 2, 3] = nan: loss weights must be finite and "
                 "non-negative"},
        BadBatch{"weight_negative",
                 [](auto& tensors) { tensor_named(tensors, "weights")[0][0][1] = -0.5; },
                 "tensor \"weights\" [0, 0, 1] = -0.5: loss weights must be finite"},
        BadBatch{"document_again",
                 [](auto& tensors) { tensor_named(tensors, "document_ids")[2][31] = 7; },
                 "document 7 starts again at position 31 after another document"},
        BadBatch{"positions_jump",
                 [](auto& tensors) { tensor_named(tensors, "position_ids")[0][4] = 9; },
                 "tensor \"position_ids\" row 0: position 4 is 9 after 3"},
        BadBatch{"kept_anchor_in_padding",
                 [](auto& tensors) {
                   tensor_named(tensors, "anchor_mask")[1].fill_(1);
                   tensor_named(tensors, "anchors")[1].narrow(0, 0, 1).fill_(0);
                 },
                 "anchors[1, 0] = 0 is outside row 1's tokens (16..31)"},
        BadBatch{"anchor_rows",
                 [](auto& tensors) {
                   tensor_named(tensors, "anchors") =
                       tensor_named(tensors, "anchors").narrow(0, 0, 2);
                 },
                 "tensor \"anchors\" has 2 rows for 3 input_ids rows"},
        BadBatch{"fc_rows",
                 [](auto& tensors) {
                   tensor_named(tensors, "fc_input") =
                       tensor_named(tensors, "fc_input").narrow(1, 0, 8);
                 },
                 "fc_input has shape"},
        BadBatch{"labels_shape",
                 [](auto& tensors) {
                   tensor_named(tensors, "labels") =
                       tensor_named(tensors, "labels").narrow(1, 0, 1);
                 },
                 "tensor \"labels\" has shape"},
        BadBatch{"sequence_content",  // a sequence's own validation names it
                 [](auto& tensors) { tensor_named(tensors, "input_ids")[1][20] = -3; },
                 "(row 1): input_ids holds a negative token id"},
        BadBatch{"nothing_kept",
                 [](auto& tensors) { tensor_named(tensors, "anchor_mask").fill_(0); },
                 "no sequence of the batch holds a kept anchor"}),
    [](const auto& p) { return p.param.label; });

TEST(StepBatch, BatchKeysInASingleSequenceRecordAreRefused) {
  const fs::path dir = testing::fresh_dir("batch_key_single");
  write_step_record(dir / "one.safetensors", testing::training_step(LossType::kHardCrossEntropy));
  const auto one = io::SafetensorsFile::open(dir / "one.safetensors");
  io::NamedTensors tensors;
  for (const auto& info : one->header().tensors)
    tensors.emplace_back(info.name, io::tensor_view(one, info).clone());
  tensors.emplace_back("attention_mask", at::ones({16}, at::kLong));
  io::write_tensors(dir / "bad.safetensors", tensors, one->header().metadata);
  EXPECT_THAT(error_of([&] { read_step_batch(dir / "bad.safetensors"); }),
              HasSubstr("tensor \"attention_mask\" belongs to a batch record"));
}

}  // namespace
}  // namespace draftgate::train
