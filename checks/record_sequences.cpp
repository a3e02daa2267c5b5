#include "checks/record_sequences.h"

#include <cstddef>

namespace draftgate::checks {
namespace {

// Failing sequences named in the message before "and K more".
constexpr std::size_t kNamedFailures = 3;
// Sequences not judged named in the message before "and K more" (all in measured): packed rows
// whose padding restarts position_ids make each pad token a one-token document.
constexpr std::size_t kNamedUnjudged = 5;

}  // namespace

CheckResult judge_each_sequence(const train::StepBatch& batch,
                                const std::function<CheckResult(const train::StepRecord&)>& judge) {
  if (!batch.batched) return judge(batch.sequences.front());
  std::vector<CheckResult> results;
  std::vector<std::size_t> failed, passed;
  for (std::size_t i = 0; i < batch.sequences.size(); ++i) {
    results.push_back(judge(batch.sequences[i]));
    if (results.back().status == Status::kFail) failed.push_back(i);
    if (results.back().status == Status::kPass) passed.push_back(i);
  }
  const std::size_t shown = !failed.empty() ? failed.front() : !passed.empty() ? passed.front() : 0;
  CheckResult merged = results[shown];
  const std::string count = std::to_string(results.size()) + " sequences of " +
                            std::to_string(batch.rows) +
                            (batch.rows == 1 ? " batch row" : " batch rows");
  if (!failed.empty()) {
    merged.message = std::to_string(failed.size()) + " of " + count + " fail: ";
    for (std::size_t k = 0; k < failed.size() && k < kNamedFailures; ++k)
      merged.message +=
          (k ? "; " : "") + batch.names[failed[k]] + ": " + results[failed[k]].message;
    if (failed.size() > kNamedFailures)
      merged.message += "; and " + std::to_string(failed.size() - kNamedFailures) + " more";
  } else if (!passed.empty()) {
    merged.message = std::to_string(passed.size()) + " of " + count + " pass (" +
                     batch.names[shown] + ": " + merged.message + ")";
    if (passed.size() < results.size())
      merged.message += "; " + std::to_string(results.size() - passed.size()) + " skipped";
  } else {
    merged.message = "every sequence skipped (" + batch.names[shown] + ": " + merged.message + ")";
  }
  if (!batch.unjudged.empty()) {
    std::string names;
    for (std::size_t k = 0; k < batch.unjudged.size() && k < kNamedUnjudged; ++k)
      names += (k ? ", " : "") + batch.unjudged[k];
    if (batch.unjudged.size() > kNamedUnjudged)
      names += " and " + std::to_string(batch.unjudged.size() - kNamedUnjudged) +
               " more (measured.sequences_not_judged lists them)";
    merged.message += "; not judged: " + names;
  }
  merged.measured["sequences"] = nlohmann::json::array();
  for (std::size_t i = 0; i < results.size(); ++i)
    merged.measured["sequences"].push_back({{"sequence", batch.names[i]},
                                            {"status", status_name(results[i].status)},
                                            {"message", results[i].message}});
  merged.measured["sequences_not_judged"] = batch.unjudged;
  merged.measured["batch_rows"] = batch.rows;
  return merged;
}

}  // namespace draftgate::checks
