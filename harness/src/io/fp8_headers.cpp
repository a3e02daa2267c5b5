#include "draftgate/io/fp8_headers.h"

#include <string_view>
#include <vector>

#include "draftgate/error.h"
#include "draftgate/format.h"

namespace draftgate::io {
namespace {

bool ends_with(std::string_view s, std::string_view suffix) {
  return s.size() >= suffix.size() && s.substr(s.size() - suffix.size()) == suffix;
}

}  // namespace

void require_fp8_weight_headers(const Checkpoint& checkpoint, const std::string& name,
                                const Fp8Scheme& scheme) {
  const TensorInfo& info = *checkpoint.info(name);
  const std::string file = checkpoint.file_of(name)->path().string();
  const std::string tensor = "tensor \"" + name + "\"";
  const std::string stored = std::string(dtype_name(info.dtype));
  if (info.dtype != DType::F8_E4M3)
    throw Error(file,
                tensor + " is stored " + stored + "; fine-grained FP8 (fmt e4m3) stores F8_E4M3");
  // A linear's `<module>.weight` [out, in], or a fused experts tensor `<module>.<x>_proj`
  // [experts, out, in] of module `...experts` (transformers' FP8Experts: blocks per expert).
  const bool linear = info.shape.size() == 2 && ends_with(name, ".weight");
  const bool fused = info.shape.size() == 3 && ends_with(name, "_proj") &&
                     name.find(".experts.") != std::string::npos &&
                     ends_with(name.substr(0, name.rfind('.')), ".experts");
  if (!linear && !fused)
    throw Error(file, tensor + " is " + stored + " " + format_shape(info.shape) +
                          ", but FP8 blocks quantize the 2-D weight of a linear module or the "
                          "3-D tensor of fused experts only");
  const std::string module = name.substr(0, name.rfind('.'));
  if (const std::string* entry = scheme.excluding(module))
    throw Error(file,
                tensor + " is " + stored +
                    " but quantization_config lists its module as not "
                    "converted (\"" +
                    *entry + "\")",
                "the checkpoint and its config.json disagree; re-export one of them");
  const std::string scale_name = name + "_scale_inv";
  const TensorInfo* scale = checkpoint.info(scale_name);
  if (scale == nullptr)
    throw Error(file, tensor + " is " + stored + " without its scales \"" + scale_name + "\"",
                "every FP8 weight has a weight_scale_inv per weight_block_size block");
  const std::string scale_file = checkpoint.file_of(scale_name)->path().string();
  if (scale->dtype != DType::F32 && scale->dtype != DType::BF16 && scale->dtype != DType::F16)
    throw Error(scale_file, "tensor \"" + scale_name + "\" is stored " +
                                std::string(dtype_name(scale->dtype)) +
                                ", not a float32/bf16/f16 scale");
  const std::vector<std::int64_t>& shape = info.shape;
  std::vector<std::int64_t> blocks(shape.begin(), shape.end() - 2);  // the experts, if fused
  blocks.push_back((shape[shape.size() - 2] + scheme.block_out - 1) / scheme.block_out);
  blocks.push_back((shape.back() + scheme.block_in - 1) / scheme.block_in);
  if (scale->shape != blocks)
    throw Error(scale_file,
                "tensor \"" + scale_name + "\" has shape " + format_shape(scale->shape) + ", but " +
                    format_shape(shape) + " in " + std::to_string(scheme.block_out) + "x" +
                    std::to_string(scheme.block_in) + " blocks needs " + format_shape(blocks),
                "weight_block_size must be the block size the checkpoint was quantized with");
}

}  // namespace draftgate::io
