#include "draftgate/golden/golden.h"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <fstream>
#include <map>
#include <numeric>
#include <optional>
#include <type_traits>

#include "draftgate/arch/drafter.h"
#include "draftgate/error.h"
#include "draftgate/io/input_file.h"
#include "draftgate/io/json_util.h"
#include "draftgate/io/sha256.h"
#include "draftgate/tau/decode_config.h"
#include "draftgate/tau/prompt_set.h"

namespace draftgate::golden {
namespace fs = std::filesystem;

namespace {

// Whether `v` has the JSON type T is read from: integers must be integers (8.9 is not truncated
// to 8), numbers finite, lists of the element type.
template <class T>
bool has_type(const nlohmann::json& v) {
  if constexpr (std::is_same_v<T, std::int64_t>) {
    return v.is_number_integer();
  } else if constexpr (std::is_same_v<T, double>) {
    return v.is_number() && std::isfinite(v.get<double>());
  } else if constexpr (std::is_same_v<T, std::string>) {
    return v.is_string();
  } else if constexpr (std::is_same_v<T, bool>) {
    return v.is_boolean();
  } else if constexpr (std::is_same_v<T, nlohmann::json>) {
    return true;
  } else {
    if (!v.is_array()) return false;
    for (const auto& e : v)
      if (!has_type<typename T::value_type>(e)) return false;
    return true;
  }
}

template <class T>
const char* type_name() {
  if constexpr (std::is_same_v<T, std::int64_t>) return "an integer";
  if constexpr (std::is_same_v<T, double>) return "a finite number";
  if constexpr (std::is_same_v<T, std::string>) return "a string";
  if constexpr (std::is_same_v<T, std::vector<std::int64_t>>) return "an array of integers";
  if constexpr (std::is_same_v<T, std::vector<double>>) return "an array of finite numbers";
  if constexpr (std::is_same_v<T, std::vector<std::string>>) return "an array of strings";
  if constexpr (std::is_same_v<T, std::vector<bool>>) return "an array of true / false";
  return "a JSON value";
}

// Reads the field at `pointer` as T; draftgate::Error naming the file and field otherwise.
template <class T>
T field(const nlohmann::json& doc, const std::string& pointer, const std::string& file) {
  const nlohmann::json::json_pointer ptr(pointer);
  if (!doc.contains(ptr)) throw Error(file, "golden has no " + pointer);
  const nlohmann::json& v = doc.at(ptr);
  if (!has_type<T>(v))
    throw Error(file, "golden field " + pointer + " must be " + type_name<T>() + ", got " +
                          io::json_excerpt(v));
  return v.get<T>();
}

// The golden's step counts as `golden record` writes them (evaluation_json): counts are
// non-negative integers, accepted drafts at most the drafted ones, the histogram sums to the
// steps, and each prompt's τ lies in 1..B (0 for a prompt that took no step).
void check_tau_counts(const nlohmann::json& doc, const Golden& g, const std::string& file) {
  const nlohmann::json& tau = doc["tau"];
  auto count = [&](const nlohmann::json& v, const std::string& where) {
    if (!v.is_number_integer() || v.get<std::int64_t>() < 0)
      throw Error(file, "golden " + where + " must be a count (an integer >= 0), got " +
                            io::json_excerpt(v));
    return v.get<std::int64_t>();
  };
  std::optional<std::int64_t> steps;
  if (tau.contains("steps")) steps = count(tau["steps"], "/tau/steps");
  if (tau.contains("accepted") && tau.contains("drafted") &&
      count(tau["accepted"], "/tau/accepted") > count(tau["drafted"], "/tau/drafted"))
    throw Error(file, "golden /tau/accepted " + io::json_excerpt(tau["accepted"]) +
                          " exceeds /tau/drafted " + io::json_excerpt(tau["drafted"]));
  if (steps && !g.histogram.empty()) {
    const std::int64_t sum =
        std::accumulate(g.histogram.begin(), g.histogram.end(), std::int64_t{0});
    if (sum != *steps)
      throw Error(file, "golden /tau/histogram counts " + std::to_string(sum) +
                            " steps, /tau/steps " + std::to_string(*steps));
  }
  if (!tau.contains("per_prompt")) return;
  if (!tau["per_prompt"].is_array())
    throw Error(file, "golden /tau/per_prompt must be an array of prompt results");
  const auto b = static_cast<double>(g.block_size);
  for (std::size_t i = 0; i < tau["per_prompt"].size(); ++i) {
    const nlohmann::json& p = tau["per_prompt"][i];
    const std::string where = "/tau/per_prompt/" + std::to_string(i);
    if (!p.is_object()) throw Error(file, "golden " + where + " must be an object");
    const std::int64_t taken = p.contains("steps") ? count(p["steps"], where + "/steps") : 1;
    if (!p.contains("tau")) continue;
    const nlohmann::json& t = p["tau"];
    const bool ok = t.is_number() && (taken == 0 ? t.get<double>() == 0.0
                                                 : t.get<double>() >= 1.0 && t.get<double>() <= b);
    if (!ok)
      throw Error(file, "golden " + where + "/tau " + io::json_excerpt(t) + " is outside 1.." +
                            std::to_string(g.block_size) + " (0 only for a prompt of no step)");
  }
}

}  // namespace

Golden read_golden(const fs::path& path) {
  const std::string file = path.string();
  const nlohmann::json doc = io::read_json_file(path);
  if (!doc.is_object()) throw Error(file, "a golden file must be a JSON object");
  const auto schema = field<std::string>(doc, "/schema", file);
  if (schema != kGoldenSchema)
    throw Error(file, "golden schema \"" + schema + "\" is not " + kGoldenSchema,
                "re-record it with this draftgate: draftgate golden record ... --force");
  if (doc.contains("measured")) return measured_golden_from_json(doc, file);
  Golden g;
  g.path = file;
  g.decode = decode::decode_config_from_json(field<nlohmann::json>(doc, "/decoding", file), file);
  if (doc["decoding"].contains("temperature") &&
      !(doc["decoding"]["temperature"].is_number() && doc["decoding"]["temperature"] == 0))
    throw Error(file, "golden decoding temperature " +
                          io::json_excerpt(doc["decoding"]["temperature"]) +
                          " is not 0 (draftgate measures greedy τ)");
  if (g.decode.tree_top_k > 0 && g.decode.tree_budget == 0)
    throw Error(file, "golden decoding tree_top_k " + std::to_string(g.decode.tree_top_k) +
                          " goes with a tree_budget > 0 (it only shapes the DDTree tree)");
  g.mode = field<std::string>(doc, "/decoding/mode", file);
  if (g.mode != "dflash" && g.mode != "ddtree")
    throw Error(file, "golden decoding mode \"" + g.mode + "\" is not dflash or ddtree");
  const auto counted = field<std::string>(doc, "/decoding/tau_definition", file);
  if (counted != decode::tau_definition(g.mode))
    throw Error(file,
                "golden τ was counted as \"" + counted + "\", this draftgate counts \"" +
                    decode::tau_definition(g.mode) + "\"",
                "re-record it with this draftgate: draftgate golden record ... --force");
  g.block_size = field<std::int64_t>(doc, "/decoding/block_size", file);
  decode::validate_block_size(g.block_size, file + ": /decoding/block_size");
  g.dtype = field<std::string>(doc, "/decoding/dtype", file);
  g.gdn = field<std::string>(doc, "/decoding/gdn", file);
  if (g.dtype != "f32" && g.dtype != "bf16")
    throw Error(file, "golden decoding dtype \"" + g.dtype + "\" is not f32 or bf16");
  if (g.gdn != "chunked" && g.gdn != "recurrent")
    throw Error(file, "golden decoding gdn \"" + g.gdn + "\" is not chunked or recurrent");
  const auto prompts = field<std::string>(doc, "/prompt_set/path", file);
  g.prompt_set =
      (fs::path(prompts).is_absolute() ? fs::path(prompts) : path.parent_path() / prompts)
          .lexically_normal();
  g.prompt_set_sha256 = field<std::string>(doc, "/prompt_set/sha256", file);
  if (g.prompt_set_sha256.size() != 64)
    throw Error(file, "golden prompt_set.sha256 is not a SHA-256 hex digest");
  g.prompt_set_sha256_of_file = !doc["prompt_set"].contains("sha256_of");
  if (doc["prompt_set"].contains("prompts")) {
    g.prompt_count = field<std::int64_t>(doc, "/prompt_set/prompts", file);
    if (*g.prompt_count < 1) throw Error(file, "golden prompt_set.prompts must be at least 1");
  }
  if (!g.prompt_set_sha256_of_file &&
      field<std::string>(doc, "/prompt_set/sha256_of", file) != decode::kPromptsIdentity)
    throw Error(file, std::string("golden prompt_set.sha256_of must be \"") +
                          decode::kPromptsIdentity + "\"");
  // Absent in goldens recorded before prompts could be text or messages: token ids as given.
  g.prompt_rendering = decode::rendering_from_json(
      doc["prompt_set"].value("rendering", nlohmann::json()), file, "golden prompt_set.rendering");
  if (doc.contains("provenance") && doc["provenance"].is_object() &&
      doc["provenance"].contains("target") && doc["provenance"]["target"].is_object()) {
    const nlohmann::json& t = doc["provenance"]["target"];
    if (t.contains("identity")) {
      g.target_identity = field<nlohmann::json>(doc, "/provenance/target/identity", file);
      for (const char* key : {"config_sha256", "weights_fingerprint"})
        if (!g.target_identity.is_object() || !g.target_identity.contains(key) ||
            !g.target_identity[key].is_string())
          throw Error(file, std::string("golden provenance.target.identity.") + key +
                                " must be a SHA-256 hex string");
    }
    if (t.contains("files") && t["files"].is_object()) g.target_files = t["files"];
    if (t.contains("path") && t["path"].is_string()) g.target_path = t["path"];
  }
  g.tau_macro = field<double>(doc, "/tau/tau_macro", file);
  g.tau_pooled = field<double>(doc, "/tau/tau_pooled", file);
  if (!(g.tau_macro >= 1.0) || !(g.tau_pooled >= 1.0))
    throw Error(file, "golden τ below 1 (τ counts the bonus token, so it is at least 1)");
  const auto b = static_cast<double>(g.block_size);
  if (g.tau_macro > b || g.tau_pooled > b)
    throw Error(file, "golden τ (macro " + io::json_excerpt(g.tau_macro) + ", pooled " +
                          io::json_excerpt(g.tau_pooled) + ") exceeds the block size " +
                          std::to_string(g.block_size) +
                          " (at most B tokens are committed per verify step)");
  g.per_position_acceptance = field<std::vector<double>>(doc, "/tau/per_position_acceptance", file);
  if (static_cast<std::int64_t>(g.per_position_acceptance.size()) != g.block_size - 1)
    throw Error(file, "golden /tau/per_position_acceptance has " +
                          std::to_string(g.per_position_acceptance.size()) +
                          " depths for block size " + std::to_string(g.block_size) +
                          " (one per draft depth 1.." + std::to_string(g.block_size - 1) + ")");
  for (std::size_t d = 0; d < g.per_position_acceptance.size(); ++d) {
    const double a = g.per_position_acceptance[d];
    if (!(a >= 0.0 && a <= 1.0))
      throw Error(file, "golden /tau/per_position_acceptance holds " + io::json_excerpt(a) +
                            ", not a share between 0 and 1");
    if (d > 0 && a > g.per_position_acceptance[d - 1] + 1e-12)
      throw Error(file, "golden /tau/per_position_acceptance rises from depth " +
                            std::to_string(d) + " to " + std::to_string(d + 1) +
                            " (a depth is accepted only where every depth before it is)");
  }
  // tau.histogram {"1": n, …, "B": n}: the reports draw it beside the drafter's (optional).
  if (doc.contains(nlohmann::json::json_pointer("/tau/histogram"))) {
    const auto histogram = field<nlohmann::json>(doc, "/tau/histogram", file);
    if (!histogram.is_object())
      throw Error(file, "golden /tau/histogram must be an object {\"1\": steps, …}");
    g.histogram.assign(static_cast<std::size_t>(g.block_size) + 1, 0);
    for (const auto& [key, steps] : histogram.items()) {
      std::size_t k = 0;
      std::from_chars(key.data(), key.data() + key.size(), k);
      const bool tau_key = k >= 1 && k < g.histogram.size() && key == std::to_string(k);
      if (!tau_key || !steps.is_number_integer() || steps.get<std::int64_t>() < 0)
        throw Error(file, "golden /tau/histogram/" + key.substr(0, 40) + " must be τ 1…" +
                              std::to_string(g.block_size) + " with a step count, got " +
                              io::json_excerpt(steps));
      g.histogram[k] = steps.get<std::int64_t>();
    }
  }
  check_tau_counts(doc, g, file);
  g.layout_prefix = field<std::string>(doc, "/target_layout/prefix", file);
  g.num_layers = field<std::int64_t>(doc, "/target_layout/num_layers", file);
  g.layer_types = field<std::vector<std::string>>(doc, "/target_layout/layer_types", file);
  g.taps = field<std::vector<std::int64_t>>(doc, "/taps", file);
  if (doc.contains(nlohmann::json::json_pointer("/decoding/causality"))) {
    g.causality = field<std::string>(doc, "/decoding/causality", file);
    model::parse_causality_reading(g.causality, file + ": /decoding/causality");
    g.drafter_causal = field<std::vector<bool>>(doc, "/decoding/drafter_causal", file);
  }
  if (doc.contains(nlohmann::json::json_pointer("/decoding/drafter_architecture"))) {
    g.drafter_architecture = field<std::string>(doc, "/decoding/drafter_architecture", file);
    if (g.drafter_architecture != "dflash" && g.drafter_architecture != "dflash2")
      throw Error(file, "golden decoding.drafter_architecture \"" + g.drafter_architecture +
                            "\" is not dflash or dflash2");
  }
  g.check_params = field<nlohmann::json>(doc, "/check_params", file);
  if (!g.check_params.is_object())
    throw Error(file, "golden check_params must be an object of per-check parameter objects");
  for (const auto& [check, params] : g.check_params.items())
    if (!params.is_object())
      throw Error(file, "golden check_params." + check + " must be an object");
  return g;
}

namespace {

std::string file_sha256(const fs::path& file) {
  std::ifstream in(file, std::ios::binary);
  if (!in) throw Error(file.string(), "cannot read the file to hash it");
  io::Sha256 h;
  std::vector<char> buf(1 << 20);
  while (in) {
    in.read(buf.data(), static_cast<std::streamsize>(buf.size()));
    h.update(std::string_view(buf.data(), static_cast<std::size_t>(in.gcount())));
  }
  return h.hex_digest();
}

// Appends `n` bytes at `offset` of `in` to `h`.
void hash_range(std::ifstream& in, std::uint64_t offset, std::uint64_t n, io::Sha256& h) {
  std::string buf(n, '\0');
  in.seekg(static_cast<std::streamoff>(offset));
  in.read(buf.data(), static_cast<std::streamsize>(n));
  h.update(std::string_view(buf.data(), static_cast<std::size_t>(in.gcount())));
  in.clear();
}

}  // namespace

nlohmann::json directory_hashes(const fs::path& dir) {
  io::require_input_directory(dir, "give the checkpoint directory");
  std::map<std::string, std::string> hashes;
  for (const auto& entry : fs::directory_iterator(dir))
    if (entry.is_regular_file())
      hashes[entry.path().filename().string()] = file_sha256(entry.path());
  return hashes;
}

nlohmann::json target_identity(const fs::path& dir) {
  // A wrong path is the user's one-line error here, not std::filesystem's text.
  io::require_input_directory(dir, "give the checkpoint directory");
  std::vector<fs::path> shards;
  for (const auto& entry : fs::directory_iterator(dir))
    if (entry.is_regular_file() && entry.path().extension() == ".safetensors")
      shards.push_back(entry.path());
  std::sort(shards.begin(), shards.end());
  io::Sha256 h;
  constexpr std::uint64_t kSamples = 16, kSampleBytes = 64 << 10;
  for (const auto& shard : shards) {
    std::ifstream in(shard, std::ios::binary);
    if (!in) throw Error(shard.string(), "cannot read the file to fingerprint it");
    const std::uint64_t size = fs::file_size(shard);
    h.update(shard.filename().string() + "\n" + std::to_string(size) + "\n");
    // The header's length: the file's first 8 bytes, little-endian (safetensors).
    unsigned char length[8] = {};
    in.read(reinterpret_cast<char*>(length), 8);
    in.clear();
    std::uint64_t header = 0;
    for (int i = 7; i >= 0; --i) header = (header << 8) | length[i];
    const std::uint64_t data = std::min(size, 8 + std::min(header, size));
    hash_range(in, 0, data, h);
    const std::uint64_t span = size - data;
    for (std::uint64_t k = 0; k < kSamples && span > 0; ++k)
      hash_range(in, data + span * k / kSamples, std::min(kSampleBytes, span), h);
  }
  return {{"config_sha256", config_sha256(dir)}, {"weights_fingerprint", h.hex_digest()}};
}

std::string config_sha256(const fs::path& dir) {
  const fs::path config = dir / "config.json";
  return fs::exists(config) ? file_sha256(config) : std::string();
}

std::optional<std::string> identity_difference(const nlohmann::json& recorded,
                                               const nlohmann::json& mine, const fs::path& dir,
                                               const std::string& recorded_by) {
  auto brief = [](const std::string& sha) { return sha.substr(0, 12) + "…"; };
  const bool weights = std::any_of(
      fs::directory_iterator(dir), fs::directory_iterator(), [](const fs::directory_entry& e) {
        return e.is_regular_file() && e.path().extension() == ".safetensors";
      });
  if (mine["config_sha256"] != recorded["config_sha256"])
    return "config.json sha256 " + brief(mine["config_sha256"].get<std::string>()) + " vs " +
           recorded_by + " " + brief(recorded["config_sha256"].get<std::string>());
  if (weights && mine["weights_fingerprint"] != recorded["weights_fingerprint"])
    return "weights fingerprint " + brief(mine["weights_fingerprint"].get<std::string>()) + " vs " +
           recorded_by + " " + brief(recorded["weights_fingerprint"].get<std::string>()) + " (" +
           kFingerprintCovers + ")";
  return std::nullopt;
}

std::optional<std::string> target_difference(const Golden& golden, const fs::path& target) {
  auto brief = [](const std::string& sha) { return sha.substr(0, 12) + "…"; };
  if (golden.target_identity.is_object())
    return identity_difference(golden.target_identity, target_identity(target), target,
                               "the golden's");
  // An older golden: only the config's hash is cheap to compare.
  if (golden.target_files.contains("config.json") &&
      golden.target_files["config.json"].is_string() && fs::exists(target / "config.json")) {
    const std::string mine = file_sha256(target / "config.json");
    if (mine != golden.target_files["config.json"])
      return "config.json sha256 " + brief(mine) + " vs the golden's " +
             brief(golden.target_files["config.json"].get<std::string>());
  }
  return std::nullopt;
}

}  // namespace draftgate::golden
