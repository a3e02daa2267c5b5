#include "draftgate/golden/record_identity.h"

#include <algorithm>

#include "draftgate/error.h"
#include "draftgate/golden/golden.h"
#include "draftgate/io/safetensors.h"

namespace draftgate::golden {
namespace fs = std::filesystem;

namespace {

bool is_sha256(const std::string& s) {
  return s.size() == 64 && std::all_of(s.begin(), s.end(), [](char c) {
           return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f');
         });
}

// One role's pair of keys: null when neither is recorded.
nlohmann::json identity_of(const std::map<std::string, std::string>& metadata,
                           const std::string& role, const std::string& file) {
  const std::string config_key = role + "_config_sha256",
                    weights_key = role + "_weights_fingerprint";
  const auto config = metadata.find(config_key), weights = metadata.find(weights_key);
  if (config == metadata.end() && weights == metadata.end()) return nullptr;
  if (config == metadata.end() || weights == metadata.end())
    throw Error(
        file,
        "__metadata__ has \"" + (config == metadata.end() ? weights_key : config_key) +
            "\" without \"" + (config == metadata.end() ? config_key : weights_key) + "\"",
        "write both (draftgate_records.write_step_record computes them from " + role + "_dir=)");
  if (!config->second.empty() && !is_sha256(config->second))
    throw Error(file,
                "__metadata__ \"" + config_key + "\" is not a SHA-256 (64 lowercase hex digits)");
  if (!is_sha256(weights->second))
    throw Error(file,
                "__metadata__ \"" + weights_key + "\" is not a SHA-256 (64 lowercase hex digits)");
  return {{"config_sha256", config->second}, {"weights_fingerprint", weights->second}};
}

std::string brief(const std::string& sha) { return sha.substr(0, 12) + "…"; }

}  // namespace

RecordIdentity read_record_identity(const fs::path& record) {
  const auto file = io::SafetensorsFile::open(record);
  const auto& metadata = file->header().metadata;
  return {identity_of(metadata, "target", record.string()),
          identity_of(metadata, "drafter", record.string())};
}

std::string describe_identity(const nlohmann::json& identity) {
  const std::string config = identity["config_sha256"].get<std::string>();
  return (config.empty() ? std::string("no config.json") : "config.json sha256 " + brief(config)) +
         ", weights fingerprint " + brief(identity["weights_fingerprint"].get<std::string>());
}

std::optional<std::string> identity_mismatch(const nlohmann::json& recorded,
                                             const fs::path& checkpoint, const std::string& role,
                                             const std::string& flag) {
  if (recorded.is_null()) return std::nullopt;
  const nlohmann::json mine = target_identity(checkpoint);  // read once: it samples every shard
  if (!identity_difference(recorded, mine, checkpoint, "the recorded")) return std::nullopt;
  return "made with the " + role + " of " + describe_identity(recorded) + ", but " + flag + " " +
         checkpoint.string() + " is " + describe_identity(mine) +
         (mine["config_sha256"] == recorded["config_sha256"]
              ? std::string(" (") + kFingerprintCovers + ")"
              : std::string());
}

}  // namespace draftgate::golden
