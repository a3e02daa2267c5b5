#pragma once
// safetensors element types, as named by the format spec.

#include <cstddef>
#include <optional>
#include <string_view>

namespace draftgate::io {

enum class DType {
  F64,
  F32,
  F16,
  BF16,
  I64,
  I32,
  I16,
  I8,
  U64,
  U32,
  U16,
  U8,
  BOOL,
  F8_E4M3,
  F8_E5M2,
  F8_E8M0,
  F8_E4M3FNUZ,
  F8_E5M2FNUZ,
};

// Bytes per element (every supported dtype is byte-sized or larger).
std::size_t dtype_size(DType dtype);
std::string_view dtype_name(DType dtype);
// Whether elements are floating point: F64, F32, F16, BF16 and the five F8_* types.
bool is_floating_point(DType dtype);
// Parses a spec name ("BF16", "F8_E4M3", ...). Sub-byte types (F4, F6_*) and unknown names give
// nullopt.
std::optional<DType> parse_dtype(std::string_view name);

}  // namespace draftgate::io
