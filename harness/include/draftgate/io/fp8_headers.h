#pragma once
// What a fine-grained FP8 weight's safetensors headers must say before its blocks can be
// dequantized (fp8_scheme.h): stored F8_E4M3, a linear's 2-D `.weight` or fused experts' 3-D
// `..._proj`, not a module the config leaves unconverted, beside a float scale of one value per
// block. Read from the headers alone, so `probe` refuses what loading would.

#include <string>

#include "draftgate/io/checkpoint.h"
#include "draftgate/io/fp8_scheme.h"

namespace draftgate::io {

// draftgate::Error naming the file and the tensor for the first thing `name` (a float8 tensor of
// `checkpoint`) lacks under `scheme`.
void require_fp8_weight_headers(const Checkpoint& checkpoint, const std::string& name,
                                const Fp8Scheme& scheme);

}  // namespace draftgate::io
