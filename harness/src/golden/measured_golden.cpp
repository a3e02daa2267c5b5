// Goldens recorded from a serving engine's measurement of the reference drafter (`draftgate golden
// record --measured`): the measured-τ object itself, embedded, so min_tau can compare a later
// measurement with it like for like (tau::unlike).

#include <ctime>

#include "draftgate/error.h"
#include "draftgate/golden/golden.h"

namespace draftgate::golden {

nlohmann::json measured_golden_json(const tau::MeasuredTau& m) {
  const std::time_t t = std::time(nullptr);
  char now[32];
  std::strftime(now, sizeof now, "%Y-%m-%dT%H:%M:%SZ", std::gmtime(&t));
  return {{"schema", kGoldenSchema},
          {"measured", tau::to_json(m)},
          {"check_params", nlohmann::json::object()},
          {"provenance",
           {{"measured_tau_file", m.path},
            {"draftgate_version", DRAFTGATE_VERSION},
            {"recorded_at", now}}}};
}

Golden measured_golden_from_json(const nlohmann::json& doc, const std::string& file) {
  for (const auto& [key, value] : doc.items())
    if (key != "schema" && key != "measured" && key != "check_params" && key != "provenance")
      throw Error(file, "a measured golden has no field \"" + key + "\"");
  Golden g;
  g.path = file;
  tau::MeasuredTau m = tau::measured_tau_from_json(doc.at("measured"), file);
  m.path = file;
  g.block_size = m.block_size();
  if (m.prompt_set_sha256) g.prompt_set_sha256 = *m.prompt_set_sha256;
  g.prompt_set_sha256_of_file = m.prompt_set_sha256_of_file;
  g.tau_pooled = m.tau_pooled;
  g.tau_macro = m.tau_macro.value_or(0.0);
  g.per_position_acceptance = m.per_position_acceptance;
  if (!doc.contains("check_params") || !doc.at("check_params").is_object())
    throw Error(file, "golden check_params must be an object of per-check parameter objects");
  g.check_params = doc.at("check_params");
  for (const auto& [check, params] : g.check_params.items())
    if (!params.is_object())
      throw Error(file, "golden check_params." + check + " must be an object");
  g.measured = std::move(m);
  return g;
}

}  // namespace draftgate::golden
