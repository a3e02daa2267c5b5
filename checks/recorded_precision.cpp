#include "checks/recorded_precision.h"

namespace draftgate::checks {

at::ScalarType RecordedPrecision::engine_dtype() const {
  return computed == train::ComputePrecision::kF32 ? at::kFloat : at::kBFloat16;
}

std::string RecordedPrecision::describe() const {
  std::string s = std::string("computed in ") + train::precision_name(computed);
  if (!declared)
    s += " (" + key + " not recorded: assumed the coarsest precision trainers use; record " + key +
         "=f32 to be judged at float32)";
  else if (computed == train::ComputePrecision::kF16)
    s += " (judged against the bf16 spread, which bounds f16's)";
  // A labels-only record keeps no values, so no storage dtype to name.
  return s + (stored == "F32" || stored == "BF16" ? ", stored " + stored : ", recorded as labels");
}

at::Tensor RecordedPrecision::as_recorded(const at::Tensor& at_precision) const {
  const at::Tensor f = at_precision.to(at::kCPU).to(at::kFloat);
  if (stored == "BF16") return f.to(at::kBFloat16).to(at::kFloat);
  return f;
}

std::vector<Param> precision_budget_params(const std::string& floor, const std::string& metric,
                                           double factor) {
  return {
      number_param(floor, 1e-3, 0, 1e3,
                   metric + " budget floor (what any float32 implementation may differ by)"),
      number_param("precision_factor", factor, 1, 1e3,
                   "budget = this × the " + metric + " the trainer's precision explains"),
      number_param("margin_factor", 4.0, 0, 1e3,
                   "top-1 judged where the top-2 margin exceeds this × the precision's deviation"),
      number_param("min_top1", 0.99, 0, 1, "top-1 agreement outside near-ties")};
}

RecordedPrecision recorded_precision(const train::StepRecord& record, const std::string& tensor,
                                     const std::optional<train::ComputePrecision>& declared,
                                     const std::string& key) {
  RecordedPrecision p;
  p.key = key;
  if (auto it = record.stored_dtypes.find(tensor); it != record.stored_dtypes.end())
    p.stored = it->second;
  p.declared = declared.has_value();
  if (declared) p.computed = *declared;
  return p;
}

}  // namespace draftgate::checks
