// Mixed-up artifacts end in one line naming the real cause, not in a confident wrong diagnosis:
// a step record made with another target (by the identity it carries, or — without one — by its
// fed features matching no target layer), a wrong --target path inside min_tau, a golden recorded
// from a collapsed pair. Measured on main before the fix: the qwen3_5 record against the qwen3
// target failed three checks with three wrong causes (a tap bug, teacher noise, the mask), exit 1.

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>

#include "draftgate/golden/golden.h"
#include "draftgate/io/artifact_kind.h"
#include "draftgate/io/checkpoint.h"
#include "draftgate/io/safetensors.h"
#include "fixture_paths.h"
#include "run_cli.h"
#include "test_files.h"

namespace draftgate {
namespace {

using testing::kTrained;

using ::testing::HasSubstr;
using ::testing::Not;
using testing::run_draftgate;
namespace fs = std::filesystem;

const fs::path kQwen3Target = kTrained / "qwen3-target";
const fs::path kQwen35Target = kTrained / "qwen35-target";
const fs::path kQwen3Drafter = kTrained / "qwen3-drafter-reference";
const fs::path kQwen3Record = kTrained / "step-records/qwen3-drafter-reference.safetensors";
const fs::path kQwen35Record = kTrained / "step-records/qwen35-drafter-reference.safetensors";

int lines(const std::string& text) {
  return static_cast<int>(std::count(text.begin(), text.end(), '\n'));
}

// A copy of `record` with `extra` added to its __metadata__ (tensors byte for byte).
fs::path with_metadata(const fs::path& record, const fs::path& out,
                       const std::map<std::string, std::string>& extra) {
  const auto file = io::SafetensorsFile::open(record);
  std::vector<io::TensorBytes> tensors;
  for (const auto& info : file->header().tensors)
    tensors.push_back({info.name, info.dtype, info.shape, file->bytes(info)});
  auto metadata = file->header().metadata;
  for (const auto& [k, v] : extra) metadata[k] = v;
  io::write_safetensors(out, tensors, metadata);
  return out;
}

std::map<std::string, std::string> identity_keys(const std::string& role, const fs::path& dir) {
  const nlohmann::json id = golden::target_identity(dir);
  return {{role + "_config_sha256", id["config_sha256"].get<std::string>()},
          {role + "_weights_fingerprint", id["weights_fingerprint"].get<std::string>()}};
}

std::string check_record(const fs::path& record) {
  return "check --target " + kQwen3Target.string() + " --drafter " + kQwen3Drafter.string() +
         " --step-record " + record.string();
}

TEST(MixedArtifacts, ARecordOfAnotherTargetWithoutIdentityIsNamedNotDiagnosedAsTapBugs) {
  const auto r = run_draftgate(check_record(kQwen35Record));
  EXPECT_EQ(r.exit_code, 2) << r.out << r.err;
  EXPECT_EQ(lines(r.err), 1) << r.err;
  EXPECT_THAT(r.err, HasSubstr(kQwen35Record.string()));
  EXPECT_THAT(r.err, HasSubstr("no target layer matches this record"));
  EXPECT_THAT(r.err, HasSubstr("was it made with this target"));
  EXPECT_THAT(r.out + r.err, Not(HasSubstr("fix the trainer's tap indexing")));
  EXPECT_THAT(r.out + r.err, Not(HasSubstr("remove noise")));
}

// Streamed (a memory budget too small for the target), the probe of the record runs over the whole
// first sequence so that its forward serves the checks: the refusal and the verdicts stay as they
// are in memory.
TEST(MixedArtifacts, AStreamedTargetRefusesAForeignRecordAndJudgesItsOwnAsInMemory) {
  const std::string streamed = "env DRAFTGATE_MEMORY_BUDGET_MIB=1";
  const auto foreign = testing::run_draftgate_measured(check_record(kQwen35Record), streamed);
  EXPECT_EQ(foreign.exit_code, 2) << foreign.out << foreign.err;
  EXPECT_THAT(foreign.err, HasSubstr("no target layer matches this record"));
  const fs::path dir = testing::fresh_dir("mixed_streamed");
  const auto own = testing::run_draftgate_measured(
      check_record(kQwen3Record) + " --report " + (dir / "streamed.json").string(), streamed);
  const auto in_memory =
      run_draftgate(check_record(kQwen3Record) + " --report " + (dir / "in_memory.json").string());
  ASSERT_EQ(own.exit_code, 0) << own.out << own.err;
  ASSERT_EQ(in_memory.exit_code, 0) << in_memory.out << in_memory.err;
  EXPECT_EQ(nlohmann::json::parse(testing::read_file(dir / "streamed.json"))["summary"],
            nlohmann::json::parse(testing::read_file(dir / "in_memory.json"))["summary"]);
}

TEST(MixedArtifacts, ARecordCarryingAnotherTargetsIdentityIsRefusedNamingBoth) {
  const fs::path dir = testing::fresh_dir("mixed_identity");
  const fs::path record =
      with_metadata(kQwen3Record, dir / "r.safetensors", identity_keys("target", kQwen35Target));
  const auto r = run_draftgate(check_record(record));
  EXPECT_EQ(r.exit_code, 2) << r.out << r.err;
  EXPECT_EQ(lines(r.err), 1) << r.err;
  const auto brief = [](const fs::path& d) {
    return golden::target_identity(d)["weights_fingerprint"].get<std::string>().substr(0, 12);
  };
  EXPECT_THAT(r.err, HasSubstr("made with the target of"));
  EXPECT_THAT(r.err, HasSubstr(brief(kQwen35Target)));
  EXPECT_THAT(r.err, HasSubstr("--target " + kQwen3Target.string() + " is"));
  EXPECT_THAT(r.err, HasSubstr(brief(kQwen3Target)));
  EXPECT_THAT(r.out, Not(HasSubstr("FAIL")));  // refused before any numeric verdict
}

TEST(MixedArtifacts, ARecordCarryingAnotherDrafterIdentityIsRefusedNamingTheDrafterFlag) {
  const fs::path dir = testing::fresh_dir("mixed_drafter_identity");
  auto keys = identity_keys("target", kQwen3Target);
  keys.merge(identity_keys("drafter", kTrained / "qwen3-drafter-dflash2"));
  const fs::path record = with_metadata(kQwen3Record, dir / "r.safetensors", keys);
  const auto r = run_draftgate(check_record(record));
  EXPECT_EQ(r.exit_code, 2) << r.out << r.err;
  EXPECT_EQ(lines(r.err), 1) << r.err;
  EXPECT_THAT(r.err, HasSubstr("made with the drafter of"));
  EXPECT_THAT(r.err, HasSubstr("--drafter " + kQwen3Drafter.string()));
}

TEST(MixedArtifacts, ARecordCarryingItsOwnIdentityIsJudgedAsBefore) {
  const fs::path dir = testing::fresh_dir("mixed_own_identity");
  auto keys = identity_keys("target", kQwen3Target);
  keys.merge(identity_keys("drafter", kQwen3Drafter));
  const fs::path record = with_metadata(kQwen3Record, dir / "r.safetensors", keys);
  const auto plain = run_draftgate(check_record(kQwen3Record));
  const auto tagged = run_draftgate(check_record(record));
  EXPECT_EQ(plain.exit_code, 0) << plain.out << plain.err;
  EXPECT_EQ(tagged.exit_code, 0) << tagged.out << tagged.err;
}

// A metadata-only copy of the record's target (its config.json and an index, no shards) has no
// weights to fingerprint: it is compared by its config (it was refused with the fingerprint of
// nothing, e3b0c44298fc…).
TEST(MixedArtifacts, ARecordsOwnTargetAsMetadataOnlyIsComparedByItsConfig) {
  const fs::path dir = testing::fresh_dir("mixed_metadata_only");
  const fs::path meta = dir / "qwen3-target";
  fs::create_directories(meta);
  fs::copy_file(kQwen3Target / "config.json", meta / "config.json");
  nlohmann::json index = {{"metadata", nlohmann::json::object()},
                          {"weight_map", nlohmann::json::object()}};
  const io::Checkpoint target = io::Checkpoint::open(kQwen3Target);
  for (const auto& name : target.names())
    index["weight_map"][name] = "model-00001-of-00001.safetensors";
  std::ofstream(meta / "model.safetensors.index.json") << index.dump();
  const fs::path record =
      with_metadata(kQwen3Record, dir / "r.safetensors", identity_keys("target", kQwen3Target));
  const auto r = run_draftgate("check --only fc_excludes_target_layer,drafter_config --target " +
                               meta.string() + " --drafter " + kQwen3Drafter.string() +
                               " --step-record " + record.string());
  EXPECT_EQ(r.exit_code, 0) << r.out << r.err;
  EXPECT_THAT(r.err, Not(HasSubstr("made with the target of")));
  // Another config is still refused.
  const fs::path other =
      with_metadata(kQwen3Record, dir / "o.safetensors", identity_keys("target", kQwen35Target));
  const auto refused =
      run_draftgate("check --only fc_excludes_target_layer --target " + meta.string() +
                    " --drafter " + kQwen3Drafter.string() + " --step-record " + other.string());
  EXPECT_EQ(refused.exit_code, 2) << refused.out << refused.err;
  EXPECT_THAT(refused.err, HasSubstr("made with the target of"));
}

// A record without identity whose header does not fit --target (each fc_input slice is one of the
// target's hidden states, each teacher_logits row one of its logits) is refused from config.json
// and the record's header, so a run of checks that never read the target refuses it too: measured
// before, `--only loss_type` passed such a record, exit 0.
TEST(MixedArtifacts, ARecordWhoseWidthsDoNotFitTheTargetIsRefusedEvenWhereNoCheckReadsTheTarget) {
  const fs::path dir = testing::fresh_dir("mixed_record_widths");
  auto target_with = [&](const std::string& key, int value) {
    const fs::path copy = dir / (key + "-" + std::to_string(value));
    fs::create_directories(copy);
    nlohmann::json config = nlohmann::json::parse(testing::read_file(kQwen3Target / "config.json"));
    config[key] = value;
    testing::write_file(copy / "config.json", config.dump());
    return copy;
  };
  auto loss_type_only = [&](const fs::path& target) {
    return run_draftgate("check --only loss_type --target " + target.string() + " --step-record " +
                         kQwen3Record.string());
  };
  const auto own = loss_type_only(kQwen3Target);
  EXPECT_EQ(own.exit_code, 0) << own.out << own.err;
  const auto wider = loss_type_only(target_with("hidden_size", 128));
  EXPECT_EQ(wider.exit_code, 2) << wider.out << wider.err;
  EXPECT_EQ(lines(wider.err), 1) << wider.err;
  EXPECT_THAT(wider.err, HasSubstr(kQwen3Record.string()));
  EXPECT_THAT(wider.err, HasSubstr("slices of 64"));
  EXPECT_THAT(wider.err, HasSubstr("hidden_size 128"));
  const auto vocab = loss_type_only(target_with("vocab_size", 96));
  EXPECT_EQ(vocab.exit_code, 2) << vocab.out << vocab.err;
  EXPECT_THAT(vocab.err, HasSubstr("teacher_logits rows are 64 wide"));
  EXPECT_THAT(vocab.err, HasSubstr("vocab_size 96"));
}

// A metadata-only copy of a drafter (config.json and the index, no shards) is held to the
// tensors its config implies by name; it has no shapes to compare (it was refused for a missing
// fc.weight once presence was checked from the headers).
TEST(MixedArtifacts, AMetadataOnlyDrafterIsHeldToItsTensorNames) {
  const fs::path dir = testing::fresh_dir("mixed_metadata_only_drafter");
  auto copy = [&](const std::string& name, const std::string& dropped) {
    const fs::path meta = dir / name;
    fs::create_directories(meta);
    fs::copy_file(kQwen3Drafter / "config.json", meta / "config.json");
    nlohmann::json index = {{"weight_map", nlohmann::json::object()}};
    const io::Checkpoint drafter = io::Checkpoint::open(kQwen3Drafter);
    for (const auto& tensor : drafter.names())
      if (tensor != dropped) index["weight_map"][tensor] = "model-00001-of-00001.safetensors";
    std::ofstream(meta / "model.safetensors.index.json") << index.dump();
    return "check --only fc_excludes_target_layer --target " + kQwen3Target.string() +
           " --drafter " + meta.string();
  };
  const auto whole = run_draftgate(copy("whole", ""));
  EXPECT_EQ(whole.exit_code, 0) << whole.out << whole.err;
  const auto short_one = run_draftgate(copy("without_norm", "norm.weight"));
  EXPECT_EQ(short_one.exit_code, 2) << short_one.out << short_one.err;
  EXPECT_THAT(short_one.err, HasSubstr("missing tensor \"norm.weight\""));
}

// A golden names the architecture of the drafter it was measured with: a DFlash2 golden is not a
// v1 drafter's bar (τ 2.18 < 3.63 was blamed on training).
TEST(MixedArtifacts, AGoldenOfAnotherDrafterArchitectureIsRefusedByName) {
  const fs::path golden = fs::path(DRAFTGATE_SOURCE_DIR) / "golden/qwen3-dflash2.json";
  const auto r =
      run_draftgate("check --only min_tau --target " + kQwen3Target.string() + " --drafter " +
                    kQwen3Drafter.string() + " --golden " + golden.string());
  EXPECT_EQ(r.exit_code, 2) << r.out << r.err;
  EXPECT_EQ(lines(r.err), 1) << r.err;
  EXPECT_THAT(r.err, HasSubstr(kQwen3Drafter.string() + ": is a dflash drafter but the golden (" +
                               golden.string() + ") was measured with a dflash2 one"));
}

// A golden given as min_tau's prompt set is named as one ("invalid JSON at byte 2" before).
TEST(MixedArtifacts, AGoldenGivenAsMinTausPromptsIsNamedForWhatItIs) {
  const fs::path golden = fs::path(DRAFTGATE_SOURCE_DIR) / "golden/qwen3-reference.json";
  const auto r = run_draftgate("check --only min_tau --target " + kQwen3Target.string() +
                               " --drafter " + kQwen3Drafter.string() + " --golden " +
                               golden.string() + " --param min_tau.prompts=" + golden.string());
  EXPECT_EQ(r.exit_code, 2) << r.out << r.err;
  EXPECT_THAT(r.err, HasSubstr("given as min_tau.prompts but it is"));
  EXPECT_THAT(r.err, Not(HasSubstr("invalid JSON")));
}

TEST(MixedArtifacts, AWrongTargetPathInsideMinTauIsOneLineNamingThePath) {
  const fs::path missing = testing::fresh_dir("mixed_wrong_target") / "qwen3-targt";
  const auto r = run_draftgate(
      "check --only min_tau --target " + missing.string() + " --drafter " + kQwen3Drafter.string() +
      " --golden " + (fs::path(DRAFTGATE_SOURCE_DIR) / "golden/qwen3-reference.json").string());
  EXPECT_EQ(r.exit_code, 2) << r.out << r.err;
  EXPECT_EQ(lines(r.err), 1) << r.err;
  EXPECT_THAT(r.err, HasSubstr(missing.string() + ": no such directory"));
  EXPECT_THAT(r.err, Not(HasSubstr("filesystem error")));
  EXPECT_THAT(r.err, Not(HasSubstr(kQwen3Drafter.string() + ":")));
}

// Measured on main before: a full check with an empty --target (or one holding weights only)
// printed two different lines ("config.json: no such file", "config.json: missing") and an ERROR
// per check that read it; --only layer_path and probe already gave one line.
TEST(MixedArtifacts, ATargetDirectoryWithoutConfigIsOneUpFrontLineInAFullCheck) {
  const fs::path dir = testing::fresh_dir("mixed_no_config");
  const fs::path empty = dir / "empty", weights_only = dir / "weights-only";
  fs::create_directories(empty);
  fs::create_directories(weights_only);
  fs::copy_file(kQwen3Target / "model.safetensors", weights_only / "model.safetensors");
  for (const fs::path& target : {empty, weights_only}) {
    for (const std::string& args :
         {"check --target " + target.string() + " --drafter " + kQwen3Drafter.string(),
          "check --target " + kQwen3Target.string() + " --drafter " + target.string()}) {
      const auto r = run_draftgate(args);
      EXPECT_EQ(r.exit_code, 2) << args << "\n" << r.out << r.err;
      EXPECT_EQ(lines(r.err), 1) << args << "\n" << r.err;
      EXPECT_THAT(r.err, HasSubstr("draftgate: error: " + (target / "config.json").string() +
                                   ": missing (hint: a Hugging Face checkpoint directory holds "
                                   "config.json beside its weights)"))
          << args;
      EXPECT_EQ(r.out, "") << args;  // before any check: no table, no ERROR rows
    }
  }
}

// A SpecForge run's config.json before its first save: measured on main before the fix, the full
// run exited 2 (fc_excludes_target_layer: "no model.safetensors.index.json, model.safetensors or
// *.safetensors") although the config checks passed.
fs::path config_only_drafter(const std::string& name) {
  const fs::path dir = testing::fresh_dir(name);
  fs::copy_file(kQwen3Drafter / "config.json", dir / "config.json");
  return dir;
}

TEST(MixedArtifacts, AConfigOnlyDrafterRunsTheConfigChecksAndSkipsTheWeightChecksByName) {
  const fs::path drafter = config_only_drafter("mixed_config_only");
  // A trainer's other pickles beside it are not weights (pytorch_model*.bin would be, and is
  // refused by name).
  testing::write_file(drafter / "training_args.bin", "PK");
  const auto r = run_draftgate(
      "check --target " + kQwen3Target.string() + " --drafter " + drafter.string() + " --golden " +
      (fs::path(DRAFTGATE_SOURCE_DIR) / "golden/qwen3-reference.json").string());
  EXPECT_EQ(r.exit_code, 0) << r.out << r.err;
  EXPECT_EQ(r.err, "");
  EXPECT_THAT(r.out, ::testing::ContainsRegex("drafter_config +PASS"));
  EXPECT_THAT(r.out, ::testing::ContainsRegex("layer_path +PASS"));
  for (const char* check : {"fc_excludes_target_layer", "min_tau"})
    EXPECT_THAT(r.out, ::testing::ContainsRegex(std::string(check) +
                                                " +SKIP +needs the drafter's "
                                                "weights: " +
                                                drafter.string() + " holds config.json only"))
        << check << "\n"
        << r.out;
}

TEST(MixedArtifacts, AConfigOnlyDrafterStillFailsAConfigCheckOnItsOwn) {
  const fs::path drafter = config_only_drafter("mixed_config_only_bad");
  nlohmann::json config = nlohmann::json::parse(std::ifstream(drafter / "config.json"));
  config["dflash_config"]["target_layer_ids"] = {0, 9};  // 9 is no layer of the 4-layer target
  std::ofstream(drafter / "config.json") << config.dump(2);
  const auto r = run_draftgate(
      "check --only drafter_config,layer_path,fc_excludes_target_layer "
      "--target " +
      kQwen3Target.string() + " --drafter " + drafter.string());
  EXPECT_EQ(r.exit_code, 1) << r.out << r.err;
  EXPECT_THAT(r.out, ::testing::ContainsRegex("layer_path +FAIL"));
  EXPECT_THAT(r.out, ::testing::ContainsRegex("fc_excludes_target_layer +SKIP +needs the "
                                              "drafter's weights"));
}

// A copy of the reference drafter whose config.json records `name_or_path` as SpecForge's
// generated configs do (the target they were generated from).
fs::path drafter_recording(const std::string& name, const nlohmann::json& name_or_path) {
  const fs::path dir = testing::fresh_dir(name);
  fs::copy(kQwen3Drafter, dir, fs::copy_options::recursive);
  nlohmann::json config = nlohmann::json::parse(std::ifstream(dir / "config.json"));
  config["_name_or_path"] = name_or_path;
  std::ofstream(dir / "config.json") << config.dump(2);
  return dir;
}

std::string check_drafter(const fs::path& drafter, const std::string& only) {
  return "check --only " + only + " --target " + kQwen3Target.string() + " --drafter " +
         drafter.string();
}

TEST(MixedArtifacts, ADrafterGeneratedFromAnotherTargetIsRefusedNamingBothBeforeAnyVerdict) {
  const fs::path drafter = drafter_recording("mixed_drafter_foreign", kQwen35Target.string());
  const auto r = run_draftgate(check_drafter(drafter, "drafter_config,layer_path"));
  EXPECT_EQ(r.exit_code, 2) << r.out << r.err;
  EXPECT_EQ(lines(r.err), 1) << r.err;
  EXPECT_EQ(r.out, "");  // no verdict at all
  EXPECT_THAT(r.err, HasSubstr((drafter / "config.json").string() +
                               ": this drafter's config was generated from the target " +
                               kQwen35Target.string()));
  EXPECT_THAT(r.err, HasSubstr("but --target " + kQwen3Target.string() + " is config.json sha256"));
  // The same before any engine check: fc_excludes_target_layer runs no number either.
  const auto engine = run_draftgate(check_drafter(drafter, "fc_excludes_target_layer"));
  EXPECT_EQ(engine.exit_code, 2) << engine.out << engine.err;
  EXPECT_EQ(lines(engine.err), 1) << engine.err;
}

TEST(MixedArtifacts, ADrafterGeneratedFromThisTargetOrACopyOfItRunsAsBefore) {
  const fs::path copy = testing::fresh_dir("mixed_target_copy") / "qwen3-target";
  fs::copy(kQwen3Target, copy, fs::copy_options::recursive);
  for (const fs::path& recorded : {kQwen3Target, copy}) {
    const fs::path drafter = drafter_recording("mixed_drafter_own", recorded.string());
    const auto r = run_draftgate(check_drafter(drafter, "drafter_config,layer_path"));
    EXPECT_EQ(r.exit_code, 0) << recorded << "\n" << r.out << r.err;
    EXPECT_THAT(r.out, Not(HasSubstr("note:")));
  }
}

// A name that cannot be compared (a hub name, a path not on this machine, a directory that is no
// target, a value of another type) never refuses a run: a note where it is a name, nothing else.
TEST(MixedArtifacts, ARecordedTargetThatCannotBeComparedIsANoteNeverARefusal) {
  for (const nlohmann::json& recorded :
       {nlohmann::json("Qwen/Qwen3-8B"), nlohmann::json("/nonexistent/Qwen3-8B"),
        nlohmann::json("/proc/self"), nlohmann::json(kQwen3Drafter.string())}) {
    const fs::path drafter = drafter_recording("mixed_drafter_name", recorded);
    const auto r = run_draftgate(check_drafter(drafter, "drafter_config,layer_path"));
    EXPECT_EQ(r.exit_code, 0) << recorded << "\n" << r.out << r.err;
    EXPECT_THAT(r.out, HasSubstr("note: " + (drafter / "config.json").string() +
                                 " records _name_or_path \"" + recorded.get<std::string>() + "\""))
        << r.out;
  }
  for (const nlohmann::json& recorded : {nlohmann::json(5), nlohmann::json(""), nlohmann::json()}) {
    const fs::path drafter = drafter_recording("mixed_drafter_odd", recorded);
    const auto r = run_draftgate(check_drafter(drafter, "drafter_config,layer_path"));
    EXPECT_EQ(r.exit_code, 0) << recorded << "\n" << r.out << r.err;
    EXPECT_THAT(r.out, Not(HasSubstr("note:")));
  }
}

TEST(ArtifactSlots, EveryKindIsRecognisedByItsContent) {
  using io::ArtifactKind;
  const fs::path root = DRAFTGATE_SOURCE_DIR;
  for (const auto& [path, kind] :
       {std::pair{kQwen3Target, ArtifactKind::kTarget},
        {kQwen35Target, ArtifactKind::kTarget},
        {kQwen3Drafter, ArtifactKind::kDrafter},
        {kTrained / "qwen3-drafter-dflash2", ArtifactKind::kDrafter},
        {kQwen3Record, ArtifactKind::kStepRecord},
        {root / "golden/qwen3-reference.json", ArtifactKind::kGolden},
        {root / "fixtures/suites/qwen3-reference.json", ArtifactKind::kSuite},
        {root / "tests/fuzz/seeds/measured_tau/vllm.json", ArtifactKind::kMeasuredTau},
        {kTrained / "prompts/held-out.jsonl", ArtifactKind::kPromptSet},
        {root / "README.md", ArtifactKind::kUnknown},
        {root / "no-such-file", ArtifactKind::kUnknown}})
    EXPECT_EQ(io::recognize_artifact(path).kind, kind) << path;
}

TEST(ArtifactSlots, AnArtifactInAnotherSlotIsNamedWithTheSlotItGoesIn) {
  const fs::path root = DRAFTGATE_SOURCE_DIR;
  const std::string golden = (root / "golden/qwen3-reference.json").string();
  struct Case {
    std::string args, named, what, goes;
  };
  for (const Case& c : std::vector<Case>{
           {"check --target " + kQwen3Drafter.string() + " --drafter " + kQwen3Target.string(),
            kQwen3Drafter.string(), "it is a DFlash drafter checkpoint", "give it as --drafter"},
           {"check --target " + kQwen3Target.string() + " --drafter " + kQwen3Drafter.string() +
                " --golden " + (root / "fixtures/suites/qwen3-reference.json").string(),
            "suites/qwen3-reference.json", "it is a suite", "give it as --suite"},
           {"check --target " + kQwen3Target.string() + " --drafter " + kQwen3Drafter.string() +
                " --golden " + (root / "tests/fuzz/seeds/measured_tau/vllm.json").string(),
            "vllm.json", "it is a measured-τ file", "give it as --measured"},
           {"check --target " + kQwen3Target.string() + " --drafter " + kQwen3Drafter.string() +
                " --step-record " + golden,
            golden, "it is a golden", "give it as --golden"},
           {"check --suite " + golden, golden, "it is a golden", "give it as --golden"},
           {"eval --target " + kQwen3Target.string() + " --drafter " + kQwen3Drafter.string() +
                " --prompts " + kQwen3Record.string(),
            kQwen3Record.string(), "it is a training step record", "give it as --step-record"},
           // tau import's inputs are a serving engine's output (found by an outside tester: read
           // as one, "not a JSON /generate response").
           {"tau import --sglang-requests " + golden + " --out " +
                (testing::fresh_dir("slots_tau") / "m.json").string(),
            golden, "it is a golden (draftgate.golden/1), not a serving engine's output",
            "give it as --golden"},
           {"tau import --vllm-responses " +
                (root / "tests/fuzz/seeds/measured_tau/vllm.json").string() + " --out " +
                (testing::fresh_dir("slots_tau_measured") / "m.json").string(),
            "vllm.json", "it is a measured-τ file", "give it as --measured"},
           // forward's --model and make-drafter's --target take a target, as eval's --target does.
           {"forward --model " + kQwen3Drafter.string() + " --tokens 1,2 --out " +
                (testing::fresh_dir("slots_forward") / "f.safetensors").string(),
            kQwen3Drafter.string(), "it is a DFlash drafter checkpoint", "give it as --drafter"},
           {"make-drafter --target " + kQwen3Drafter.string() + " --out " +
                (testing::fresh_dir("slots_make_drafter") / "d").string(),
            kQwen3Drafter.string(), "it is a DFlash drafter checkpoint", "give it as --drafter"},
           {"golden record --target " + kQwen3Target.string() + " --drafter " +
                kQwen3Target.string() + " --prompts " +
                (kTrained / "prompts/held-out.jsonl").string() + " --out " +
                (testing::fresh_dir("slots") / "g.json").string(),
            kQwen3Target.string(), "it is a target checkpoint", "give it as --target"},
       }) {
    const auto r = run_draftgate(c.args);
    EXPECT_EQ(r.exit_code, 2) << c.args << "\n" << r.out << r.err;
    EXPECT_EQ(lines(r.err), 1) << r.err;
    EXPECT_THAT(r.err, HasSubstr(c.named)) << c.args;
    EXPECT_THAT(r.err, HasSubstr(c.what)) << c.args;
    EXPECT_THAT(r.err, HasSubstr(c.goes)) << c.args;
  }
}

std::string min_tau_on(const fs::path& golden) {
  return "check --only min_tau --target " + kQwen3Target.string() + " --drafter " +
         kQwen3Drafter.string() + " --golden " + golden.string();
}

// The reports draftgate writes carry no schema; given as an input they were read as one ("golden
// has no /schema"). Named for what they are, read from the verbs' own output, and an eval result
// longer than the sniffed head by its leading keys.
TEST(ArtifactSlots, AReportDraftgateWroteIsNamedAsAReportInAnInputSlot) {
  const fs::path dir = testing::fresh_dir("slots_reports");
  const fs::path eval = dir / "eval.json", report = dir / "report.json";
  const auto wrote_eval = run_draftgate("eval --target " + kQwen3Target.string() + " --drafter " +
                                        kQwen3Drafter.string() + " --prompts " +
                                        (kTrained / "prompts/held-out.jsonl").string() +
                                        " --max-new 4 --json " + eval.string());
  ASSERT_EQ(wrote_eval.exit_code, 0) << wrote_eval.out << wrote_eval.err;
  const auto wrote_report = run_draftgate("check --only layer_path --target " +
                                          kQwen3Target.string() + " --report " + report.string());
  ASSERT_EQ(wrote_report.exit_code, 0) << wrote_report.out << wrote_report.err;
  // Over the 1 MiB head: a document cut inside its per_prompt array.
  nlohmann::json big = nlohmann::json::parse(testing::read_file(eval));
  const nlohmann::json one = big["per_prompt"][0];
  for (std::size_t n = one.dump(2).size(); n < (std::size_t{3} << 19); n += one.dump(2).size())
    big["per_prompt"].push_back(one);
  const fs::path long_eval = testing::write_file(dir / "long_eval.json", big.dump(2));
  EXPECT_EQ(io::recognize_artifact(long_eval).kind, io::ArtifactKind::kReport);
  for (const auto& [file, what] : {std::pair{eval, "it is an eval result (draftgate eval --json)"},
                                   {long_eval, "it is an eval result (draftgate eval --json)"},
                                   {report, "it is a check report (draftgate check --report)"}}) {
    EXPECT_EQ(io::recognize_artifact(file).kind, io::ArtifactKind::kReport) << file;
    const auto r = run_draftgate(min_tau_on(file));
    EXPECT_EQ(r.exit_code, 2) << r.out << r.err;
    EXPECT_EQ(lines(r.err), 1) << r.err;
    EXPECT_THAT(r.err, HasSubstr(file.string() + ": given as --golden but " + what));
    EXPECT_THAT(r.err, HasSubstr("a report is draftgate's output"));
  }
  // A JSON object of other keys is still no kind: its reader says what is wrong with it.
  EXPECT_EQ(
      io::recognize_artifact(testing::write_file(dir / "other.json", R"({"decoding": {}})")).kind,
      io::ArtifactKind::kUnknown);
}

TEST(MixedArtifacts, ACopiedGoldenSaysHowToPointAtItsPromptSet) {
  const fs::path dir = testing::fresh_dir("mixed_copied_golden");
  const fs::path golden = dir / "copied.json";
  fs::copy_file(fs::path(DRAFTGATE_SOURCE_DIR) / "golden/qwen3-reference.json", golden);
  auto r = run_draftgate(min_tau_on(golden));
  EXPECT_EQ(r.exit_code, 2) << r.out << r.err;
  EXPECT_EQ(lines(r.err), 1) << r.err;
  EXPECT_THAT(r.err, HasSubstr("was the golden copied without it?"));
  EXPECT_THAT(r.err, HasSubstr("--param min_tau.prompts=PATH"));
  r = run_draftgate(min_tau_on(golden) +
                    " --param min_tau.prompts=" + (kTrained / "prompts/held-out.jsonl").string());
  EXPECT_EQ(r.exit_code, 0) << r.out << r.err;
}

TEST(MixedArtifacts, AnEditedPromptSetGivesBothCountsAndHashes) {
  const fs::path dir = testing::fresh_dir("mixed_edited_prompts");
  fs::create_directories(dir / "golden");
  fs::create_directories(dir / "fixtures/trained/prompts");
  fs::copy_file(fs::path(DRAFTGATE_SOURCE_DIR) / "golden/qwen3-reference.json",
                dir / "golden/g.json");
  const std::string text = testing::read_file(kTrained / "prompts/held-out.jsonl");
  testing::write_file(dir / "fixtures/trained/prompts/held-out.jsonl",
                      text.substr(0, text.rfind('\n', text.size() - 2) + 1));  // one prompt less
  const auto r = run_draftgate(min_tau_on(dir / "golden/g.json"));
  EXPECT_EQ(r.exit_code, 2) << r.out << r.err;
  EXPECT_EQ(lines(r.err), 1) << r.err;
  EXPECT_THAT(r.err, HasSubstr("of 39 prompts differs from the golden's"));
  EXPECT_THAT(r.err, HasSubstr("of 40 prompts"));
  EXPECT_THAT(r.err, HasSubstr("the file was edited after the golden was recorded"));
}

TEST(MixedArtifacts, TyposGetTheClosestFlagOrVerb) {
  auto r = run_draftgate("check --golen golden/x.json");
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_EQ(lines(r.err), 1) << r.err;
  EXPECT_THAT(r.err, HasSubstr("(--golen: did you mean --golden?)"));
  r = run_draftgate("chek --target x");
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_EQ(lines(r.err), 1) << r.err;
  EXPECT_THAT(r.err, HasSubstr("(chek: did you mean check?)"));
  r = run_draftgate("eval --promts p.jsonl");
  EXPECT_THAT(r.err, HasSubstr("(--promts: did you mean --prompts?)"));
  r = run_draftgate("check --zzzzzzzz");  // nothing close: no guess
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_THAT(r.err, Not(HasSubstr("did you mean")));
}

// A random drafter for the trained target: τ about 1, below min_tau's collapse tripwire.
fs::path random_drafter(const fs::path& dir) {
  const fs::path out = dir / "random-drafter";
  const auto r = run_draftgate("make-drafter --target " + kQwen3Target.string() +
                               " --taps 0,2 --mask-token-id 63 --out " + out.string());
  EXPECT_EQ(r.exit_code, 0) << r.err;
  return out;
}

std::string golden_record(const fs::path& drafter, const fs::path& out) {
  return "golden record --target " + kQwen3Target.string() + " --drafter " + drafter.string() +
         " --prompts " + (kTrained / "prompts/held-out.jsonl").string() +
         " --max-new 4 --eos 0 --out " + out.string();
}

TEST(MixedArtifacts, GoldenRecordRefusesACollapsedGoldenUnlessAskedAndThenSaysSoLoudly) {
  const fs::path dir = testing::fresh_dir("mixed_collapsed_golden");
  const fs::path drafter = random_drafter(dir), out = dir / "g.json";
  auto r = run_draftgate(golden_record(drafter, out));
  EXPECT_EQ(r.exit_code, 2) << r.out << r.err;
  EXPECT_EQ(lines(r.err), 1) << r.err;
  EXPECT_THAT(r.err, HasSubstr("at or below min_tau's collapse tripwire 1.05"));
  EXPECT_THAT(r.err, HasSubstr("--allow-collapsed"));
  EXPECT_FALSE(fs::exists(out));
  r = run_draftgate(golden_record(drafter, out) + " --allow-collapsed");
  EXPECT_EQ(r.exit_code, 0) << r.out << r.err;
  EXPECT_THAT(r.err, HasSubstr("WARNING: " + out.string()));
  const auto g = nlohmann::json::parse(testing::read_file(out));
  EXPECT_THAT(g["provenance"]["note"].get<std::string>(), HasSubstr("collapse tripwire"));
  // The trained reference is far above the tripwire and records as before.
  EXPECT_EQ(run_draftgate(golden_record(kQwen3Drafter, dir / "ref.json")).exit_code, 0);
}

// Measured on main before: eval ran such a drafter silently (exit 0, τ about 1.01) and golden
// record recorded it; check refused it (checks/drafter_provenance). Now all three refuse it the
// same way, before any decoding.
TEST(MixedArtifacts, EvalAndGoldenRecordRefuseADrafterGeneratedFromAnotherTargetBeforeDecoding) {
  const fs::path drafter = drafter_recording("mixed_decode_foreign", kQwen35Target.string());
  const fs::path out = testing::fresh_dir("mixed_decode_foreign_out") / "g.json";
  const std::string pair = " --target " + kQwen3Target.string() + " --drafter " + drafter.string() +
                           " --prompts " + (kTrained / "prompts/held-out.jsonl").string() +
                           " --max-new 4 --eos 0";
  for (const std::string& args :
       {"eval" + pair, "golden record" + pair + " --out " + out.string()}) {
    const auto r = run_draftgate(args);
    EXPECT_EQ(r.exit_code, 2) << args << "\n" << r.out << r.err;
    EXPECT_EQ(lines(r.err), 1) << args << "\n" << r.err;
    EXPECT_EQ(r.out, "") << args;
    EXPECT_THAT(r.err, HasSubstr((drafter / "config.json").string() +
                                 ": this drafter's config was generated from the target " +
                                 kQwen35Target.string()))
        << args;
    EXPECT_THAT(r.err, HasSubstr("but --target " + kQwen3Target.string() + " is"));
    EXPECT_THAT(r.err, Not(HasSubstr("prompt")));  // no progress line: nothing was decoded
  }
  EXPECT_FALSE(fs::exists(out));
  // The drafter generated from this very target decodes as before.
  const fs::path own = drafter_recording("mixed_decode_own", kQwen3Target.string());
  const auto r = run_draftgate(
      "eval --target " + kQwen3Target.string() + " --drafter " + own.string() + " --prompts " +
      (kTrained / "prompts/held-out.jsonl").string() + " --max-new 4 --eos 0");
  EXPECT_EQ(r.exit_code, 0) << r.out << r.err;
}

// Measured on main before: without --force a directory at --out was "golden file exists;
// refusing to overwrite it (pass --force)", as if it were a golden.
TEST(MixedArtifacts, GoldenRecordNamesADirectoryAtOutAsADirectoryWithOrWithoutForce) {
  const fs::path dir = testing::fresh_dir("mixed_golden_out_dir");
  for (const std::string force : {"", " --force"}) {
    const auto r = run_draftgate(golden_record(kQwen3Drafter, dir) + force);
    EXPECT_EQ(r.exit_code, 2) << force << "\n" << r.out << r.err;
    EXPECT_EQ(lines(r.err), 1) << r.err;
    EXPECT_THAT(r.err, HasSubstr("--out " + dir.string() + ": exists and is a directory"));
    EXPECT_THAT(r.err, Not(HasSubstr("golden file exists")));
  }
  const auto measured = run_draftgate(
      "golden record --measured " +
      (fs::path(DRAFTGATE_SOURCE_DIR) / "tests/fuzz/seeds/measured_tau/vllm.json").string() +
      " --out " + dir.string());
  EXPECT_EQ(measured.exit_code, 2) << measured.err;
  EXPECT_THAT(measured.err, HasSubstr("--out " + dir.string() + ": exists and is a directory"));
}

TEST(MixedArtifacts, EvalAndGoldenRecordDecodeAtTheSameDefaultDtypeStatedInTheirHelp) {
  const fs::path dir = testing::fresh_dir("mixed_dtype");
  const fs::path golden = dir / "g.json", eval = dir / "e.json";
  ASSERT_EQ(run_draftgate(golden_record(kQwen3Drafter, golden)).exit_code, 0);
  const auto r = run_draftgate("eval --target " + kQwen3Target.string() + " --drafter " +
                               kQwen3Drafter.string() + " --prompts " +
                               (kTrained / "prompts/held-out.jsonl").string() +
                               " --max-new 4 --eos 0 --json " + eval.string());
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const auto g = nlohmann::json::parse(testing::read_file(golden));
  const auto e = nlohmann::json::parse(testing::read_file(eval));
  EXPECT_EQ(e["target"]["dtype"], g["decoding"]["dtype"]);
  EXPECT_EQ(e["tau_macro"], g["tau"]["tau_macro"]);
  const std::string stated = "the same for eval and golden record";
  EXPECT_THAT(run_draftgate("eval --help").out, HasSubstr(stated));
  EXPECT_THAT(run_draftgate("golden record --help").out, HasSubstr(stated));
}

}  // namespace
}  // namespace draftgate
