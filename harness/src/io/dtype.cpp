#include "draftgate/io/dtype.h"

#include <array>
#include <utility>

#include "draftgate/io/float8.h"

namespace draftgate::io {
namespace {

struct DTypeRow {
  DType dtype;
  std::string_view name;
  std::size_t size;
};

constexpr std::array<DTypeRow, 18> kDTypes{{
    {DType::F64, "F64", 8},
    {DType::F32, "F32", 4},
    {DType::F16, "F16", 2},
    {DType::BF16, "BF16", 2},
    {DType::I64, "I64", 8},
    {DType::I32, "I32", 4},
    {DType::I16, "I16", 2},
    {DType::I8, "I8", 1},
    {DType::U64, "U64", 8},
    {DType::U32, "U32", 4},
    {DType::U16, "U16", 2},
    {DType::U8, "U8", 1},
    {DType::BOOL, "BOOL", 1},
    {DType::F8_E4M3, "F8_E4M3", 1},
    {DType::F8_E5M2, "F8_E5M2", 1},
    {DType::F8_E8M0, "F8_E8M0", 1},
    {DType::F8_E4M3FNUZ, "F8_E4M3FNUZ", 1},
    {DType::F8_E5M2FNUZ, "F8_E5M2FNUZ", 1},
}};

const DTypeRow& row(DType dtype) { return kDTypes[static_cast<std::size_t>(dtype)]; }

}  // namespace

std::size_t dtype_size(DType dtype) { return row(dtype).size; }
std::string_view dtype_name(DType dtype) { return row(dtype).name; }

bool is_floating_point(DType dtype) {
  return dtype == DType::F64 || dtype == DType::F32 || dtype == DType::F16 ||
         dtype == DType::BF16 || is_float8(dtype);
}

std::optional<DType> parse_dtype(std::string_view name) {
  for (const auto& r : kDTypes)
    if (r.name == name) return r.dtype;
  return std::nullopt;
}

}  // namespace draftgate::io
