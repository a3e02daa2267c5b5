#include "draftgate/layout/module_tree.h"

#include <algorithm>
#include <map>
#include <memory>
#include <sstream>

namespace draftgate::layout {
namespace {

bool is_index(const std::string& s) {
  return !s.empty() && s.size() <= 9 &&
         std::all_of(s.begin(), s.end(), [](char c) { return c >= '0' && c <= '9'; });
}

// Numeric components sort numerically, before names.
struct ComponentLess {
  bool operator()(const std::string& a, const std::string& b) const {
    const bool na = is_index(a), nb = is_index(b);
    if (na && nb) return std::stoll(a) < std::stoll(b);
    if (na != nb) return na;
    return a < b;
  }
};

struct Node {
  std::map<std::string, std::unique_ptr<Node>, ComponentLess> children;
  std::string tensor;  // full tensor name when a tensor ends here
};

std::string leaf_text(const std::string& tensor, const InfoLookup& info) {
  const io::TensorInfo* t = info ? info(tensor) : nullptr;
  if (t == nullptr) return "";
  std::string s = "  " + std::string(io::dtype_name(t->dtype)) + " [";
  for (std::size_t i = 0; i < t->shape.size(); ++i)
    s += (i ? ", " : "") + std::to_string(t->shape[i]);
  return s + "]";
}

std::string ap_text(const std::vector<std::int64_t>& v) {
  return "{" + std::to_string(v[0]) + "," + std::to_string(v[1]) + ",…," +
         std::to_string(v.back()) + "}";
}

bool is_progression(const std::vector<std::int64_t>& v) {
  if (v.size() < 3) return false;
  const std::int64_t step = v[1] - v[0];
  for (std::size_t i = 2; i < v.size(); ++i)
    if (v[i] - v[i - 1] != step) return false;
  return true;
}

void render(const Node& node, const std::string& label, int depth, const InfoLookup& info,
            std::ostringstream& out);

// Renders the children of `node` one level deeper; repeated numeric children with identical
// subtrees are collapsed into index-set groups.
void render_children(const Node& node, const std::string& label, int depth, const InfoLookup& info,
                     std::ostringstream& out) {
  const bool stack =
      node.children.size() >= 2 && std::all_of(node.children.begin(), node.children.end(),
                                               [](const auto& kv) { return is_index(kv.first); });
  if (!stack) {
    for (const auto& [name, child] : node.children) render(*child, name, depth, info, out);
    return;
  }
  std::vector<std::pair<std::string, std::vector<std::int64_t>>> groups;  // signature -> indices
  std::map<std::string, const Node*> representative;
  for (const auto& [name, child] : node.children) {
    std::ostringstream sig;
    render_children(*child, "", 0, info, sig);
    sig << leaf_text(child->tensor, info);
    const std::string key = sig.str();
    auto it =
        std::find_if(groups.begin(), groups.end(), [&](const auto& g) { return g.first == key; });
    if (it == groups.end()) {
      groups.push_back({key, {}});
      representative[key] = child.get();
      it = groups.end() - 1;
    }
    it->second.push_back(std::stoll(name));
  }
  for (const auto& [key, indices] : groups) {
    const std::string group_label =
        label + "." + format_index_set(indices) + "  ×" + std::to_string(indices.size());
    out << std::string(2 * depth, ' ') << group_label
        << leaf_text(representative[key]->tensor, info) << "\n";
    render_children(*representative[key], "", depth + 1, info, out);
  }
}

void render(const Node& node, const std::string& label, int depth, const InfoLookup& info,
            std::ostringstream& out) {
  // Collapse single-child chains ("model.language_model") onto one line.
  const Node* n = &node;
  std::string name = label;
  while (n->tensor.empty() && n->children.size() == 1 && !is_index(n->children.begin()->first)) {
    name += "." + n->children.begin()->first;
    n = n->children.begin()->second.get();
  }
  const bool stack =
      n->children.size() >= 2 && std::all_of(n->children.begin(), n->children.end(),
                                             [](const auto& kv) { return is_index(kv.first); });
  if (stack && n->tensor.empty()) {
    render_children(*n, name, depth, info, out);
    return;
  }
  // Parameters without known shapes share one line: "q_proj.{qweight, qzeros, scales}".
  const bool bare_leaves =
      n->tensor.empty() && n->children.size() >= 2 &&
      std::all_of(n->children.begin(), n->children.end(), [&](const auto& kv) {
        return kv.second->children.empty() && leaf_text(kv.second->tensor, info).empty();
      });
  if (bare_leaves) {
    std::string joined;
    for (const auto& [child, node_ptr] : n->children)
      joined += (joined.empty() ? "" : ", ") + child;
    out << std::string(2 * depth, ' ') << name << ".{" << joined << "}\n";
    return;
  }
  out << std::string(2 * depth, ' ') << name << leaf_text(n->tensor, info) << "\n";
  render_children(*n, name, depth + 1, info, out);
}

}  // namespace

std::string format_index_set(const std::vector<std::int64_t>& v) {
  if (v.empty()) return "{}";
  if (v.size() == 1) return "{" + std::to_string(v[0]) + "}";
  if (v.back() - v.front() + 1 == static_cast<std::int64_t>(v.size()))
    return "{" + std::to_string(v.front()) + ".." + std::to_string(v.back()) + "}";
  if (is_progression(v)) return ap_text(v);

  std::vector<std::pair<std::int64_t, std::int64_t>> runs;
  for (auto x : v) {
    if (!runs.empty() && runs.back().second + 1 == x)
      runs.back().second = x;
    else
      runs.push_back({x, x});
  }
  if (runs.size() > 3) {
    std::vector<std::int64_t> missing;
    for (std::size_t i = 1; i < runs.size(); ++i)
      for (auto x = runs[i - 1].second + 1; x < runs[i].first; ++x) missing.push_back(x);
    if (is_progression(missing))
      return "{" + std::to_string(v.front()) + ".." + std::to_string(v.back()) + "}\\" +
             ap_text(missing);
  }
  std::string s = "{";
  for (std::size_t i = 0; i < runs.size(); ++i) {
    if (i) s += ",";
    s += std::to_string(runs[i].first);
    if (runs[i].second != runs[i].first) s += ".." + std::to_string(runs[i].second);
  }
  return s + "}";
}

std::string render_module_tree(const std::vector<std::string>& names, const InfoLookup& info) {
  Node root;
  for (const auto& name : names) {
    Node* n = &root;
    std::size_t start = 0;
    while (true) {
      const auto dot = name.find('.', start);
      const std::string part =
          name.substr(start, dot == std::string::npos ? std::string::npos : dot - start);
      auto& child = n->children[part];
      if (!child) child = std::make_unique<Node>();
      n = child.get();
      if (dot == std::string::npos) break;
      start = dot + 1;
    }
    n->tensor = name;
  }
  std::ostringstream out;
  for (const auto& [name, child] : root.children) render(*child, name, 0, info, out);
  return out.str();
}

std::string render_module_tree(const io::Checkpoint& checkpoint) {
  return render_module_tree(checkpoint.names(),
                            [&](const std::string& name) { return checkpoint.info(name); });
}

}  // namespace draftgate::layout
