#include "draftgate/io/artifact_kind.h"

#include <algorithm>
#include <cctype>
#include <cstdint>
#include <fstream>
#include <nlohmann/json.hpp>

#include "draftgate/error.h"
#include "draftgate/io/json_util.h"

namespace draftgate::io {
namespace fs = std::filesystem;

namespace {

// Enough for any config.json and the head of any JSON artifact draftgate writes.
constexpr std::streamsize kSniffBytes = 1 << 20;

std::string head(const fs::path& path, std::streamsize n) {
  std::ifstream in(path, std::ios::binary);
  std::string text(static_cast<std::size_t>(n), '\0');
  in.read(text.data(), n);
  text.resize(static_cast<std::size_t>(std::max<std::streamsize>(in.gcount(), 0)));
  return text;
}

// The strict parser: nlohmann's own recurses without a bound, and a 70,000-deep file overflowed
// the stack here before the verb's reader could refuse it by name. What it refuses is no kind.
nlohmann::json parse_or_null(const std::string& text) {
  try {
    return parse_json_strict(text, "artifact");
  } catch (const Error&) {
    return nlohmann::json();
  }
}

// A safetensors file's header (its tensors and __metadata__), or null.
nlohmann::json safetensors_header(const fs::path& file, std::uintmax_t size) {
  const std::string prefix = head(file, 8);
  if (prefix.size() < 8) return nullptr;
  std::uint64_t length = 0;
  for (int i = 7; i >= 0; --i) length = (length << 8) | static_cast<unsigned char>(prefix[i]);
  if (length < 2 || length > size - 8 || length > (100u << 20)) return nullptr;
  const nlohmann::json header =
      parse_or_null(head(file, static_cast<std::streamsize>(8 + length)).substr(8));
  return header.is_object() ? header : nlohmann::json();
}

// A safetensors file's __metadata__, or null.
nlohmann::json safetensors_metadata(const fs::path& file, std::uintmax_t size) {
  const nlohmann::json header = safetensors_header(file, size);
  if (!header.is_object()) return nullptr;
  return header.value("__metadata__", nlohmann::json::object());
}

// A checkpoint's tensor names as the keys of one object (the index's weight_map, else the one
// model.safetensors's header), read once; null where neither can be read.
nlohmann::json tensor_names(const fs::path& dir) {
  std::error_code ec;
  const fs::path index = dir / "model.safetensors.index.json";
  if (fs::is_regular_file(index, ec)) {
    const auto size = fs::file_size(index, ec);
    if (ec || size > (64u << 20)) return nullptr;
    const nlohmann::json doc = parse_or_null(head(index, static_cast<std::streamsize>(size)));
    return doc.is_object() ? doc.value("weight_map", nlohmann::json()) : nlohmann::json();
  }
  const auto size = fs::file_size(dir / "model.safetensors", ec);
  return ec ? nlohmann::json() : safetensors_header(dir / "model.safetensors", size);
}

// A speculative head of another kind than DFlash (EAGLE-1/2/3 and the like): a cue in its config,
// else tensors only such a head holds (a target's are model.*, lm_head.* and its towers'). Its
// config is a Llama / Qwen model's, so it was taken for a target. "" when none is seen.
std::string other_drafter_head(const fs::path& dir, const nlohmann::json& config) {
  if (auto it = config.find("architectures"); it != config.end() && it->is_array())
    for (const auto& a : *it)
      if (a.is_string()) {
        std::string lower = a.get<std::string>();
        std::transform(lower.begin(), lower.end(), lower.begin(),
                       [](unsigned char ch) { return static_cast<char>(std::tolower(ch)); });
        if (lower.find("eagle") != std::string::npos || lower.find("medusa") != std::string::npos)
          return "config.json architectures " + a.get<std::string>();
      }
  for (const char* key : {"eagle_config", "medusa_num_heads"})
    if (config.contains(key)) return std::string("config.json has ") + key;
  const nlohmann::json names = tensor_names(dir);
  if (!names.is_object()) return "";
  const auto& sorted = names.get_ref<const nlohmann::json::object_t&>();
  if (const auto it = sorted.lower_bound("midlayer.");
      it != sorted.end() && it->first.rfind("midlayer.", 0) == 0)
    return "its tensors hold midlayer.*, an EAGLE-3 layer";
  for (const char* name : {"fc.weight", "d2t", "t2d"})
    if (names.contains(name))
      return std::string("its tensors hold ") + name + ", which a drafter head holds and no target";
  return "";
}

Recognized checkpoint(const fs::path& dir) {
  std::error_code ec;
  if (!fs::is_regular_file(dir / "config.json", ec)) return {};
  const nlohmann::json c = parse_or_null(head(dir / "config.json", kSniffBytes));
  if (!c.is_object()) return {};
  if (auto it = c.find("architectures"); it != c.end() && it->is_array())
    for (const auto& a : *it)
      if (a.is_string() && a.get<std::string>().find("DFlash") != std::string::npos)
        return {ArtifactKind::kDrafter, "a DFlash drafter checkpoint (config.json architectures " +
                                            a.get<std::string>() + ")"};
  for (const char* key : {"dflash_config", "target_layer_ids"})  // the latter z-lab's top level
    if (c.contains(key))
      return {ArtifactKind::kDrafter,
              std::string("a DFlash drafter checkpoint (config.json has ") + key + ")"};
  if (auto it = c.find("speculators_model_type"); it != c.end() && it->is_string())
    return {ArtifactKind::kDrafter,
            "a speculators drafter checkpoint (config.json "
            "speculators_model_type " +
                it->get<std::string>() + ")"};
  if (const std::string cue = other_drafter_head(dir, c); !cue.empty())
    return {ArtifactKind::kOtherDrafter,
            "a drafter of another kind than DFlash (" + cue + "), which draftgate does not run"};
  if (auto it = c.find("model_type"); it != c.end() && it->is_string())
    return {ArtifactKind::kTarget,
            "a target checkpoint (config.json model_type " + it->get<std::string>() + ")"};
  return {};
}

Recognized file(const fs::path& path) {
  std::error_code ec;
  const std::uintmax_t size = fs::file_size(path, ec);
  if (ec || size == 0) return {};
  const nlohmann::json meta = safetensors_metadata(path, size);
  if (meta.is_object()) {
    if (meta.value("schema", "") == "draftgate.step_record/1")
      return {ArtifactKind::kStepRecord, "a training step record (draftgate.step_record/1)"};
    if (meta.contains("tap_convention"))
      return {ArtifactKind::kReferenceDump, "a reference dump (draftgate forward --out)"};
    return {};
  }
  const std::string text = head(path, kSniffBytes);
  const nlohmann::json doc = parse_or_null(text);
  // The top-level schema; in a file longer than the sniffed head, the outermost schema string it
  // holds (a measured golden nests a measured_tau/1 object, so golden wins).
  std::string schema = doc.is_object() ? doc.value("schema", "") : "";
  if (!doc.is_object() && static_cast<std::streamsize>(size) > kSniffBytes)
    for (const char* s : {"draftgate.golden/1", "draftgate.suite/1", "draftgate.measured_tau/1"})
      if (schema.empty() && text.find(std::string("\"") + s + "\"") != std::string::npos)
        schema = s;
  if (schema == "draftgate.golden/1") return {ArtifactKind::kGolden, "a golden (" + schema + ")"};
  if (schema == "draftgate.suite/1") return {ArtifactKind::kSuite, "a suite (" + schema + ")"};
  if (schema == "draftgate.measured_tau/1")
    return {ArtifactKind::kMeasuredTau, "a measured-τ file (" + schema + ")"};
  // The reports draftgate writes carry no schema: an eval result by its per-prompt runs and its
  // decoding settings (sorted keys: "decoding" precedes the long "per_prompt" array, so a head
  // cut inside it still holds both), a check report by its summary line.
  const bool whole_object = doc.is_object();
  const std::size_t opening = text.find_first_not_of(" \t\r\n");
  if (whole_object ? doc.contains("per_prompt") && doc.contains("decoding")
                   : opening != std::string::npos && text[opening] == '{' &&
                         static_cast<std::streamsize>(size) > kSniffBytes &&
                         text.find("\"decoding\":") != std::string::npos &&
                         text.find("\"per_prompt\":") != std::string::npos)
    return {ArtifactKind::kReport, "an eval result (draftgate eval --json)"};
  if (whole_object && doc.contains("summary_text") &&
      (doc.contains("results") || doc.contains("suites")))
    return {ArtifactKind::kReport, "a check report (draftgate check --report)"};
  if (whole_object) return {};
  // JSONL: a prompt set's first line is an object with input_ids.
  const nlohmann::json first = parse_or_null(text.substr(0, text.find('\n')));
  if (first.is_object() && first.contains("input_ids"))
    return {ArtifactKind::kPromptSet, "a prompt set (JSONL with input_ids)"};
  return {};
}

const char* kind_name(ArtifactKind kind) {
  switch (kind) {
    case ArtifactKind::kTarget:
      return "a target checkpoint";
    case ArtifactKind::kDrafter:
      return "a drafter checkpoint";
    case ArtifactKind::kStepRecord:
      return "a step record";
    case ArtifactKind::kReferenceDump:
      return "a reference dump";
    case ArtifactKind::kGolden:
      return "a golden";
    case ArtifactKind::kSuite:
      return "a suite";
    case ArtifactKind::kMeasuredTau:
      return "a measured-τ file";
    case ArtifactKind::kPromptSet:
      return "a prompt set";
    case ArtifactKind::kReport:
      return "a report";
    case ArtifactKind::kEngineOutput:
      return "a serving engine's output";
    case ArtifactKind::kOtherDrafter:
      return "a drafter of another kind";
    case ArtifactKind::kUnknown:
      break;
  }
  return "an artifact";
}

Error other_drafter(const fs::path& path, const Recognized& r, const std::string& given) {
  return Error(path.string(), given + r.what,
               "draftgate gates DFlash and DFlash2 drafters (z-lab, speculators and SpecForge "
               "formats); an EAGLE or Medusa head is not one, nor a target");
}

}  // namespace

Recognized recognize_artifact(const fs::path& path) {
  try {
    std::error_code ec;
    const fs::file_status st = fs::status(path, ec);
    if (ec) return {};
    if (fs::is_directory(st)) return checkpoint(path);
    if (fs::is_regular_file(st)) return file(path);
  } catch (const std::exception&) {
    // unreadable in some other way: the artifact's own reader names the problem
  }
  return {};
}

Recognized recognize_runnable(const fs::path& path) {
  const Recognized r = recognize_artifact(path);
  if (r.kind == ArtifactKind::kOtherDrafter) throw other_drafter(path, r, "");
  return r;
}

std::string slot_flag(ArtifactKind kind) {
  switch (kind) {
    case ArtifactKind::kTarget:
      return "--target";
    case ArtifactKind::kDrafter:
      return "--drafter";
    case ArtifactKind::kStepRecord:
      return "--step-record";
    case ArtifactKind::kReferenceDump:
      return "--reference-dump";
    case ArtifactKind::kGolden:
      return "--golden";
    case ArtifactKind::kSuite:
      return "--suite";
    case ArtifactKind::kMeasuredTau:
      return "--measured";
    case ArtifactKind::kPromptSet:
      return "--prompts";
    case ArtifactKind::kReport:
    case ArtifactKind::kEngineOutput:
    case ArtifactKind::kOtherDrafter:
    case ArtifactKind::kUnknown:
      break;
  }
  return "";
}

void require_slot(const fs::path& path, ArtifactKind expected, const std::string& flag) {
  const Recognized r = recognize_artifact(path);
  if (r.kind == ArtifactKind::kUnknown || r.kind == expected) return;
  if (r.kind == ArtifactKind::kOtherDrafter)
    throw other_drafter(path, r, "given as " + flag + " but it is ");
  if (r.kind == ArtifactKind::kReport)
    throw Error(path.string(),
                "given as " + flag + " but it is " + r.what + ", not " + kind_name(expected),
                "a report is draftgate's output, read by no verb; pass " +
                    std::string(kind_name(expected)) + " as " + flag);
  throw Error(
      path.string(), "given as " + flag + " but it is " + r.what + ", not " + kind_name(expected),
      "give it as " + slot_flag(r.kind) + " and pass " + kind_name(expected) + " as " + flag);
}

}  // namespace draftgate::io
