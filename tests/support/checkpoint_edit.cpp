#include "checkpoint_edit.h"

#include "draftgate/io/checkpoint.h"
#include "draftgate/model/tensor_view.h"

namespace draftgate::testing {

void edit_tensor(const std::filesystem::path& ckpt, const std::string& name,
                 const std::function<at::Tensor(at::Tensor)>& edit) {
  edit_tensors(ckpt, [&](const std::string& n, at::Tensor t) { return n == name ? edit(t) : t; });
}

void edit_tensors(const std::filesystem::path& ckpt,
                  const std::function<at::Tensor(const std::string&, at::Tensor)>& edit) {
  io::NamedTensors tensors;
  {
    const io::Checkpoint c = io::Checkpoint::open(ckpt);
    for (const auto& n : c.names()) {
      at::Tensor t = edit(n, io::load_tensor(c, n).clone());
      if (t.defined()) tensors.emplace_back(n, t);
    }
  }
  io::write_tensors(ckpt / "model.safetensors", tensors);
}

}  // namespace draftgate::testing
