#pragma once
// The bad-input catalogue: its case type and the helpers that build hostile inputs from the
// bundled fixtures. Each case builds its inputs in a fresh directory and returns the command line;
// the test (hostile_input_test.cpp) runs it measured and asserts exit 2, exactly one stderr line
// naming the file (or flag) and the problem, no raw library text, no file of the case modified,
// and bounded wall time and peak RSS. Cases live in hostile_input_test.cpp (file kinds) and
// hostile_input_catalogue_test.cpp (the hardening classes).

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <functional>
#include <nlohmann/json.hpp>
#include <string>

#include "checkpoint_edit.h"
#include "draftgate/io/checkpoint.h"
#include "draftgate/model/tensor_view.h"
#include "draftgate/train/step_record.h"

namespace draftgate::hostile {

namespace fs = std::filesystem;
using nlohmann::json;

inline const fs::path kSource = DRAFTGATE_SOURCE_DIR;
inline const fs::path kTrained = kSource / "fixtures/trained";

struct Hostile {
  std::string label;
  std::function<std::string(const fs::path&)> args;  // builds the input in DIR, returns CLI args
  std::string message;                               // part of the expected one-line error
  std::string prefix = {};                           // before the binary (a privilege drop)
};
inline void PrintTo(const Hostile& h, std::ostream* os) { *os << h.label; }

class HostileInput : public ::testing::TestWithParam<Hostile> {};

// A private, writable copy of a bundled artifact.
inline fs::path copy_of(const fs::path& dir, const std::string& what) {
  const fs::path to = dir / fs::path(what).filename();
  fs::copy(kTrained / what, to, fs::copy_options::recursive);
  return to;
}

inline json read(const fs::path& p) { return json::parse(std::ifstream(p)); }
inline void write(const fs::path& p, const json& j) { std::ofstream(p) << j.dump(); }
inline void write(const fs::path& p, const std::string& s) {
  std::ofstream(p, std::ios::binary) << s;
}

using testing::edit_tensor;

// Rewrites a step record after `edit` changed it.
inline fs::path edited_record(const fs::path& dir,
                              const std::function<void(train::StepRecord&)>& edit) {
  train::StepRecord r =
      train::read_step_record(kTrained / "step-records/qwen3-drafter-reference.safetensors");
  edit(r);
  const fs::path out = dir / "record.safetensors";
  train::write_step_record(out, r);
  return out;
}

inline std::string qwen3_pair() {
  return " --target " + (kTrained / "qwen3-target").string() + " --drafter " +
         (kTrained / "qwen3-drafter-reference").string();
}
inline std::string prompts() { return (kTrained / "prompts/held-out.jsonl").string(); }
inline std::string reference_record() {
  return (kTrained / "step-records/qwen3-drafter-reference.safetensors").string();
}
inline fs::path golden_copy(const fs::path& dir) {
  const fs::path g = dir / "golden.json";
  json j = read(kSource / "golden/qwen3-reference.json");
  j["prompt_set"]["path"] = prompts();
  write(g, j);
  return g;
}

// A checkpoint-mutation case run through `forward`.
Hostile forward_case(std::string label, std::function<void(const fs::path&)> mutate,
                     std::string message);
// A checkpoint-mutation case run through `probe` (the torch-free front end).
Hostile probe_case(std::string label, std::function<void(const fs::path&)> mutate,
                   std::string message);
// A drafter-mutation case run through `eval` (a copy of the bundled drafter `fixture`).
Hostile drafter_case(std::string label, std::function<void(const fs::path&)> mutate,
                     std::string message, std::string fixture = "qwen3-drafter-reference");
// A config edit of the target or the drafter.
std::function<void(const fs::path&)> config_edit(std::function<void(json&)> edit);
// A step-record edit run through the checks that read records.
Hostile record_case(std::string label, std::function<void(train::StepRecord&)> edit,
                    std::string check, std::string message);
// A golden edit run through min_tau.
Hostile golden_case(std::string label, std::function<void(json&)> edit, std::string message);
// A suite file run as it is.
Hostile suite_case(std::string label, json suite, std::string message);
// A prompt set run through eval.
Hostile prompt_case(std::string label, std::string contents, std::string message);

}  // namespace draftgate::hostile
