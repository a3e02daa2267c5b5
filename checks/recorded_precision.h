#pragma once
// The precision a trainer computed a recorded tensor in, and the deviation that precision explains.
// A recorded tensor is judged against the spread that its computation's precision produces, which
// is measured — the same computation run at that precision and at float32 — not guessed from how
// the tensor was stored: a bf16 trainer that saves `.float()` writes F32 tensors that carry bf16
// error.

#include <ATen/ATen.h>

#include <optional>
#include <string>

#include "checks/check.h"
#include "draftgate/train/step_record.h"

namespace draftgate::checks {

struct RecordedPrecision {
  train::ComputePrecision computed = train::ComputePrecision::kBF16;
  std::string stored = "F32";  // the safetensors dtype the tensor was written in
  bool declared = false;       // the record's metadata says `computed`
  std::string key;             // the metadata key ("teacher_dtype")

  // The dtype draftgate's engine runs to reproduce that precision: f32, or bf16 for bf16 and f16
  // (bf16 carries 3 fewer mantissa bits than f16, so its spread bounds f16's).
  at::ScalarType engine_dtype() const;
  // "computed in bf16 (teacher_dtype not recorded: assumed the coarsest a trainer uses), stored
  // F32"
  std::string describe() const;
  // `reference` (float32) as the recorded tensor would hold it had it been computed exactly:
  // `at_precision` (the computation run at engine_dtype()) rounded to the stored dtype.
  at::Tensor as_recorded(const at::Tensor& at_precision) const;
};

// The parameters of a budget judged against a precision: `floor` (what any float32
// implementation may differ by), precision_factor (the budget is that × what the precision
// explains, measured), margin_factor (top-1 judged where the top-2 margin exceeds that × the
// precision's deviation) and min_top1.
std::vector<Param> precision_budget_params(const std::string& floor, const std::string& metric,
                                           double factor);

// What `record` says about `tensor`'s precision (declared under `key`); undeclared = bf16, the
// coarsest precision trainers compute in, so a correct run is never failed for it.
RecordedPrecision recorded_precision(const train::StepRecord& record, const std::string& tensor,
                                     const std::optional<train::ComputePrecision>& declared,
                                     const std::string& key);

}  // namespace draftgate::checks
