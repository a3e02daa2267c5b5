#include "checks/record_provenance.h"

#include <algorithm>

#include "draftgate/error.h"
#include "draftgate/format.h"
#include "draftgate/golden/record_identity.h"
#include "draftgate/io/config.h"
#include "draftgate/io/safetensors.h"

namespace draftgate::checks {
namespace {

// What the record's header fixes of its target: each fc_input slice is one of the target's hidden
// states (width = hidden_size), each teacher_logits row one of its logits (width = vocab_size).
// config.json and the record's header only, so a run whose checks never read the target
// (loss_type alone) refuses a record of another model too.
std::optional<std::string> shape_mismatch(const std::filesystem::path& record,
                                          const std::filesystem::path& target) {
  const std::filesystem::path config = target / "config.json";
  if (!std::filesystem::is_regular_file(config)) return std::nullopt;  // the checks say so
  const io::ModelConfig c = io::ModelConfig::load(config);
  const auto file = io::SafetensorsFile::open(record);
  const auto& meta = file->header().metadata;
  const auto tap_list = meta.count("target_layer_ids") != 0
                            ? parse_ids(meta.at("target_layer_ids"))
                            : std::nullopt;  // the record's reader names what is wrong
  const auto taps = tap_list ? static_cast<std::int64_t>(tap_list->size()) : 0;
  const std::string where = c.text_path().empty() ? "" : c.text_path() + ".";
  if (const io::TensorInfo* fc = file->header().find("fc_input");
      fc != nullptr && !fc->shape.empty() && taps > 0) {
    const std::int64_t hidden = c.require_int("hidden_size"), width = fc->shape.back();
    if (width % taps == 0 && width != taps * hidden)  // else the record's reader names it
      return "fc_input is " + std::to_string(width) + " wide for " + std::to_string(taps) +
             " taps (slices of " + std::to_string(width / taps) + "), but --target " +
             target.string() + " has " + where + "hidden_size " + std::to_string(hidden);
  }
  const io::TensorInfo* t = file->header().find("teacher_logits");
  const io::TensorInfo* drafter = file->header().find("drafter_logits");
  // Teacher and drafter logits of two widths: the record's reader names that, not this.
  const bool own_widths_agree =
      drafter == nullptr || drafter->shape.empty() ||
      (t != nullptr && !t->shape.empty() && drafter->shape.back() == t->shape.back());
  if (t != nullptr && !t->shape.empty() && own_widths_agree) {
    const std::int64_t vocab = c.require_int("vocab_size"), width = t->shape.back();
    if (width != vocab)
      return "teacher_logits rows are " + std::to_string(width) + " wide, but --target " +
             target.string() + " has " + where + "vocab_size " + std::to_string(vocab);
  }
  return std::nullopt;
}

}  // namespace

void refuse_foreign_record(const Artifacts& a, const std::vector<const Check*>& checks) {
  if (!a.step_record) return;
  const std::string record = a.step_record->string();
  const golden::RecordIdentity id = golden::read_record_identity(*a.step_record);
  for (const auto& [recorded, dir, role, flag] :
       {std::tuple{id.target, a.target, "target", "--target"},
        {id.drafter, a.drafter, "drafter", "--drafter"}})
    if (dir)
      if (auto mismatch = golden::identity_mismatch(recorded, *dir, role, flag))
        throw Error(record, "this step record was " + *mismatch,
                    std::string("give the ") + role +
                        " the record was made with, or record a step with this one");
  if (!id.target.is_null() || !a.target) return;
  if (auto why = shape_mismatch(*a.step_record, *a.target))
    throw Error(record, "this step record is not of this target: " + *why,
                "give the target the record was made with, or record a step with this one");
  if (a.engine == nullptr || std::none_of(checks.begin(), checks.end(), [](const Check* c) {
        return c->judges_record_against_target();
      }))
    return;
  const io::Checkpoint target = io::Checkpoint::open(*a.target);
  if (target.metadata_only()) return;
  if (auto why = a.engine->foreign_record(target, *a.step_record))
    throw Error(record, *why + ": was it made with this target (" + a.target->string() + ")?",
                "give the target the record was made with; records written with target_dir= "
                "carry its identity and are refused by name");
}

}  // namespace draftgate::checks
