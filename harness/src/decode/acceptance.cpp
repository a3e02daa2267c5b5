#include "draftgate/decode/acceptance.h"

#include <numeric>

namespace draftgate::decode {

AcceptanceStats summarize(const std::vector<PromptRun>& runs, std::int64_t block_size) {
  AcceptanceStats s;
  s.histogram.assign(block_size + 1, 0);
  std::vector<std::int64_t> accepted_at(block_size, 0);
  double macro_sum = 0;
  std::int64_t committed = 0;
  for (const auto& r : runs) {
    const auto steps = static_cast<std::int64_t>(r.acceptance.size());
    const std::int64_t run_committed =
        std::accumulate(r.acceptance.begin(), r.acceptance.end(), std::int64_t{0});
    if (steps > 0) {
      macro_sum += static_cast<double>(run_committed) / static_cast<double>(steps);
      s.prompts_with_steps += 1;
    }
    for (auto a : r.acceptance) s.histogram[std::min(a, block_size)] += 1;
    for (std::int64_t d = 1;
         d < block_size && d < static_cast<std::int64_t>(r.accepted_at_depth.size()); ++d)
      accepted_at[d] += r.accepted_at_depth[d];
    committed += run_committed;
    s.steps += steps;
    s.drafted += r.drafted;
    s.accepted += run_committed - steps;
    s.generated_tokens += static_cast<std::int64_t>(r.output.size());
    s.target_forwards += r.target_forwards;
    s.seconds += r.seconds;
    s.target_seconds += r.target_seconds;
    s.drafter_seconds += r.drafter_seconds;
  }
  s.tau_macro =
      s.prompts_with_steps > 0 ? macro_sum / static_cast<double>(s.prompts_with_steps) : 0.0;
  s.tau_pooled = s.steps > 0 ? static_cast<double>(committed) / static_cast<double>(s.steps) : 0.0;
  for (std::int64_t d = 1; d < block_size; ++d)
    s.per_position_acceptance.push_back(
        s.steps > 0 ? static_cast<double>(accepted_at[d]) / static_cast<double>(s.steps) : 0.0);
  return s;
}

nlohmann::json to_json(const AcceptanceStats& s) {
  nlohmann::json histogram = nlohmann::json::object();
  for (std::size_t k = 1; k < s.histogram.size(); ++k)
    histogram[std::to_string(k)] = s.histogram[k];
  return {{"tau_macro", s.tau_macro},
          {"tau_pooled", s.tau_pooled},
          {"histogram", histogram},
          {"per_position_acceptance", s.per_position_acceptance},
          {"prompts_with_steps", s.prompts_with_steps},
          {"steps", s.steps},
          {"drafted", s.drafted},
          {"accepted", s.accepted},
          {"generated_tokens", s.generated_tokens},
          {"target_forwards", s.target_forwards}};
}

nlohmann::json timing_json(const AcceptanceStats& s) {
  return {{"seconds", s.seconds},
          {"target_seconds", s.target_seconds},
          {"drafter_seconds", s.drafter_seconds},
          {"tokens_per_second",
           s.seconds > 0 ? static_cast<double>(s.generated_tokens) / s.seconds : 0.0}};
}

nlohmann::json to_json(const PromptRun& r) {
  const std::int64_t committed =
      std::accumulate(r.acceptance.begin(), r.acceptance.end(), std::int64_t{0});
  nlohmann::json out = {
      {"id", r.id},
      {"steps", r.acceptance.size()},
      {"tau", r.acceptance.empty()
                  ? 0.0
                  : static_cast<double>(committed) / static_cast<double>(r.acceptance.size())},
      {"acceptance", r.acceptance},
      {"drafted", r.drafted},
      {"generated_tokens", r.output.size()},
      {"output_ids", r.output}};
  if (!r.drafts.empty()) out["drafts"] = r.drafts;
  return out;
}

}  // namespace draftgate::decode
