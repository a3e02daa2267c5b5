#include "decode_dtype.h"

#include "draftgate/layout/decoder_stack.h"
#include "draftgate/model/sequence_target.h"
#include "draftgate/model/target.h"

namespace draftgate::cli {

void add_decode_dtype_option(CLI::App* cmd, std::string& dtype) {
  cmd->add_option("--dtype", dtype,
                  "Target dtype for decoding: f32 or bf16 (default, the same for eval and golden "
                  "record: f32 when the target fits the memory budget in f32, else as stored)");
}

at::ScalarType decode_dtype(const std::string& flag, const io::Checkpoint& target) {
  if (!flag.empty()) return model::parse_dtype_flag(flag);
  const layout::DecoderStack stack = layout::resolve_decoder_stack(target);
  if (model::fits_in_memory(target, stack, at::kFloat)) return at::kFloat;
  return model::compute_dtype(target, stack, {});
}

}  // namespace draftgate::cli
