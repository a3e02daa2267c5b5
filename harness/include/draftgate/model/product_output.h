#pragma once
// What a product of x with a bf16 weight returns (amx_matmul.h, few_row_matmul.h).

namespace draftgate::model {

// In x's dtype, or (a bf16 x) rounded to bf16 and stored as float32 — the values of
// product(x, w).to(at::kFloat) in one pass (a verify block's logits, where the bf16 product and
// its float32 copy were two fresh allocations and a pass over both).
enum class ProductOutput { kXDtype, kWidened };

}  // namespace draftgate::model
