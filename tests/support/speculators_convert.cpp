#include "speculators_convert.h"

#include <algorithm>
#include <fstream>
#include <nlohmann/json.hpp>

#include "draftgate/io/checkpoint.h"
#include "draftgate/io/json_util.h"
#include "draftgate/model/tensor_view.h"

namespace draftgate::testing {

namespace fs = std::filesystem;
using nlohmann::json;

void write_speculators_drafter(const fs::path& zlab, const fs::path& target, const fs::path& out,
                               std::vector<std::int64_t> kept) {
  fs::create_directories(out);
  const json source = io::read_json_file(zlab / "config.json");
  const json verifier = io::read_json_file(target / "config.json");
  // _NON_TRANSFORMER_KEYS (converter.py :31-33) leave the layer config.
  json layer_config = source;
  for (const char* key :
       {"architectures", "auto_map", "block_size", "dflash_config", "num_target_layers"})
    layer_config.erase(key);
  const json dflash = source.value("dflash_config", json::object());
  const std::int64_t block = source.contains("block_size")
                                 ? source["block_size"].get<std::int64_t>()
                                 : dflash["block_size"].get<std::int64_t>();
  const auto verifier_layers = verifier["num_hidden_layers"].get<std::int64_t>();
  json aux = json::array();  // converter.py :124-126
  for (const auto& id : dflash["target_layer_ids"])
    if (id.get<std::int64_t>() + 1 != verifier_layers) aux.push_back(id.get<std::int64_t>() + 1);
  const auto vocab = layer_config["vocab_size"].get<std::int64_t>();
  std::sort(kept.begin(), kept.end());
  const std::int64_t draft_vocab = kept.empty() ? vocab : static_cast<std::int64_t>(kept.size());
  const json config = {
      {"speculators_model_type", "dflash"},
      {"architectures", {"DFlashSpeculator"}},
      {"transformer_layer_config", layer_config},
      {"draft_vocab_size", draft_vocab},
      {"block_size", block},
      {"aux_hidden_state_layer_ids", aux},
      {"mask_token_id", dflash["mask_token_id"]},
      {"sliding_window_non_causal", false},
      {"sample_from_anchor", false},
      {"target_hidden_size", nullptr},
      {"speculators_version", "0.5.0"},
      {"transformers_version", "4.57.1"},
      {"speculators_config",
       {{"algorithm", "dflash"},
        {"proposal_methods", {{{"proposal_type", "greedy"}, {"speculative_tokens", block - 1}}}},
        {"default_proposal_method", "greedy"},
        {"verifier",
         {{"name_or_path", target.string()},
          {"architectures", verifier.value("architectures", json::array())}}}}}};
  std::ofstream(out / "config.json") << config.dump(2) << "\n";

  io::NamedTensors tensors;
  const io::Checkpoint body = io::Checkpoint::open(zlab);
  for (const auto& n : body.names()) tensors.emplace_back(n, io::load_tensor(body, n).clone());
  const io::Checkpoint t = io::Checkpoint::open(target);
  const at::Tensor embed = io::load_tensor(t, "model.embed_tokens.weight").clone();
  at::Tensor head = io::load_tensor(t, "lm_head.weight").clone();
  tensors.emplace_back("embed_tokens.weight", embed);
  if (!kept.empty()) {
    // build_vocab_mappings_from_distribution: d2t = sorted ids − arange, t2d marks them;
    // load_verifier_weights: lm_head = the verifier's rows where t2d.
    const at::Tensor ids = at::tensor(kept, at::kLong);
    at::Tensor t2d = at::zeros({vocab}, at::kBool);
    t2d.index_fill_(0, ids, true);
    tensors.emplace_back("d2t", ids - at::arange(draft_vocab, at::kLong));
    tensors.emplace_back("t2d", t2d);
    head = head.index_select(0, ids);
  }
  tensors.emplace_back("lm_head.weight", head);
  io::write_tensors(out / "model.safetensors", tensors);
}

}  // namespace draftgate::testing
