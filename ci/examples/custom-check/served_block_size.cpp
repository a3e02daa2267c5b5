// served_block_size: the drafter's block size is one the team's serving deployment is configured
// for (a drafter trained with another block size serves with a lower τ or not at all).

#include <draftgate/arch/drafter.h>
#include <draftgate/checks/check.h>
#include <draftgate/io/config.h>

#include <algorithm>

namespace {

using namespace draftgate::checks;

class ServedBlockSize : public Check {
 public:
  std::string name() const override { return "served_block_size"; }
  std::string summary() const override {
    return "the drafter's block size is one the serving deployment uses";
  }
  std::string needs() const override { return "drafter"; }
  std::vector<Param> params() const override {
    return {integer_list_param("allowed", nlohmann::json::array({16}), 1, 1024,
                               "the block sizes the deployment serves")};
  }
  CheckResult run(const Artifacts& a, const nlohmann::json& p) const override {
    if (!a.drafter) return skip(name(), "needs a drafter checkpoint (--drafter)");
    const auto config = draftgate::model::DrafterConfig::from(
        draftgate::io::ModelConfig::load(*a.drafter / "config.json"));
    CheckResult r;
    r.measured["block_size"] = config.block_size;
    r.thresholds["allowed"] = p["allowed"];
    const auto allowed = p["allowed"].get<std::vector<std::int64_t>>();
    std::vector<std::string> problems;
    if (std::find(allowed.begin(), allowed.end(), config.block_size) == allowed.end())
      problems.push_back("the drafter's block_size is " + std::to_string(config.block_size) +
                         ", the deployment serves " + p["allowed"].dump() +
                         "; retrain with a served block size or add it to the deployment");
    return conclude(r, problems, "block_size " + std::to_string(config.block_size) + " is served");
  }
};

const bool registered = register_as<ServedBlockSize>();

}  // namespace
