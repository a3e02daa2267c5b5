#pragma once
// The identity of the checkpoints a training step record was made with, carried in its
// __metadata__ (optional, additive to draftgate.step_record/1):
//   target_config_sha256, target_weights_fingerprint    golden::target_identity() of the target
//   drafter_config_sha256, drafter_weights_fingerprint  the same of the drafter checkpoint
// — the identity goldens carry (provenance.target.identity), so a record made on another target of
// the same shapes is refused by name before any check computes a number with it. The Python writer
// (python/draftgate_records.py, target_dir= / drafter_dir=) computes the same hashes.
// Torch-free: reads the safetensors header only.

#include <filesystem>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>

namespace draftgate::golden {

struct RecordIdentity {
  nlohmann::json target;   // {"config_sha256", "weights_fingerprint"}, or null when not recorded
  nlohmann::json drafter;  // the same for the drafter
};

// The identities in `record`'s metadata; draftgate::Error naming the record when a key is not a
// SHA-256 (64 lowercase hex digits; a config sha256 may be empty: a directory without config.json)
// or one of a pair is missing.
RecordIdentity read_record_identity(const std::filesystem::path& record);

// "config.json sha256 1a2b3c4d5e6f…, weights fingerprint …" for messages.
std::string describe_identity(const nlohmann::json& identity);

// Nullopt when `checkpoint` (a directory) has `recorded` as its identity or nothing is recorded;
// otherwise one line naming both identities, e.g. "made with target config.json sha256 …, weights
// fingerprint …; --target DIR is config.json sha256 …, weights fingerprint …". `role` is "target"
// or "drafter", `flag` the flag that named the checkpoint.
std::optional<std::string> identity_mismatch(const nlohmann::json& recorded,
                                             const std::filesystem::path& checkpoint,
                                             const std::string& role, const std::string& flag);

}  // namespace draftgate::golden
