#include "draftgate/train/step_record.h"

#include <algorithm>
#include <cctype>
#include <charconv>
#include <cmath>
#include <numeric>
#include <sstream>

#include "draftgate/edit_distance.h"
#include "draftgate/error.h"
#include "draftgate/format.h"
#include "draftgate/io/safetensors.h"
#include "draftgate/model/tensor_view.h"

namespace draftgate::train {
namespace {

class Reader {
 public:
  explicit Reader(const std::filesystem::path& path)
      : file_(io::SafetensorsFile::open(path)), name_(path.string()) {}

  const std::string& name() const { return name_; }
  const io::TensorInfo* find(const std::string& key) const { return file_->header().find(key); }

  std::string meta(const std::string& key) const {
    const auto v = optional_meta(key);
    if (!v) throw Error(name_, "missing __metadata__ \"" + key + "\"");
    return *v;
  }
  const std::map<std::string, std::string>& metadata() const { return file_->header().metadata; }
  std::optional<std::string> optional_meta(const std::string& key) const {
    const auto& m = file_->header().metadata;
    auto it = m.find(key);
    if (it == m.end()) return std::nullopt;
    return it->second;
  }
  double meta_number(const std::string& key) const {
    const std::string text = meta(key);
    std::istringstream in(text);
    double v = 0;
    if (!(in >> v) || !in.eof() || !std::isfinite(v))
      throw Error(name_, "__metadata__ \"" + key + "\" = \"" + text + "\" is not a finite number");
    return v;
  }
  // Written as an integer ("8", not "8.0" or " 8"), within int64.
  std::int64_t meta_int(const std::string& key) const {
    const std::string text = meta(key);
    std::int64_t v = 0;
    const auto [end, error] = std::from_chars(text.data(), text.data() + text.size(), v);
    if (error == std::errc::result_out_of_range)
      throw Error(name_, "__metadata__ \"" + key + "\" = \"" + text.substr(0, 40) +
                             "\" does not fit a 64-bit integer");
    if (text.empty() || error != std::errc() || end != text.data() + text.size())
      throw Error(name_, "__metadata__ \"" + key + "\" = \"" + text.substr(0, 40) +
                             "\" must be an integer");
    return v;
  }

  // Stored dtype names ("F32", "BF16", ...) of every tensor in the file.
  std::map<std::string, std::string> stored_dtypes() const {
    std::map<std::string, std::string> out;
    for (const auto& t : file_->header().tensors) out[t.name] = io::dtype_name(t.dtype);
    return out;
  }

  // The tensor `key` as `dtype`, of rank `rank`; undefined when absent and optional.
  at::Tensor tensor(const std::string& key, std::int64_t rank, at::ScalarType dtype,
                    bool required) const {
    const io::TensorInfo* info = file_->header().find(key);
    if (info == nullptr) {
      if (required) throw Error(name_, "missing tensor \"" + key + "\"");
      return {};
    }
    const at::Tensor t = io::tensor_view(file_, *info);
    if (t.dim() != rank)
      throw Error(name_, "tensor \"" + key + "\" has shape " + format_shape(t.sizes().vec()) +
                             ", expected rank " + std::to_string(rank));
    // The format's dtypes (docs/step-records.md): a float16 fc_input or teacher would be judged
    // against budgets for F32 / BF16 storage and blamed on the trainer.
    const std::string stored(io::dtype_name(info->dtype));
    const bool mask = key == "loss_mask" || key == "attention_mask" || key == "anchor_mask";
    const std::vector<std::string> allowed =
        dtype == at::kLong ? (mask ? std::vector<std::string>{"I64", "U8", "BOOL"}
                                   : std::vector<std::string>{"I64"})
        : key == "weights" ? std::vector<std::string>{"F32"}
                           : std::vector<std::string>{"F32", "BF16"};
    if (std::find(allowed.begin(), allowed.end(), stored) == allowed.end()) {
      std::string names;
      for (const auto& a : allowed) names += (names.empty() ? "" : " or ") + a;
      throw Error(name_, "tensor \"" + key + "\" has dtype " + stored + ", not " + names,
                  "store it as the format says (draftgate_records.py writes float16 and float64 "
                  "as F32, integers as I64)");
    }
    if (info->dtype == io::DType::BOOL && (t.view(at::kByte) > 1).any().item<bool>())
      throw Error(name_, "tensor \"" + key + "\" holds BOOL bytes other than 0 and 1");
    return t.to(dtype).clone();
  }

 private:
  std::shared_ptr<const io::SafetensorsFile> file_;
  std::string name_;
};

std::vector<std::int64_t> to_vector(const at::Tensor& t) {
  const at::Tensor c = t.contiguous();
  return std::vector<std::int64_t>(c.data_ptr<std::int64_t>(),
                                   c.data_ptr<std::int64_t>() + c.numel());
}

void expect_shape(const std::string& file, const char* key, const at::Tensor& t,
                  std::vector<std::int64_t> shape) {
  if (t.defined() && t.sizes().vec() != shape)
    throw Error(file, std::string("tensor \"") + key + "\" has shape " +
                          format_shape(t.sizes().vec()) + ", expected " + format_shape(shape));
}

std::optional<ComputePrecision> precision_meta(const Reader& r, const std::string& key) {
  const auto v = r.optional_meta(key);
  if (!v) return std::nullopt;  // undeclared: judged as bf16 by the checks
  for (auto p : {ComputePrecision::kF32, ComputePrecision::kBF16, ComputePrecision::kF16})
    if (*v == precision_name(p)) return p;
  throw Error(r.name(), "__metadata__ \"" + key + "\" = \"" + *v + "\" is not f32, bf16 or f16");
}

// fc_input_noise = "uniform:<half width>" | "gaussian:<std>" | "none" (absent: none).
std::optional<FcInputNoise> noise_meta(const Reader& r) {
  const auto v = r.optional_meta("fc_input_noise");
  if (!v || *v == "none") return std::nullopt;
  const auto colon = v->find(':');
  const std::string law = v->substr(0, colon);
  FcInputNoise noise;
  noise.law = law == "gaussian" ? FcInputNoise::Law::kGaussian : FcInputNoise::Law::kUniform;
  // The number exactly as written: no spaces, no sign, no hex (from_chars, general format).
  const char* first = colon == std::string::npos ? v->data() + v->size() : v->data() + colon + 1;
  const char* last = v->data() + v->size();
  const auto [end, ec] = std::from_chars(first, last, noise.scale);
  if ((law != "uniform" && law != "gaussian") || first == last || ec != std::errc() ||
      end != last || !std::isfinite(noise.scale) || noise.scale <= 0)
    throw Error(r.name(),
                "__metadata__ \"fc_input_noise\" = \"" + v->substr(0, 40) +
                    "\" is not uniform:<half width>, gaussian:<std> (a positive number) or none",
                "speculators' default --noise-std 0.05 is uniform:0.05");
  return noise;
}

// The γ of the fixed position weights; D-PACE's factor is the drafter's, so its targets carry the
// plain supervision mask.
double fixed_gamma(const StepRecord& rec) {
  return rec.weighting == Weighting::kFixed ? rec.gamma : 0.0;
}

// One of `names` (the first is the default when the key is absent), as its index.
std::size_t choice_meta(const Reader& r, const std::string& key,
                        const std::vector<std::string>& names) {
  const auto v = r.optional_meta(key);
  if (!v) return 0;
  for (std::size_t i = 0; i < names.size(); ++i)
    if (*v == names[i]) return i;
  std::string all;
  for (const auto& n : names) all += (all.empty() ? "" : " | ") + n;
  throw Error(r.name(),
              "__metadata__ \"" + key + "\" = \"" + v->substr(0, 40) + "\" is not one of " + all);
}

// Labels are ids inside the vocabulary where they carry weight; elsewhere negative (ignored) ids
// are PyTorch's convention.
void check_labels(const std::string& f, const StepRecord& rec) {
  const BlockTargets recipe =
      block_targets(rec.input_ids, rec.loss_mask, rec.anchors, rec.block_size, fixed_gamma(rec));
  if (!rec.labels.defined()) {
    if (!(recipe.weight > 0).any().item<bool>())
      throw Error(f, "no block element carries a label (loss_mask and anchors leave nothing)",
                  "record a step whose loss is defined");
    return;
  }
  const at::Tensor weight = rec.weights.defined() ? rec.weights : recipe.weight;
  const at::Tensor ignored_but_weighted = (rec.labels < 0) & (weight > 0);
  if (ignored_but_weighted.any().item<bool>()) {
    const at::Tensor at = ignored_but_weighted.nonzero()[0];
    throw Error(f, "labels[" + std::to_string(at[0].item<std::int64_t>()) + ", " +
                       std::to_string(at[1].item<std::int64_t>()) + "] is negative (ignored) " +
                       "where the loss weight is " +
                       format_number(weight[at[0]][at[1]].item<double>()));
  }
  if (!((rec.labels >= 0) & (weight > 0)).any().item<bool>())
    throw Error(f, "no block element carries a label (every label is ignored or weighted 0)",
                "record a step whose loss is defined");
  std::optional<std::int64_t> vocab;
  if (rec.teacher_logits.defined()) vocab = rec.teacher_logits.size(1);
  if (rec.drafter_logits.defined()) vocab = rec.drafter_logits.size(2);
  if (vocab && (rec.labels >= *vocab).any().item<bool>())
    throw Error(f, "labels hold id " + std::to_string(rec.labels.max().item<std::int64_t>()) +
                       ", outside the logits' vocabulary of " + std::to_string(*vocab));
}

// teacher_positions: one per teacher_logits row, strictly increasing, inside the sequence.
void check_teacher_positions(const std::string& f, const std::vector<std::int64_t>& positions,
                             std::int64_t rows, std::int64_t s) {
  const std::string key = "tensor \"teacher_positions\" ";
  if (static_cast<std::int64_t>(positions.size()) != rows)
    throw Error(f, key + "has " + std::to_string(positions.size()) + " entries for " +
                       std::to_string(rows) + " teacher_logits rows");
  if (positions.empty()) throw Error(f, key + "is empty: the record holds no teacher row");
  for (std::size_t i = 0; i < positions.size(); ++i) {
    if (positions[i] < 0 || positions[i] >= s)
      throw Error(f, key + "holds position " + std::to_string(positions[i]) +
                         ", outside the sequence (0.." + std::to_string(s - 1) + ")");
    if (i > 0 && positions[i] <= positions[i - 1])
      throw Error(f, key + "must be strictly increasing (sorted, no repeats): entry " +
                         std::to_string(i) + " is " + std::to_string(positions[i]) + " after " +
                         std::to_string(positions[i - 1]));
  }
}

}  // namespace

const char* labels_source_name(LabelsSource source) {
  return source == LabelsSource::kData ? "data" : "teacher";
}

double FcInputNoise::std_dev() const {
  return law == Law::kUniform ? scale / std::sqrt(3.0) : scale;
}

std::string FcInputNoise::describe() const {
  char digits[32];  // the shortest decimal that reads back as `scale` ("0.05", as Python's repr)
  const auto end = std::to_chars(digits, digits + sizeof digits, scale).ptr;
  return (law == Law::kUniform ? "uniform:" : "gaussian:") + std::string(digits, end);
}

const char* precision_name(ComputePrecision precision) {
  switch (precision) {
    case ComputePrecision::kF32:
      return "f32";
    case ComputePrecision::kBF16:
      return "bf16";
    case ComputePrecision::kF16:
      return "f16";
  }
  return "f32";
}

std::optional<at::Tensor> recorded_block_teacher_logits(const StepRecord& rec,
                                                        const BlockTargets& targets) {
  const auto s = static_cast<std::int64_t>(rec.input_ids.size());
  std::vector<std::int64_t> row_of(s, -1);  // position -> teacher_logits row
  for (std::size_t i = 0; i < rec.teacher_positions.size(); ++i)
    row_of[rec.teacher_positions[i]] = static_cast<std::int64_t>(i);
  const at::Tensor weight = targets.weight.contiguous();
  const float* w = weight.data_ptr<float>();
  std::vector<std::int64_t> rows;
  for (std::size_t j = 0; j < rec.anchors.size(); ++j)
    for (std::int64_t k = 0; k < rec.block_size; ++k) {
      // The row train::block_teacher_logits reads for this element.
      const std::int64_t row =
          row_of[std::min(s - 1, rec.anchors[j] + std::max<std::int64_t>(k - 1, 0))];
      if (row < 0 && w[j * rec.block_size + k] > 0) return std::nullopt;
      rows.push_back(std::max<std::int64_t>(row, 0));
    }
  return rec.teacher_logits.index_select(0, at::tensor(rows, at::kLong))
      .view({static_cast<std::int64_t>(rec.anchors.size()), rec.block_size,
             rec.teacher_logits.size(1)});
}

void require_ids_in_vocabulary(const StepRecord& rec, std::int64_t vocab,
                               const std::string& whose) {
  for (std::size_t p = 0; p < rec.input_ids.size(); ++p)
    if (rec.input_ids[p] >= vocab)
      throw Error(rec.path,
                  "tensor \"input_ids\" holds id " + std::to_string(rec.input_ids[p]) +
                      " at position " + std::to_string(p) + ", outside " + whose +
                      " vocabulary of " + std::to_string(vocab),
                  "record the token ids the trainer fed the target");
}

BlockTargets recorded_block_targets(const StepRecord& rec) {
  BlockTargets t =
      block_targets(rec.input_ids, rec.loss_mask, rec.anchors, rec.block_size, fixed_gamma(rec));
  if (rec.labels.defined()) {
    const at::Tensor ignored = rec.labels < 0;
    t.labels = rec.labels.masked_fill(ignored, 0);
    t.weight = t.weight.masked_fill(ignored, 0);
  }
  return t;
}

namespace {

// Every __metadata__ key the format reads (docs/step-records.md). Other keys are a trainer's own
// (safetensors' "format", a run id) and stay allowed; one a typo away from these is refused, as its
// misspelling would silently leave the key at its default ("loss_normalisation").
constexpr const char* kMetadataKeys[] = {"schema",
                                         "block_size",
                                         "gamma",
                                         "mask_token_id",
                                         "target_layer_ids",
                                         "loss",
                                         "logged_loss",
                                         "step",
                                         "anchors_in_step",
                                         "teacher_dtype",
                                         "drafter_dtype",
                                         "hidden_dtype",
                                         "fc_input_noise",
                                         "labels_source",
                                         "weighting",
                                         "dpace_alpha",
                                         "loss_normalization",
                                         "target_config_sha256",
                                         "target_weights_fingerprint",
                                         "drafter_config_sha256",
                                         "drafter_weights_fingerprint"};

// The format's key that `key` is most likely a typo of (folded case and '-', or a letter or two
// away; a key that extends one, "steps", is a key of its own), or "".
std::string misspelt_key_of(const std::string& key) {
  std::string folded = key;
  for (char& c : folded) c = c == '-' ? '_' : static_cast<char>(std::tolower(c));
  const std::size_t allowed = folded.size() >= 8 ? 2 : folded.size() >= 5 ? 1 : 0;
  for (const char* known : kMetadataKeys)
    if (folded == known || (folded.rfind(known, 0) != 0 && edit_distance(folded, known) <= allowed))
      return known;
  return "";
}

void refuse_misspelt_metadata(const Reader& r) {
  for (const auto& [key, value] : r.metadata()) {
    if (std::find(std::begin(kMetadataKeys), std::end(kMetadataKeys), key) !=
        std::end(kMetadataKeys))
      continue;
    const std::string near = misspelt_key_of(key);
    if (!near.empty())
      throw Error(r.name(),
                  "__metadata__ key \"" + key.substr(0, 64) +
                      "\" is not a step-record key: did you mean \"" + near + "\"?",
                  "rename it; as written it is ignored and \"" + near + "\" keeps its default");
  }
}

// The metadata every sequence of a record shares: everything but the tensors.
StepRecord read_metadata(const Reader& r) {
  const std::string& f = r.name();
  refuse_misspelt_metadata(r);
  if (r.meta("schema") != kStepRecordSchema)
    throw Error(f, "schema \"" + r.meta("schema") + "\" is not " + kStepRecordSchema);
  StepRecord rec;
  rec.path = f;
  rec.block_size = r.meta_int("block_size");
  // "none" / "null": uniform weights, stored as γ 0 (train::position_weights).
  const std::string gamma = r.meta("gamma");
  rec.gamma = gamma == "none" || gamma == "null" ? 0.0 : r.meta_number("gamma");
  rec.mask_token_id = r.meta_int("mask_token_id");
  rec.logged_loss = r.meta_number("logged_loss");
  if (rec.block_size < 2) throw Error(f, "block_size must be at least 2");
  if (rec.gamma <= 0 && gamma != "none" && gamma != "null")
    throw Error(f, "gamma must be positive, or \"none\" for uniform weights");
  if (rec.mask_token_id < 0)
    throw Error(f, "mask_token_id " + std::to_string(rec.mask_token_id) + " is negative");
  const std::string loss = r.meta("loss");
  if (loss != "ce" && loss != "kl")
    throw Error(f, "loss \"" + loss + "\" is neither \"ce\" nor \"kl\"");
  rec.loss = loss == "ce" ? LossType::kHardCrossEntropy : LossType::kSoftKl;
  const auto taps = parse_ids(r.meta("target_layer_ids"));
  if (!taps)
    throw Error(f, "target_layer_ids \"" + r.meta("target_layer_ids") +
                       "\" is not a comma-separated id list");
  rec.target_layer_ids = *taps;
  if (rec.target_layer_ids.empty()) throw Error(f, "target_layer_ids is empty");
  if (r.optional_meta("step")) rec.step = r.meta_int("step");
  if (rec.step && *rec.step < 0)
    throw Error(f, "step " + std::to_string(*rec.step) + " is negative");
  rec.teacher_dtype = precision_meta(r, "teacher_dtype");
  rec.drafter_dtype = precision_meta(r, "drafter_dtype");
  rec.hidden_dtype = precision_meta(r, "hidden_dtype");
  rec.fc_input_noise = noise_meta(r);
  rec.labels_source = choice_meta(r, "labels_source", {"teacher", "data"}) ? LabelsSource::kData
                                                                           : LabelsSource::kTeacher;
  rec.weighting = static_cast<Weighting>(choice_meta(
      r, "weighting",
      {"fixed", "dpace", "dpace-cumulative-confidence-only", "dpace-continuation-value-only"}));
  rec.normalization = static_cast<Normalization>(
      choice_meta(r, "loss_normalization", {"weight_sum", "mask_sum", "rows"}));
  if (r.optional_meta("dpace_alpha")) {
    if (!is_dpace(rec.weighting))
      throw Error(f, "__metadata__ \"dpace_alpha\" is recorded but weighting is not D-PACE");
    rec.dpace_alpha = r.meta_number("dpace_alpha");
    if (rec.dpace_alpha < 0 || rec.dpace_alpha > 1)
      throw Error(f, "__metadata__ \"dpace_alpha\" = " + format_number(rec.dpace_alpha) +
                         " is outside [0, 1]");
  }
  rec.stored_dtypes = r.stored_dtypes();
  return rec;
}

// Checks one sequence's tensors against each other and the metadata; errors name rec.path.
// `teacher_positions`: the listed teacher rows' positions, undefined for a row per position.
void validate_sequence(StepRecord& rec, const at::Tensor& teacher_positions) {
  const std::string& f = rec.path;
  // Data labels are input_ids[a+k]: the sequence is what the loss was computed against.
  if (!rec.teacher_logits.defined() && !rec.labels.defined() &&
      rec.labels_source == LabelsSource::kTeacher)
    throw Error(f, "neither teacher_logits nor labels is recorded",
                "record what the loss was computed against");
  const auto s = static_cast<std::int64_t>(rec.input_ids.size());
  const auto n = static_cast<std::int64_t>(rec.anchors.size()), b = rec.block_size;
  if (s == 0) throw Error(f, "input_ids is empty: the record holds no sequence");
  if (n == 0) throw Error(f, "anchors is empty: the record holds no block to check");
  const std::int64_t vocab = rec.teacher_logits.defined()   ? rec.teacher_logits.size(1)
                             : rec.drafter_logits.defined() ? rec.drafter_logits.size(2)
                                                            : -1;
  if (vocab >= 0) require_ids_in_vocabulary(rec, vocab, "the recorded logits'");
  if (vocab >= 0 && rec.mask_token_id >= vocab)
    throw Error(f, "mask_token_id " + std::to_string(rec.mask_token_id) +
                       " is outside the recorded vocabulary (" + std::to_string(vocab) + ")");
  if (static_cast<std::int64_t>(rec.loss_mask.size()) != s)
    throw Error(f, "loss_mask has " + std::to_string(rec.loss_mask.size()) + " entries for " +
                       std::to_string(s) + " input_ids");
  if (rec.fc_input.size(0) != s)
    throw Error(f, "fc_input has " + std::to_string(rec.fc_input.size(0)) + " rows for " +
                       std::to_string(s) + " input_ids");
  if (rec.fc_input.size(1) % static_cast<std::int64_t>(rec.target_layer_ids.size()) != 0)
    throw Error(f, "fc_input width " + std::to_string(rec.fc_input.size(1)) +
                       " is not a multiple of the " + std::to_string(rec.target_layer_ids.size()) +
                       " taps");
  for (auto a : rec.anchors)
    if (a < 0 || a >= s)
      throw Error(f, "anchor " + std::to_string(a) + " is outside the sequence (0.." +
                         std::to_string(s - 1) + ")");
  for (auto t : rec.input_ids)
    if (t < 0) throw Error(f, "input_ids holds a negative token id");
  expect_shape(f, "labels", rec.labels, {n, b});
  expect_shape(f, "weights", rec.weights, {n, b});
  if (teacher_positions.defined()) {
    if (!rec.teacher_logits.defined())
      throw Error(f, "tensor \"teacher_positions\" is recorded without teacher_logits");
    rec.teacher_positions = to_vector(teacher_positions);
    check_teacher_positions(f, rec.teacher_positions, rec.teacher_logits.size(0), s);
  } else if (rec.teacher_logits.defined()) {
    if (rec.teacher_logits.size(0) != s)
      throw Error(f,
                  "teacher_logits has " + std::to_string(rec.teacher_logits.size(0)) +
                      " rows for " + std::to_string(s) + " input_ids",
                  "record teacher_positions when the teacher covers a subset of positions");
    rec.teacher_positions.resize(s);
    std::iota(rec.teacher_positions.begin(), rec.teacher_positions.end(), 0);
  }
  if (rec.drafter_logits.defined()) {
    const std::int64_t v = rec.drafter_logits.size(2);
    expect_shape(f, "drafter_logits", rec.drafter_logits, {n, b, v});
    if (rec.teacher_logits.defined() && rec.teacher_logits.size(1) != v)
      throw Error(f, "drafter_logits vocabulary " + std::to_string(v) +
                         " != teacher_logits vocabulary " +
                         std::to_string(rec.teacher_logits.size(1)));
  }
  if (std::all_of(rec.loss_mask.begin(), rec.loss_mask.end(), [](auto m) { return m == 0; }))
    throw Error(f, "loss_mask is all zeros: no position carries a label",
                "record a step whose loss is defined");
  check_labels(f, rec);
}

void read_anchors_in_step(const Reader& r, StepRecord& rec, std::int64_t recorded) {
  if (!r.optional_meta("anchors_in_step")) return;
  rec.anchors_in_step = r.meta_int("anchors_in_step");
  if (*rec.anchors_in_step < recorded)
    throw Error(r.name(),
                "__metadata__ \"anchors_in_step\" = " + std::to_string(*rec.anchors_in_step) +
                    " is fewer than the " + std::to_string(recorded) + " anchors recorded");
}

// The tensors only a batch record holds.
constexpr const char* kBatchKeys[] = {"attention_mask", "document_ids", "position_ids",
                                      "anchor_mask"};

// A required tensor of 0s and 1s (a loss mask): any other value is a record's error, not a weight.
at::Tensor zero_one_tensor(const Reader& r, const char* key, std::int64_t rank) {
  const at::Tensor t = r.tensor(key, rank, at::kLong, true);
  if (((t != 0) & (t != 1)).any().item<bool>())
    throw Error(r.name(), std::string("tensor \"") + key + "\" holds values other than 0 and 1");
  return t;
}

// The recorded loss weights, where recorded: finite and non-negative (a NaN weight makes the
// step's loss NaN; a negative one rewards the error it weights).
at::Tensor loss_weights(const Reader& r, std::int64_t rank) {
  const at::Tensor w = r.tensor("weights", rank, at::kFloat, false);
  if (!w.defined()) return w;
  const at::Tensor bad = (~at::isfinite(w)) | (w < 0);
  if (bad.any().item<bool>()) {
    std::int64_t rest = bad.reshape(-1).nonzero()[0][0].item<std::int64_t>();
    const double value = w.reshape(-1)[rest].item<double>();
    std::string where;
    for (std::int64_t d = w.dim() - 1; d >= 0; --d) {
      where = std::to_string(rest % w.size(d)) + (where.empty() ? "" : ", ") + where;
      rest /= w.size(d);
    }
    throw Error(r.name(), "tensor \"weights\" [" + where + "] = " + format_number(value) +
                              ": loss weights must be finite and non-negative");
  }
  return w;
}

StepBatch single_sequence(const Reader& r, StepRecord rec) {
  for (const char* key : kBatchKeys)
    if (r.find(key) != nullptr)  // by the header: the data is never needed
      throw Error(r.name(), std::string("tensor \"") + key + "\" belongs to a batch record",
                  "record input_ids and the other tensors with their batch dimension, [R, S]");
  rec.input_ids = to_vector(r.tensor("input_ids", 1, at::kLong, true));
  rec.loss_mask = to_vector(zero_one_tensor(r, "loss_mask", 1));
  rec.anchors = to_vector(r.tensor("anchors", 1, at::kLong, true));
  rec.fc_input = r.tensor("fc_input", 2, at::kFloat, true);
  rec.teacher_logits = r.tensor("teacher_logits", 2, at::kFloat, false);
  rec.labels = r.tensor("labels", 2, at::kLong, false);
  rec.drafter_logits = r.tensor("drafter_logits", 3, at::kFloat, false);
  rec.weights = loss_weights(r, 2);
  validate_sequence(rec, r.tensor("teacher_positions", 1, at::kLong, false));
  read_anchors_in_step(r, rec, static_cast<std::int64_t>(rec.anchors.size()));
  StepBatch batch;
  batch.path = rec.path;
  batch.sequences = {rec};
  batch.names = {""};
  batch.joined = std::move(rec);
  return batch;
}

// A 0/1 tensor [R, X] (all ones when absent); Error naming the key otherwise.
at::Tensor zero_one(const std::string& f, const char* key, at::Tensor t,
                    std::vector<std::int64_t> shape) {
  if (!t.defined()) return at::ones(shape, at::kLong);
  expect_shape(f, key, t, shape);
  if (((t != 0) & (t != 1)).any().item<bool>())
    throw Error(f, std::string("tensor \"") + key + "\" holds values other than 0 and 1");
  return t;
}

// A batch row's sequences: [begin, end) runs of positions and what to call them.
struct Run {
  std::int64_t begin = 0, end = 0;
  std::string name;
};

// The row's documents: runs of one document id (document_ids), else runs that position_ids start
// again at 0 (packing without document ids), else the row's tokens as one sequence.
// `documents` / `positions`: the row's document_ids / position_ids, empty when not recorded.
std::vector<Run> row_documents(const std::string& f, std::int64_t row, std::int64_t begin,
                               std::int64_t end, const std::vector<std::int64_t>& documents,
                               const std::vector<std::int64_t>& positions) {
  const std::string where = "row " + std::to_string(row);
  std::vector<Run> runs;
  if (!documents.empty()) {
    std::vector<std::int64_t> seen;
    bool in_run = false;
    for (std::int64_t p = begin; p < end; ++p) {
      const auto id = documents[static_cast<std::size_t>(p)];
      if (id < 0) {  // padding (speculators' collator writes -1): no document, nothing checked
        if (in_run) runs.back().end = p;
        in_run = false;
        continue;
      }
      if (in_run && id == seen.back()) continue;
      if (std::find(seen.begin(), seen.end(), id) != seen.end())
        throw Error(f, "tensor \"document_ids\" " + where + ": document " + std::to_string(id) +
                           " starts again at position " + std::to_string(p) +
                           " after another document (a packed document is one contiguous run)");
      seen.push_back(id);
      if (in_run) runs.back().end = p;
      runs.push_back({p, end, where + ", document " + std::to_string(id)});
      in_run = true;
    }
  } else if (!positions.empty()) {
    for (std::int64_t p = begin; p < end; ++p)
      if (p == begin || positions[static_cast<std::size_t>(p)] == 0) {
        if (!runs.empty()) runs.back().end = p;
        runs.push_back({p, end, where + ", document " + std::to_string(runs.size())});
      }
  } else {
    runs.push_back({begin, end, where});
  }
  if (runs.size() == 1) runs.front().name = where;
  if (!positions.empty())
    for (const Run& run : runs)
      for (std::int64_t p = run.begin + 1; p < run.end; ++p) {
        const auto before = positions[static_cast<std::size_t>(p - 1)];
        const auto at = positions[static_cast<std::size_t>(p)];
        if (at != before + 1)
          throw Error(f, "tensor \"position_ids\" " + run.name + ": position " + std::to_string(p) +
                             " is " + std::to_string(at) + " after " + std::to_string(before) +
                             " (positions inside a document must be consecutive)");
      }
  return runs;
}

// The tokens after a sequence in its batch row, up to a block's reach (block_size − 1), with their
// loss mask: what a block crossing the sequence's end reads (StepBatch::loss_mask_past_ends).
struct Following {
  std::vector<std::int64_t> ids, loss_mask;
};

// Every sequence end to end, block_size masked positions between them (see StepBatch::joined);
// each gap starts with the tokens that follow its sequence in the row, their loss mask kept aside.
StepRecord join_sequences(StepBatch& batch, const std::vector<std::int64_t>& row_of,
                          const std::vector<Following>& following) {
  StepRecord joined = batch.sequences.front();
  joined.path = batch.path;
  joined.input_ids.clear(), joined.loss_mask.clear(), joined.anchors.clear();
  joined.teacher_positions.clear();
  const std::int64_t gap = joined.block_size;
  const bool teacher = std::all_of(batch.sequences.begin(), batch.sequences.end(),
                                   [](const StepRecord& s) { return s.teacher_logits.defined(); });
  std::vector<at::Tensor> fc, teacher_rows, labels, weights, drafter;
  std::vector<std::int64_t> past_ends;
  std::int64_t offset = 0;
  for (std::size_t i = 0; i < batch.sequences.size(); ++i) {
    const StepRecord& s = batch.sequences[i];
    const auto length = static_cast<std::int64_t>(s.input_ids.size());
    joined.input_ids.insert(joined.input_ids.end(), s.input_ids.begin(), s.input_ids.end());
    joined.loss_mask.insert(joined.loss_mask.end(), s.loss_mask.begin(), s.loss_mask.end());
    const Following& next = following[i];
    joined.input_ids.insert(joined.input_ids.end(), next.ids.begin(), next.ids.end());
    joined.input_ids.resize(joined.loss_mask.size() + gap, 0);
    past_ends.insert(past_ends.end(), s.loss_mask.begin(), s.loss_mask.end());
    past_ends.insert(past_ends.end(), next.loss_mask.begin(), next.loss_mask.end());
    past_ends.resize(joined.loss_mask.size() + gap, 0);
    joined.loss_mask.resize(joined.loss_mask.size() + gap, 0);
    for (auto a : s.anchors) {
      joined.anchors.push_back(a + offset);
      joined.row_of_anchor.push_back(row_of[i]);
    }
    fc.push_back(s.fc_input);
    fc.push_back(at::zeros({gap, s.fc_input.size(1)}, s.fc_input.options()));
    if (teacher) {
      teacher_rows.push_back(s.teacher_logits);
      for (auto p : s.teacher_positions) joined.teacher_positions.push_back(p + offset);
    }
    for (auto [all, t] :
         {std::pair<std::vector<at::Tensor>*, const at::Tensor*>{&labels, &s.labels},
          {&weights, &s.weights},
          {&drafter, &s.drafter_logits}})
      if (t->defined()) all->push_back(*t);
    offset += length + gap;
  }
  joined.fc_input = at::cat(fc);
  joined.teacher_logits = teacher ? at::cat(teacher_rows) : at::Tensor();
  for (auto [all, t] : {std::pair<std::vector<at::Tensor>*, at::Tensor*>{&labels, &joined.labels},
                        {&weights, &joined.weights},
                        {&drafter, &joined.drafter_logits}})
    *t = all->size() == batch.sequences.size() ? at::cat(*all) : at::Tensor();
  joined.rows = batch.rows;
  if (std::any_of(following.begin(), following.end(),
                  [](const Following& f) { return !f.ids.empty(); }))
    batch.loss_mask_past_ends = std::move(past_ends);
  return joined;
}

StepBatch batch_sequences(const Reader& r, const StepRecord& meta) {
  const std::string& f = r.name();
  const at::Tensor ids = r.tensor("input_ids", 2, at::kLong, true);
  const std::int64_t rows = ids.size(0), s = ids.size(1);
  if (rows == 0 || s == 0)
    throw Error(f, "input_ids has shape " + format_shape(ids.sizes().vec()) + ": no sequence");
  const at::Tensor loss_mask = zero_one_tensor(r, "loss_mask", 2);
  expect_shape(f, "loss_mask", loss_mask, {rows, s});
  const at::Tensor attention =
      zero_one(f, "attention_mask", r.tensor("attention_mask", 2, at::kLong, false), {rows, s});
  const at::Tensor documents = r.tensor("document_ids", 2, at::kLong, false);
  expect_shape(f, "document_ids", documents, {rows, s});
  const at::Tensor positions = r.tensor("position_ids", 2, at::kLong, false);
  expect_shape(f, "position_ids", positions, {rows, s});
  const at::Tensor anchors = r.tensor("anchors", 2, at::kLong, true);
  if (anchors.size(0) != rows)
    throw Error(f, "tensor \"anchors\" has " + std::to_string(anchors.size(0)) + " rows for " +
                       std::to_string(rows) + " input_ids rows");
  const std::int64_t n = anchors.size(1), b = meta.block_size;
  const at::Tensor keep =
      zero_one(f, "anchor_mask", r.tensor("anchor_mask", 2, at::kLong, false), {rows, n});
  const at::Tensor fc = r.tensor("fc_input", 3, at::kFloat, true);
  if (fc.size(0) != rows || fc.size(1) != s)
    throw Error(f, "fc_input has shape " + format_shape(fc.sizes().vec()) + " for input_ids " +
                       format_shape(ids.sizes().vec()));
  const at::Tensor teacher = r.tensor("teacher_logits", 3, at::kFloat, false);
  if (teacher.defined() && teacher.size(0) != rows)
    throw Error(f, "teacher_logits has " + std::to_string(teacher.size(0)) + " rows for " +
                       std::to_string(rows) + " input_ids rows");
  const at::Tensor listed = r.tensor("teacher_positions", 1, at::kLong, false);
  std::vector<std::int64_t> teacher_at;  // the batch's teacher positions (shared by every row)
  if (listed.defined()) {
    if (!teacher.defined())
      throw Error(f, "tensor \"teacher_positions\" is recorded without teacher_logits");
    teacher_at = to_vector(listed);
    check_teacher_positions(f, teacher_at, teacher.size(1), s);
  } else if (teacher.defined() && teacher.size(1) != s) {
    throw Error(f,
                "teacher_logits has " + std::to_string(teacher.size(1)) + " positions for " +
                    std::to_string(s) + " input_ids",
                "record teacher_positions when the teacher covers a subset of positions");
  }
  const at::Tensor labels = r.tensor("labels", 3, at::kLong, false);
  expect_shape(f, "labels", labels, {rows, n, b});
  const at::Tensor weights = loss_weights(r, 3);
  expect_shape(f, "weights", weights, {rows, n, b});
  const at::Tensor drafter = r.tensor("drafter_logits", 4, at::kFloat, false);
  if (drafter.defined()) expect_shape(f, "drafter_logits", drafter, {rows, n, b, drafter.size(3)});

  StepBatch batch;
  batch.path = f;
  batch.batched = true;
  batch.rows = rows;
  std::vector<std::int64_t> row_of;
  std::vector<Following> following;
  std::int64_t kept = 0;
  for (std::int64_t row = 0; row < rows; ++row) {
    const std::string where = "row " + std::to_string(row);
    const at::Tensor tokens = attention[row].nonzero().flatten();
    if (tokens.numel() == 0) {
      batch.unjudged.push_back(where + " (all padding)");
      continue;
    }
    const auto begin = tokens[0].item<std::int64_t>(), end = tokens[-1].item<std::int64_t>() + 1;
    if (end - begin != tokens.numel())
      throw Error(f, "tensor \"attention_mask\" " + where +
                         " is not one contiguous run of tokens (padding inside the row)");
    std::vector<std::pair<std::int64_t, std::int64_t>> row_anchors;  // (index into N, position)
    const std::vector<std::int64_t> row_keep = to_vector(keep[row]),
                                    row_anchor = to_vector(anchors[row]);
    for (std::int64_t j = 0; j < n; ++j) {
      if (row_keep[static_cast<std::size_t>(j)] == 0) continue;
      const auto a = row_anchor[static_cast<std::size_t>(j)];
      if (a < begin || a >= end)
        throw Error(f,
                    "anchors[" + std::to_string(row) + ", " + std::to_string(j) +
                        "] = " + std::to_string(a) + " is outside " + where + "'s tokens (" +
                        std::to_string(begin) + ".." + std::to_string(end - 1) + ")",
                    "mark padded anchors 0 in anchor_mask");
      row_anchors.emplace_back(j, a);
      ++kept;
    }
    const std::vector<std::int64_t> row_documents_ids =
        documents.defined() ? to_vector(documents[row]) : std::vector<std::int64_t>{};
    const std::vector<std::int64_t> row_positions =
        positions.defined() ? to_vector(positions[row]) : std::vector<std::int64_t>{};
    const std::vector<Run> runs =
        row_documents(f, row, begin, end, row_documents_ids, row_positions);
    for (const auto& [j, a] : row_anchors)
      if (std::none_of(runs.begin(), runs.end(),
                       [a = a](const Run& run) { return a >= run.begin && a < run.end; }))
        throw Error(f,
                    "anchors[" + std::to_string(row) + ", " + std::to_string(j) + "] = " +
                        std::to_string(a) + " is in " + where + "'s padding (document_ids -1)",
                    "mark padded anchors 0 in anchor_mask");
    if (runs.empty()) {  // every token of the row marked padding by its document_ids
      batch.unjudged.push_back(where + " (all padding)");
      continue;
    }
    for (const Run& run : runs) {
      std::vector<std::int64_t> which;
      StepRecord rec = meta;
      rec.path = f + " (" + run.name + ")";
      for (const auto& [j, a] : row_anchors)
        if (a >= run.begin && a < run.end) {
          which.push_back(j);
          rec.anchors.push_back(a - run.begin);
        }
      const std::int64_t length = run.end - run.begin;
      auto slice = [&](const at::Tensor& t) { return t[row].narrow(0, run.begin, length); };
      rec.input_ids = to_vector(slice(ids));
      rec.loss_mask = to_vector(slice(loss_mask));
      const BlockTargets supervised =
          block_targets(rec.input_ids, rec.loss_mask, rec.anchors, b, 0.0);
      if (which.empty() || !(supervised.weight > 0).any().item<bool>()) {
        batch.unjudged.push_back(
            run.name + (which.empty() ? " (no kept anchor)" : " (no supervised block element)"));
        continue;
      }
      const at::Tensor picked = at::tensor(which, at::kLong);
      rec.fc_input = slice(fc);
      at::Tensor teacher_positions;
      if (teacher.defined() && listed.defined()) {
        std::vector<std::int64_t> rows_inside, local;
        for (std::size_t i = 0; i < teacher_at.size(); ++i)
          if (teacher_at[i] >= run.begin && teacher_at[i] < run.end) {
            rows_inside.push_back(static_cast<std::int64_t>(i));
            local.push_back(teacher_at[i] - run.begin);
          }
        if (!rows_inside.empty()) {
          rec.teacher_logits = teacher[row].index_select(0, at::tensor(rows_inside, at::kLong));
          teacher_positions = at::tensor(local, at::kLong);
        }
      } else if (teacher.defined()) {
        rec.teacher_logits = slice(teacher);
      }
      if (labels.defined()) rec.labels = labels[row].index_select(0, picked);
      if (weights.defined()) rec.weights = weights[row].index_select(0, picked);
      if (drafter.defined()) rec.drafter_logits = drafter[row].index_select(0, picked);
      if (!rec.teacher_logits.defined() && !rec.labels.defined() &&
          rec.labels_source == LabelsSource::kTeacher && teacher.defined()) {
        batch.unjudged.push_back(run.name + " (no recorded teacher position)");
        continue;
      }
      validate_sequence(rec, teacher_positions);
      batch.sequences.push_back(std::move(rec));
      batch.names.push_back(run.name);
      row_of.push_back(row);
      const std::int64_t reach = std::min(end, run.end + b - 1) - run.end;
      following.push_back({to_vector(ids[row].narrow(0, run.end, reach)),
                           to_vector(loss_mask[row].narrow(0, run.end, reach))});
    }
  }
  if (batch.sequences.empty())
    throw Error(f, "no sequence of the batch holds a kept anchor with a supervised block element",
                "record a step whose loss is defined");
  batch.joined = join_sequences(batch, row_of, following);
  read_anchors_in_step(r, batch.joined, kept);
  return batch;
}

}  // namespace

// Every tensor a record may hold (docs/step-records.md): another name is a trainer's tensor
// draftgate would otherwise ignore (a `cu_seqlens` packing, say), so it is refused by name.
constexpr const char* kRecordTensors[] = {
    "input_ids",         "loss_mask",    "anchors",    "fc_input",       "teacher_logits",
    "teacher_positions", "labels",       "weights",    "drafter_logits", "attention_mask",
    "document_ids",      "position_ids", "anchor_mask"};

StepBatch read_step_batch(const std::filesystem::path& path) {
  const Reader r(path);
  const StepRecord meta = read_metadata(r);
  for (const auto& [name, dtype] : meta.stored_dtypes)
    if (std::find(std::begin(kRecordTensors), std::end(kRecordTensors), name) ==
        std::end(kRecordTensors))
      throw Error(
          r.name(), "tensor \"" + name.substr(0, 64) + "\" is not a step-record tensor",
          "record only the tensors docs/step-records.md lists (packed rows: document_ids or "
          "position_ids)");
  const io::TensorInfo* ids = r.find("input_ids");
  if (ids != nullptr && ids->shape.size() == 2) return batch_sequences(r, meta);
  return single_sequence(r, meta);
}

StepRecord read_step_metadata(const std::filesystem::path& path) {
  return read_metadata(Reader(path));
}

StepRecord read_step_record(const std::filesystem::path& path) {
  StepBatch batch = read_step_batch(path);
  if (batch.batched)
    throw Error(batch.path, "holds a batch of " + std::to_string(batch.rows) +
                                " rows where one sequence is expected");
  return std::move(batch.sequences.front());
}

void write_step_record(const std::filesystem::path& path, const StepRecord& rec) {
  auto ids = [](const std::vector<std::int64_t>& v) { return at::tensor(v, at::kLong); };
  io::NamedTensors tensors = {{"input_ids", ids(rec.input_ids)},
                              {"loss_mask", ids(rec.loss_mask)},
                              {"anchors", ids(rec.anchors)},
                              {"fc_input", rec.fc_input}};
  for (const auto& [name, t] :
       {std::pair<const char*, const at::Tensor&>{"teacher_logits", rec.teacher_logits},
        {"labels", rec.labels},
        {"drafter_logits", rec.drafter_logits},
        {"weights", rec.weights}})
    if (t.defined()) tensors.emplace_back(name, t);
  // teacher_positions only for a subset (a row per position needs none).
  if (rec.teacher_logits.defined() &&
      static_cast<std::size_t>(rec.teacher_logits.size(0)) != rec.input_ids.size())
    tensors.emplace_back("teacher_positions", ids(rec.teacher_positions));
  std::ostringstream loss;
  loss.precision(17);
  loss << rec.logged_loss;
  std::ostringstream gamma;
  gamma.precision(17);
  if (rec.gamma > 0)
    gamma << rec.gamma;
  else
    gamma << "none";
  std::map<std::string, std::string> meta = {{"schema", kStepRecordSchema},
                                             {"block_size", std::to_string(rec.block_size)},
                                             {"gamma", gamma.str()},
                                             {"mask_token_id", std::to_string(rec.mask_token_id)},
                                             {"target_layer_ids", format_ids(rec.target_layer_ids)},
                                             {"loss", loss_name(rec.loss)},
                                             {"logged_loss", loss.str()}};
  if (rec.step) meta["step"] = std::to_string(*rec.step);
  if (rec.anchors_in_step) meta["anchors_in_step"] = std::to_string(*rec.anchors_in_step);
  if (rec.teacher_dtype) meta["teacher_dtype"] = precision_name(*rec.teacher_dtype);
  if (rec.drafter_dtype) meta["drafter_dtype"] = precision_name(*rec.drafter_dtype);
  if (rec.hidden_dtype) meta["hidden_dtype"] = precision_name(*rec.hidden_dtype);
  if (rec.fc_input_noise) {
    if (!std::isfinite(rec.fc_input_noise->scale) || rec.fc_input_noise->scale <= 0)
      throw Error(path.string(), "fc_input_noise " + rec.fc_input_noise->describe() +
                                     " has no positive scale; a record declares none instead");
    meta["fc_input_noise"] = rec.fc_input_noise->describe();
  }
  // The recipe keys only where they differ from the defaults (older readers stay able to read).
  if (rec.labels_source != LabelsSource::kTeacher)
    meta["labels_source"] = labels_source_name(rec.labels_source);
  if (rec.weighting != Weighting::kFixed) {
    meta["weighting"] = weighting_name(rec.weighting);
    std::ostringstream alpha;
    alpha.precision(17);
    alpha << rec.dpace_alpha;
    meta["dpace_alpha"] = alpha.str();
  }
  if (rec.normalization != Normalization::kWeightSum)
    meta["loss_normalization"] = normalization_name(rec.normalization);
  io::write_tensors(path, tensors, meta);
}

}  // namespace draftgate::train
