#pragma once
// Block-quantized FP8 weights (io/fp8_scheme.h) to and from float32: what a streamed layer reads,
// and what make-target writes for tests.

#include <ATen/ATen.h>

#include "draftgate/io/fp8_scheme.h"

namespace draftgate::model {

// The float32 weight of F8_E4M3 `codes` (kByte [..., out, in]) and their `scale_inv` (float32
// [..., ceil(out / block_out), ceil(in / block_in)]): value(code) x scale_inv of the code's block,
// the last, partial blocks included; leading dimensions (fused experts) index matrices of their
// own blocks. Shapes are the caller's to check (WeightLoader names the tensor).
at::Tensor dequantize_fp8_blocks(const at::Tensor& codes, const at::Tensor& scale_inv,
                                 const io::Fp8Scheme& scheme);

struct Fp8Blocks {
  at::Tensor codes;      // kByte [out, in], F8_E4M3 bytes
  at::Tensor scale_inv;  // float32 [ceil(out / block_out), ceil(in / block_in)]
};

// transformers' Fp8Quantize recipe (integrations/finegrained_fp8.py, commit in io/fp8_scheme.h),
// in float32: per block scale = 448 / max|w| (1 for an all-zero block), codes = the nearest e4m3 of
// clamp(w x scale, -448, 448), scale_inv = 1 / scale; partial edge blocks are blocks of their own.
Fp8Blocks quantize_fp8_blocks(const at::Tensor& weight, const io::Fp8Scheme& scheme);

}  // namespace draftgate::model
