#include "draftgate/golden/golden.h"

#include <fstream>
#include <map>

#include "draftgate/decode/decode_config.h"
#include "draftgate/error.h"
#include "draftgate/io/json_util.h"
#include "draftgate/io/sha256.h"

namespace draftgate::golden {
namespace fs = std::filesystem;

namespace {

// Reads the field at `pointer` as T; draftgate::Error naming the file and field otherwise.
template <class T>
T field(const nlohmann::json& doc, const std::string& pointer, const std::string& file) {
  const nlohmann::json::json_pointer ptr(pointer);
  if (!doc.contains(ptr)) throw Error(file, "golden has no " + pointer);
  try {
    return doc.at(ptr).get<T>();
  } catch (const nlohmann::json::exception&) {
    throw Error(file, "golden field " + pointer + " has the wrong type: " + doc.at(ptr).dump());
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
  g.mode = field<std::string>(doc, "/decoding/mode", file);
  if (g.mode != "dflash" && g.mode != "ddtree")
    throw Error(file, "golden decoding mode \"" + g.mode + "\" is not dflash or ddtree");
  g.block_size = field<std::int64_t>(doc, "/decoding/block_size", file);
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
  g.tau_macro = field<double>(doc, "/tau/tau_macro", file);
  g.tau_pooled = field<double>(doc, "/tau/tau_pooled", file);
  if (!(g.tau_macro >= 1.0) || !(g.tau_pooled >= 1.0))
    throw Error(file, "golden τ below 1 (τ counts the bonus token, so it is at least 1)");
  g.per_position_acceptance = field<std::vector<double>>(doc, "/tau/per_position_acceptance", file);
  g.layout_prefix = field<std::string>(doc, "/target_layout/prefix", file);
  g.num_layers = field<std::int64_t>(doc, "/target_layout/num_layers", file);
  g.layer_types = field<std::vector<std::string>>(doc, "/target_layout/layer_types", file);
  g.taps = field<std::vector<std::int64_t>>(doc, "/taps", file);
  g.check_params = field<nlohmann::json>(doc, "/check_params", file);
  if (!g.check_params.is_object())
    throw Error(file, "golden check_params must be an object of per-check parameter objects");
  for (const auto& [check, params] : g.check_params.items())
    if (!params.is_object())
      throw Error(file, "golden check_params." + check + " must be an object");
  return g;
}

nlohmann::json directory_hashes(const fs::path& dir) {
  std::map<std::string, std::string> hashes;
  for (const auto& entry : fs::directory_iterator(dir)) {
    if (!entry.is_regular_file()) continue;
    std::ifstream in(entry.path(), std::ios::binary);
    if (!in) throw Error(entry.path().string(), "cannot read the file to hash it");
    io::Sha256 h;
    std::vector<char> buf(1 << 20);
    while (in) {
      in.read(buf.data(), static_cast<std::streamsize>(buf.size()));
      h.update(std::string_view(buf.data(), static_cast<std::size_t>(in.gcount())));
    }
    hashes[entry.path().filename().string()] = h.hex_digest();
  }
  return hashes;
}

}  // namespace draftgate::golden
