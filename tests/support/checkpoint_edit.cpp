#include "checkpoint_edit.h"

#include <string_view>
#include <vector>

#include "draftgate/io/checkpoint.h"
#include "draftgate/io/float8.h"
#include "draftgate/model/tensor_view.h"

namespace draftgate::testing {

void edit_tensor(const std::filesystem::path& ckpt, const std::string& name,
                 const std::function<at::Tensor(at::Tensor)>& edit) {
  edit_tensors(ckpt, [&](const std::string& n, at::Tensor t) { return n == name ? edit(t) : t; });
}

void edit_tensors(const std::filesystem::path& ckpt,
                  const std::function<at::Tensor(const std::string&, at::Tensor)>& edit) {
  std::vector<at::Tensor> keep;
  std::vector<io::TensorBytes> tensors;
  {
    const io::Checkpoint c = io::Checkpoint::open(ckpt);
    for (const auto& n : c.names()) {
      at::Tensor t = edit(n, io::load_tensor(c, n).clone());
      if (!t.defined()) continue;
      keep.push_back(t.contiguous());
      const at::Tensor& k = keep.back();
      // F8 tensors come back as bytes (tensor_view.h): kept bytes keep their F8 dtype.
      const io::DType stored = c.info(n)->dtype;
      const io::DType dtype = io::is_float8(stored) && k.scalar_type() == at::kByte
                                  ? stored
                                  : io::safetensors_dtype(k.scalar_type());
      tensors.push_back({n, dtype, k.sizes().vec(),
                         std::string_view(static_cast<const char*>(k.data_ptr()), k.nbytes())});
    }
  }
  io::write_safetensors(ckpt / "model.safetensors", tensors);
}

void edit_tensors(const std::filesystem::path& ckpt,
                  const std::function<void(io::NamedTensors&)>& edit) {
  io::NamedTensors tensors;
  {
    const io::Checkpoint c = io::Checkpoint::open(ckpt);
    for (const auto& n : c.names()) tensors.emplace_back(n, io::load_tensor(c, n).clone());
  }
  edit(tensors);
  io::write_tensors(ckpt / "model.safetensors", tensors);
}

}  // namespace draftgate::testing
