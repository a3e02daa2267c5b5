#include "checkpoint_edit.h"

#include "draftgate/io/checkpoint.h"
#include "draftgate/io/tensor_view.h"

namespace draftgate::testing {

void edit_tensor(const std::filesystem::path& ckpt, const std::string& name,
                 const std::function<at::Tensor(at::Tensor)>& edit) {
  io::NamedTensors tensors;
  {
    const io::Checkpoint c = io::Checkpoint::open(ckpt);
    for (const auto& n : c.names()) {
      at::Tensor t = io::load_tensor(c, n).clone();
      tensors.emplace_back(n, n == name ? edit(t) : t);
    }
  }
  io::write_tensors(ckpt / "model.safetensors", tensors);
}

}  // namespace draftgate::testing
