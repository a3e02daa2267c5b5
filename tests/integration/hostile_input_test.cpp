// The bad-input catalogue, part one: malformed or hostile inputs of every file kind draftgate
// reads — checkpoints, drafters, step records, goldens, suites, prompt sets, reference dumps. The
// case type, its test and the input builders are here and in hostile_input.h; part two
// (hostile_input_catalogue_test.cpp) holds the hardening classes. (probe_cli_test and
// step_record_test hold the header-level catalogues.)

#include "hostile_input.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <sys/stat.h>

#include <map>

#include "draftgate/io/sha256.h"
#include "run_cli.h"
#include "test_files.h"

namespace draftgate::hostile {

using ::testing::HasSubstr;

namespace {

// Every entry under `dir` (symlinks not followed, FIFOs and devices never opened): its kind and,
// for regular files, the SHA-256 of its bytes.
std::map<std::string, std::string> snapshot(const fs::path& dir) {
  std::map<std::string, std::string> out;
  std::error_code ec;
  for (auto it = fs::recursive_directory_iterator(dir, fs::directory_options::none, ec);
       it != fs::recursive_directory_iterator(); it.increment(ec)) {
    const fs::path rel = it->path().lexically_relative(dir);
    const auto st = fs::symlink_status(it->path(), ec);
    if (fs::is_symlink(st))
      out[rel.string()] = "link " + fs::read_symlink(it->path(), ec).string();
    else if (fs::is_regular_file(st))
      out[rel.string()] = "file " + io::sha256_hex(testing::read_file(it->path()));
    else if (fs::is_directory(st))
      out[rel.string()] = "dir";
    else
      out[rel.string()] = "other";
    if (fs::is_directory(st) && (st.permissions() & fs::perms::owner_exec) == fs::perms::none)
      it.disable_recursion_pending();
  }
  return out;
}

}  // namespace

TEST_P(HostileInput, ExitsTwoWithOneLineNamingTheProblem) {
  const Hostile& h = GetParam();
  const fs::path dir = testing::fresh_dir("hostile_" + h.label);
  const std::string args = h.args(dir);
  const auto before = snapshot(dir);
  const auto r = testing::run_draftgate_measured(args, h.prefix);
  EXPECT_EQ(r.exit_code, 2) << r.out << r.err;
  EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 1) << r.err;
  EXPECT_THAT(r.err, HasSubstr(h.message));
  // One printable line of bounded length: input quoted in an error must not drive the terminal.
  EXPECT_LT(r.err.size(), 4096u) << "error line length";
  EXPECT_TRUE(std::none_of(r.err.begin(), r.err.end() - (r.err.empty() ? 0 : 1),
                           [](char c) { return static_cast<unsigned char>(c) < 0x20; }))
      << "control bytes in " << r.err;
  EXPECT_EQ(r.err.rfind("draftgate: ", 0), 0u) << r.err;
  for (const char* raw : {"[json.exception", "stoll", "bad_alloc", "what():", "filesystem error"})
    EXPECT_THAT(r.err, ::testing::Not(HasSubstr(raw))) << "raw library text";
  EXPECT_EQ(snapshot(dir), before) << "an input of the case was modified";
  EXPECT_LT(r.seconds, 30.0) << "wall time";
  EXPECT_GT(r.peak_rss_kib, 0);
  EXPECT_LT(r.peak_rss_kib, 1024 * 1024) << "peak RSS " << r.peak_rss_kib << " KiB";
}

namespace {

// A copy of the Qwen3 target, mutated, then run by the command `verb` makes of (DIR, copy).
Hostile target_case(std::string label, std::function<void(const fs::path&)> mutate,
                    std::string message,
                    std::function<std::string(const fs::path&, const fs::path&)> verb) {
  return {label,
          [mutate, verb](const fs::path& dir) {
            const fs::path t = copy_of(dir, "qwen3-target");
            mutate(t);
            return verb(dir, t);
          },
          message};
}

}  // namespace

Hostile forward_case(std::string label, std::function<void(const fs::path&)> mutate,
                     std::string message) {
  return target_case(std::move(label), std::move(mutate), std::move(message),
                     [](const fs::path& dir, const fs::path& t) {
                       return "forward --model " + t.string() + " --tokens 1,2 --out " +
                              (dir / "out.safetensors").string();
                     });
}

// A drafter-mutation case run through `eval`.
Hostile drafter_case(std::string label, std::function<void(const fs::path&)> mutate,
                     std::string message, std::string fixture) {
  return {label,
          [mutate, fixture](const fs::path& dir) {
            const fs::path d = copy_of(dir, fixture);
            mutate(d);
            return "eval --target " + (kTrained / "qwen3-target").string() + " --drafter " +
                   d.string() + " --prompts " + prompts() + " --max-new 2";
          },
          message};
}

// A config edit of the target or the drafter.
std::function<void(const fs::path&)> config_edit(std::function<void(json&)> edit) {
  return [edit](const fs::path& ckpt) {
    json c = read(ckpt / "config.json");
    edit(c);
    write(ckpt / "config.json", c);
  };
}

// A step-record edit run through the checks that read records.
Hostile record_case(std::string label, std::function<void(train::StepRecord&)> edit,
                    std::string check, std::string message) {
  return {label,
          [edit, check](const fs::path& dir) {
            return "check --only " + check + qwen3_pair() + " --step-record " +
                   edited_record(dir, edit).string();
          },
          message};
}

// A golden edit run through min_tau.
Hostile golden_case(std::string label, std::function<void(json&)> edit, std::string message) {
  return {label,
          [edit](const fs::path& dir) {
            const fs::path g = golden_copy(dir);
            json j = read(g);
            edit(j);
            write(g, j);
            return "check --only min_tau" + qwen3_pair() + " --golden " + g.string();
          },
          message};
}

// A suite file run as it is.
Hostile suite_case(std::string label, json suite, std::string message) {
  return {label,
          [suite](const fs::path& dir) {
            write(dir / "suite.json", suite);
            return "check --suite " + (dir / "suite.json").string();
          },
          message};
}

// A prompt set run through eval.
Hostile prompt_case(std::string label, std::string contents, std::string message) {
  return {label,
          [contents](const fs::path& dir) {
            write(dir / "prompts.jsonl", contents);
            return "eval" + qwen3_pair() + " --prompts " + (dir / "prompts.jsonl").string();
          },
          message};
}

Hostile probe_case(std::string label, std::function<void(const fs::path&)> mutate,
                   std::string message) {
  return target_case(std::move(label), std::move(mutate), std::move(message),
                     [](const fs::path&, const fs::path& t) { return "probe " + t.string(); });
}

namespace {

json suite_with(const std::string& key, const json& value) {
  return {{"schema", "draftgate.suite/1"}, {key, value}};
}

INSTANTIATE_TEST_SUITE_P(
    Catalogue, HostileInput,
    ::testing::Values(
        // Target checkpoints.
        forward_case(
            "nan_weight",
            [](const fs::path& ckpt) {
              edit_tensor(ckpt, "model.layers.1.mlp.up_proj.weight", [](at::Tensor x) {
                return x.index_fill(0, at::tensor(std::vector<std::int64_t>{3}), NAN);
              });
            },
            "\"model.layers.1.mlp.up_proj.weight\" holds NaN or Inf"),
        forward_case(
            "inf_weight",
            [](const fs::path& ckpt) {
              edit_tensor(ckpt, "model.norm.weight", [](at::Tensor x) {
                return x.index_fill(0, at::tensor(std::vector<std::int64_t>{0}), INFINITY);
              });
            },
            "\"model.norm.weight\" holds NaN or Inf"),
        forward_case(
            "integer_weight",
            [](const fs::path& ckpt) {
              edit_tensor(ckpt, "model.layers.0.input_layernorm.weight",
                          [](at::Tensor x) { return x.to(at::kInt); });
            },
            "non-float dtype I32"),
        forward_case("layer_count_contradicts_tensors",
                     config_edit([](json& c) { c["num_hidden_layers"] = 3; }), "num_hidden_layers"),
        forward_case("head_dim_contradicts_tensors",
                     config_edit([](json& c) { c["head_dim"] = 32; }), "config implies"),
        forward_case("tie_flag_but_separate_lm_head",
                     config_edit([](json& c) { c["tie_word_embeddings"] = true; }),
                     "tie_word_embeddings is true but lm_head.weight differs from the embeddings"),
        forward_case(
            "untied_without_lm_head",
            [](const fs::path& ckpt) {
              io::NamedTensors kept;
              {
                const io::Checkpoint c = io::Checkpoint::open(ckpt);
                for (const auto& n : c.names())
                  if (n != "lm_head.weight") kept.emplace_back(n, io::load_tensor(c, n).clone());
              }
              io::write_tensors(ckpt / "model.safetensors", kept);
            },
            "tie_word_embeddings is false but the checkpoint has no lm_head"),
        forward_case("vocab_contradicts_embeddings",
                     config_edit([](json& c) { c["vocab_size"] = 128; }), "config implies"),
        forward_case(
            "shard_symlink_outside_the_checkpoint",
            [](const fs::path& ckpt) {
              fs::rename(ckpt / "model.safetensors", ckpt.parent_path() / "elsewhere.safetensors");
              fs::create_symlink(ckpt.parent_path() / "elsewhere.safetensors",
                                 ckpt / "model.safetensors");
            },
            "symlink pointing outside the checkpoint"),
        forward_case(
            "config_is_a_directory",
            [](const fs::path& ckpt) {
              fs::remove(ckpt / "config.json");
              fs::create_directory(ckpt / "config.json");
            },
            "config.json: not a regular file (it is a directory)"),
        forward_case(
            "config_is_a_fifo",
            [](const fs::path& ckpt) {
              fs::remove(ckpt / "config.json");
              ::mkfifo((ckpt / "config.json").c_str(), 0600);
            },
            "config.json: not a regular file (it is a FIFO)"),
        forward_case(
            "weights_are_a_fifo",
            [](const fs::path& ckpt) {
              fs::remove(ckpt / "model.safetensors");
              ::mkfifo((ckpt / "model.safetensors").c_str(), 0600);
            },
            "not a regular file"),
        forward_case(
            "truncated_weights",
            [](const fs::path& ckpt) {
              fs::resize_file(ckpt / "model.safetensors",
                              fs::file_size(ckpt / "model.safetensors") / 2);
            },
            "past the data buffer"),
        Hostile{"empty_directory",
                [](const fs::path& dir) {
                  fs::create_directory(dir / "empty");
                  return "probe " + (dir / "empty").string();
                },
                "config.json: missing"},
        Hostile{"no_such_directory",
                [](const fs::path& dir) { return "probe " + (dir / "nothing").string(); },
                "no such directory"},
        // Drafters against their target.
        drafter_case("drafter_hidden_size_mismatch",
                     config_edit([](json& c) { c["hidden_size"] = 96; }),
                     "drafter hidden_size 96 != target hidden_size 64"),
        drafter_case("drafter_vocab_mismatch", config_edit([](json& c) { c["vocab_size"] = 65; }),
                     "drafter vocab_size 65 != target vocab_size 64"),
        drafter_case("mask_id_outside_vocab",
                     config_edit([](json& c) { c["dflash_config"]["mask_token_id"] = 64; }),
                     "mask_token_id 64 is outside the target's embedding"),
        drafter_case("taps_out_of_range", config_edit([](json& c) {
                       c["dflash_config"]["target_layer_ids"] = {0, 7};
                     }),
                     "tap 7 is not a target layer (0..3)"),
        drafter_case("taps_undeclared",
                     config_edit([](json& c) { c["dflash_config"].erase("target_layer_ids"); }),
                     "missing dflash_config.target_layer_ids"),
        drafter_case("fc_width_contradicts_taps",
                     config_edit([](json& c) { c["dflash_config"]["target_layer_ids"] = {0}; }),
                     "\"fc.weight\" has shape [64, 128], config implies [64, 64]"),
        drafter_case("block_size_contradiction",
                     config_edit([](json& c) { c["dflash_config"]["block_size"] = 4; }),
                     "block_size = 8 at the top level but 4 under dflash_config"),
        // Step records.
        record_case(
            "record_rows_disagree",
            [](train::StepRecord& r) { r.fc_input = r.fc_input.narrow(0, 0, 5); }, "loss_type",
            "fc_input"),
        record_case(
            "record_anchor_past_the_end", [](train::StepRecord& r) { r.anchors.back() = 10000; },
            "loss_type", "anchor"),
        record_case(
            "record_teacher_vocab_differs",
            [](train::StepRecord& r) {
              r.teacher_logits = at::cat({r.teacher_logits, r.teacher_logits}, 1);
            },
            "loss_type", "vocabulary"),
        record_case(
            "record_teacher_vocab_differs_from_target",
            [](train::StepRecord& r) {
              r.teacher_logits = at::cat({r.teacher_logits, r.teacher_logits}, 1);
              r.drafter_logits = at::Tensor();
            },
            "target_logits_noise_free", "rows are 128 wide, but --target"),
        record_case(
            "record_fc_width_differs_from_drafter",
            [](train::StepRecord& r) { r.fc_input = r.fc_input.narrow(1, 0, 64); },
            "train_infer_consistency", "(slices of 32), but --target"),
        record_case(
            "record_block_size_differs_from_drafter",
            [](train::StepRecord& r) {
              r.block_size = 4;
              r.drafter_logits = r.drafter_logits.narrow(1, 0, 4);
              r.labels = r.labels.narrow(1, 0, 4);
              r.weights = r.weights.narrow(1, 0, 4);
            },
            "train_infer_consistency", "recorded block size 4 but the drafter's is 8"),
        Hostile{"record_not_safetensors",
                [](const fs::path& dir) {
                  write(dir / "r.safetensors", std::string("not a safetensors file at all"));
                  return "check --only loss_type --step-record " + (dir / "r.safetensors").string();
                },
                "r.safetensors"},
        Hostile{"record_of_another_schema",
                [](const fs::path& dir) {
                  io::write_tensors(dir / "r.safetensors",
                                    {{"input_ids", at::zeros({4}, at::kLong)}},
                                    {{"schema", "draftgate.step_record/9"}});
                  return "check --only loss_type --step-record " + (dir / "r.safetensors").string();
                },
                "draftgate.step_record/9"},
        // Goldens.
        golden_case(
            "golden_other_schema", [](json& g) { g["schema"] = "draftgate.golden/2"; },
            "golden schema \"draftgate.golden/2\""),
        golden_case(
            "golden_other_prompt_set",
            [](json& g) { g["prompt_set"]["sha256"] = std::string(64, 'a'); },
            "differs from the golden's"),
        golden_case(
            "golden_without_tau", [](json& g) { g.erase("tau"); }, "golden has no /tau"),
        golden_case(
            "golden_tau_below_one", [](json& g) { g["tau"]["tau_macro"] = 0.5; },
            "golden τ below 1"),
        golden_case(
            "golden_block_size_differs",
            [](json& g) {
              g["decoding"]["block_size"] = 16;
              while (g["tau"]["per_position_acceptance"].size() < 15)
                g["tau"]["per_position_acceptance"].push_back(0.0);  // depths 8..15 never reached
            },
            "the golden was measured at block 16"),
        golden_case(
            "golden_decoding_malformed", [](json& g) { g["decoding"]["max_new_tokens"] = "many"; },
            "decoding configuration"),
        Hostile{"golden_not_json",
                [](const fs::path& dir) {
                  write(dir / "g.json", std::string("{\"schema\": "));
                  return "check --golden " + (dir / "g.json").string();
                },
                "g.json"},
        // Suites.
        suite_case("suite_unknown_field", suite_with("artefacts", json::object()),
                   "unknown suite field \"artefacts\""),
        suite_case("suite_unknown_check", suite_with("checks", {{{"check", "tau_min"}}}),
                   "unknown check \"tau_min\""),
        suite_case("suite_path_not_a_string", suite_with("artifacts", {{"target", 3}}),
                   "artifact \"target\" must be a non-empty path string"),
        // An empty path would name the suite's own folder.
        suite_case("suite_path_empty", suite_with("artifacts", {{"target", ""}}),
                   "artifact \"target\" must be a non-empty path string"),
        // Found by fuzz_suite: a non-string schema escaped as a JSON type error.
        suite_case("suite_schema_not_a_string",
                   json::parse("{\"schema\": 33333330000000000000000052310}"),
                   "suite schema must be"),
        suite_case("suite_instance_name_not_a_string",
                   suite_with("checks", {{{"check", "layer_path"}, {"name", 7}}}),
                   "\"name\" must be a string"),
        suite_case("suite_other_schema", json{{"schema", "draftgate.suite/2"}},
                   "suite schema must be"),
        suite_case("suite_expects_an_unknown_instance",
                   json{{"schema", "draftgate.suite/1"},
                        {"checks", {{{"check", "layer_path"}}}},
                        {"expect", {{"min_tau", "pass"}}}},
                   "expect names \"min_tau\""),
        suite_case("suite_duplicate_instance",
                   suite_with("checks", {{{"check", "layer_path"}}, {{"check", "layer_path"}}}),
                   "appears twice"),
        suite_case("suite_unknown_parameter",
                   json{{"schema", "draftgate.suite/1"},
                        {"artifacts", {{"target", (kTrained / "qwen3-target").string()}}},
                        {"checks", {{{"check", "layer_path"}, {"params", {{"depth", 3}}}}}}},
                   "unknown parameter \"depth\""),
        // Prompt sets.
        prompt_case("prompt_line_not_json", "{\"id\": \"a\", \"input_ids\": [1, 2]}\n{oops}\n",
                    "prompts.jsonl"),
        prompt_case("prompt_token_outside_vocab", "{\"id\": \"a\", \"input_ids\": [1, 640]}\n",
                    "outside the target's vocabulary"),
        prompt_case("prompt_duplicate_id",
                    "{\"id\": \"a\", \"input_ids\": [1]}\n{\"id\": \"a\", \"input_ids\": [2]}\n",
                    "prompts.jsonl"),
        prompt_case("prompt_set_empty", "\n\n", "prompts.jsonl"),
        // Reference dumps and parameters.
        Hostile{"reference_dump_without_tokens",
                [](const fs::path& dir) {
                  io::write_tensors(dir / "dump.safetensors", {{"logits", at::zeros({2, 64})}});
                  return "check --only hidden_state_parity --target " +
                         (kTrained / "qwen3-target").string() + " --reference-dump " +
                         (dir / "dump.safetensors").string();
                },
                "reference dump has no \"tokens\" metadata"},
        Hostile{"param_for_an_unknown_check",
                [](const fs::path&) { return "check --param tau.min=3"; },
                "unknown check \"tau\""}),
    [](const auto& p) { return p.param.label; });

}  // namespace
}  // namespace draftgate::hostile
