#include "draftgate/tokenizer/normalizer.h"

#include <vector>

#include "draftgate/tokenizer/unicode.h"

namespace draftgate::tokenizer {
namespace {

class UnicodeForm : public Normalizer {
 public:
  explicit UnicodeForm(NormalForm form) : form_(form) {}
  std::string normalize(std::string_view text) const override {
    return tokenizer::normalize(text, form_);
  }

 private:
  NormalForm form_;
};

class Sequence : public Normalizer {
 public:
  explicit Sequence(std::vector<std::unique_ptr<Normalizer>> steps) : steps_(std::move(steps)) {}
  std::string normalize(std::string_view text) const override {
    std::string s(text);
    for (const auto& step : steps_) s = step->normalize(s);
    return s;
  }

 private:
  std::vector<std::unique_ptr<Normalizer>> steps_;
};

}  // namespace

std::unique_ptr<Normalizer> normalizer_from_json(const nlohmann::json& j, const JsonPlace& at) {
  if (j.is_null()) return nullptr;
  const std::string type = at.type_of(j);
  if (type == "NFC") return std::make_unique<UnicodeForm>(NormalForm::kNFC);
  if (type == "NFD") return std::make_unique<UnicodeForm>(NormalForm::kNFD);
  if (type == "NFKC") return std::make_unique<UnicodeForm>(NormalForm::kNFKC);
  if (type == "NFKD") return std::make_unique<UnicodeForm>(NormalForm::kNFKD);
  if (type == "Sequence") {
    const auto& list = at.require(j, "normalizers");
    if (!list.is_array()) at.at("normalizers").fail("must be an array");
    std::vector<std::unique_ptr<Normalizer>> steps;
    for (std::size_t i = 0; i < list.size(); ++i) {
      auto step = normalizer_from_json(list[i], at.at("normalizers").at(i));
      if (step == nullptr) at.at("normalizers").at(i).fail("must be a normalizer, got null");
      steps.push_back(std::move(step));
    }
    return std::make_unique<Sequence>(std::move(steps));
  }
  at.at("type").fail("normalizer type \"" + type + "\" is not supported",
                     "draftgate reads NFC, NFD, NFKC, NFKD and Sequence");
}

}  // namespace draftgate::tokenizer
