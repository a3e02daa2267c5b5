#include "checks/drafter_provenance.h"

#include <system_error>

#include "draftgate/error.h"
#include "draftgate/golden/golden.h"
#include "draftgate/golden/record_identity.h"
#include "draftgate/io/artifact_kind.h"
#include "draftgate/io/checkpoint.h"
#include "draftgate/io/config.h"

namespace draftgate::checks {

namespace fs = std::filesystem;

std::optional<std::string> recorded_target_note(const Artifacts& a) {
  if (!a.drafter || !a.target) return std::nullopt;
  const fs::path config = *a.drafter / "config.json";
  const io::ModelConfig drafter = io::ModelConfig::load(config);
  const nlohmann::json& root = drafter.root();
  // A speculators drafter names its verifier (the target it was trained against); other formats'
  // _name_or_path says where the writer's config came from (SpecForge's generated configs: the
  // target).
  nlohmann::json verifier;
  if (const auto sc = root.find("speculators_config"); sc != root.end() && sc->is_object())
    if (const auto v = sc->find("verifier"); v != sc->end() && v->is_object())
      verifier = v->value("name_or_path", nlohmann::json());
  const bool by_verifier = verifier.is_string() && !verifier.get<std::string>().empty();
  const auto it = root.find("_name_or_path");
  if (!by_verifier && (it == root.end() || !it->is_string() || it->get<std::string>().empty()))
    return std::nullopt;
  const std::string key =
      by_verifier ? "speculators_config.verifier.name_or_path" : "_name_or_path";
  const std::string recorded = by_verifier ? verifier.get<std::string>() : it->get<std::string>();
  const fs::path dir = recorded;
  std::error_code ec;
  const bool local_target = dir.is_absolute() && fs::is_directory(dir, ec) &&
                            io::recognize_artifact(dir).kind == io::ArtifactKind::kTarget;
  if (!local_target)
    return config.string() + " records " + key + " \"" + recorded + "\"" +
           (by_verifier ? std::string(" (the target it was trained against)")
                        : " (where its writer's config came from; SpecForge's generated configs "
                          "name the target)") +
           ", not a target checkpoint on this machine, so it was not compared with --target " +
           a.target->string();
  if (fs::equivalent(dir, *a.target, ec)) return std::nullopt;
  // The recorded directory is not the user's input: one it cannot read is a note, not an error.
  bool recorded_weights = false;
  nlohmann::json recorded_id;
  try {
    recorded_weights = !io::Checkpoint::open(dir).metadata_only();
    recorded_id = golden::target_identity(dir);
  } catch (const Error& e) {
    return config.string() + " records " + key + " \"" + recorded +
           "\", which could not be compared with --target: " + e.one_line();
  }
  const nlohmann::json given_id = golden::target_identity(*a.target);
  // A metadata-only copy (config.json and the index) has no weights to fingerprint: configs only.
  const bool weights = recorded_weights && !io::Checkpoint::open(*a.target).metadata_only();
  if (recorded_id["config_sha256"] == given_id["config_sha256"] &&
      (!weights || recorded_id["weights_fingerprint"] == given_id["weights_fingerprint"]))
    return std::nullopt;
  throw Error(config.string(),
              "this drafter's config was generated from the target " + recorded + " (" + key +
                  "), " + golden::describe_identity(recorded_id) + ", but --target " +
                  a.target->string() + " is " + golden::describe_identity(given_id),
              "give the target the drafter was trained with; if this target is meant (a "
              "quantized or fine-tuned copy), remove " +
                  key + " from the drafter's config.json: it only says where it came from");
  return std::nullopt;
}

void refuse_foreign_drafter(const fs::path& target, const fs::path& drafter) {
  io::Checkpoint::open(target);
  io::Checkpoint::open(drafter);
  Artifacts a;
  a.target = target;
  a.drafter = drafter;
  recorded_target_note(a);
}

}  // namespace draftgate::checks
