// The bad-input catalogue, part two: the hardening classes of issue 12, each with variations.
//   json      values nested 70,000 deep wherever a number or string belongs, objects of 100,000
//             members with a duplicate key at the end (linear-time check), NUL bytes
//   output    outputs that are, resolve to or lie inside an input; device nodes, FIFOs, dirs;
//             a missing folder, a folder that is a file, an empty path
//   pseudo    /proc, /sys and /dev inputs (also through symlinks); empty and unreadable files
//   limits    prompt length, max_new_tokens, tree budget, block size, threads, empty sequences
//   config    ranges of θ, ε, dimensions; layer counts; canonical indices; golden integers
//   params    typed check parameters from --param, suites and goldens
//   select    --only selecting nothing, an empty check list, one error printed once
//   surfaces  inputs the later releases added: DFlash2 configs, weights and records, float32-range
//             drafter scalars, the golden's tau_definition, flags that only mean something together
//   moe       routed-expert (qwen3_moe) targets: experts missing or misshapen, the router's shape,
//             top-k beyond the experts, the sparse-layer keys
//   prompts   text and messages prompt lines: none or two inputs, wrong types, invalid UTF-8, an
//             unknown role, a conversation ending with a reply, a template that fails while a
//             line is rendered, rendering flags a set of ids would ignore, a golden's rendering
//   fp8       block-FP8 targets: scales missing, misshapen, NaN / Inf / <= 0 or of a non-float
//             dtype; quantization_config keys (fmt, weight_block_size, activation_scheme, the
//             not-convert lists); F8 weights the config does not explain; make-target's flags
//   live      `tau measure` against a faulty or hostile server (the stand-in engine with one fault
//             each): answers that are not JSON or 50 MB long, another request's answer, the
//             statistics missing, speculative decoding off, another model, counters reset or the
//             server restarted mid-run, a server that stops answering (must hit --timeout) or
//             answers 503 past the retries
// The test itself (exit 2, one line, nothing modified, bounded time and memory) is in
// hostile_input_test.cpp.

#include <sys/stat.h>

#include <algorithm>
#include <memory>

#include "chat_checkpoint.h"
#include "draftgate/io/checkpoint.h"
#include "draftgate/model/random_checkpoint.h"
#include "engine_outputs.h"
#include "engine_stand_in.h"
#include "hostile_input.h"
#include "speculators_convert.h"

namespace draftgate::hostile {
namespace {

constexpr int kDeep = 70000;

std::string deep_array() { return std::string(kDeep, '[') + "1" + std::string(kDeep, ']'); }
std::string deep_object() {
  std::string s;
  for (int i = 0; i < kDeep; ++i) s += "{\"a\":";
  return s + "1" + std::string(kDeep, '}');
}

// `j` as text with the value at `pointer` replaced by `raw` (e.g. a deeply nested value).
std::string with_raw(json j, const std::string& pointer, const std::string& raw) {
  j[json::json_pointer(pointer)] = "@RAW@";
  std::string text = j.dump();
  return text.replace(text.find("\"@RAW@\""), 7, raw);
}

// An object text of `n` members "kN": 0 and then a repeat of the first key.
std::string many_members(int n) {
  std::string s = "{";
  for (int i = 0; i < n; ++i) s += "\"k" + std::to_string(i) + "\":0,";
  return s + "\"k0\":1}";
}

// The header text of a safetensors file, and the file rewritten with another header.
std::string header_of(const fs::path& file) {
  std::ifstream in(file, std::ios::binary);
  unsigned char len[8];
  in.read(reinterpret_cast<char*>(len), 8);
  std::uint64_t n = 0;
  for (int i = 7; i >= 0; --i) n = (n << 8) | len[i];
  std::string text(n, '\0');
  in.read(text.data(), static_cast<std::streamsize>(n));
  return text;
}
void replace_header(const fs::path& file, const std::string& header) {
  std::string bytes;
  {
    std::ifstream in(file, std::ios::binary);
    bytes.assign(std::istreambuf_iterator<char>(in), {});
  }
  const std::string old = header_of(file);
  std::string out(8, '\0');
  for (int i = 0; i < 8; ++i) out[i] = static_cast<char>((header.size() >> (8 * i)) & 0xff);
  write(file, out + header + bytes.substr(8 + old.size()));
}
// Edits the header JSON of `file` (a valid one) as text through `edit`.
void edit_header(const fs::path& file, const std::function<std::string(json)>& edit) {
  replace_header(file, edit(json::parse(header_of(file))));
}

std::function<void(const fs::path&)> config_text(std::function<std::string(json)> edit) {
  return [edit](const fs::path& ckpt) {
    write(ckpt / "config.json", edit(read(ckpt / "config.json")));
  };
}

std::string target() { return (kTrained / "qwen3-target").string(); }

// A mutated copy of the reference drafter run through `check` beside the target: every check that
// meets the drafter's problem says it in the one line.
Hostile check_drafter_case(std::string label, std::function<void(const fs::path&)> mutate,
                           std::string message) {
  return {label,
          [mutate](const fs::path& dir) {
            const fs::path d = copy_of(dir, "qwen3-drafter-reference");
            mutate(d);
            return "check --target " + target() + " --drafter " + d.string();
          },
          message};
}
std::string drafter() { return (kTrained / "qwen3-drafter-reference").string(); }

// A structural check on the bundled target with `extra` arguments (the front end's path).
std::string structural(const std::string& extra) {
  return "check --only layer_path --target " + target() + " " + extra;
}

// A file the case writes as it is.
Hostile file_case(std::string label, std::string name, std::string contents,
                  std::function<std::string(const fs::path&)> args, std::string message) {
  return {label,
          [name, contents, args](const fs::path& dir) {
            write(dir / name, contents);
            return args(dir / name);
          },
          message};
}

Hostile config_text_case(std::string label, std::function<std::string(json)> edit,
                         std::string message) {
  return probe_case(std::move(label), config_text(std::move(edit)), std::move(message));
}

Hostile header_case(std::string label, std::function<std::string(json)> edit, std::string message) {
  return probe_case(
      std::move(label),
      [edit](const fs::path& ckpt) { edit_header(ckpt / "model.safetensors", edit); },
      std::move(message));
}

Hostile drafter_text_case(std::string label, std::function<std::string(json)> edit,
                          std::string message, std::string fixture = "qwen3-drafter-reference") {
  return {label,
          [edit, fixture](const fs::path& dir) {
            const fs::path d = copy_of(dir, fixture);
            config_text(edit)(d);
            return structural("--drafter " + d.string());
          },
          message};
}

Hostile golden_text_case(std::string label, std::function<std::string(json)> edit,
                         std::string message) {
  return {label,
          [edit](const fs::path& dir) {
            const fs::path g = golden_copy(dir);
            write(g, edit(read(g)));
            return structural("--golden " + g.string());
          },
          message};
}

Hostile suite_text_case(std::string label, std::string text, std::string message) {
  return file_case(
      std::move(label), "suite.json", std::move(text),
      [](const fs::path& f) { return "check --suite " + f.string(); }, std::move(message));
}

// A --param (or several) on a run that has every artifact, so a late check would do real work.
Hostile param_case(std::string label, std::string params, std::string message) {
  return {label,
          [params](const fs::path& dir) {
            return "check" + qwen3_pair() + " --step-record " + reference_record() + " --golden " +
                   golden_copy(dir).string() + " " + params;
          },
          message};
}

// A suite whose one instance of `check` carries `params`.
Hostile suite_params_case(std::string label, std::string check, json params, std::string message) {
  return suite_case(std::move(label),
                    json{{"schema", "draftgate.suite/1"},
                         {"artifacts", {{"target", target()}}},
                         {"checks", {{{"check", check}, {"params", params}}}}},
                    std::move(message));
}

Hostile golden_params_case(std::string label, json check_params, std::string message) {
  return golden_case(
      std::move(label), [check_params](json& g) { g["check_params"] = check_params; },
      std::move(message));
}

// An output path the case makes (inside DIR) for `verb_args` + " FLAG OUT".
Hostile output_case(std::string label, std::function<std::string(const fs::path&)> args,
                    std::string message) {
  return {std::move(label), std::move(args), std::move(message)};
}

std::string forward_to(const fs::path& model, const std::string& out) {
  return "forward --model " + model.string() + " --tokens 1,2 --out " + out;
}

std::string eval_with(const std::string& prompt_file, const std::string& extra = "") {
  return "eval" + qwen3_pair() + " --prompts " + prompt_file + " --max-new 2 " + extra;
}

std::string prompt_of_length(std::size_t n) {
  json ids = json::array();
  for (std::size_t i = 0; i < n; ++i) ids.push_back(1 + i % 60);
  return json{{"id", "long"}, {"input_ids", ids}}.dump() + "\n";
}

// Runs as the unprivileged user "nobody", for whom mode 000 means unreadable (root reads all).
const std::string kAsNobody = "setpriv --reuid=65534 --regid=65534 --clear-groups";

Hostile as_nobody(Hostile h) {
  h.prefix = kAsNobody;
  return h;
}

// A copy of a fixture directory that "nobody" can reach (fresh_dir is 0755 under /tmp).
std::function<std::string(const fs::path&)> unreadable(std::string what, std::string inner,
                                                       std::function<std::string(fs::path)> args) {
  return [what, inner, args](const fs::path& dir) {
    const fs::path copy = copy_of(dir, what);
    fs::permissions(copy / inner, fs::perms::none);
    return args(copy);
  };
}

json minimal_suite(json checks) {
  return {{"schema", "draftgate.suite/1"},
          {"artifacts", {{"target", target()}}},
          {"checks", std::move(checks)}};
}

INSTANTIATE_TEST_SUITE_P(
    Json, HostileInput,
    ::testing::Values(
        config_text_case(
            "deep_array_as_layer_count",
            [](json c) { return with_raw(c, "/num_hidden_layers", deep_array()); },
            "config.json: JSON nests deeper than 64 levels"),
        config_text_case(
            "deep_object_as_layer_count",
            [](json c) { return with_raw(c, "/num_hidden_layers", deep_object()); },
            "config.json: JSON nests deeper than 64 levels"),
        config_text_case(
            "deep_layer_types_entry",
            [](json c) {
              c["layer_types"] = {"full_attention", "x", "full_attention", "full_attention"};
              return with_raw(c, "/layer_types/1", deep_array());
            },
            "nests deeper than 64"),
        config_text_case(
            "deep_model_type", [](json c) { return with_raw(c, "/model_type", deep_object()); },
            "nests deeper than 64"),
        config_text_case(
            "deep_text_config", [](json c) { return with_raw(c, "/text_config", deep_object()); },
            "nests deeper than 64"),
        config_text_case(
            "config_of_100k_members_with_a_duplicate", [](json) { return many_members(100000); },
            "duplicate JSON key \"k0\""),
        config_text_case(
            "config_nul_then_garbage",
            [](json c) { return c.dump() + std::string(1, '\0') + "{{"; }, "a NUL byte"),
        config_text_case(
            "config_trailing_garbage", [](json c) { return c.dump() + "}"; },
            "invalid JSON at byte"),
        config_text_case(
            "config_duplicate_nested_key",
            [](json c) {
              std::string s = c.dump();
              return s.insert(1, "\"rope_theta\": 1, ");
            },
            "duplicate JSON key \"rope_theta\""),
        header_case(
            "deep_array_as_shape_dimension",
            [](json h) { return with_raw(h, "/model.norm.weight/shape/0", deep_array()); },
            "model.safetensors: JSON nests deeper than 64 levels"),
        header_case(
            "deep_object_in_header_metadata",
            [](json h) { return with_raw(h, "/__metadata__/format", deep_object()); },
            "nests deeper than 64"),
        header_case(
            "header_nul_then_garbage",
            [](json h) {
              std::string s = h.dump();
              s += std::string(1, '\0') + "garbage{\"x\":";
              return s;
            },
            "a NUL byte"),
        header_case(
            "header_of_100k_members_with_a_duplicate", [](json) { return many_members(100000); },
            "duplicate JSON key \"k0\""),
        header_case(
            "header_tab_padding_then_garbage", [](json h) { return h.dump() + "\t\t\tgarbage"; },
            "invalid JSON at byte"),
        probe_case(
            "deep_index_entry",
            [](const fs::path& ckpt) {
              json index = {{"weight_map", {{"model.norm.weight", "model.safetensors"}}}};
              write(ckpt / "model.safetensors.index.json",
                    with_raw(index, "/weight_map/model.norm.weight", deep_array()));
            },
            "model.safetensors.index.json: JSON nests deeper than 64 levels"),
        probe_case(
            "single_file_beside_a_sharded_index",
            [](const fs::path& ckpt) {
              json index = {{"weight_map", json::object()}};
              const io::Checkpoint single = io::Checkpoint::open(ckpt);
              for (const auto& name : single.names())
                index["weight_map"][name] = "model-00001-of-00001.safetensors";
              fs::copy_file(ckpt / "model.safetensors", ckpt / "model-00001-of-00001.safetensors");
              write(ckpt / "model.safetensors.index.json", index.dump());
            },
            "holds both model.safetensors and model.safetensors.index.json, whose shards are "
            "other files"),
        probe_case(
            "shard_tensor_the_index_does_not_list",
            [](const fs::path& ckpt) {
              json index = {{"weight_map", json::object()}};
              const io::Checkpoint single = io::Checkpoint::open(ckpt);
              for (const auto& name : single.names())
                if (name != "model.norm.weight") index["weight_map"][name] = "model.safetensors";
              write(ckpt / "model.safetensors.index.json", index.dump());
            },
            "model.safetensors: holds tensor \"model.norm.weight\", which "
            "model.safetensors.index.json does not list"),
        probe_case(
            "index_of_100k_entries_with_a_duplicate",
            [](const fs::path& ckpt) {
              std::string s = "{\"weight_map\": {";
              for (int i = 0; i < 100000; ++i)
                s += "\"model.layers." + std::to_string(i) + ".w\": \"model.safetensors\",";
              write(ckpt / "model.safetensors.index.json",
                    s + "\"model.layers.0.w\": \"model.safetensors\"}}");
            },
            "duplicate JSON key \"model.layers.0.w\""),
        drafter_text_case(
            "deep_drafter_tap",
            [](json c) { return with_raw(c, "/dflash_config/target_layer_ids/0", deep_array()); },
            "nests deeper than 64"),
        drafter_text_case(
            "drafter_config_of_100k_members", [](json) { return many_members(100000); },
            "duplicate JSON key \"k0\""),
        golden_text_case(
            "deep_golden_decoding_mode",
            [](json g) { return with_raw(g, "/decoding/mode", deep_object()); },
            "golden.json: JSON nests deeper than 64 levels"),
        golden_text_case(
            "deep_golden_check_params",
            [](json g) { return with_raw(g, "/check_params/loss_type", deep_array()); },
            "nests deeper than 64"),
        golden_text_case(
            "golden_of_100k_members", [](json) { return many_members(100000); },
            "duplicate JSON key"),
        suite_text_case("deep_suite_checks_entry",
                        "{\"schema\": \"draftgate.suite/1\", \"checks\": [" + deep_array() + "]}",
                        "suite.json: JSON nests deeper than 64 levels"),
        suite_text_case("deep_suite_params",
                        "{\"schema\": \"draftgate.suite/1\", \"checks\": [{\"check\": "
                        "\"layer_path\", \"params\": " +
                            deep_object() + "}]}",
                        "nests deeper than 64"),
        suite_text_case("deep_suite_artifact",
                        "{\"schema\": \"draftgate.suite/1\", \"artifacts\": {\"target\": " +
                            deep_array() + "}}",
                        "nests deeper than 64"),
        suite_text_case("suite_of_100k_expectations", many_members(100000), "duplicate JSON key"),
        prompt_case("deep_prompt_token",
                    "{\"id\": \"a\", \"input_ids\": [1, " + deep_array() + "]}\n",
                    "prompts.jsonl:1: JSON nests deeper than 64 levels"),
        prompt_case("deep_prompt_id", "{\"id\": " + deep_object() + ", \"input_ids\": [1]}\n",
                    "nests deeper than 64"),
        prompt_case("prompt_line_of_100k_members", many_members(100000) + "\n",
                    "prompts.jsonl:1: duplicate JSON key"),
        prompt_case("prompt_line_with_nul",
                    std::string("{\"id\": \"a\", \"input_ids\": [1]}") + std::string(1, '\0') +
                        "\n",
                    "a NUL byte"),
        Hostile{"deep_param_value",
                [](const fs::path&) {
                  // 60,000 levels: one argument stays under the kernel's 128 KiB limit.
                  return structural("--param layer_path.expected_num_layers=" +
                                    std::string(60000, '[') + std::string(60000, ']'));
                },
                "--param: parameter layer_path.expected_num_layers"},
        Hostile{"deep_header_in_step_record",
                [](const fs::path& dir) {
                  const fs::path r = dir / "r.safetensors";
                  fs::copy_file(reference_record(), r);
                  edit_header(
                      r, [](json h) { return with_raw(h, "/__metadata__/schema", deep_array()); });
                  return "check --only loss_type --step-record " + r.string();
                },
                "r.safetensors: JSON nests deeper than 64 levels"},
        Hostile{"deep_header_in_reference_dump",
                [](const fs::path& dir) {
                  io::write_tensors(dir / "dump.safetensors", {{"logits", at::zeros({2, 64})}},
                                    {{"tokens", "1,2"}});
                  edit_header(dir / "dump.safetensors",
                              [](json h) { return with_raw(h, "/logits/dtype", deep_object()); });
                  return "check --only hidden_state_parity --target " + target() +
                         " --reference-dump " + (dir / "dump.safetensors").string();
                },
                "dump.safetensors: JSON nests deeper than 64 levels"}),
    [](const auto& p) { return p.param.label; });

INSTANTIATE_TEST_SUITE_P(
    Output, HostileInput,
    ::testing::Values(
        output_case(
            "forward_over_the_weights",
            [](const fs::path& dir) {
              const fs::path ckpt = copy_of(dir, "qwen3-target");
              return forward_to(ckpt, (ckpt / "model.safetensors").string());
            },
            "model.safetensors: lies inside the input checkpoint"),
        output_case(
            "forward_over_the_config",
            [](const fs::path& dir) {
              const fs::path ckpt = copy_of(dir, "qwen3-target");
              return forward_to(ckpt, (ckpt / "config.json").string());
            },
            "lies inside the input checkpoint"),
        output_case(
            "forward_into_the_checkpoint",
            [](const fs::path& dir) {
              const fs::path ckpt = copy_of(dir, "qwen3-target");
              return forward_to(ckpt, (ckpt / "new.safetensors").string());
            },
            "lies inside the input checkpoint"),
        output_case(
            "forward_through_a_symlink_to_the_weights",
            [](const fs::path& dir) {
              const fs::path ckpt = copy_of(dir, "qwen3-target");
              fs::create_symlink(ckpt / "model.safetensors", dir / "out.safetensors");
              return forward_to(ckpt, (dir / "out.safetensors").string());
            },
            "out.safetensors: lies inside the input checkpoint"),
        // A link to nowhere is not replaced by a file: where it was meant to lead is unknown.
        output_case(
            "forward_onto_a_symlink_loop",
            [](const fs::path& dir) {
              fs::create_symlink(dir / "loop_b", dir / "loop_a");
              fs::create_symlink(dir / "loop_a", dir / "loop_b");
              return forward_to(copy_of(dir, "qwen3-target"), (dir / "loop_a").string());
            },
            "loop_a: is a symbolic link that leads to no file (dangling, or a loop)"),
        output_case(
            "forward_onto_a_dangling_symlink",
            [](const fs::path& dir) {
              fs::create_symlink(dir / "nowhere" / "x", dir / "dangling");
              return forward_to(copy_of(dir, "qwen3-target"), (dir / "dangling").string());
            },
            "dangling: is a symbolic link that leads to no file"),
        output_case(
            "forward_over_a_hard_link_to_the_weights",
            [](const fs::path& dir) {
              const fs::path ckpt = copy_of(dir, "qwen3-target");
              fs::create_hard_link(ckpt / "model.safetensors", dir / "out.safetensors");
              return forward_to(ckpt, (dir / "out.safetensors").string());
            },
            "out.safetensors: is a link to a file of the input checkpoint"),
        output_case(
            "forward_to_dev_null",
            [](const fs::path&) { return forward_to(target(), "/dev/null"); },
            "--out /dev/null: resolves into /dev"),
        output_case(
            "forward_to_a_fifo",
            [](const fs::path& dir) {
              ::mkfifo((dir / "fifo").c_str(), 0600);
              return forward_to(target(), (dir / "fifo").string());
            },
            "exists and is a FIFO"),
        output_case(
            "forward_to_a_directory",
            [](const fs::path& dir) {
              fs::create_directory(dir / "d");
              return forward_to(target(), (dir / "d").string());
            },
            "exists and is a directory"),
        output_case(
            "make_drafter_over_its_target",
            [](const fs::path& dir) {
              const fs::path ckpt = copy_of(dir, "qwen3-target");
              return "make-drafter --target " + ckpt.string() + " --out " + ckpt.string();
            },
            "is the input directory"),
        output_case(
            "make_drafter_inside_its_target",
            [](const fs::path& dir) {
              const fs::path ckpt = copy_of(dir, "qwen3-target");
              return "make-drafter --target " + ckpt.string() + " --out " +
                     (ckpt / "drafter").string();
            },
            "lies inside the input checkpoint"),
        output_case(
            "make_drafter_around_its_target",
            [](const fs::path& dir) {
              const fs::path ckpt = copy_of(dir, "qwen3-target");
              return "make-drafter --target " + ckpt.string() + " --out " + dir.string();
            },
            "holds the input"),
        output_case(
            "make_drafter_onto_a_file",
            [](const fs::path& dir) {
              write(dir / "file", std::string("x"));
              return "make-drafter --target " + target() + " --out " + (dir / "file").string();
            },
            "exists and is a regular file, not a directory"),
        output_case(
            "make_target_onto_a_file",
            [](const fs::path& dir) {
              write(dir / "file", std::string("x"));
              return "make-target --out " + (dir / "file").string();
            },
            "not a directory"),
        output_case(
            "make_target_into_dev",
            [](const fs::path&) { return std::string("make-target --out /dev/shm/x"); },
            "--out /dev/shm/x: resolves into /dev"),
        output_case(
            "report_over_the_config",
            [](const fs::path& dir) {
              const fs::path ckpt = copy_of(dir, "qwen3-target");
              return "check --only layer_path --target " + ckpt.string() + " --report " +
                     (ckpt / "config.json").string();
            },
            "--report"),
        output_case(
            "report_over_the_step_record",
            [](const fs::path& dir) {
              fs::copy_file(reference_record(), dir / "r.safetensors");
              return structural("--step-record " + (dir / "r.safetensors").string() + " --report " +
                                (dir / "r.safetensors").string());
            },
            "is the input file"),
        output_case(
            "junit_over_the_golden",
            [](const fs::path& dir) {
              const fs::path g = golden_copy(dir);
              return structural("--golden " + g.string() + " --junit " + g.string());
            },
            "--junit"),
        output_case(
            "html_over_the_golden",
            [](const fs::path& dir) {
              const fs::path g = golden_copy(dir);
              return structural("--golden " + g.string() + " --html " + g.string());
            },
            "--html"),
        output_case(
            "report_over_the_suite",
            [](const fs::path& dir) {
              write(dir / "s.json", minimal_suite({{{"check", "layer_path"}}}));
              return "check --suite " + (dir / "s.json").string() + " --report " +
                     (dir / "s.json").string();
            },
            "(--suite)"),
        output_case(
            "report_over_the_goldens_prompt_set",
            [](const fs::path& dir) {
              fs::copy_file(prompts(), dir / "p.jsonl");
              json g = read(kSource / "golden/qwen3-reference.json");
              g["prompt_set"]["path"] = "p.jsonl";
              write(dir / "g.json", g);
              return structural("--golden " + (dir / "g.json").string() + " --report " +
                                (dir / "p.jsonl").string());
            },
            "the golden's prompt set"),
        output_case(
            "report_and_junit_are_one_file",
            [](const fs::path& dir) {
              return structural("--report " + (dir / "r").string() + " --junit " +
                                (dir / "r").string());
            },
            "is also the output of --report"),
        output_case(
            "report_to_dev_full", [](const fs::path&) { return structural("--report /dev/full"); },
            "resolves into /dev"),
        output_case(
            "report_through_a_symlink_to_dev_null",
            [](const fs::path& dir) {
              fs::create_symlink("/dev/null", dir / "r.json");
              return structural("--report " + (dir / "r.json").string());
            },
            "resolves into /dev"),
        output_case(
            "junit_to_a_fifo",
            [](const fs::path& dir) {
              ::mkfifo((dir / "fifo").c_str(), 0600);
              return structural("--junit " + (dir / "fifo").string());
            },
            "exists and is a FIFO"),
        output_case(
            "report_into_the_drafter",
            [](const fs::path& dir) {
              const fs::path d = copy_of(dir, "qwen3-drafter-reference");
              return structural("--drafter " + d.string() + " --report " +
                                (d / "report.json").string());
            },
            "lies inside the input checkpoint"),
        output_case(
            "eval_json_over_the_prompts",
            [](const fs::path& dir) {
              fs::copy_file(prompts(), dir / "p.jsonl");
              return eval_with((dir / "p.jsonl").string(), "--json " + (dir / "p.jsonl").string());
            },
            "(--prompts)"),
        output_case(
            "eval_json_into_the_target",
            [](const fs::path& dir) {
              const fs::path ckpt = copy_of(dir, "qwen3-target");
              return "eval --target " + ckpt.string() + " --drafter " + drafter() + " --prompts " +
                     prompts() + " --json " + (ckpt / "e.json").string();
            },
            "lies inside the input checkpoint"),
        output_case(
            "eval_json_onto_a_directory",
            [](const fs::path& dir) { return eval_with(prompts(), "--json " + dir.string()); },
            "exists and is a directory"),
        output_case(
            "eval_json_into_a_missing_folder",
            [](const fs::path& dir) {
              return eval_with(prompts(), "--json " + (dir / "no-folder/e.json").string());
            },
            "/no-folder does not exist"),
        output_case(
            "report_into_a_folder_that_is_a_file",
            [](const fs::path& dir) {
              write(dir / "file", std::string("x"));
              return structural("--report " + (dir / "file/r.json").string());
            },
            "/file is a regular file, not a folder"),
        output_case(
            "golden_out_empty",
            [](const fs::path&) {
              return "golden record" + qwen3_pair() + " --prompts " + prompts() + " --out ''";
            },
            "--out: is an empty path (an unset variable?)"),
        output_case(
            "golden_over_the_prompts",
            [](const fs::path& dir) {
              fs::copy_file(prompts(), dir / "p.jsonl");
              return "golden record" + qwen3_pair() + " --prompts " + (dir / "p.jsonl").string() +
                     " --out " + (dir / "p.jsonl").string() + " --force";
            },
            "(--prompts)"),
        output_case(
            "golden_into_the_drafter",
            [](const fs::path& dir) {
              const fs::path d = copy_of(dir, "qwen3-drafter-reference");
              return "golden record --target " + target() + " --drafter " + d.string() +
                     " --prompts " + prompts() + " --out " + (d / "g.json").string();
            },
            "lies inside the input checkpoint"),
        output_case(
            "golden_to_dev_null",
            [](const fs::path&) {
              return "golden record" + qwen3_pair() + " --prompts " + prompts() +
                     " --out /dev/null --force";
            },
            "resolves into /dev"),
        output_case(
            "golden_exists_without_force",
            [](const fs::path& dir) {
              const fs::path g = golden_copy(dir);
              return "golden record" + qwen3_pair() + " --prompts " + prompts() + " --out " +
                     g.string();
            },
            "golden file exists; refusing to overwrite it")),
    [](const auto& p) { return p.param.label; });

INSTANTIATE_TEST_SUITE_P(
    Pseudo, HostileInput,
    ::testing::Values(
        probe_case(
            "config_symlinked_to_proc_kmsg",
            [](const fs::path& ckpt) {
              fs::remove(ckpt / "config.json");
              fs::create_symlink("/proc/kmsg", ckpt / "config.json");
            },
            "config.json: resolves into /proc"),
        probe_case(
            "config_symlinked_to_dev_zero",
            [](const fs::path& ckpt) {
              fs::remove(ckpt / "config.json");
              fs::create_symlink("/dev/zero", ckpt / "config.json");
            },
            "config.json: resolves into /dev"),
        probe_case(
            "config_symlinked_to_proc_status",
            [](const fs::path& ckpt) {
              fs::remove(ckpt / "config.json");
              fs::create_symlink("/proc/self/status", ckpt / "config.json");
            },
            "resolves into /proc"),
        probe_case(
            "index_symlinked_to_dev_urandom",
            [](const fs::path& ckpt) {
              fs::create_symlink("/dev/urandom", ckpt / "model.safetensors.index.json");
            },
            "model.safetensors.index.json: resolves into /dev"),
        probe_case(
            "config_is_empty", [](const fs::path& ckpt) { write(ckpt / "config.json", std::string()); },
            "config.json: file is empty (0 bytes)"),
        probe_case(
            "weights_are_a_socket_path",
            [](const fs::path& ckpt) {
              fs::remove(ckpt / "model.safetensors");
              fs::create_symlink("/dev/null", ckpt / "model.safetensors");
            },
            "model.safetensors"),
        Hostile{"target_is_proc_self",
                [](const fs::path&) { return std::string("probe /proc/self"); },
                "/proc/self: resolves into /proc"},
        Hostile{"target_is_sys_kernel",
                [](const fs::path&) { return std::string("probe /sys/kernel"); },
                "/sys/kernel: resolves into /sys"},
        Hostile{"target_symlinked_to_proc",
                [](const fs::path& dir) {
                  fs::create_symlink("/proc/1", dir / "ckpt");
                  return "probe " + (dir / "ckpt").string();
                },
                "ckpt: resolves into /proc"},
        Hostile{"target_is_a_file",
                [](const fs::path& dir) {
                  write(dir / "f", std::string("x"));
                  return "probe " + (dir / "f").string();
                },
                "not a directory (it is a regular file)"},
        Hostile{"drafter_symlinked_to_dev",
                [](const fs::path& dir) {
                  fs::create_symlink("/dev", dir / "d");
                  return structural("--drafter " + (dir / "d").string());
                },
                "resolves into /dev"},
        Hostile{"prompts_from_proc",
                [](const fs::path&) { return eval_with("/proc/self/status"); },
                "/proc/self/status: resolves into /proc"},
        Hostile{"prompts_symlinked_to_dev_zero",
                [](const fs::path& dir) {
                  fs::create_symlink("/dev/zero", dir / "p.jsonl");
                  return eval_with((dir / "p.jsonl").string());
                },
                "p.jsonl: resolves into /dev"},
        file_case(
            "prompts_empty", "p.jsonl", "",
            [](const fs::path& f) { return eval_with(f.string()); },
            "p.jsonl: file is empty (0 bytes)"),
        Hostile{"prompts_are_a_directory",
                [](const fs::path& dir) { return eval_with(dir.string()); },
                "not a regular file (it is a directory)"},
        Hostile{"golden_from_dev_stdin",
                [](const fs::path&) { return structural("--golden /dev/stdin"); },
                "/dev/stdin: resolves into /"},
        file_case(
            "golden_empty", "g.json", "",
            [](const fs::path& f) { return structural("--golden " + f.string()); },
            "g.json: file is empty (0 bytes)"),
        Hostile{"suite_from_proc",
                [](const fs::path&) { return std::string("check --suite /proc/self/cmdline"); },
                "/proc/self/cmdline: resolves into /proc"},
        file_case(
            "suite_empty", "s.json", "", [](const fs::path& f) { return "check --suite " + f.string(); },
            "s.json: file is empty (0 bytes)"),
        Hostile{"step_record_from_dev_zero",
                [](const fs::path&) {
                  return std::string("check --only loss_type --step-record /dev/zero");
                },
                "/dev/zero: resolves into /dev"},
        Hostile{"reference_dump_symlinked_to_proc",
                [](const fs::path& dir) {
                  fs::create_symlink("/proc/self/maps", dir / "dump.safetensors");
                  return "check --only hidden_state_parity --target " + target() +
                         " --reference-dump " + (dir / "dump.safetensors").string();
                },
                "dump.safetensors: resolves into /proc"},
        as_nobody(Hostile{"unreadable_prompts",
                          [](const fs::path& dir) {
                            fs::copy_file(prompts(), dir / "p.jsonl");
                            fs::permissions(dir / "p.jsonl", fs::perms::none);
                            return eval_with((dir / "p.jsonl").string());
                          },
                          "p.jsonl: cannot open for reading: Permission denied"}),
        as_nobody(Hostile{
            "unreadable_config",
            unreadable("qwen3-target", "config.json",
                       [](const fs::path& ckpt) { return "probe " + ckpt.string(); }),
            "config.json: cannot open for reading: Permission denied"}),
        as_nobody(Hostile{"unreadable_checkpoint_directory",
                          unreadable("qwen3-target", ".",
                                     [](const fs::path& ckpt) { return "probe " + ckpt.string(); }),
                          "cannot read the directory: Permission denied"}),
        as_nobody(Hostile{
            "unreadable_weights",
            unreadable("qwen3-target", "model.safetensors",
                       [](const fs::path& ckpt) { return "probe " + ckpt.string(); }),
            "model.safetensors: cannot open: Permission denied"}),
        as_nobody(Hostile{"unreadable_golden",
                          [](const fs::path& dir) {
                            const fs::path g = golden_copy(dir);
                            fs::permissions(g, fs::perms::none);
                            return structural("--golden " + g.string());
                          },
                          "golden.json: cannot open for reading: Permission denied"})),
    [](const auto& p) { return p.param.label; });

INSTANTIATE_TEST_SUITE_P(Limits, HostileInput,
                         ::testing::Values(Hostile{"threads_100000",
                                                   [](const fs::path&) {
                                                     return "--threads 100000 probe " + target();
                                                   },
                                                   "--threads: Value 100000 is not in 1…"},
                                           Hostile{"threads_zero",
                                                   [](const fs::path&) {
                                                     return "--threads 0 probe " + target();
                                                   },
                                                   "--threads"},
                                           Hostile{"max_new_1e9",
                                                   [](const fs::path&) {
                                                     return eval_with(prompts(),
                                                                      "--max-new 1000000000");
                                                   },
                                                   "--max-new: Value 1000000000 is not in 1…65536"},
                                           Hostile{"tree_budget_1e9",
                                                   [](const fs::path&) {
                                                     return eval_with(prompts(),
                                                                      "--tree-budget 1000000000");
                                                   },
                                                   "--tree-budget: Value 1000000000 is not in "
                                                   "0…1024"},
                                           Hostile{"tree_top_k_1e9",
                                                   [](const fs::path&) {
                                                     return eval_with(
                                                         prompts(),
                                                         "--tree-budget 4 --tree-top-k 1000000000");
                                                   },
                                                   "--tree-top-k"},
                                           Hostile{
                                               "oracle_block_size_1e9",
                                               [](const fs::path&) {
                                                 return "eval --oracle --block-size 1000000000 "
                                                        "--target " +
                                                        target() + " --prompts " + prompts();
                                               },
                                               "--block-size: Value 1000000000 is not in 2…256"},
                                           Hostile{
                                               "oracle_block_size_one",
                                               [](const fs::path&) {
                                                 return "eval --oracle --block-size 1 --target " +
                                                        target() + " --prompts " + prompts();
                                               },
                                               "--block-size"},
                                           Hostile{"negative_eos",
                                                   [](const fs::path&) {
                                                     return eval_with(prompts(), "--eos -3");
                                                   },
                                                   "--eos"},
                                           Hostile{"golden_record_max_new_1e9",
                                                   [](const fs::path& dir) {
                                                     return "golden record" + qwen3_pair() +
                                                            " --prompts " + prompts() +
                                                            " --max-new 1000000000 --out " +
                                                            (dir / "g.json").string();
                                                   },
                                                   "--max-new"},
                                           golden_case(
                                               "golden_max_new_1e9",
                                               [](json& g) {
                                                 g["decoding"]["max_new_tokens"] = 1000000000;
                                               },
                                               "max_new_tokens 1000000000 is outside 1..65536"),
                                           golden_case(
                                               "golden_tree_budget_1e9",
                                               [](json& g) {
                                                 g["decoding"]["tree_budget"] = 1000000000;
                                               },
                                               "tree budget 1000000000 is outside 0..1024"),
                                           golden_case(
                                               "golden_block_size_1e9",
                                               [](json& g) {
                                                 g["decoding"]["block_size"] = 1000000000;
                                               },
                                               "block size 1000000000 is outside 2..256"),
                                           golden_case(
                                               "golden_drafter_architecture_eagle3",
                                               [](json& g) {
                                                 g["decoding"]["drafter_architecture"] = "eagle3";
                                               },
                                               "drafter_architecture \"eagle3\" is not dflash "
                                               "or dflash2"),
                                           golden_case(
                                               "golden_drafter_architecture_number",
                                               [](json& g) {
                                                 g["decoding"]["drafter_architecture"] = 2;
                                               },
                                               "drafter_architecture"),
                                           golden_case(
                                               "golden_negative_eos",
                                               [](json& g) {
                                                 g["decoding"]["eos_ids"] = {0, -7};
                                               },
                                               "EOS id -7 is negative"),
                                           prompt_case("prompt_past_max_positions",
                                                       prompt_of_length(5000),
                                                       "exceeds the target's "
                                                       "max_position_embeddings 4096"),
                                           prompt_case("prompt_of_30000_tokens",
                                                       prompt_of_length(30000),
                                                       "exceeds the target's "
                                                       "max_position_embeddings 4096"),
                                           Hostile{"prompt_plus_max_new_past_max_positions",
                                                   [](const fs::path& dir) {
                                                     write(dir / "p.jsonl", prompt_of_length(4000));
                                                     return "eval" + qwen3_pair() + " --prompts " +
                                                            (dir / "p.jsonl").string() +
                                                            " --max-new 200";
                                                   },
                                                   "p.jsonl: prompt \"long\": a sequence of 4208 "
                                                   "positions"},
                                           Hostile{
                                               "forward_past_max_positions",
                                               [](const fs::path& dir) {
                                                 std::string ids = "1";
                                                 for (int i = 0; i < 5000; ++i) ids += ",2";
                                                 return "forward --model " + target() +
                                                        " --tokens " + ids + " --out " +
                                                        (dir / "o.safetensors").string();
                                               },
                                               "--tokens: a sequence of 5001 positions exceeds"},
                                           Hostile{"parity_tokens_past_max_positions",
                                                   [](const fs::path&) {
                                                     std::string ids = "[1";
                                                     for (int i = 0; i < 5000; ++i) ids += ",2";
                                                     return "check --only hidden_state_parity "
                                                            "--target " +
                                                            target() +
                                                            " --param hidden_state_parity.tokens=" +
                                                            ids + "]";
                                                   },
                                                   "tokens: a sequence of 5001 positions exceeds"},
                                           forward_case("max_positions_negative",
                                                        config_edit([](json& c) {
                                                          c["max_position_embeddings"] = -5;
                                                        }),
                                                        "max_position_embeddings must be "
                                                        "positive, got -5"),
                                           record_case(
                                               "record_empty_sequence",
                                               [](train::StepRecord& r) {
                                                 r.input_ids.clear();
                                                 r.loss_mask.clear();
                                                 r.fc_input = r.fc_input.narrow(0, 0, 0);
                                                 r.teacher_logits =
                                                     r.teacher_logits.narrow(0, 0, 0);
                                                 r.anchors.clear();
                                                 r.labels = r.labels.narrow(0, 0, 0);
                                                 r.weights = r.weights.narrow(0, 0, 0);
                                                 r.drafter_logits =
                                                     r.drafter_logits.narrow(0, 0, 0);
                                               },
                                               "train_infer_consistency", "input_ids is empty"),
                                           record_case(
                                               "record_teacher_positions_unsorted",
                                               [](train::StepRecord& r) {
                                                 r.teacher_logits =
                                                     r.teacher_logits.narrow(0, 0, 3);
                                                 r.teacher_positions = {5, 2, 7};
                                               },
                                               "target_logits_noise_free",
                                               "tensor \"teacher_positions\" must be strictly "
                                               "increasing (sorted, no repeats)"),
                                           record_case(
                                               "record_zero_anchors",
                                               [](train::StepRecord& r) {
                                                 r.anchors.clear();
                                                 r.labels = r.labels.narrow(0, 0, 0);
                                                 r.weights = r.weights.narrow(0, 0, 0);
                                                 r.drafter_logits =
                                                     r.drafter_logits.narrow(0, 0, 0);
                                               },
                                               "loss_type", "anchors is empty"),
                                           Hostile{"forward_without_tokens",
                                                   [](const fs::path& dir) {
                                                     return "forward --model " + target() +
                                                            " --tokens , --out " +
                                                            (dir / "o.safetensors").string();
                                                   },
                                                   "--tokens"},
                                           // Ids read as written, never guessed: an empty one is
                                           // not token 0, an overflow not the largest id, a
                                           // leading zero not octal.
                                           Hostile{"forward_empty_token",
                                                   [](const fs::path& dir) {
                                                     return "forward --model " + target() +
                                                            " --tokens '' --out " +
                                                            (dir / "o.safetensors").string();
                                                   },
                                                   "--tokens: Value  is not an integer"},
                                           Hostile{
                                               "forward_token_past_64_bits",
                                               [](const fs::path& dir) {
                                                 return "forward --model " + target() +
                                                        " --tokens 99999999999999999999 --out " +
                                                        (dir / "o.safetensors").string();
                                               },
                                               "--tokens: Value 99999999999999999999 does not "
                                               "fit a 64-bit integer"},
                                           Hostile{"forward_token_octal_looking",
                                                   [](const fs::path& dir) {
                                                     return "forward --model " + target() +
                                                            " --tokens 1,010 --out " +
                                                            (dir / "o.safetensors").string();
                                                   },
                                                   "--tokens: Value 010 is not an integer"},
                                           prompt_case("prompt_without_tokens",
                                                       "{\"id\": \"a\", \"input_ids\": []}\n",
                                                       "\"input_ids\" must be a non-empty array"),
                                           // make-drafter writes nothing a loader would refuse of
                                           // its target.
                                           Hostile{"make_drafter_tap_past_the_target",
                                                   [](const fs::path& dir) {
                                                     return "make-drafter --target " + target() +
                                                            " --taps 0,9 --out " +
                                                            (dir / "d").string();
                                                   },
                                                   "--taps: tap 9 is not a layer of the target "
                                                   "(0..3)"},
                                           Hostile{"make_drafter_tap_twice",
                                                   [](const fs::path& dir) {
                                                     return "make-drafter --target " + target() +
                                                            " --taps 1,1 --out " +
                                                            (dir / "d").string();
                                                   },
                                                   "--taps: tap 1 is given twice"},
                                           Hostile{"make_drafter_mask_past_the_vocabulary",
                                                   [](const fs::path& dir) {
                                                     return "make-drafter --target " + target() +
                                                            " --mask-token-id 9999 --out " +
                                                            (dir / "d").string();
                                                   },
                                                   "--mask-token-id: 9999 is outside the "
                                                   "target's vocabulary"},
                                           Hostile{"make_drafter_negative_seed",
                                                   [](const fs::path& dir) {
                                                     return "make-drafter --target " + target() +
                                                            " --seed -1 --out " +
                                                            (dir / "d").string();
                                                   },
                                                   "--seed: Value -1 is not an integer"},
                                           Hostile{"make_drafter_100000_layers",
                                                   [](const fs::path& dir) {
                                                     return "make-drafter --target " + target() +
                                                            " --layers 100000 --out " +
                                                            (dir / "d").string();
                                                   },
                                                   "--layers: Value 100000 is not in 1…64"},
                                           Hostile{"make_target_hidden_zero",
                                                   [](const fs::path& dir) {
                                                     return "make-target --hidden 0 --out " +
                                                            (dir / "t").string();
                                                   },
                                                   "--hidden: Value 0 is not in 1…"},
                                           Hostile{"make_target_beyond_memory",
                                                   [](const fs::path& dir) {
                                                     return "make-target --hidden 1048576 "
                                                            "--vocab "
                                                            "1048576 --out " +
                                                            (dir / "t").string();
                                                   },
                                                   "GiB of memory to generate"},
                                           // Shapes forward would refuse are refused by
                                           // make-target too, nothing left written.
                                           Hostile{"make_target_odd_head_dim",
                                                   [](const fs::path& dir) {
                                                     return "make-target --head-dim 3 --hidden 32 "
                                                            "--vocab 64 --layers 1 --out " +
                                                            (dir / "t").string();
                                                   },
                                                   "t: these shapes make a target the "
                                                   "engine refuses: head_dim 3 is odd"},
                                           Hostile{"make_target_heads_not_a_multiple",
                                                   [](const fs::path& dir) {
                                                     return "make-target --heads 3 --kv-heads 2 "
                                                            "--out " +
                                                            (dir / "t").string();
                                                   },
                                                   "num_attention_heads 3 is not a multiple of "
                                                   "num_key_value_heads 2"},
                                           Hostile{
                                               "make_target_unknown_family",
                                               [](const fs::path& dir) {
                                                 return "make-target --family mystery --out " +
                                                        (dir / "t").string();
                                               },
                                               "--family: model_type \"mystery\" is not a target "
                                               "family draftgate knows"},
                                           Hostile{
                                               "make_target_layout_of_another_family",
                                               [](const fs::path& dir) {
                                                 return "make-target --family qwen3 --layout vlm "
                                                        "--out " +
                                                        (dir / "t").string();
                                               },
                                               "--layout: layout \"vlm\" is not one of qwen3's "
                                               "(flat)"},
                                           // Into a checkpoint: its weights would be replaced in
                                           // place (the case's snapshot sees it).
                                           Hostile{"make_target_into_a_checkpoint",
                                                   [](const fs::path& dir) {
                                                     return "make-target --out " +
                                                            copy_of(dir, "qwen3-target").string();
                                                   },
                                                   "already holds files"},
                                           Hostile{"make_drafter_into_a_drafter",
                                                   [](const fs::path& dir) {
                                                     return "make-drafter --target " + target() +
                                                            " --out " +
                                                            copy_of(dir, "qwen3-drafter-reference")
                                                                .string();
                                                   },
                                                   "already holds files"}),
                         [](const auto& p) { return p.param.label; });

INSTANTIATE_TEST_SUITE_P(Config, HostileInput,
                         ::testing::
                             Values(forward_case("model_type_unknown", config_edit([](json& c) {
                                                   c["model_type"] = "mystery";
                                                 }),
                                                 "model_type \"mystery\" is not a target family"),
                                    forward_case("model_type_not_a_string",
                                                 config_edit([](json& c) { c["model_type"] = 3; }),
                                                 "model_type"),
                                    forward_case("attention_bias_true", config_edit([](json& c) {
                                                   c["attention_bias"] = true;
                                                 }),
                                                 "attention_bias = true is not supported"),
                                    forward_case("mlp_bias_true",
                                                 config_edit([](json& c) { c["mlp_bias"] = true; }),
                                                 "mlp_bias = true is not supported"),
                                    forward_case("rope_theta_zero",
                                                 config_edit([](json& c) { c["rope_theta"] = 0; }),
                                                 "rope_theta = 0 must be a finite number > 0"),
                                    forward_case("rope_theta_negative", config_edit([](json& c) {
                                                   c["rope_theta"] = -1e6;
                                                 }),
                                                 "rope_theta = -1e+06 must be a finite number > 0"),
                                    forward_case("rope_theta_a_string", config_edit([](json& c) {
                                                   c["rope_theta"] = "1e6";
                                                 }),
                                                 "rope_theta must be a number, got \"1e6\""),
                                    forward_case(
                                        "rms_eps_negative",
                                        config_edit([](json& c) { c["rms_norm_eps"] = -1e-6; }),
                                        "rms_norm_eps = -1e-06 must be a finite number >= 0"),
                                    forward_case("rms_eps_huge_exponent", config_text([](json c) {
                                                   return with_raw(c, "/rms_norm_eps", "1e400");
                                                 }),
                                                 "number overflow parsing '1e400'"),
                                    forward_case("rms_eps_beyond_float32",
                                                 config_edit([](json& c) {
                                                   c["rms_norm_eps"] = 1e300;
                                                 }),
                                                 "rms_norm_eps = 1e+300 overflows float32"),
                                    forward_case("llama_model_type_over_qwen3_weights",
                                                 config_edit([](json& c) {
                                                   c["model_type"] = "llama";
                                                   c["architectures"] = {"LlamaForCausalLM"};
                                                 }),
                                                 "self_attn.q_norm.weight\" is a q/k norm, which "
                                                 "llama attention does not have"),
                                    forward_case("awq_config_over_bf16_weights",
                                                 config_edit([](json& c) {
                                                   c["quantization_config"] = {
                                                       {"quant_method", "awq"}, {"bits", 4}};
                                                 }),
                                                 "quantization_config.quant_method awq: the engine "
                                                 "runs unquantised"),
                                    forward_case("model_type_a_number", config_edit([](json& c) {
                                                   c["model_type"] = 3;
                                                 }),
                                                 "model_type must be a string, got 3"),
                                    forward_case("architectures_of_another_family",
                                                 config_edit([](json& c) {
                                                   c["architectures"] = {"Qwen3MoeForCausalLM"};
                                                 }),
                                                 "architectures names Qwen3MoeForCausalLM, a "
                                                 "Qwen3-MoE"),
                                    forward_case("architectures_a_string",
                                                 config_edit([](json& c) {
                                                   c["architectures"] = "Qwen3ForCausalLM";
                                                 }),
                                                 "architectures must be a list of class names, "
                                                 "got \"Qwen3ForCausalLM\""),
                                    forward_case("rms_norm_eps_null", config_edit([](json& c) {
                                                   c["rms_norm_eps"] = nullptr;
                                                 }),
                                                 "rms_norm_eps is null"),
                                    forward_case("hidden_act_gelu", config_edit([](json& c) {
                                                   c["hidden_act"] = "gelu";
                                                 }),
                                                 "hidden_act = \"gelu\" is not supported"),
                                    forward_case("rope_theta_flat_and_nested_differ",
                                                 config_edit([](json& c) {
                                                   c["rope_theta"] = 1e6;
                                                   c["rope_parameters"] = {{"rope_theta", 1e4},
                                                                           {"rope_type", "default"}};
                                                 }),
                                                 "rope_theta = 1e+06 but "
                                                 "rope_parameters.rope_theta = 10000"),
                                    drafter_case("drafter_taps_top_level_and_nested_differ",
                                                 config_edit([](json& c) {
                                                   c["target_layer_ids"] = {0, 1};
                                                 }),
                                                 "target_layer_ids = [0, 1] at the top level but "
                                                 "[0, 2] under dflash_config"),
                                    check_drafter_case("check_drafter_tap_not_an_integer",
                                                       config_edit([](json& c) {
                                                         c["dflash_config"]["target_layer_ids"] = {
                                                             0, 2.0};
                                                       }),
                                                       "dflash_config.target_layer_ids holds 2.0, "
                                                       "not a layer id"),
                                    // check refuses what eval's load refuses, from the headers.
                                    check_drafter_case(
                                        "check_drafter_declares_more_layers",
                                        config_edit([](json& c) { c["num_hidden_layers"] = 3; }),
                                        "num_hidden_layers is 3 but the tensors hold 2 layers"),
                                    check_drafter_case(
                                        "check_drafter_fc_of_integers",
                                        [](const fs::path& d) {
                                          io::NamedTensors tensors;
                                          {
                                            const io::Checkpoint c = io::Checkpoint::open(d);
                                            for (const auto& n : c.names()) {
                                              at::Tensor w = io::load_tensor(c, n).clone();
                                              if (n == "fc.weight") w = w.to(at::kShort);
                                              tensors.emplace_back(n, w);
                                            }
                                          }
                                          io::write_tensors(d / "model.safetensors", tensors);
                                        },
                                        "tensor \"fc.weight\" has non-float dtype I16"),
                                    // A variant head's weights in the reference layout
                                    // (SpecForge's Domino) are not run as plain DFlash.
                                    check_drafter_case(
                                        "check_drafter_variant_head_tensor",
                                        [](const fs::path& d) {
                                          io::NamedTensors tensors;
                                          {
                                            const io::Checkpoint c = io::Checkpoint::open(d);
                                            for (const auto& n : c.names())
                                              tensors.emplace_back(n,
                                                                   io::load_tensor(c, n).clone());
                                          }
                                          tensors.emplace_back("prefix_gru.weight_ih_l0",
                                                               at::zeros({4, 4}));
                                          io::write_tensors(d / "model.safetensors", tensors);
                                        },
                                        "tensor \"prefix_gru.weight_ih_l0\" is not a DFlash "
                                        "drafter weight"),
                                    // Weights only as a pickle: refused by name, not skipped
                                    // as a config-only checkout.
                                    check_drafter_case(
                                        "check_drafter_pickled_weights_only",
                                        [](const fs::path& d) {
                                          fs::remove(d / "model.safetensors");
                                          write(d / "pytorch_model.bin", std::string("PK\x03\x04"));
                                        },
                                        "holds pytorch_model.bin, PyTorch's pickle format, which "
                                        "draftgate does not read"),
                                    // A layer's name with no tensor after it.
                                    check_drafter_case(
                                        "check_drafter_tensor_named_a_layer",
                                        [](const fs::path& d) {
                                          testing::edit_tensors(
                                              d, [](io::NamedTensors& tensors) {
                                                tensors.emplace_back("layers.1", at::zeros({4}));
                                              });
                                        },
                                        "tensor \"layers.1\" is not a drafter layer's weight"),
                                    // Inside a layer too: an attention bias, an MTP leftover.
                                    check_drafter_case(
                                        "check_drafter_layer_bias_tensor",
                                        [](const fs::path& d) {
                                          testing::edit_tensors(d,
                                                       [](io::NamedTensors& tensors) {
                                                         tensors.emplace_back(
                                                             "layers.0.self_attn.q_proj.bias",
                                                             at::zeros({4}));
                                                       });
                                        },
                                        "tensor \"layers.0.self_attn.q_proj.bias\" is not a "
                                        "drafter layer's weight"),
                                    // A z-lab drafter's own head: z-lab's reference scores with
                                    // the target's, vLLM with this one.
                                    Hostile{"eval_drafter_own_lm_head_not_the_targets",
                                            [](const fs::path& dir) {
                                              const fs::path d =
                                                  copy_of(dir, "qwen3-drafter-reference");
                                              const json target_config =
                                                  read(kTrained / "qwen3-target/config.json");
                                              testing::edit_tensors(
                                                  d, [&](io::NamedTensors& tensors) {
                                                    tensors.emplace_back(
                                                        "lm_head.weight",
                                                        at::randn({target_config["vocab_size"]
                                                                       .get<std::int64_t>(),
                                                                   target_config["hidden_size"]
                                                                       .get<std::int64_t>()}));
                                                  });
                                              return "eval --target " + target() + " --drafter " +
                                                     d.string() + " --prompts " + prompts() +
                                                     " --max-new 2";
                                            },
                                            "the drafter's own lm_head.weight differs from the "
                                            "target's"},
                                    forward_case("head_dim_odd", config_edit([](json& c) {
                                                   c["head_dim"] = 15;
                                                 }),
                                                 "head_dim 15 is odd"),
                                    forward_case("max_positions_zero", config_edit([](json& c) {
                                                   c["max_position_embeddings"] = 0;
                                                 }),
                                                 "max_position_embeddings must be positive, got 0"),
                                    forward_case("hidden_size_zero",
                                                 config_edit([](json& c) { c["hidden_size"] = 0; }),
                                                 "hidden_size"),
                                    forward_case("layer_count_zero", config_edit([](json& c) {
                                                   c["num_hidden_layers"] = 0;
                                                 }),
                                                 "is not a plausible layer count"),
                                    forward_case("layer_count_fractional", config_edit([](json& c) {
                                                   c["num_hidden_layers"] = 4.0001;
                                                 }),
                                                 "num_hidden_layers must be an integer"),
                                    drafter_case("drafter_rope_theta_zero",
                                                 config_edit([](json& c) { c["rope_theta"] = 0; }),
                                                 "rope_theta = 0 must be a finite number > 0"),
                                    drafter_case("drafter_rope_theta_negative",
                                                 config_edit([](json& c) {
                                                   c["rope_theta"] = -10000;
                                                 }),
                                                 "must be a finite number > 0"),
                                    drafter_case("drafter_rms_eps_negative",
                                                 config_edit([](json& c) {
                                                   c["rms_norm_eps"] = -1;
                                                 }),
                                                 "rms_norm_eps = -1 must be a finite number >= 0"),
                                    drafter_case("drafter_intermediate_zero",
                                                 config_edit([](json& c) {
                                                   c["intermediate_size"] = 0;
                                                 }),
                                                 "intermediate_size must be positive"),
                                    drafter_case(
                                        "drafter_declares_fewer_layers",
                                        config_edit([](json& c) { c["num_hidden_layers"] = 1; }),
                                        "num_hidden_layers is 1 but the tensors hold 2 layers"),
                                    drafter_case(
                                        "drafter_declares_more_layers",
                                        config_edit([](json& c) { c["num_hidden_layers"] = 3; }),
                                        "num_hidden_layers is 3 but the tensors hold 2 layers"),
                                    drafter_case(
                                        "drafter_layer_index_with_a_leading_zero",
                                        [](const fs::path& d) {
                                          io::NamedTensors tensors;
                                          {
                                            const io::Checkpoint c = io::Checkpoint::open(d);
                                            for (const auto& n : c.names()) {
                                              std::string renamed = n;
                                              if (renamed.rfind("layers.1.", 0) == 0)
                                                renamed.replace(0, 9, "layers.01.");
                                              tensors.emplace_back(renamed,
                                                                   io::load_tensor(c, n).clone());
                                            }
                                          }
                                          io::write_tensors(d / "model.safetensors", tensors);
                                        },
                                        "has the non-canonical layer index \"01\""),
                                    probe_case(
                                        "target_layer_index_with_a_leading_zero",
                                        [](const fs::path& ckpt) {
                                          edit_header(ckpt / "model.safetensors", [](json h) {
                                            json out = json::object();
                                            for (auto& [k, v] : h.items()) {
                                              std::string name = k;
                                              if (name.rfind("model.layers.1.", 0) == 0)
                                                name.replace(0, 15, "model.layers.01.");
                                              out[name] = v;
                                            }
                                            return out.dump();
                                          });
                                        },
                                        "with a non-canonical index (leading zeros)"),
                                    probe_case(
                                        "target_layer_index_00",
                                        [](const fs::path& ckpt) {
                                          edit_header(ckpt / "model.safetensors", [](json h) {
                                            json out = json::object();
                                            for (auto& [k, v] : h.items()) {
                                              std::string name = k;
                                              if (name.rfind("model.layers.0.", 0) == 0)
                                                name.replace(0, 15, "model.layers.00.");
                                              out[name] = v;
                                            }
                                            return out.dump();
                                          });
                                        },
                                        "non-canonical index"),
                                    golden_case(
                                        "golden_block_size_fractional",
                                        [](json& g) { g["decoding"]["block_size"] = 8.9; },
                                        "golden field /decoding/block_size must be an integer, got "
                                        "8.9"),
                                    golden_case(
                                        "golden_layer_count_fractional",
                                        [](json& g) { g["target_layout"]["num_layers"] = 4.5; },
                                        "/target_layout/num_layers must be an integer"),
                                    golden_case(
                                        "golden_tap_fractional",
                                        [](json& g) {
                                          g["taps"] = {0, 2.5};
                                        },
                                        "/taps must be an array of integers"),
                                    golden_case(
                                        "golden_max_new_fractional",
                                        [](json& g) { g["decoding"]["max_new_tokens"] = 16.5; },
                                        "max_new_tokens must be an integer, got 16.5"),
                                    golden_case(
                                        "golden_tau_1e308",
                                        [](json& g) { g["tau"]["tau_macro"] = 1e308; },
                                        "exceeds the block size 8"),
                                    golden_case(
                                        "golden_tau_pooled_past_the_block",
                                        [](json& g) { g["tau"]["tau_pooled"] = 8.5; },
                                        "exceeds the block size 8"),
                                    golden_case(
                                        "golden_tau_a_string",
                                        [](json& g) { g["tau"]["tau_macro"] = "2.4"; },
                                        "/tau/tau_macro must be a finite number"),
                                    golden_case(
                                        "golden_acceptance_above_one",
                                        [](json& g) {
                                          g["tau"]["per_position_acceptance"][0] = 1.5;
                                        },
                                        "not a share between 0 and 1"),
                                    // An emptied or shortened per-depth list would switch the
                                    // per-depth gate off: each depth is there, falling.
                                    golden_case(
                                        "golden_acceptance_emptied",
                                        [](json& g) {
                                          g["tau"]["per_position_acceptance"] = json::array();
                                        },
                                        "per_position_acceptance has 0 depths for block size 8"),
                                    golden_case(
                                        "golden_acceptance_rising",
                                        [](json& g) {
                                          g["tau"]["per_position_acceptance"][3] = 0.9;
                                        },
                                        "per_position_acceptance rises from depth 3 to 4"),
                                    golden_case(
                                        "golden_accepted_past_drafted",
                                        [](json& g) { g["tau"]["accepted"] = 5000; },
                                        "/tau/accepted 5000 exceeds /tau/drafted"),
                                    golden_case(
                                        "golden_histogram_not_the_steps",
                                        [](json& g) { g["tau"]["steps"] = 1; },
                                        "steps, /tau/steps 1"),
                                    golden_case(
                                        "golden_prompt_tau_past_the_block",
                                        [](json& g) { g["tau"]["per_prompt"][0]["tau"] = 100; },
                                        "/tau/per_prompt/0/tau 100 is outside 1..8"),
                                    golden_case(
                                        "golden_sampled",
                                        [](json& g) { g["decoding"]["temperature"] = 1; },
                                        "temperature 1 is not 0"),
                                    golden_case(
                                        "golden_top_k_without_a_tree",
                                        [](json& g) { g["decoding"]["tree_top_k"] = 4; },
                                        "tree_top_k 4 goes with a tree_budget > 0"),
                                    record_case(
                                        "record_mask_token_negative",
                                        [](train::StepRecord& r) { r.mask_token_id = -1; },
                                        "loss_type", "mask_token_id -1 is negative"),
                                    record_case(
                                        "record_mask_token_past_the_vocabulary",
                                        [](train::StepRecord& r) { r.mask_token_id = 1000000; },
                                        "loss_type",
                                        "mask_token_id 1000000 is outside the recorded vocabulary "
                                        "(64)"),
                                    Hostile{"record_teacher_dtype_fp8",
                                            [](const fs::path& dir) {
                                              const fs::path r = dir / "r.safetensors";
                                              fs::copy_file(reference_record(), r);
                                              edit_header(r, [](json h) {
                                                h["__metadata__"]["teacher_dtype"] = "fp8";
                                                return h.dump();
                                              });
                                              return "check --only target_logits_noise_free "
                                                     "--target " +
                                                     target() + " --step-record " + r.string();
                                            },
                                            "\"teacher_dtype\" = \"fp8\" is not f32, bf16 or f16"},
                                    Hostile{"record_drafter_dtype_empty",
                                            [](const fs::path& dir) {
                                              const fs::path r = dir / "r.safetensors";
                                              fs::copy_file(reference_record(), r);
                                              edit_header(r, [](json h) {
                                                h["__metadata__"]["drafter_dtype"] = "";
                                                return h.dump();
                                              });
                                              return "check --only loss_type --step-record " +
                                                     r.string();
                                            },
                                            "\"drafter_dtype\" = \"\" is not f32, bf16 or f16"},
                                    Hostile{"record_header_nul_then_garbage",
                                            [](const fs::path& dir) {
                                              const fs::path r = dir / "r.safetensors";
                                              fs::copy_file(reference_record(), r);
                                              // Same length: the JSON ends early and garbage
                                              // follows a NUL byte.
                                              std::string h = header_of(r);
                                              const std::string end =
                                                  "}" + std::string(1, '\0') + "garbage ";
                                              const auto cut = h.find_last_of('}');
                                              std::string cropped = h.substr(0, cut) + end;
                                              replace_header(r, cropped);
                                              return "check --only loss_type --step-record " +
                                                     r.string();
                                            },
                                            "a NUL byte"},
                                    Hostile{"reference_dump_tokens_not_ids",
                                            [](const fs::path& dir) {
                                              io::write_tensors(dir / "dump.safetensors",
                                                                {{"logits", at::zeros({3, 64})}},
                                                                {{"tokens", "1,5,abc"}});
                                              return "check --only hidden_state_parity --target " +
                                                     target() + " --reference-dump " +
                                                     (dir / "dump.safetensors").string();
                                            },
                                            "\"tokens\" metadata holds \"abc\", not a token id"}),
                         [](const auto& p) { return p.param.label; });

// The reference record with `meta` merged into its __metadata__, run through `check`.
Hostile record_meta_case(std::string label, json meta, std::string check, std::string message) {
  return {std::move(label),
          [meta, check](const fs::path& dir) {
            const fs::path r = dir / "r.safetensors";
            fs::copy_file(reference_record(), r);
            edit_header(r, [&](json h) {
              for (const auto& [k, v] : meta.items()) h["__metadata__"][k] = v;
              return h.dump();
            });
            return "check --only " + check + " --target " + target() + " --step-record " +
                   r.string();
          },
          std::move(message)};
}

// The trainer-recipe keys (issue 26): labels_source, weighting, dpace_alpha, loss_normalization,
// hidden_dtype, gamma "none", fc_input_noise.
INSTANTIATE_TEST_SUITE_P(
    TrainerRecipes, HostileInput,
    ::testing::Values(
        record_meta_case("record_labels_source_both", {{"labels_source", "both"}}, "loss_type",
                         "\"labels_source\" = \"both\" is not one of teacher | data"),
        record_meta_case("record_labels_source_2mb", {{"labels_source", std::string(2 << 20, 'd')}},
                         "target_logits_noise_free", "is not one of teacher | data"),
        record_meta_case("record_weighting_unknown", {{"weighting", "dpace2"}}, "loss_type",
                         "\"weighting\" = \"dpace2\" is not one of fixed | dpace"),
        record_meta_case(
            "record_normalization_empty", {{"loss_normalization", ""}}, "loss_type",
            "\"loss_normalization\" = \"\" is not one of weight_sum | mask_sum | rows"),
        record_meta_case("record_dpace_alpha_above_one",
                         {{"weighting", "dpace"}, {"dpace_alpha", "1.5"}}, "loss_type",
                         "\"dpace_alpha\" = 1.5 is outside [0, 1]"),
        record_meta_case("record_dpace_alpha_nan", {{"weighting", "dpace"}, {"dpace_alpha", "nan"}},
                         "loss_type", "\"dpace_alpha\" = \"nan\" is not a finite number"),
        record_meta_case("record_dpace_alpha_without_dpace", {{"dpace_alpha", "0.5"}}, "loss_type",
                         "\"dpace_alpha\" is recorded but weighting is not D-PACE"),
        record_meta_case("record_gamma_none_capitalised", {{"gamma", "None"}}, "loss_type",
                         "\"gamma\" = \"None\" is not a finite number"),
        record_meta_case("record_gamma_zero", {{"gamma", "0"}}, "loss_type",
                         "gamma must be positive, or \"none\" for uniform weights"),
        record_meta_case("record_key_misspelt", {{"loss_normalisation", "rows"}}, "loss_type",
                         "__metadata__ key \"loss_normalisation\" is not a step-record key: did "
                         "you mean \"loss_normalization\"?"),
        record_case(
            "record_input_ids_past_the_logits_vocabulary",
            [](train::StepRecord& r) { r.input_ids[3] = 100000; }, "loss_type",
            "tensor \"input_ids\" holds id 100000 at position 3, outside the recorded logits' "
            "vocabulary of 64"),
        record_case(
            "record_data_labels_input_ids_past_the_target_vocabulary",
            [](train::StepRecord& r) {
              r.labels_source = train::LabelsSource::kData;
              r.teacher_logits = at::Tensor();
              r.teacher_positions.clear();
              r.drafter_logits = at::Tensor();
              r.labels = r.labels.clamp_max(63);
              r.input_ids[3] = 100000;
            },
            "target_logits_noise_free",
            "tensor \"input_ids\" holds id 100000 at position 3, outside the target's vocabulary "
            "of 64"),
        record_meta_case("record_hidden_dtype_fp8",
                         {{"labels_source", "data"}, {"hidden_dtype", "fp8"}},
                         "target_logits_noise_free",
                         "\"hidden_dtype\" = \"fp8\" is not f32, bf16 or f16"),
        record_meta_case("record_fc_input_noise_zero", {{"fc_input_noise", "uniform:0"}},
                         "target_logits_noise_free",
                         "\"fc_input_noise\" = \"uniform:0\" is not uniform:<half width>, "
                         "gaussian:<std> (a positive number) or none")),
    [](const auto& p) { return p.param.label; });

INSTANTIATE_TEST_SUITE_P(
    Params, HostileInput,
    ::testing::Values(
        param_case("layer_count_as_a_word", "--param layer_path.expected_num_layers=four",
                   "--param: parameter layer_path.expected_num_layers = \"four\": expected an "
                   "integer in [1, 100000]"),
        param_case("loss_named_mse", "--param loss_type.expected=mse",
                   "loss_type.expected = \"mse\": expected one of ce, kl"),
        param_case("negative_rtol", "--param loss_type.rtol=-1",
                   "loss_type.rtol = -1: expected a number in [0, 1]"),
        param_case("ratio_as_a_bool", "--param min_tau.min_ratio=true",
                   "min_tau.min_ratio = true: expected a number"),
        param_case("ratio_infinite", "--param min_tau.min_ratio=1e400", "min_tau.min_ratio"),
        param_case("nested_budget_negative", "--param hidden_state_parity.f32.max_nmse=-1",
                   "hidden_state_parity.f32.max_nmse = -1"),
        param_case("nested_budget_unknown", "--param hidden_state_parity.f32.nope=1",
                   "unknown parameter \"f32.nope\" of hidden_state_parity"),
        param_case("nested_budget_not_an_object", "--param hidden_state_parity.f32=3",
                   "hidden_state_parity.f32 must be an object"),
        param_case(
            "precision_factor_below_one", "--param target_logits_noise_free.precision_factor=0.5",
            "target_logits_noise_free.precision_factor = 0.5: expected a number in [1, 1000]"),
        param_case("parity_backend_unknown", "--param hidden_state_parity.a=tpu:f32",
                   "hidden_state_parity.a = \"tpu:f32\": expected one of cpu:f32"),
        param_case("parity_tokens_empty", "--param hidden_state_parity.tokens=[]",
                   "hidden_state_parity.tokens = []: expected a non-empty array"),
        param_case("parity_tokens_negative", "--param hidden_state_parity.tokens=[1,-2]",
                   "hidden_state_parity.tokens"),
        param_case("parity_cosine_above_one", "--param hidden_state_parity.bf16.min_cosine=1.5",
                   "hidden_state_parity.bf16.min_cosine = 1.5: expected a number in [-1, 1]"),
        param_case("anchors_fractional", "--param train_infer_consistency.max_anchors=2.5",
                   "train_infer_consistency.max_anchors = 2.5: expected an integer"),
        param_case("anchors_zero", "--param train_infer_consistency.max_anchors=0",
                   "train_infer_consistency.max_anchors = 0"),
        param_case("max_positions_zero", "--param target_logits_noise_free.max_positions=0",
                   "target_logits_noise_free.max_positions = 0: expected an integer in [1, "),
        param_case("max_positions_fractional", "--param fc_excludes_target_layer.max_positions=8.5",
                   "fc_excludes_target_layer.max_positions = 8.5: expected an integer"),
        param_case("max_positions_negative", "--param train_infer_consistency.max_positions=-4",
                   "train_infer_consistency.max_positions = -4"),
        param_case("allow_final_layer_as_a_number",
                   "--param fc_excludes_target_layer.allow_final_layer=1",
                   "allow_final_layer = 1: expected true or false"),
        param_case("min_tau_device_unknown", "--param min_tau.device=\"tpu\"",
                   "min_tau.device = \"tpu\": expected one of cpu, cuda"),
        drafter_text_case(
            "dflash2_without_its_keys",
            [](json c) {
              c["architectures"] = {"DFlash2DraftModel"};
              return c.dump();
            },
            "DFlash2DraftModel needs dflash_config.conv_kernel_size"),
        drafter_text_case(
            "dflash2_keys_without_the_architecture",
            [](json c) {
              c["conv_group_size"] = 7;
              return c.dump();
            },
            "conv_group_size is a DFlash2 key but architectures does not name DFlash2DraftModel"),
        param_case("rope_ratio_below_one", "--param drafter_config.rope_theta_max_ratio=0.5",
                   "drafter_config.rope_theta_max_ratio = 0.5: expected a number in [1, "),
        param_case("prefix_as_a_number", "--param layer_path.expected_prefix=3",
                   "layer_path.expected_prefix = 3: expected a string"),
        param_case("param_without_a_value", "--param layer_path.expected_prefix",
                   "is not CHECK.NAME=VALUE"),
        param_case("param_of_an_unknown_name", "--param min_tau.ratio=0.5",
                   "unknown parameter \"ratio\" of min_tau"),
        param_case("per_position_ratio_negative", "--param min_tau.per_position_min_ratio=-0.5",
                   "min_tau.per_position_min_ratio = -0.5"),
        suite_params_case("suite_rtol_a_string", "loss_type", {{"rtol", "-1"}},
                          "suite.json: parameter loss_type.rtol = \"-1\": expected a number"),
        suite_params_case("suite_nested_budget_a_string", "hidden_state_parity",
                          {{"bf16", {{"max_nmse", "x"}}}},
                          "hidden_state_parity.bf16.max_nmse = \"x\""),
        suite_params_case("suite_params_not_an_object", "loss_type", json::array({1, 2}),
                          "parameters of loss_type must be a JSON object"),
        suite_params_case("suite_layer_count_negative", "layer_path", {{"expected_num_layers", -4}},
                          "layer_path.expected_num_layers = -4"),
        golden_params_case("golden_expects_mse", {{"loss_type", {{"expected", "mse"}}}},
                           "golden.json: parameter loss_type.expected = \"mse\""),
        golden_params_case("golden_parity_budget_negative",
                           {{"hidden_state_parity", {{"f32", {{"max_nmse", -1}}}}}},
                           "golden.json: parameter hidden_state_parity.f32.max_nmse = -1"),
        golden_params_case("golden_unknown_parameter", {{"min_tau", {{"speed", 3}}}},
                           "golden.json: unknown parameter \"speed\" of min_tau"),
        golden_params_case("golden_params_for_an_unknown_check", {{"tau_check", {{"x", 1}}}},
                           "check_params names unknown check \"tau_check\""),
        golden_params_case("golden_params_not_objects", {{"min_tau", 3}},
                           "check_params.min_tau must be an object")),
    [](const auto& p) { return p.param.label; });

INSTANTIATE_TEST_SUITE_P(
    Select, HostileInput,
    ::testing::Values(
        suite_case("suite_runs_nothing", minimal_suite(json::array()),
                   "\"checks\" is empty: the suite would run nothing"),
        Hostile{"only_selects_nothing",
                [](const fs::path& dir) {
                  write(dir / "s.json", minimal_suite({{{"check", "layer_path"}}}));
                  return "check --suite " + (dir / "s.json").string() + " --only loss_type";
                },
                "--only: \"loss_type\" selects none of the checks this run would run (layer_path)"},
        Hostile{"only_an_empty_name",
                [](const fs::path&) { return "check --target " + target() + " --only ''"; },
                "--only: \"\" holds an empty check name"},
        Hostile{"only_commas",
                [](const fs::path&) { return "check --only , --target " + target(); },
                "--only: \",\" holds an empty check name"},
        Hostile{"json_without_list",
                [](const fs::path&) { return "check --target " + target() + " --json"; },
                "--json: goes with --list"},
        Hostile{"one_bad_record_read_by_four_checks",
                [](const fs::path& dir) {
                  write(dir / "r.safetensors", std::string("not a safetensors file"));
                  return "check --only "
                         "loss_type,target_logits_noise_free,train_infer_consistency,fc_excludes_"
                         "target_layer" +
                         qwen3_pair() + " --step-record " + (dir / "r.safetensors").string();
                },
                "r.safetensors"},
        Hostile{"one_bad_target_read_by_every_check",
                [](const fs::path& dir) {
                  const fs::path ckpt = copy_of(dir, "qwen3-target");
                  write(ckpt / "config.json", std::string("{"));
                  return "check --target " + ckpt.string() + " --drafter " + drafter() +
                         " --step-record " + reference_record();
                },
                "config.json: invalid JSON"}),
    [](const auto& p) { return p.param.label; });

// A v1 drafter config: the DFlash2 fixture's with its architecture and DFlash2 keys taken away.
json as_v1(json c) {
  c["architectures"] = {"DFlashDraftModel"};
  for (const char* k : {"conv_kernel_size", "conv_group_size", "selector_rank", "selector_top_k"})
    c["dflash_config"].erase(k);
  return c;
}

// A DFlash2 drafter config edit, run through eval (which loads the weights).
Hostile dflash2_case(std::string label, std::function<void(json&)> edit, std::string message) {
  return drafter_case(std::move(label), config_edit(std::move(edit)), std::move(message),
                      "qwen3-drafter-dflash2");
}

// A mutated copy of a fixture drafter through the header-only checks alone (`only`): what `eval`
// refuses on loading is refused here too (each passed `check`, exit 0, and failed `eval`).
Hostile structural_drafter_case(
    std::string label, std::function<void(const fs::path&)> mutate, std::string message,
    std::string fixture = "qwen3-drafter-reference",
    std::string only = "layer_path,drafter_config,fc_excludes_target_layer") {
  return {label,
          [mutate, fixture, only](const fs::path& dir) {
            const fs::path d = copy_of(dir, fixture);
            mutate(d);
            return "check --only " + only + " --target " + target() + " --drafter " + d.string();
          },
          message};
}

std::function<void(const fs::path&)> without_tensor(std::string name) {
  return [name](const fs::path& d) {
    testing::edit_tensors(d, [name](io::NamedTensors& tensors) {
      tensors.erase(std::remove_if(tensors.begin(), tensors.end(),
                                   [&](const auto& t) { return t.first == name; }),
                    tensors.end());
    });
  };
}

// The DFlash2 fixture's step record after `edit`, read by the checks that read records.
Hostile dflash2_record_case(std::string label, std::function<void(const fs::path&)> edit,
                            std::string message) {
  return {label,
          [edit](const fs::path& dir) {
            const fs::path r = dir / "dflash2.safetensors";
            fs::copy_file(kTrained / "step-records/qwen3-drafter-dflash2.safetensors", r);
            edit(r);
            return "check --only train_infer_consistency,loss_type --target " + target() +
                   " --drafter " + (kTrained / "qwen3-drafter-dflash2").string() +
                   " --step-record " + r.string();
          },
          message};
}

std::string oracle_eval(const std::string& extra) {
  return "eval --target " + target() + " --oracle --prompts " + prompts() + " --max-new 2 " + extra;
}

// `golden record` of the bundled pair into DIR with `extra` flags.
std::string golden_record_into(const fs::path& dir, const std::string& extra) {
  return "golden record" + qwen3_pair() + " --prompts " + prompts() + " --out " +
         (dir / "g.json").string() + " --max-new 2 " + extra;
}

INSTANTIATE_TEST_SUITE_P(
    Surfaces, HostileInput,
    ::testing::Values(
        dflash2_case(
            "dflash2_weights_under_a_v1_config", [](json& c) { c = as_v1(c); },
            "is a DFlash2 weight but config.json does not declare DFlash2DraftModel"),
        dflash2_case(
            "dflash2_kernel_zero", [](json& c) { c["dflash_config"]["conv_kernel_size"] = 0; },
            "dflash_config.conv_kernel_size must be positive, got 0"),
        dflash2_case(
            "dflash2_group_not_dividing",
            [](json& c) { c["dflash_config"]["conv_group_size"] = 48; },
            "dflash_config.conv_group_size 48 does not divide hidden_size 64"),
        dflash2_case(
            "dflash2_selector_rank_a_string",
            [](json& c) { c["dflash_config"]["selector_rank"] = "@"; },
            "dflash_config.selector_rank must be an integer, got \"@\""),
        dflash2_case(
            "softcap_negative", [](json& c) { c["dflash_config"]["final_logit_softcapping"] = -5; },
            "final_logit_softcapping = -5 is negative"),
        dflash2_case(
            "softcap_beyond_float32",
            [](json& c) { c["dflash_config"]["final_logit_softcapping"] = 1e308; },
            "is outside float32's normal range"),
        dflash2_case(
            "output_multiplier_subnormal",
            [](json& c) { c["dflash_config"]["output_multiplier"] = 1e-320; },
            "output_multiplier = 9.99989e-321 is outside float32's normal range"),
        dflash2_case(
            "input_embedding_scale_beyond_float32",
            [](json& c) { c["dflash_config"]["input_embedding_scale"] = 1e39; },
            "input_embedding_scale = 1e+39 is outside float32's normal range"),
        config_text_case(
            "layer_count_above_int64",
            [](json c) { return with_raw(c, "/num_hidden_layers", "18446744073709551615"); },
            "integer 18446744073709551615 does not fit a 64-bit signed integer (under key "
            "\"num_hidden_layers\")"),
        // Beyond uint64 the parser made it a float (1e+22), which was then used as that.
        config_text_case(
            "layer_count_above_uint64",
            [](json c) { return with_raw(c, "/num_hidden_layers", "12345678901234567890123"); },
            "integer 12345678901234567890123 does not fit a 64-bit signed integer (under key "
            "\"num_hidden_layers\")"),
        // The key named is the number's own member, not a closed sibling object's last key.
        config_text_case(
            "integer_above_uint64_in_a_list",
            [](json c) {
              return with_raw(c, "/num_hidden_layers", "[{\"k\": 1}, 12345678901234567890123]");
            },
            "integer 12345678901234567890123 does not fit a 64-bit signed integer (under key "
            "\"num_hidden_layers\")"),
        golden_text_case(
            "golden_max_new_above_int64",
            [](json g) { return with_raw(g, "/decoding/max_new_tokens", "9223372036854775808"); },
            "golden.json: integer 9223372036854775808 does not fit"),
        golden_case(
            "golden_tau_definition_missing", [](json& g) { g["decoding"].erase("tau_definition"); },
            "golden has no /decoding/tau_definition"),
        golden_case(
            "golden_tau_definition_a_number", [](json& g) { g["decoding"]["tau_definition"] = 2; },
            "/decoding/tau_definition must be a string, got 2"),
        golden_case(
            "golden_tau_definition_another_count",
            [](json& g) { g["decoding"]["tau_definition"] = "accepted drafts per step"; },
            "golden τ was counted as \"accepted drafts per step\""),
        golden_text_case(
            "golden_tau_definition_deep",
            [](json g) { return with_raw(g, "/decoding/tau_definition", deep_object()); },
            "golden.json: JSON nests deeper than 64 levels"),
        golden_case(
            "golden_mode_two_megabytes_of_escapes",
            [](json& g) {
              std::string mode;
              for (int i = 0; i < 250000; ++i) mode += "\x1b[2J\n\t";
              g["decoding"]["mode"] = mode;
            },
            "golden.json: golden decoding mode \" [2J   [2J"),
        Hostile{"eos_with_a_newline",
                [](const fs::path&) { return oracle_eval("--eos \"$(printf '1\\n2')\""); },
                "usage error: --eos: Value 1 2 is not an integer"},
        Hostile{"forward_tap_twice",
                [](const fs::path& dir) {
                  return "forward --model " + target() + " --tokens 1,2 --taps 0,0 --out " +
                         (dir / "o.safetensors").string();
                },
                "--taps: tap 0 is given twice"},
        Hostile{"make_target_fp8_block_without_fp8",
                [](const fs::path& dir) {
                  return "make-target --family qwen3 --fp8-block 64,64 --out " +
                         (dir / "t").string();
                },
                "--fp8-block: is given without --quantize fp8"},
        // CLI11's delimiter dropped empty elements: 1,,2 read as 1,2.
        Hostile{"eos_list_ending_in_a_comma",
                [](const fs::path&) { return oracle_eval("--eos 1,"); },
                "usage error: --eos: Value 1,: element 2 is empty"},
        Hostile{"forward_token_list_with_an_empty_element",
                [](const fs::path& dir) {
                  return "forward --model " + target() + " --tokens 1,,2 --out " +
                         (dir / "o.safetensors").string();
                },
                "--tokens: Value 1,,2: element 2 is empty"},
        Hostile{"eos_outside_the_vocabulary",
                [](const fs::path&) { return oracle_eval("--eos 64"); },
                "--eos: EOS id 64 is outside the target's vocabulary (64 tokens)"},
        Hostile{"golden_record_eos_outside_the_vocabulary",
                [](const fs::path& dir) { return golden_record_into(dir, "--eos 0,100000"); },
                "--eos: EOS id 100000 is outside the target's vocabulary"},
        golden_case(
            "golden_eos_outside_the_vocabulary",
            [](json& g) {
              g["decoding"]["eos_ids"] = {0, 64};
            },
            "golden.json: EOS id 64 is outside the target's vocabulary"),
        Hostile{"block_size_beside_a_drafter",
                [](const fs::path&) { return eval_with(prompts(), "--block-size 4"); },
                "--drafter excludes --block-size"},
        Hostile{"tree_top_k_without_a_tree",
                [](const fs::path&) { return oracle_eval("--tree-top-k 3"); },
                "--tree-top-k: goes with --tree-budget N > 0"},
        Hostile{"golden_record_tree_top_k_without_a_tree",
                [](const fs::path& dir) { return golden_record_into(dir, "--tree-top-k 3"); },
                "--tree-top-k: goes with --tree-budget N > 0"},
        dflash2_record_case(
            "dflash2_record_truncated",
            [](const fs::path& r) { fs::resize_file(r, fs::file_size(r) / 2); },
            "dflash2.safetensors: tensor \"fc_input\" ends at byte"),
        dflash2_record_case(
            "dflash2_record_of_another_block_size",
            [](const fs::path& r) {
              train::StepRecord rec = train::read_step_record(r);
              rec.block_size = 4;
              train::write_step_record(r, rec);
            },
            "dflash2.safetensors: tensor \"labels\" has shape [16, 8], expected [16, 4]")),
    [](const auto& p) { return p.param.label; });

// Issue 29's inputs: a tokenizer.json (from a small valid one, edited) and the text `tokenize`
// encodes.
json small_tokenizer() {
  return {{"version", "1.0"},
          {"added_tokens", json::array({{{"id", 3},
                                         {"content", "<s>"},
                                         {"single_word", false},
                                         {"lstrip", false},
                                         {"rstrip", false},
                                         {"normalized", false},
                                         {"special", true}}})},
          {"normalizer", {{"type", "NFC"}}},
          {"pre_tokenizer",
           {{"type", "Split"},
            {"pattern", {{"Regex", "\\s+|\\S+"}}},
            {"behavior", "Isolated"},
            {"invert", false}}},
          {"decoder", {{"type", "Fuse"}}},
          {"model",
           {{"type", "BPE"},
            {"vocab", {{"a", 0}, {"b", 1}, {"ab", 2}}},
            {"merges", json::array({{"a", "b"}})}}}};
}
Hostile tokenizer_case(const std::string& label, std::function<void(json&)> edit,
                       const std::string& message) {
  return {label,
          [edit](const fs::path& dir) {
            json t = small_tokenizer();
            edit(t);
            write(dir / "tokenizer.json", t);
            return "tokenize --tokenizer " + dir.string() + " --text ab";
          },
          message};
}
Hostile tokenizer_text_case(const std::string& label, std::string text,
                            const std::string& message) {
  return {label,
          [text](const fs::path& dir) {
            write(dir / "tokenizer.json", text);
            return "tokenize --tokenizer " + dir.string() + " --text ab";
          },
          message};
}

INSTANTIATE_TEST_SUITE_P(
    Tokenizer, HostileInput,
    ::testing::Values(
        tokenizer_text_case("tokenizer_json_truncated", small_tokenizer().dump().substr(0, 40),
                            "tokenizer.json:"),
        tokenizer_text_case("tokenizer_json_deep",
                            with_raw(small_tokenizer(), "/normalizer", deep_object()),
                            "tokenizer.json: JSON nests deeper than 64 levels"),
        tokenizer_case(
            "tokenizer_merge_outside_the_vocabulary",
            [](json& tok) {
              tok["model"]["merges"].push_back({"b", "c"});
            },
            "tokenizer.json: /model/merges/1: merge token \"c\" is not in the vocabulary"),
        tokenizer_case(
            "tokenizer_merge_result_outside_the_vocabulary",
            [](json& tok) {
              tok["model"]["merges"].push_back({"b", "a"});
            },
            "/model/merges/1: merged token \"ba\" is not in the vocabulary"),
        tokenizer_case(
            "tokenizer_merge_of_three",
            [](json& tok) {
              tok["model"]["merges"][0] = {"a", "b", "c"};
            },
            "/model/merges/0: a merge must be two strings"),
        tokenizer_case(
            "tokenizer_legacy_merge_without_space",
            [](json& tok) { tok["model"]["merges"][0] = "ab"; },
            "/model/merges/0: a legacy merge must be two tokens separated by one space"),
        tokenizer_case(
            "tokenizer_vocab_id_a_string", [](json& tok) { tok["model"]["vocab"]["a"] = "0"; },
            "/model/vocab/a: id must be an integer"),
        tokenizer_case(
            "tokenizer_vocab_id_negative", [](json& tok) { tok["model"]["vocab"]["a"] = -1; },
            "/model/vocab/a: id must be an integer"),
        tokenizer_case(
            "tokenizer_vocab_id_huge", [](json& tok) { tok["model"]["vocab"]["a"] = 4000000000; },
            "/model/vocab/a: id must be an integer in 0…16777215"),
        tokenizer_case(
            "tokenizer_vocab_ids_shared", [](json& tok) { tok["model"]["vocab"]["b"] = 0; },
            "/model/vocab: id 0 belongs to two tokens"),
        tokenizer_case(
            "tokenizer_vocab_an_array",
            [](json& tok) { tok["model"]["vocab"] = json::array({"a"}); },
            "/model/vocab: must be an object of token: id"),
        tokenizer_case(
            "tokenizer_model_wordpiece", [](json& tok) { tok["model"]["type"] = "WordPiece"; },
            "/model/type: model type \"WordPiece\" is not supported"),
        tokenizer_case(
            "tokenizer_dropout", [](json& tok) { tok["model"]["dropout"] = 0.1; },
            "/model/dropout: BPE dropout 0.1 makes the ids random"),
        tokenizer_case(
            "tokenizer_unknown_pre_tokenizer",
            [](json& tok) {
              tok["pre_tokenizer"] = {{"type", "Metaspace"}};
            },
            "/pre_tokenizer/type: pre-tokenizer type \"Metaspace\" is not supported"),
        tokenizer_case(
            "tokenizer_unknown_normalizer",
            [](json& tok) {
              tok["normalizer"] = {{"type", "Precompiled"}};
            },
            "/normalizer/type: normalizer type \"Precompiled\" is not supported"),
        tokenizer_case(
            "tokenizer_unknown_decoder",
            [](json& tok) {
              tok["decoder"] = {{"type", "WordPiece"}};
            },
            "/decoder/type: decoder type \"WordPiece\" is not supported"),
        tokenizer_case(
            "tokenizer_template_post_processor",
            [](json& tok) {
              tok["post_processor"] = {{"type", "TemplateProcessing"}};
            },
            "/post_processor/type: post-processor type \"TemplateProcessing\""),
        tokenizer_case(
            "tokenizer_truncation_set",
            [](json& tok) {
              tok["truncation"] = {{"max_length", 8}};
            },
            "/truncation: truncation is set"),
        // What the library's Oniguruma refuses, with its reason (the library: "Oniguruma error:
        // invalid character property name {Script=Han}").
        tokenizer_case(
            "tokenizer_regex_property_with_a_value",
            [](json& tok) { tok["pre_tokenizer"]["pattern"]["Regex"] = "\\p{Script=Han}+"; },
            "/pre_tokenizer/pattern/Regex: regex does not compile: invalid character property "
            "name {Script=Han}"),
        tokenizer_case(
            "tokenizer_regex_not_compiling",
            [](json& tok) { tok["pre_tokenizer"]["pattern"]["Regex"] = "(a"; },
            "/pre_tokenizer/pattern/Regex: regex does not compile: end pattern with unmatched "
            "parenthesis"),
        // Read one way by Debian's Oniguruma 6.9.8, another by the library's copy.
        tokenizer_case(
            "tokenizer_regex_posix_punct",
            [](json& tok) { tok["pre_tokenizer"]["pattern"]["Regex"] = "[[:punct:]]+"; },
            "/pre_tokenizer/pattern/Regex: regex construct [:punct:] means one thing to this "
            "machine's Oniguruma"),
        // The library's reader refuses these where nlohmann's would take them.
        tokenizer_case(
            "tokenizer_unknown_member", [](json& tok) { tok["extra"] = 1; },
            "/: has a member \"extra\" the Hugging Face library refuses"),
        tokenizer_case(
            "tokenizer_added_token_without_a_flag",
            [](json& tok) { tok["added_tokens"][0].erase("special"); },
            "/added_tokens/0: has no \"special\""),
        tokenizer_case(
            "tokenizer_use_regex_null",
            [](json& tok) {
              tok["pre_tokenizer"] = {{"type", "ByteLevel"},
                                      {"add_prefix_space", false},
                                      {"trim_offsets", false},
                                      {"use_regex", nullptr}};
            },
            "/pre_tokenizer/use_regex: must be true or false, got null"),
        tokenizer_case(
            "tokenizer_added_tokens_null", [](json& tok) { tok["added_tokens"] = nullptr; },
            "/added_tokens: must be an array, got null"),
        tokenizer_text_case("tokenizer_byte_order_mark", "\xEF\xBB\xBF" + small_tokenizer().dump(),
                            "starts with a UTF-8 byte order mark, which the Hugging Face library "
                            "refuses"),
        tokenizer_case(
            "tokenizer_regex_unclosed_class",
            [](json& tok) { tok["pre_tokenizer"]["pattern"]["Regex"] = "[a"; },
            "regex does not compile: premature end of char-class"),
        tokenizer_case(
            "tokenizer_split_behavior_unknown",
            [](json& tok) { tok["pre_tokenizer"]["behavior"] = "Glued"; },
            "/pre_tokenizer/behavior: unknown split behavior \"Glued\""),
        tokenizer_case(
            "tokenizer_added_token_wrong_id", [](json& tok) { tok["added_tokens"][0]["id"] = 7; },
            "/added_tokens/0/id: added token \"<s>\" declares id 7 but the Hugging "
            "Face library gives it id 3"),
        tokenizer_case(
            "tokenizer_added_token_empty",
            [](json& tok) { tok["added_tokens"][0]["content"] = ""; },
            "/added_tokens/0/content: an added token's content is empty"),
        tokenizer_case(
            "tokenizer_added_token_repeated",
            [](json& tok) { tok["added_tokens"].push_back(tok["added_tokens"][0]); },
            "/added_tokens/1/content: added token \"<s>\" repeats entry 0"),
        tokenizer_case(
            "tokenizer_added_flag_a_string",
            [](json& tok) { tok["added_tokens"][0]["lstrip"] = "yes"; },
            "/added_tokens/0/lstrip: must be true or false"),
        tokenizer_case(
            "tokenizer_version_unknown", [](json& tok) { tok["version"] = "2.0"; },
            "/version: tokenizer.json version \"2.0\" is unknown"),
        Hostile{"tokenizer_directory_without_the_file",
                [](const fs::path& dir) {
                  return "tokenize --tokenizer " + dir.string() + " --text a";
                },
                "tokenizer.json: no such file"},
        Hostile{"tokenize_text_file_invalid_utf8",
                [](const fs::path& dir) {
                  write(dir / "tokenizer.json", small_tokenizer());
                  write(dir / "prompt.txt", std::string("ab\xC3\x28"));
                  return "tokenize --tokenizer " + dir.string() + " --text-file " +
                         (dir / "prompt.txt").string();
                },
                "prompt.txt: text is not valid UTF-8 at byte 2"},
        Hostile{"tokenize_text_file_a_directory",
                [](const fs::path& dir) {
                  write(dir / "tokenizer.json", small_tokenizer());
                  return "tokenize --tokenizer " + dir.string() + " --text-file " + dir.string();
                },
                "not a regular file (it is a directory)"},
        Hostile{"tokenize_text_file_from_proc",
                [](const fs::path& dir) {
                  write(dir / "tokenizer.json", small_tokenizer());
                  return "tokenize --tokenizer " + dir.string() + " --text-file /proc/self/status";
                },
                "resolves into /proc"}),
    [](const auto& p) { return p.param.label; });

// Issue 29's chat-template inputs, through `tokenize --messages`: the template (from
// tokenizer_config.json, chat_template.jinja or --chat-template) and the messages file. Each
// case is the small tokenizer, a one-line conversation unless the case edits it, and the input.
Hostile chat_case(const std::string& label, const std::string& template_text,
                  const std::string& messages, const std::string& message) {
  return {label,
          [template_text, messages](const fs::path& dir) {
            write(dir / "tokenizer.json", small_tokenizer());
            write(dir / "chat_template.jinja", template_text);
            write(dir / "chat.json", messages);
            return "tokenize --tokenizer " + dir.string() + " --messages " +
                   (dir / "chat.json").string();
          },
          message};
}
const std::string kOneTurn = R"([{"role": "user", "content": "ab"}])";
const std::string kEcho = "{% for m in messages %}{{ m.content }}{% endfor %}";
Hostile config_template_case(const std::string& label, const json& chat_template,
                             const std::string& message) {
  return {label,
          [chat_template](const fs::path& dir) {
            write(dir / "tokenizer.json", small_tokenizer());
            write(dir / "tokenizer_config.json", json{{"chat_template", chat_template}});
            write(dir / "chat.json", kOneTurn);
            return "tokenize --tokenizer " + dir.string() + " --messages " +
                   (dir / "chat.json").string();
          },
          message};
}

INSTANTIATE_TEST_SUITE_P(
    ChatTemplate, HostileInput,
    ::testing::Values(
        chat_case("chat_template_does_not_parse", "ab\n{% for m in messages %}\n{{ m.content }",
                  kOneTurn,
                  "chat_template.jinja: line 3: template syntax error: unexpected end of template, "
                  "expected '}}'"),
        chat_case("chat_template_unclosed_block", "{% if messages %}\nab", kOneTurn,
                  "chat_template.jinja: line 2: template syntax error: unexpected end of template"),
        chat_case(
            "chat_template_unsupported_statement", "\n{% include 'system.jinja' %}", kOneTurn,
            "chat_template.jinja: line 2: unsupported template construct: the 'include' statement"),
        chat_case("chat_template_unsupported_filter",
                  "{{ messages|map(attribute='content')|join }}", kOneTurn,
                  "chat_template.jinja: line 1: unsupported template construct: the 'map' filter"),
        chat_case(
            "chat_template_unsupported_list_repr", "{{ messages }}", kOneTurn,
            "chat_template.jinja: line 1: unsupported template construct: writing a list as text"),
        chat_case(
            "chat_template_loop_past_the_step_bound",
            "{% for i in range(100000) %}{% for j in range(100000) %}{% endfor %}{% endfor %}",
            kOneTurn, "chat_template.jinja: line 1: rendering did not end within 5000000 steps"),
        chat_case("chat_template_output_past_the_bound",
                  "{% for i in range(100000) %}{{ 'ab' * 500 }}{% endfor %}", kOneTurn,
                  "chat_template.jinja: line 1: the rendered text passed 16777216 bytes"),
        chat_case("chat_template_string_doubling",
                  "{% set s = namespace(v='ab') %}{% for i in range(64) %}{% set s.v = s.v + s.v "
                  "%}{% endfor %}",
                  kOneTurn, "chat_template.jinja: line 1: a string grew past 67108864 bytes"),
        chat_case("chat_template_macro_recursion",
                  "{% macro m() %}{{ m() }}{% endmacro %}{{ m() }}", kOneTurn,
                  "chat_template.jinja: line 1: macros nested deeper than 200"),
        chat_case("chat_template_raise_exception",
                  "{% if messages[0].role != 'system' %}\n{{ raise_exception('Conversations must "
                  "start with a system prompt.') }}{% endif %}",
                  kOneTurn,
                  "chat_template.jinja: line 2: the template raised an exception: Conversations "
                  "must start with a system prompt."),
        chat_case("chat_template_undefined_attribute", "{{ nothing.content }}", kOneTurn,
                  "chat_template.jinja: line 1: rendering failed: 'nothing' is undefined"),
        chat_case("chat_template_invalid_utf8", std::string("ab\xC3\x28"), kOneTurn,
                  "chat_template.jinja: the chat template is not valid UTF-8 at byte 2"),
        chat_case("messages_not_an_array", kEcho, R"({"role": "user", "content": "ab"})",
                  "chat.json: messages must be a JSON array of {\"role\", \"content\"} objects, "
                  "got object"),
        chat_case("messages_entry_a_string", kEcho, R"(["ab"])",
                  "chat.json: /0: a message must be an object"),
        chat_case("messages_without_role", kEcho, R"([{"content": "ab"}])",
                  "chat.json: /0/role: a message needs a string \"role\""),
        chat_case("messages_without_content", kEcho, R"([{"role": "user"}])",
                  "chat.json: /0: a message needs \"content\""),
        chat_case("messages_content_a_number", kEcho, R"([{"role": "user", "content": 7}])",
                  "chat.json: /0/content: must be a string, null, or a list of parts, got number"),
        chat_case("messages_invalid_utf8", kEcho,
                  std::string("[{\"role\": \"user\", \"content\": \"a\xFF\"}]"),
                  "chat.json: the messages file is not valid UTF-8 at byte 31"),
        chat_case("messages_duplicate_key", kEcho,
                  R"([{"role": "user", "role": "system", "content": "ab"}])", "chat.json:"),
        chat_case("messages_truncated", kEcho, R"([{"role": "user", "con)", "chat.json:"),
        config_template_case("tokenizer_config_chat_template_a_number", 7,
                             "tokenizer_config.json: /chat_template: must be a string or a list of "
                             "{name, template}, got number"),
        config_template_case("tokenizer_config_named_templates_without_default",
                             json::array({{{"name", "tool_use"}, {"template", "x"}}}),
                             "tokenizer_config.json: /chat_template: several named templates and "
                             "none is \"default\""),
        config_template_case("tokenizer_config_named_template_without_text",
                             json::array({{{"name", "default"}}}),
                             "tokenizer_config.json: /chat_template/0: must be {\"name\": string, "
                             "\"template\": string}"),
        Hostile{"chat_template_flag_a_directory",
                [](const fs::path& dir) {
                  write(dir / "tokenizer.json", small_tokenizer());
                  write(dir / "chat.json", kOneTurn);
                  return "tokenize --tokenizer " + dir.string() + " --messages " +
                         (dir / "chat.json").string() + " --chat-template " + dir.string();
                },
                "not a regular file (it is a directory)"},
        Hostile{"chat_template_missing",
                [](const fs::path& dir) {
                  write(dir / "tokenizer.json", small_tokenizer());
                  write(dir / "chat.json", kOneTurn);
                  return "tokenize --tokenizer " + dir.string() + " --messages " +
                         (dir / "chat.json").string();
                },
                "no chat template: neither chat_template.jinja nor tokenizer_config.json is here"}),
    [](const auto& p) { return p.param.label; });

// Drafter keys and files the reader refuses (arch/drafter_keys.cpp), run through eval: each a
// key the evaluator would otherwise have ignored.
Hostile key_case(std::string label, std::function<void(json&)> edit, std::string message) {
  return drafter_case(std::move(label), config_edit(std::move(edit)), std::move(message));
}

INSTANTIATE_TEST_SUITE_P(
    DrafterKeys, HostileInput,
    ::testing::Values(
        key_case(
            "projector_type_gru",
            [](json& c) {
              c["dflash_config"]["projector_type"] = "gru";
              c["dflash_config"]["sample_from_anchor"] = true;
            },
            "refused dflash_config.projector_type = \"gru\": selects SpecForge's Domino"),
        key_case(
            "sample_from_anchor", [](json& c) { c["dflash_config"]["sample_from_anchor"] = 1; },
            "refused dflash_config.sample_from_anchor = 1: drafts block_size tokens"),
        key_case(
            "pure_draft_prefix_len",
            [](json& c) { c["dflash_config"]["pure_draft_prefix_len"] = "1"; },
            "refused dflash_config.pure_draft_prefix_len = \"1\""),
        key_case(
            "shift_label", [](json& c) { c["dflash_config"]["shift_label"] = true; },
            "refused dflash_config.shift_label = true"),
        key_case(
            "unknown_dflash_key", [](json& c) { c["dflash_config"]["markov_rank"] = 256; },
            "refused dflash_config.markov_rank = 256: unknown to draftgate"),
        key_case(
            "unknown_top_level_key", [](json& c) { c["confidence_head_alpha"] = 1.0; },
            "refused confidence_head_alpha = 1.0: unknown to draftgate"),
        key_case(
            "use_swa_as_a_string", [](json& c) { c["dflash_config"]["use_swa"] = "yes"; },
            "dflash_config.use_swa must be true, false or null, got \"yes\""),
        key_case(
            "swa_window_size_negative", [](json& c) { c["dflash_config"]["swa_window_size"] = -4; },
            "dflash_config.swa_window_size must be a positive integer, got -4"),
        key_case(
            "draft_vocab_size_reduced", [](json& c) { c["draft_vocab_size"] = 32; },
            "refused draft_vocab_size = 32: a reduced draft vocabulary"),
        drafter_case(
            "mask_embedding_file",
            [](const fs::path& d) { write(d / "mask_embedding.pt", std::string("x")); },
            "refused mask_embedding.pt: a separate MASK embedding")),
    [](const auto& p) { return p.param.label; });

// speculators DFlash drafters (arch/speculators_config.h, model/draft_vocab.h): a conversion of
// the bundled reference drafter, with a reduced vocabulary where `reduced`, then `mutate`d.
const std::vector<std::int64_t> kKeptIds = [] {
  std::vector<std::int64_t> ids;
  for (std::int64_t id = 0; id < 40; ++id) ids.push_back(id);
  for (std::int64_t id : {45, 50, 57, 63}) ids.push_back(id);
  return ids;
}();

at::Tensor& named(io::NamedTensors& tensors, const std::string& name);

using testing::edit_tensors;
void drop_tensor(io::NamedTensors& tensors, const std::string& name) {
  tensors.erase(std::remove_if(tensors.begin(), tensors.end(),
                               [&](const auto& t) { return t.first == name; }),
                tensors.end());
}

Hostile speculators_case(std::string label, bool reduced,
                         std::function<void(const fs::path&)> mutate, std::string message) {
  return {label,
          [reduced, mutate](const fs::path& dir) {
            const fs::path d = dir / "speculators-drafter";
            testing::write_speculators_drafter(kTrained / "qwen3-drafter-reference",
                                               kTrained / "qwen3-target", d,
                                               reduced ? kKeptIds : std::vector<std::int64_t>{});
            mutate(d);
            return "eval --target " + (kTrained / "qwen3-target").string() + " --drafter " +
                   d.string() + " --prompts " + prompts() + " --max-new 2";
          },
          message};
}
Hostile speculators_key_case(std::string label, std::function<void(json&)> edit,
                             std::string message) {
  return speculators_case(std::move(label), false, config_edit(std::move(edit)),
                          std::move(message));
}
Hostile vocab_case(std::string label, std::function<void(io::NamedTensors&)> edit,
                   std::string message) {
  return speculators_case(
      std::move(label), true, [edit](const fs::path& d) { edit_tensors(d, edit); },
      std::move(message));
}

INSTANTIATE_TEST_SUITE_P(
    SpeculatorsDrafter, HostileInput,
    ::testing::Values(
        speculators_key_case(
            "speculators_model_type_dspark",
            [](json& c) { c["speculators_model_type"] = "dspark"; },
            "refused speculators_model_type = \"dspark\": names another speculators algorithm"),
        speculators_key_case(
            "speculators_architecture", [](json& c) { c["architectures"] = {"DFlashDraftModel"}; },
            "refused architectures = [\"DFlashDraftModel\"]: names another speculators model"),
        // Found by an outside tester (2026-12-07): each ran, though vLLM refuses to load it.
        speculators_key_case(
            "speculators_config_missing", [](json& c) { c.erase("speculators_config"); },
            "speculators_config is missing or not an object, which vLLM requires"),
        speculators_key_case(
            "speculators_proposal_methods_empty",
            [](json& c) { c["speculators_config"]["proposal_methods"] = json::array(); },
            "speculators_config.proposal_methods is missing or empty, which vLLM requires"),
        speculators_key_case(
            "speculators_verifier_missing",
            [](json& c) { c["speculators_config"].erase("verifier"); },
            "speculators_config.verifier has no name_or_path, which vLLM requires"),
        speculators_key_case(
            "speculators_layer_config_not_object",
            [](json& c) { c["transformer_layer_config"] = "qwen3"; },
            "refused transformer_layer_config = \"qwen3\": must be an object"),
        speculators_key_case(
            "speculators_aux_ids_embedding",
            [](json& c) {
              c["aux_hidden_state_layer_ids"] = {0, 3};
            },
            "speculators id 0 is the embedding output"),
        speculators_key_case(
            "speculators_aux_ids_not_array", [](json& c) { c["aux_hidden_state_layer_ids"] = 3; },
            "aux_hidden_state_layer_ids must be a non-empty array of layer ids, got 3"),
        speculators_key_case(
            "speculators_aux_ids_beyond_target",
            [](json& c) {
              c["aux_hidden_state_layer_ids"] = {1, 5};
            },
            "tap 4 is not a target layer (0..3)"),
        speculators_key_case(
            "speculators_mask_token_id_missing", [](json& c) { c.erase("mask_token_id"); },
            "missing mask_token_id (speculators DFlash config, top level)"),
        speculators_key_case(
            "speculators_block_size_string", [](json& c) { c["block_size"] = "8"; },
            "block_size must be an integer, got \"8\""),
        speculators_key_case(
            "speculators_draft_vocab_above_target", [](json& c) { c["draft_vocab_size"] = 65; },
            "refused draft_vocab_size = 65: a draft vocabulary larger than"),
        speculators_key_case(
            "speculators_draft_vocab_zero", [](json& c) { c["draft_vocab_size"] = 0; },
            "draft_vocab_size must be a positive integer, got 0"),
        speculators_key_case(
            "speculators_target_hidden_size", [](json& c) { c["target_hidden_size"] = 32; },
            "refused target_hidden_size = 32"),
        speculators_key_case(
            "speculators_sample_from_anchor", [](json& c) { c["sample_from_anchor"] = true; },
            "refused sample_from_anchor = true: drafts block_size tokens"),
        speculators_key_case(
            "speculators_sliding_window_non_causal",
            [](json& c) {
              c["transformer_layer_config"]["layer_types"] = {"sliding_attention",
                                                              "full_attention"};
              c["transformer_layer_config"]["sliding_window"] = 4;
              c["transformer_layer_config"]["use_sliding_window"] = true;
              c["sliding_window_non_causal"] = true;
            },
            "refused sliding_window_non_causal = true: the drafter was trained with its "
            "sliding layers bidirectional"),
        speculators_key_case(
            "speculators_speculative_tokens",
            [](json& c) {
              c["speculators_config"]["proposal_methods"][0]["speculative_tokens"] = 3;
            },
            "must be block_size − 1"),
        speculators_key_case(
            "speculators_layer_config_block_size",
            [](json& c) { c["transformer_layer_config"]["block_size"] = 8; },
            "refused transformer_layer_config.block_size = 8: a z-lab key inside"),
        speculators_key_case(
            "speculators_unknown_key", [](json& c) { c["markov_rank"] = 256; },
            "refused markov_rank = 256: unknown to draftgate"),
        speculators_case(
            "speculators_unknown_tensor", false,
            [](const fs::path& d) {
              edit_tensors(d, [](auto& tensors) {
                tensors.emplace_back("markov_head.weight", at::zeros({2}));
              });
            },
            "tensor \"markov_head.weight\" is not a speculators DFlash weight"),
        speculators_case(
            "speculators_embed_tokens_shape", false,
            [](const fs::path& d) {
              edit_tensors(d, [](auto& tensors) {
                named(tensors, "embed_tokens.weight") = at::zeros({32, 64});
              });
            },
            "tensor \"embed_tokens.weight\" has shape [32, 64]"),
        speculators_case(
            "speculators_full_vocab_d2t_not_identity", false,
            [](const fs::path& d) {
              edit_tensors(
                  d, [](auto& tensors) { tensors.emplace_back("d2t", at::ones({64}, at::kLong)); });
            },
            "tensor \"d2t\" is not all zeros but draft_vocab_size equals the target's"),
        vocab_case(
            "d2t_float",
            [](auto& tensors) { named(tensors, "d2t") = named(tensors, "d2t").to(at::kFloat); },
            "tensor \"d2t\" has dtype Float; the draft-to-target offsets are integers"),
        vocab_case(
            "d2t_shape",
            [](auto& tensors) {
              named(tensors, "d2t") = named(tensors, "d2t").narrow(0, 0, 43).clone();
            },
            "tensor \"d2t\" has shape [43], expected [44] (draft_vocab_size)"),
        vocab_case(
            "d2t_out_of_target_vocab", [](auto& tensors) { named(tensors, "d2t")[43] += 10; },
            "tensor \"d2t\" maps draft id 43 to target id 73, outside the target's vocabulary"),
        vocab_case(
            "d2t_negative_target", [](auto& tensors) { named(tensors, "d2t")[0] = -1; },
            "maps draft id 0 to target id -1, outside the target's vocabulary"),
        vocab_case(
            "d2t_two_drafts_one_target", [](auto& tensors) { named(tensors, "d2t")[1] = -1; },
            "tensor \"d2t\" maps draft ids 0 and 1 to the same target id 0"),
        vocab_case(
            "t2d_marks_an_unmapped_id", [](auto& tensors) { named(tensors, "t2d")[41] = true; },
            "tensor \"t2d\" marks target id 41, which d2t maps no draft id to"),
        vocab_case(
            "t2d_not_bool",
            [](auto& tensors) { named(tensors, "t2d") = named(tensors, "t2d").to(at::kLong); },
            "tensor \"t2d\" has dtype Long; the target-to-draft mask is BOOL"),
        vocab_case(
            "d2t_missing", [](auto& tensors) { drop_tensor(tensors, "d2t"); },
            "draft_vocab_size 44 is below the target's 64 but the checkpoint has no \"d2t\""),
        vocab_case(
            "lm_head_missing", [](auto& tensors) { drop_tensor(tensors, "lm_head.weight"); },
            "the checkpoint has no lm_head.weight"),
        vocab_case(
            "lm_head_full_rows",
            [](auto& tensors) {
              named(tensors, "lm_head.weight") = at::zeros({64, 64});
            },
            "tensor \"lm_head.weight\" has shape [64, 64]")),
    [](const auto& p) { return p.param.label; });

// Identity keys of step records (golden/record_identity.h) and the golden's prompt count.
Hostile record_metadata_case(std::string label, std::map<std::string, std::string> keys,
                             std::string message) {
  return {label,
          [keys](const fs::path& dir) {
            const fs::path r = dir / "r.safetensors";
            fs::copy_file(reference_record(), r);
            edit_header(r, [&](json h) {
              for (const auto& [k, v] : keys) h["__metadata__"][k] = v;
              return h.dump();
            });
            return "check --only loss_type --target " + target() + " --step-record " + r.string();
          },
          message};
}

INSTANTIATE_TEST_SUITE_P(
    Identity, HostileInput,
    ::testing::Values(
        record_metadata_case("record_target_sha256_not_hex",
                             {{"target_config_sha256", std::string(64, 'g')},
                              {"target_weights_fingerprint", std::string(64, 'a')}},
                             "\"target_config_sha256\" is not a SHA-256"),
        record_metadata_case("record_drafter_fingerprint_short",
                             {{"drafter_config_sha256", std::string(64, 'a')},
                              {"drafter_weights_fingerprint", "abc"}},
                             "\"drafter_weights_fingerprint\" is not a SHA-256"),
        record_metadata_case("record_target_identity_half",
                             {{"target_weights_fingerprint", std::string(64, 'a')}},
                             "has \"target_weights_fingerprint\" without \"target_config_sha256\""),
        record_metadata_case("record_target_identity_uppercase",
                             {{"target_config_sha256", std::string(64, 'A')},
                              {"target_weights_fingerprint", std::string(64, 'a')}},
                             "\"target_config_sha256\" is not a SHA-256"),
        golden_case(
            "golden_prompt_count_zero", [](json& g) { g["prompt_set"]["prompts"] = 0; },
            "golden prompt_set.prompts must be at least 1"),
        golden_case(
            "golden_prompt_count_fractional", [](json& g) { g["prompt_set"]["prompts"] = 2.5; },
            "/prompt_set/prompts must be an integer")),
    [](const auto& p) { return p.param.label; });

at::Tensor& named(io::NamedTensors& tensors, const std::string& name) {
  for (auto& [n, t] : tensors)
    if (n == name) return t;
  throw std::logic_error("no tensor " + name);
}

// The reference record's tensors after `edit`, run through `check`: as they are (`batch` false),
// or as a batch record (docs/step-records.md#batches) of the record twice, two rows with an
// attention_mask and document_ids.
Hostile record_tensors_case(std::string label, bool batch,
                            std::function<void(io::NamedTensors&)> edit, std::string check,
                            std::string message) {
  return {label,
          [batch, edit, check](const fs::path& dir) {
            const auto one = io::SafetensorsFile::open(reference_record());
            io::NamedTensors tensors;
            for (const auto& info : one->header().tensors) {
              const at::Tensor t = io::tensor_view(one, info);
              tensors.emplace_back(info.name, batch ? at::stack({t, t}) : t.clone());
            }
            if (batch) {
              const std::int64_t s = named(tensors, "input_ids").size(1);
              tensors.emplace_back("attention_mask", at::ones({2, s}, at::kLong));
              tensors.emplace_back("document_ids", at::zeros({2, s}, at::kLong));
            }
            edit(tensors);
            const fs::path r = dir / "record.safetensors";
            io::write_tensors(r, tensors, one->header().metadata);
            return "check --only " + check + qwen3_pair() + " --step-record " + r.string();
          },
          message};
}
Hostile batch_case(std::string label, std::function<void(io::NamedTensors&)> edit,
                   std::string check, std::string message) {
  return record_tensors_case(std::move(label), true, std::move(edit), std::move(check),
                             std::move(message));
}

// The batch keys (issue 26): attention_mask, document_ids, position_ids, anchor_mask, row shapes.
INSTANTIATE_TEST_SUITE_P(
    Batches, HostileInput,
    ::testing::Values(
        batch_case(
            "batch_padding_inside_a_row",
            [](auto& tensors) { named(tensors, "attention_mask")[1][5] = 0; }, "loss_type",
            "tensor \"attention_mask\" row 1 is not one contiguous run of tokens"),
        batch_case(
            "batch_attention_mask_values",
            [](auto& tensors) { named(tensors, "attention_mask")[0][0] = 7; },
            "target_logits_noise_free",
            "tensor \"attention_mask\" holds values other than 0 and 1"),
        batch_case(
            "batch_document_starts_again",
            [](auto& tensors) { named(tensors, "document_ids")[0].narrow(0, 4, 4).fill_(1); },
            "train_infer_consistency",
            "document 0 starts again at position 8 after another document"),
        batch_case(
            "batch_positions_jump",
            [](auto& tensors) {
              at::Tensor p = at::arange(named(tensors, "input_ids").size(1), at::kLong);
              p[4] = 9;
              tensors.emplace_back("position_ids", at::stack({p, p}));
            },
            "fc_excludes_target_layer", "tensor \"position_ids\" row 0: position 4 is 9 after 3"),
        batch_case(
            "batch_kept_anchor_on_padding",
            [](auto& tensors) {
              const std::int64_t s = named(tensors, "input_ids").size(1);
              named(tensors, "attention_mask")[0][s - 1] = 0;
              named(tensors, "anchors")[0][0] = s - 1;
            },
            "loss_type", "is outside row 0's tokens"),
        batch_case(
            "batch_anchor_mask_values",
            [](auto& tensors) {
              tensors.emplace_back("anchor_mask",
                                   at::full(named(tensors, "anchors").sizes(), 3, at::kLong));
            },
            "loss_type", "tensor \"anchor_mask\" holds values other than 0 and 1"),
        batch_case(
            "batch_fc_input_one_row",
            [](auto& tensors) {
              named(tensors, "fc_input") = named(tensors, "fc_input").narrow(0, 0, 1);
            },
            "target_logits_noise_free", "fc_input has shape"),
        batch_case(
            "batch_document_ids_wrong_shape",
            [](auto& tensors) {
              named(tensors, "document_ids") = at::zeros({2, 3}, at::kLong);
            },
            "loss_type", "tensor \"document_ids\" has shape [2, 3], expected [2, "),
        batch_case(
            "batch_sequence_negative_id",
            [](auto& tensors) { named(tensors, "input_ids")[1][2] = -5; }, "loss_type",
            "(row 1): input_ids holds a negative token id"),
        record_tensors_case(
            "record_single_with_a_batch_key", false,
            [](auto& tensors) {
              tensors.emplace_back("attention_mask",
                                   at::ones(named(tensors, "input_ids").sizes(), at::kLong));
            },
            "loss_type", "tensor \"attention_mask\" belongs to a batch record"),
        record_tensors_case(
            "record_unknown_tensor_cu_seqlens", true,
            [](auto& tensors) {
              tensors.emplace_back("cu_seqlens", at::tensor({0, 8, 16}, at::kLong));
            },
            "loss_type", "tensor \"cu_seqlens\" is not a step-record tensor"),
        // Outside the format's dtypes: a float16 fc_input was judged against F32 / BF16 budgets
        // and its rounding blamed on the training mask; integer ids of 32 bits were read too.
        record_tensors_case(
            "record_fc_input_float16", false,
            [](auto& tensors) {
              named(tensors, "fc_input") = named(tensors, "fc_input").to(at::kHalf);
            },
            "train_infer_consistency", "tensor \"fc_input\" has dtype F16, not F32 or BF16"),
        record_tensors_case(
            "record_anchors_int32", false,
            [](auto& tensors) {
              named(tensors, "anchors") = named(tensors, "anchors").to(at::kInt);
            },
            "loss_type", "tensor \"anchors\" has dtype I32, not I64"),
        batch_case(
            "batch_nothing_kept",
            [](auto& tensors) {
              tensors.emplace_back("anchor_mask",
                                   at::zeros(named(tensors, "anchors").sizes(), at::kLong));
            },
            "loss_type", "no sequence of the batch holds a kept anchor")),
    [](const auto& p) { return p.param.label; });

// A small random qwen3_moe target (8 experts, top 2, layer 1 dense) in DIR/moe — or of `family` in
// its text layout — changed by `edit`, run through forward.
Hostile moe_case(std::string label, std::function<void(const fs::path&)> edit, std::string message,
                 model::Family family = model::Family::kQwen3Moe,
                 std::function<void(model::RandomTargetSpec&)> tweak = {}) {
  return {std::move(label),
          [edit, family, tweak](const fs::path& dir) {
            model::RandomTargetSpec spec;
            spec.family = family;
            if (family != model::Family::kQwen3Moe) spec.layout = model::TargetLayout::kTextResave;
            spec.layers = 2;
            if (tweak) tweak(spec);
            const fs::path moe = dir / "moe";
            model::write_random_target(moe, spec);
            edit(moe);
            return forward_to(moe, (dir / "out.safetensors").string());
          },
          std::move(message)};
}

// make-target's experts stored fused (Qwen3.5 / 3.6 MoE releases), and the same block-FP8.
void fused_experts(model::RandomTargetSpec& s) { s.fused_experts = true; }
void fused_fp8_experts(model::RandomTargetSpec& s) {
  s.fused_experts = true;
  s.fp8 = model::random_target_fp8_scheme(s, 16, 32);
}

// Drops layer 1's fused experts tensor `<name>`.
std::function<void(const fs::path&)> drop_fused(const std::string& name) {
  return [name](const fs::path& ckpt) {
    testing::edit_tensors(ckpt, [&](const std::string& n, at::Tensor w) {
      return n == "model.language_model.layers.1.mlp.experts." + name ? at::Tensor() : w;
    });
  };
}

std::function<void(const fs::path&)> moe_config(std::function<void(json&)> edit) {
  return [edit](const fs::path& ckpt) {
    json c = read(ckpt / "config.json");
    edit(c);
    write(ckpt / "config.json", c);
  };
}

INSTANTIATE_TEST_SUITE_P(
    Moe, HostileInput,
    ::testing::Values(
        // What probe reports unsupported is refused by the engine, not run without it: Qwen2-MoE's
        // shared expert beside qwen3_moe's routed experts, experts in a dense family's config.
        moe_case(
            "moe_qwen3_moe_with_a_shared_expert",
            [](const fs::path& ckpt) {
              testing::edit_tensors(ckpt, [](io::NamedTensors& tensors) {
                tensors.emplace_back("model.layers.0.mlp.shared_expert_gate.weight",
                                     at::zeros({1, 64}, at::kBFloat16));
              });
            },
            "the engine does not run this checkpoint: a shared expert (tensors such as "
            "model.layers.0.mlp.shared_expert_gate.weight)"),
        forward_case("dense_family_with_num_experts",
                     config_edit([](json& c) { c["num_experts"] = 8; }),
                     "the engine does not run this checkpoint: MoE MLPs (model_type qwen3)"),
        moe_case(
            "moe_expert_missing",
            [](const fs::path& ckpt) {
              testing::edit_tensors(ckpt, [](const std::string& name, at::Tensor w) {
                return name == "model.layers.0.mlp.experts.5.down_proj.weight" ? at::Tensor() : w;
              });
            },
            "missing tensor \"model.layers.0.mlp.experts.5.down_proj.weight\""),
        moe_case(
            "moe_expert_misshapen",
            [](const fs::path& ckpt) {
              edit_tensor(ckpt, "model.layers.0.mlp.experts.3.up_proj.weight",
                          [](at::Tensor w) { return w.narrow(0, 0, 16).clone(); });
            },
            "tensor \"model.layers.0.mlp.experts.3.up_proj.weight\" has shape [16, 64], config "
            "implies [32, 64]"),
        moe_case(
            "moe_router_wrong_shape",
            [](const fs::path& ckpt) {
              edit_tensor(ckpt, "model.layers.0.mlp.gate.weight",
                          [](at::Tensor w) { return w.narrow(0, 0, 7).clone(); });
            },
            "tensor \"model.layers.0.mlp.gate.weight\" has shape [7, 64], config implies [8, 64]"),
        moe_case("moe_top_k_exceeds_experts",
                 moe_config([](json& c) { c["num_experts_per_tok"] = 9; }),
                 "num_experts_per_tok 9 exceeds num_experts 8"),
        moe_case("moe_num_experts_zero", moe_config([](json& c) { c["num_experts"] = 0; }),
                 "num_experts must be positive, got 0"),
        moe_case("moe_expert_width_missing",
                 moe_config([](json& c) { c.erase("moe_intermediate_size"); }),
                 "missing required field moe_intermediate_size"),
        moe_case("moe_sparse_step_zero", moe_config([](json& c) { c["decoder_sparse_step"] = 0; }),
                 "decoder_sparse_step must be positive, got 0"),
        moe_case("moe_dense_layer_out_of_range", moe_config([](json& c) {
                   c["mlp_only_layers"] = {1, 9};
                 }),
                 "mlp_only_layers holds 9, not a layer index 0..1"),
        moe_case("moe_dense_layers_not_a_list",
                 moe_config([](json& c) { c["mlp_only_layers"] = "1"; }),
                 "mlp_only_layers must be a list of layer indices"),
        moe_case("moe_norm_topk_prob_not_a_bool",
                 moe_config([](json& c) { c["norm_topk_prob"] = 1; }),
                 "norm_topk_prob must be true or false, got 1"),
        moe_case(
            "moe_shared_expert_missing",
            [](const fs::path& ckpt) {
              testing::edit_tensors(ckpt, [](const std::string& name, at::Tensor w) {
                return name == "model.language_model.layers.1.mlp.shared_expert.down_proj.weight"
                           ? at::Tensor()
                           : w;
              });
            },
            "missing tensor \"model.language_model.layers.1.mlp.shared_expert.down_proj.weight\"",
            model::Family::kQwen3_5Moe),
        moe_case(
            "moe_shared_expert_gate_misshapen",
            [](const fs::path& ckpt) {
              edit_tensor(ckpt, "model.language_model.layers.0.mlp.shared_expert_gate.weight",
                          [](at::Tensor w) {
                            return at::cat({w, w});
                          });
            },
            "tensor \"model.language_model.layers.0.mlp.shared_expert_gate.weight\" has shape [2, "
            "64], "
            "config implies [1, 64]",
            model::Family::kQwen3_5Moe),
        moe_case(
            "moe_experts_fused_and_per_expert",
            [](const fs::path& ckpt) {
              // A re-save that fused the experts ([experts, 2·width, hidden], [experts, hidden,
              // width]) but kept the per-expert tensors too: which one is the model is a guess.
              const std::string experts = "model.language_model.layers.0.mlp.experts.";
              edit_tensors(ckpt, [&](io::NamedTensors& tensors) {
                tensors.emplace_back(experts + "gate_up_proj",
                                     at::zeros({8, 64, 64}, at::kBFloat16));
                tensors.emplace_back(experts + "down_proj", at::zeros({8, 64, 32}, at::kBFloat16));
              });
            },
            "holds the experts of model.language_model.layers.0.mlp twice: fused "
            "(\"model.language_model.layers.0.mlp.experts.gate_up_proj\") and per expert "
            "(\"model.language_model.layers.0.mlp.experts.0.gate_proj.weight\")",
            model::Family::kQwen3_5Moe),
        moe_case("moe_fused_down_missing", drop_fused("down_proj"),
                 "missing tensor \"model.language_model.layers.1.mlp.experts.down_proj\"",
                 model::Family::kQwen3_5Moe, fused_experts),
        moe_case(
            "moe_fused_down_transposed",
            [](const fs::path& ckpt) {
              edit_tensor(ckpt, "model.language_model.layers.1.mlp.experts.down_proj",
                          [](at::Tensor w) { return w.transpose(1, 2).contiguous(); });
            },
            "tensor \"model.language_model.layers.1.mlp.experts.down_proj\" has shape [8, 32, "
            "64], config implies [8, 64, 32]",
            model::Family::kQwen3_5Moe, fused_experts),
        moe_case("moe_fused_fp8_scale_missing", drop_fused("gate_up_proj_scale_inv"),
                 "tensor \"model.language_model.layers.1.mlp.experts.gate_up_proj\" is F8_E4M3 "
                 "without its scales "
                 "\"model.language_model.layers.1.mlp.experts.gate_up_proj_scale_inv\"",
                 model::Family::kQwen3_5Moe, fused_fp8_experts),
        moe_case(
            "moe_fused_fp8_scale_one_grid_for_all_experts",
            [](const fs::path& ckpt) {
              // One [blocks] grid instead of one per expert: a 2-D scale beside a 3-D weight.
              edit_tensor(ckpt, "model.language_model.layers.1.mlp.experts.gate_up_proj_scale_inv",
                          [](at::Tensor s) { return s[0].clone(); });
            },
            "tensor \"model.language_model.layers.1.mlp.experts.gate_up_proj_scale_inv\" has "
            "shape [4, 2], but [8, 64, 64] in 16x32 blocks needs [8, 4, 2]",
            model::Family::kQwen3_5Moe, fused_fp8_experts),
        moe_case("moe_shared_width_missing",
                 moe_config([](json& c) { c.erase("shared_expert_intermediate_size"); }),
                 "missing required field shared_expert_intermediate_size",
                 model::Family::kQwen3_5Moe),
        moe_case("moe_shared_family_norm_topk_false",
                 moe_config([](json& c) { c["norm_topk_prob"] = false; }),
                 "norm_topk_prob = false, but qwen3_5_moe's router renormalises the top-k weights",
                 model::Family::kQwen3_5Moe),
        moe_case("moe_shared_family_dense_layers",
                 moe_config([](json& c) { c["mlp_only_layers"] = {1}; }),
                 "mlp_only_layers makes some layers dense, but every qwen3_5_moe layer routes",
                 model::Family::kQwen3_5Moe),
        Hostile{"make_target_top_k_exceeds_experts",
                [](const fs::path& dir) {
                  return "make-target --family qwen3_moe --experts 4 --experts-per-token 5 --out " +
                         (dir / "t").string();
                },
                "--experts-per-token: 5 exceeds --experts 4"},
        Hostile{"make_target_fused_experts_dense_family",
                [](const fs::path& dir) {
                  return "make-target --family qwen3 --fused-experts --out " + (dir / "t").string();
                },
                "--fused-experts: qwen3 has no routed experts to fuse"}),
    [](const auto& p) { return p.param.label; });

// The engines' fields of every version (issue 32): SGLang's renamed drafts counts, vLLM's
// per-request metrics, a restart between two /metrics scrapes, the measured-τ file's formulas.
std::string tau_import(const std::string& flag, const fs::path& file) {
  return "tau import " + flag + " " + file.string() + " --out " +
         (file.parent_path() / "measured.json").string();
}

Hostile sglang_case(std::string label, std::function<void(json&)> edit, std::string message) {
  testing::SglangResponse r{"p1", 40, 16, 3, {4, 4, 4, 4}};
  r.vintage = "0.5.12";
  json doc = json::parse(testing::sglang_response(r));
  edit(doc["meta_info"]);
  return file_case(
      std::move(label), "responses.jsonl", doc.dump() + "\n",
      [](const fs::path& f) { return tau_import("--sglang-requests", f); }, std::move(message));
}

Hostile vllm_case(std::string label, std::function<void(json&)> edit, std::string message) {
  json doc = json::parse(testing::vllm_response({"cmpl-1", "m", 16, 24, 48, 3, {4, 4, 4, 4}}));
  edit(doc);
  return file_case(
      std::move(label), "responses.jsonl", doc.dump() + "\n",
      [](const fs::path& f) { return tau_import("--vllm-responses", f); }, std::move(message));
}

json& spec(json& doc) { return doc["metrics"]["speculative_decoding"]; }

// SGLang responses with these meta_info.ids imported against prompts p1 and p2.
Hostile sglang_ids_case(std::string label, std::vector<std::string> ids, std::string message) {
  return {label,
          [=](const fs::path& dir) {
            write(dir / "prompts.jsonl", std::string("{\"id\": \"p1\", \"input_ids\": [1, 2]}\n"
                                                     "{\"id\": \"p2\", \"input_ids\": [3]}\n"));
            std::string lines;
            for (const auto& id : ids) {
              testing::SglangResponse r{id, 40, 16, 3, {4, 4, 4, 4}};
              r.vintage = "0.5.12";
              lines += testing::sglang_response(r);
            }
            write(dir / "responses.jsonl", lines);
            return tau_import("--sglang-requests", dir / "responses.jsonl") + " --prompts " +
                   (dir / "prompts.jsonl").string();
          },
          message};
}

// A vLLM measured-τ file (τ pooled 2 from its counts) changed by `edit`, recorded as a golden.
Hostile measured_file_case(std::string label, std::function<void(json&)> edit,
                           std::string message) {
  json m{{"schema", "draftgate.measured_tau/1"},
         {"engine", {{"name", "vllm"}, {"version", nullptr}}},
         {"tau_definition", "pooled"},
         {"tau_pooled", 2.0},
         {"tau_macro", nullptr},
         {"per_position_acceptance", json::array()},
         {"drafts", 10},
         {"draft_tokens", 30},
         {"accepted_tokens", 10},
         {"requests", nullptr},
         {"num_speculative_tokens", 3},
         {"block_size", 4},
         {"model_name", nullptr},
         {"prompt_set", nullptr},
         {"sources", json::object()},
         {"inputs", json::object()}};
  edit(m);
  return file_case(
      std::move(label), "measured.json", m.dump(),
      [](const fs::path& f) {
        return "golden record --measured " + f.string() + " --out " +
               (f.parent_path() / "golden.json").string();
      },
      std::move(message));
}

Hostile restart_case(std::string label, double created_after, std::optional<double> start_before,
                     std::optional<double> start_after, std::string message) {
  return {label,
          [=](const fs::path& dir) {
            write(dir / "before.txt",
                  testing::vllm_scrape({{"m", 0, 57, 171, 34, {20, 10, 4}}}, start_before));
            testing::VllmEngineCounts after{"m", 0, 122, 366, 93, {50, 28, 15}};
            after.created = created_after;
            write(dir / "after.txt", testing::vllm_scrape({after}, start_after));
            return tau_import("--vllm-metrics", dir / "after.txt") + " --before " +
                   (dir / "before.txt").string();
          },
          message};
}

INSTANTIATE_TEST_SUITE_P(
    EngineFields, HostileInput,
    ::testing::Values(
        sglang_case(
            "sglang_alias_disagrees", [](json& m) { m["spec_accepted_drafts"] = 23; },
            "meta_info.spec_accepted_drafts disagrees with meta_info.spec_num_correct_drafts"),
        sglang_case(
            "sglang_histogram_alias_disagrees",
            [](json& m) {
              m["spec_accept_histogram"] = {4, 4, 5, 3};
            },
            "meta_info.spec_accept_histogram disagrees with "
            "meta_info.spec_correct_drafts_histogram"),
        sglang_case(
            "sglang_histogram_against_correct_drafts",
            [](json& m) {
              m["spec_correct_drafts_histogram"] = m["spec_accept_histogram"] = {4, 4, 5, 3};
            },
            "accounts for 23 correct drafts, the response's count is 24"),
        sglang_case(
            "sglang_old_draft_count_not_a_multiple",
            [](json& m) {
              for (const char* k :
                   {"spec_num_proposed_drafts", "spec_proposed_drafts", "spec_accept_rate"})
                m.erase(k);
              m["spec_draft_token_num"] = 47;
            },
            "meta_info.spec_draft_token_num 47 is not a multiple of spec_verify_ct 16"),
        sglang_case(
            "sglang_accept_rate_disagrees", [](json& m) { m["spec_accept_rate"] = 0.9; },
            "meta_info.spec_accept_rate 0.9 is not correct / proposed drafts = 0.5"),
        sglang_case(
            "sglang_histogram_deep",
            [](json& m) { m["spec_correct_drafts_histogram"] = json::array({json::array()}); },
            "an entry of spec_correct_drafts_histogram is a JSON array, not a count"),
        vllm_case(
            "vllm_responses_without_metrics", [](json& d) { d.erase("metrics"); },
            "line 1: the response has no metrics.speculative_decoding"),
        vllm_case(
            "vllm_responses_metrics_not_an_object", [](json& d) { spec(d) = "1.5"; },
            "metrics.speculative_decoding is \"1.5\", not an object"),
        vllm_case(
            "vllm_responses_mean_disagrees",
            [](json& d) { spec(d)["mean_acceptance_length"] = 2.0; },
            "mean_acceptance_length 2 is not 1 + num_accepted_draft_tokens / "
            "num_spec_steps = 2.5"),
        vllm_case(
            "vllm_responses_histogram_steps",
            [](json& d) {
              spec(d)["acceptance_histogram"] = {4, 4, 4};
            },
            "acceptance_histogram counts 12 steps, num_spec_steps 16"),
        vllm_case(
            "vllm_responses_histogram_bucket_name",
            [](json& d) {
              spec(d)["acceptance_histogram"] = {{"-1", 16}};
            },
            "acceptance_histogram has the bucket \"-1\", not a number of drafts"),
        vllm_case(
            "vllm_responses_histogram_accepted",
            [](json& d) {
              spec(d)["acceptance_histogram"] = {4, 4, 4, 0, 4};
            },
            "acceptance_histogram accounts for 28 accepted drafts"),
        vllm_case(
            "vllm_responses_steps_huge", [](json& d) { spec(d)["num_spec_steps"] = 1e300; },
            "num_spec_steps is 1e+300, not a count"),
        vllm_case(
            "vllm_responses_zero_steps", [](json& d) { spec(d)["num_spec_steps"] = 0; },
            "num_spec_steps is 0: no speculative step"),
        vllm_case(
            "vllm_responses_k_negative", [](json& d) { spec(d)["num_spec_tokens"] = -3; },
            "num_spec_tokens is -3, not a count"),
        vllm_case(
            "vllm_responses_two_choices_with_stats",
            [](json& d) {
              d["choices"] = {{{"index", 0}, {"speculative_decoding_stats", spec(d)}},
                              {{"index", 1}, {"speculative_decoding_stats", spec(d)}}};
              d.erase("metrics");
            },
            "more than one choice carries speculative_decoding_stats"),
        vllm_case(
            "vllm_responses_choice_disagrees",
            [](json& d) {
              json other = spec(d);
              other["num_spec_steps"] = 17;
              other.erase("acceptance_histogram");
              other.erase("mean_acceptance_length");
              d["choices"][0]["speculative_decoding_stats"] = other;
            },
            "metrics.speculative_decoding and the choice's speculative_decoding_stats "
            "disagree"),
        file_case(
            "vllm_responses_deep", "responses.jsonl", deep_array(),
            [](const fs::path& f) { return tau_import("--vllm-responses", f); },
            "line 1: not a JSON vLLM response: JSON nests deeper than 64 levels"),
        file_case(
            "vllm_responses_duplicate_id", "responses.jsonl",
            testing::vllm_response({"cmpl-1", "m", 16, 24, 48, 3, {4, 4, 4, 4}}) +
                testing::vllm_response({"cmpl-1", "m", 16, 24, 48, 3, {4, 4, 4, 4}}),
            [](const fs::path& f) { return tau_import("--vllm-responses", f); },
            "line 2: a second response with id \"cmpl-1\""),
        restart_case("vllm_restart_counter_recreated", 1.7646e9, std::nullopt, std::nullopt,
                     "the server restarted between the scrapes: "
                     "vllm:spec_decode_num_drafts_created{engine=\"0\",model_name=\"m\"} is "
                     "1764600000 here but 1764500000"),
        restart_case("vllm_restart_process_start", 1.7645e9, 1.7645e9, 1.76459e9,
                     "process_start_time_seconds is 1764590000 here but 1764500000"),
        // Found by an outside tester (2026-12-07): each tied to the prompts by order, exit 0.
        sglang_ids_case("sglang_ids_of_another_prompt_set", {"q1", "q2"},
                        "response 1 names request \"q1\", and no response names a prompt of "),
        sglang_ids_case("sglang_ids_partly_the_prompts", {"p1", "zz-2"},
                        "response 2 names request \"zz-2\", which is not a prompt of "),
        // Found by an outside tester (2026-12-07): read as zeros, τ since the server started.
        Hostile{"vllm_before_of_another_model",
                [](const fs::path& dir) {
                  write(dir / "before.txt",
                        testing::vllm_scrape({{"other/model", 0, 57, 171, 34, {20, 10, 4}}}));
                  write(dir / "after.txt",
                        testing::vllm_scrape({{"m", 0, 122, 366, 93, {50, 28, 15}}}));
                  return tau_import("--vllm-metrics", dir / "after.txt") + " --before " +
                         (dir / "before.txt").string();
                },
                "before.txt: has no vllm:spec_decode_num_drafts_total series for "
                "model_name=\"m\", which "},
        measured_file_case(
            "measured_tau_formulas_not_an_object",
            [](json& m) { m["tau_formulas"] = "1 + accepted / drafts"; },
            "measured.json: tau_formulas must be an object"),
        // Found by an outside tester (2026-12-07): an edited τ gated as measured, exit 0.
        measured_file_case(
            "measured_tau_pooled_not_its_counts", [](json& m) { m["tau_pooled"] = 3.9; },
            "measured.json: tau_pooled 3.9 is not 1 + "
            "accepted_tokens 10 / drafts 10 = 2"),
        measured_file_case(
            "measured_tau_vllm_no_drafts", [](json& m) { m["drafts"] = 0; },
            "measured.json: drafts is 0: a vLLM τ counts at least one draft step"),
        measured_file_case(
            "measured_tau_vllm_past_the_block",
            [](json& m) {
              m["tau_pooled"] = 4.5;
              m["accepted_tokens"] = 35;
            },
            "measured.json: tau_pooled 4.5 is outside 1…4 (the block size)")),
    [](const auto& p) { return p.param.label; });

// A small random qwen3 target with block-FP8 decoder linears (24 x 40 blocks over 64 / 128 wide
// matrices: [3, 2] scales for the attention's q_proj) in DIR/fp8, changed by `edit`, run through
// forward.
Hostile fp8_case(std::string label, std::function<void(const fs::path&)> edit,
                 std::string message) {
  return {std::move(label),
          [edit](const fs::path& dir) {
            model::RandomTargetSpec spec;
            spec.layers = 2;
            spec.fp8 = model::random_target_fp8_scheme(spec, 24, 40);
            const fs::path fp8 = dir / "fp8";
            model::write_random_target(fp8, spec);
            edit(fp8);
            return forward_to(fp8, (dir / "out.safetensors").string());
          },
          std::move(message)};
}

std::function<void(const fs::path&)> fp8_quantization(std::function<void(json&)> edit) {
  return [edit](const fs::path& ckpt) {
    json c = read(ckpt / "config.json");
    edit(c["quantization_config"]);
    write(ckpt / "config.json", c);
  };
}

std::function<void(const fs::path&)> fp8_scale(std::function<at::Tensor(at::Tensor)> edit) {
  return [edit](const fs::path& ckpt) {
    edit_tensor(ckpt, "model.layers.0.self_attn.q_proj.weight_scale_inv", edit);
  };
}

const std::string kFp8Scale = "tensor \"model.layers.0.self_attn.q_proj.weight_scale_inv\"";

INSTANTIATE_TEST_SUITE_P(Fp8, HostileInput,
                         ::testing::Values(fp8_case(
                                               "fp8_scale_missing",
                                               [](const fs::path& ckpt) {
                                                 testing::edit_tensors(
                                                     ckpt,
                                                     [](const std::string& name, at::Tensor w) {
                                                       return name == "model.layers.0.self_attn.q_"
                                                                      "proj.weight_scale_inv"
                                                                  ? at::Tensor()
                                                                  : w;
                                                     });
                                               },
                                               "tensor \"model.layers.0.self_attn.q_proj.weight\" "
                                               "is F8_E4M3 without its scales "
                                               "\"model.layers.0.self_attn.q_proj.weight_scale_"
                                               "inv\""),
                                           fp8_case("fp8_scale_wrong_block_shape",
                                                    fp8_scale([](at::Tensor s) {
                                                      return s.narrow(0, 0, 2).clone();
                                                    }),
                                                    kFp8Scale + " has shape [2, 2], but [64, 64] "
                                                                "in 24x40 blocks needs [3, 2]"),
                                           fp8_case("fp8_scale_transposed",
                                                    fp8_scale([](at::Tensor s) {
                                                      return s.t().contiguous();
                                                    }),
                                                    kFp8Scale + " has shape [2, 3], but [64, 64] "
                                                                "in 24x40 blocks needs [3, 2]"),
                                           fp8_case("fp8_scale_nan", fp8_scale([](at::Tensor s) {
                                                      s[1][1] = std::nan("");
                                                      return s;
                                                    }),
                                                    kFp8Scale +
                                                        " holds a scale that is NaN, Inf or <= 0"),
                                           fp8_case("fp8_scale_inf", fp8_scale([](at::Tensor s) {
                                                      s[0][1] = INFINITY;
                                                      return s;
                                                    }),
                                                    kFp8Scale +
                                                        " holds a scale that is NaN, Inf or <= 0"),
                                           fp8_case("fp8_scale_zero", fp8_scale([](at::Tensor s) {
                                                      s[2][0] = 0;
                                                      return s;
                                                    }),
                                                    kFp8Scale +
                                                        " holds a scale that is NaN, Inf or <= 0"),
                                           fp8_case("fp8_scale_negative",
                                                    fp8_scale([](at::Tensor s) { return -s; }),
                                                    kFp8Scale +
                                                        " holds a scale that is NaN, Inf or <= 0"),
                                           fp8_case(
                                               "fp8_scale_integer", fp8_scale([](at::Tensor s) {
                                                 return s.to(at::kInt);
                                               }),
                                               kFp8Scale +
                                                   " is stored I32, not a float32/bf16/f16 scale"),
                                           fp8_case(
                                               "fp8_nan_code",
                                               [](const fs::path& ckpt) {
                                                 edit_tensor(ckpt,
                                                             "model.layers.1.mlp.up_proj.weight",
                                                             [](at::Tensor w) {
                                                               w[3][5] = 0x7F;  // e4m3fn's NaN
                                                               return w;
                                                             });
                                               },
                                               "model.safetensors: tensor "
                                               "\"model.layers.1.mlp.up_proj.weight\" holds "
                                               "NaN or Inf values"),
                                           // Finite, positive and far too large: blamed on the
                                           // weight's codes before (an outside tester's case).
                                           fp8_case("fp8_scale_overflows",
                                                    fp8_scale([](at::Tensor s) {
                                                      s[0][0] = 3e38;
                                                      return s;
                                                    }),
                                                    kFp8Scale +
                                                        " holds a scale of 3e+38, whose product "
                                                        "with the largest e4m3 value (448) "
                                                        "overflows float32"),
                                           fp8_case(
                                               "fp8_e5m2_weight",
                                               [](const fs::path& ckpt) {
                                                 edit_header(
                                                     ckpt / "model.safetensors", [](json h) {
                                                       h["model.layers.0.mlp.down_proj.weight"]
                                                        ["dtype"] = "F8_E5M2";
                                                       return h.dump();
                                                     });
                                               },
                                               "tensor \"model.layers.0.mlp.down_proj.weight\" is "
                                               "stored F8_E5M2; fine-grained "
                                               "FP8 (fmt e4m3) stores F8_E4M3"),
                                           fp8_case(
                                               "fp8_weight_in_not_converted_module",
                                               fp8_quantization([](json& q) {
                                                 q["modules_to_not_convert"].push_back("self_attn");
                                               }),
                                               "tensor \"model.layers.0.self_attn.q_proj.weight\" "
                                               "is F8_E4M3 but "
                                               "quantization_config lists its module as not "
                                               "converted (\"self_attn\")"),
                                           fp8_case(
                                               "fp8_without_quantization_config",
                                               [](const fs::path& ckpt) {
                                                 json c = read(ckpt / "config.json");
                                                 c.erase("quantization_config");
                                                 write(ckpt / "config.json", c);
                                               },
                                               "is stored F8_E4M3 but config.json has no "
                                               "quantization_config with quant_method "
                                               "\"fp8\""),
                                           fp8_case(
                                               "fp8_embedding",
                                               [](const fs::path& ckpt) {
                                                 edit_tensor(ckpt, "model.embed_tokens.weight",
                                                             [](at::Tensor w) {
                                                               return at::full(w.sizes(), 0x38,
                                                                               at::kByte);
                                                             });
                                                 edit_header(
                                                     ckpt / "model.safetensors", [](json h) {
                                                       h["model.embed_tokens.weight"]["dtype"] =
                                                           "F8_E4M3";
                                                       return h.dump();
                                                     });
                                               },
                                               "tensor \"model.embed_tokens.weight\" is stored "
                                               "F8_E4M3, but draftgate reads it "
                                               "unquantised"),
                                           fp8_case(
                                               "fp8_fmt_e5m2",
                                               fp8_quantization([](json& q) { q["fmt"] = "e5m2"; }),
                                               "quantization_config.fmt \"e5m2\" is not \"e4m3\""),
                                           fp8_case(
                                               "fp8_block_size_missing",
                                               fp8_quantization([](json& q) {
                                                 q.erase("weight_block_size");
                                               }),
                                               "quantization_config.weight_block_size is missing: "
                                               "per-tensor FP8 scales are not "
                                               "read"),
                                           fp8_case(
                                               "fp8_block_size_one_int",
                                               fp8_quantization([](json& q) {
                                                 q["weight_block_size"] = {128};
                                               }),
                                               "quantization_config.weight_block_size [128] is not "
                                               "two positive integers"),
                                           fp8_case("fp8_block_size_zero",
                                                    fp8_quantization([](json& q) {
                                                      q["weight_block_size"] = {0, 40};
                                                    }),
                                                    "quantization_config.weight_block_size [0, 40] "
                                                    "is not two positive integers"),
                                           fp8_case("fp8_block_size_negative",
                                                    fp8_quantization([](json& q) {
                                                      q["weight_block_size"] = {24, -40};
                                                    }),
                                                    "quantization_config.weight_block_size "
                                                    "[24, -40] is not two positive integers"),
                                           fp8_case("fp8_block_size_fraction",
                                                    fp8_quantization([](json& q) {
                                                      q["weight_block_size"] = {24.5, 40};
                                                    }),
                                                    "quantization_config.weight_block_size "
                                                    "[24.5, 40] is not two positive integers"),
                                           fp8_case(
                                               "fp8_block_size_other_than_written",
                                               fp8_quantization([](json& q) {
                                                 q["weight_block_size"] = {128, 128};
                                               }),
                                               "tensor "
                                               "\"model.layers.0.mlp.gate_proj.weight_scale_inv\" "
                                               "has shape [6, 2], but [128, 64] in 128x128 "
                                               "blocks needs [1, 1]"),
                                           fp8_case(
                                               "fp8_static_activations",
                                               fp8_quantization([](json& q) {
                                                 q["activation_scheme"] = "static";
                                               }),
                                               "quantization_config.activation_scheme \"static\" "
                                               "is not \"dynamic\""),
                                           fp8_case("fp8_not_convert_not_a_list",
                                                    fp8_quantization([](json& q) {
                                                      q["modules_to_not_convert"] = "lm_head";
                                                    }),
                                                    "quantization_config.modules_to_not_convert "
                                                    "\"lm_head\" is not a list of module "
                                                    "names"),
                                           fp8_case(
                                               "fp8_ignored_layers_not_names",
                                               fp8_quantization([](json& q) {
                                                 q["ignored_layers"] = {"lm_head", 7};
                                               }),
                                               "quantization_config.ignored_layers holds 7, not a "
                                               "module name"),
                                           Hostile{
                                               "fp8_probe_malformed_scheme",
                                               [](const fs::path& dir) {
                                                 model::RandomTargetSpec spec;
                                                 spec.layers = 2;
                                                 spec.fp8 =
                                                     model::random_target_fp8_scheme(spec, 24, 40);
                                                 model::write_random_target(dir / "fp8", spec);
                                                 fp8_quantization([](json& q) {
                                                   q["fmt"] = "int8";
                                                 })(dir / "fp8");
                                                 return "probe " + (dir / "fp8").string();
                                               },
                                               "quantization_config.fmt \"int8\" is not \"e4m3\""},
                                           Hostile{"make_target_unknown_quantization",
                                                   [](const fs::path& dir) {
                                                     return "make-target --quantize int4 --out " +
                                                            (dir / "t").string();
                                                   },
                                                   "--quantize: Value \"int4\" is not a "
                                                   "quantization (fp8)"},
                                           Hostile{"make_target_empty_quantization",
                                                   [](const fs::path& dir) {
                                                     return "make-target --quantize '' --out " +
                                                            (dir / "t").string();
                                                   },
                                                   "--quantize: Value \"\" is not a quantization "
                                                   "(fp8)"},
                                           Hostile{"make_target_fp8_block_zero",
                                                   [](const fs::path& dir) {
                                                     return "make-target --quantize fp8 "
                                                            "--fp8-block 0,128 --out " +
                                                            (dir / "t").string();
                                                   },
                                                   "--fp8-block"}),
                         [](const auto& p) { return p.param.label; });

// The server of the running live case: replaced (the previous one killed) by the next case, and
// each stops by itself after 30 s. It keeps its files beside the case's directory, not in it.
std::unique_ptr<testing::EngineStandIn>& live_server() {
  static std::unique_ptr<testing::EngineStandIn> server;
  return server;
}

Hostile live_case(std::string label, std::string server_args, std::string message,
                  std::string extra = "") {
  return {label,
          [=](const fs::path& dir) {
            live_server().reset();
            live_server() = std::make_unique<testing::EngineStandIn>(
                dir.parent_path() / (dir.filename().string() + "-server"), server_args, 30);
            write(dir / "prompts.jsonl", std::string("{\"id\": \"p1\", \"input_ids\": [1, 2, 3]}\n"
                                                     "{\"id\": \"p2\", \"input_ids\": [4, 5]}\n"
                                                     "{\"id\": \"p3\", \"input_ids\": [6]}\n"));
            const std::string engine =
                server_args.find("--engine vllm") != std::string::npos ? "vllm" : "sglang";
            return "tau measure --engine " + engine + " --url " + live_server()->url() +
                   " --prompts " + (dir / "prompts.jsonl").string() + " --out " +
                   (dir / "measured.json").string() + extra;
          },
          message};
}

const std::string kSglang = "--engine sglang --vintage 0.5.12 --fault ";
const std::string kVllm = "--engine vllm --vintage per-request --fault ";
const std::string kVllmPooled = "--engine vllm --vintage metrics --fault ";

INSTANTIATE_TEST_SUITE_P(
    LiveServers, HostileInput,
    ::testing::Values(
        live_case("sglang_invalid_json", kSglang + "invalid-json",
                  "/generate: the answer is not JSON"),
        live_case("sglang_50_mb_body", kSglang + "huge-body",
                  "/generate: the answer is larger than 16 MiB"),
        live_case("sglang_answer_for_another_request", kSglang + "other-id",
                  "/generate: the answer to prompt \"p1\" is for request \"other-request\""),
        live_case("sglang_speculative_fields_missing", kSglang + "missing-spec",
                  "/generate: response 2: meta_info has no spec_verify_ct"),
        live_case("sglang_speculative_decoding_off", kSglang + "spec-off",
                  "/get_server_info: speculative decoding is off (speculative_algorithm is null)"),
        live_case("sglang_answer_without_an_id", kSglang + "no-id",
                  "/generate: the answer to prompt \"p1\" names no request (no meta_info.id)"),
        live_case("sglang_a_batch_answer", kSglang + "batch-answer",
                  "/generate: the answer to prompt \"p1\" is not one /generate answer"),
        live_case("sglang_k_not_the_servers", kSglang + "none",
                  "--num-speculative-tokens: 5, but http://127.0.0.1:",
                  " --num-speculative-tokens 5"),
        live_case("sglang_another_model", kSglang + "wrong-model",
                  "/get_server_info: serves \"other/model\", not \"Qwen/Qwen3-8B\" (--model-name)",
                  " --model-name Qwen/Qwen3-8B"),
        live_case("sglang_overloaded_past_the_retries", kSglang + "overloaded",
                  "/generate: HTTP status 503: \"Service Unavailable\" after 3 retries"),
        live_case("sglang_stops_answering", kSglang + "hang", "/generate: no answer within 2 s",
                  " --timeout 2"),
        live_case("sglang_wants_an_api_key", kSglang + "none --api-key k3y",
                  "/get_server_info: HTTP status 401"),
        live_case(
            "api_key_variable_unset", kSglang + "none --api-key k3y",
            "--api-key-env: the environment variable DRAFTGATE_NO_SUCH_KEY_VARIABLE is not set",
            " --api-key-env DRAFTGATE_NO_SUCH_KEY_VARIABLE"),
        live_case("vllm_invalid_json", kVllm + "invalid-json",
                  "/v1/completions: the answer is not JSON"),
        live_case("vllm_50_mb_body", kVllm + "huge-body",
                  "/v1/completions: the answer is larger than 16 MiB"),
        live_case("vllm_answer_for_another_request", kVllm + "other-id",
                  "/v1/completions: the answer to prompt \"p1\" is for request "
                  "\"cmpl-other-request\""),
        live_case("vllm_answer_without_an_id", kVllm + "no-id",
                  "/v1/completions: the answer to prompt \"p1\" names no request (no id)"),
        live_case("vllm_metrics_stop_answering", kVllmPooled + "metrics-hang",
                  "/metrics: no answer within 2 s", " --timeout 2"),
        live_case("vllm_speculative_fields_missing", kVllm + "missing-spec",
                  "/v1/completions: response 2: the response has no metrics.speculative_decoding"),
        live_case("vllm_speculative_decoding_off", kVllm + "spec-off",
                  "/metrics: speculative decoding is off: no vllm:spec_decode_num_drafts counter"),
        live_case("vllm_another_model", kVllm + "wrong-model",
                  "/v1/models: serves \"other/model\", not \"Qwen/Qwen3-8B\" (--model-name)",
                  " --model-name Qwen/Qwen3-8B"),
        live_case("vllm_stops_answering", kVllm + "hang", "/v1/completions: no answer within 2 s",
                  " --timeout 2"),
        live_case("vllm_counter_reset_mid_run", kVllmPooled + "counter-reset", ": counter reset"),
        live_case("vllm_restart_between_scrapes", kVllmPooled + "restart",
                  "the server restarted between the scrapes: process_start_time_seconds"),
        // Found by an outside tester (2026-12-07): each measured a τ, exit 0.
        live_case("vllm_redirect_to_another_server", kVllm + "redirect-away",
                  "/v1/models: redirects (HTTP 307) to another server, http://localhost:"),
        live_case("vllm_engine_appears_mid_run", kVllmPooled + "engine-appears",
                  "a series that appeared between the scrapes"),
        live_case("vllm_other_client_between_scrapes", kVllmPooled + "other-client",
                  "drafts between the scrapes, but the run generated at most"),
        live_case("vllm_bare_and_total_disagree", kVllmPooled + "bare-and-total",
                  "on the same page: two values of one counter"),
        live_case("vllm_metrics_cut_off", kVllmPooled + "metrics-cut-off",
                  "/metrics: the answer was cut off after"),
        live_case("vllm_answer_not_gzip", kVllm + "bad-gzip",
                  "the answer's Content-Encoding could not be decoded"),
        live_case("sglang_draft_tokens_a_string", kSglang + "draft-tokens-a-string",
                  "/get_server_info: speculative_num_draft_tokens is \"4\", not a count"),
        Hostile{"https_to_a_plain_http_server",
                [](const fs::path& dir) {
                  std::string command = live_case("", kVllm + "none", "").args(dir);
                  command.replace(command.find("--url http://"), 13, "--url https://");
                  return command;
                },
                "the TLS handshake failed (hint: is the server plain http? then give an http:// "
                "URL)"},
        live_case("vllm_restart_without_total",
                  "--engine vllm --vintage metrics-bare --fault restart",
                  "the server restarted between the scrapes: process_start_time_seconds")),
    [](const auto& p) { return p.param.label; });

// Issue 29 item 4: `prompts build` on a dataset export (JSONL), each case one bad row or flag.
Hostile export_case(const std::string& label, const std::string& dataset, const std::string& rows,
                    const std::string& message, const std::string& flags = "") {
  return {label,
          [dataset, rows, flags](const fs::path& dir) {
            write(dir / "export.jsonl", rows);
            return "prompts build --dataset " + dataset + " --from " +
                   (dir / "export.jsonl").string() + " --out " + (dir / "p.jsonl").string() + flags;
          },
          message};
}

INSTANTIATE_TEST_SUITE_P(
    PromptsBuild, HostileInput,
    ::testing::Values(
        export_case("export_field_missing", "gsm8k",
                    "{\"question\": \"q\"}\n{\"problem\": \"p\", \"answer\": \"1\"}\n",
                    "export.jsonl:2: the row has no \"question\" field, which gsm8k reads"),
        export_case("export_field_a_number", "math500", "{\"problem\": 17}\n",
                    "export.jsonl:1: \"problem\" must be a string, not 17"),
        export_case("export_field_null", "humaneval", "{\"prompt\": null}\n",
                    "export.jsonl:1: \"prompt\" must be a string, not null"),
        export_case("export_mbpp_full_config", "mbpp", "{\"text\": \"Write a function\"}\n",
                    "export.jsonl:1: the row has no \"prompt\" field, which mbpp reads (hint: "
                    "export google-research-datasets/mbpp (config sanitized, split test)"),
        export_case("export_benchmark_cache_file", "mt-bench", "{\"turns\": [\"one\"]}\n",
                    "rows of \"turns\" are benchmark.py's cache/ files (already formatted)"),
        export_case("export_mt_bench_turns_a_string", "mt-bench", "{\"prompt\": \"one\"}\n",
                    "export.jsonl:1: \"prompt\" must be a non-empty list of turns"),
        export_case("export_mt_bench_no_turns", "mt-bench", "{\"prompt\": []}\n",
                    "export.jsonl:1: \"prompt\" must be a non-empty list of turns"),
        export_case("export_mt_bench_turn_a_number", "mt-bench", "{\"prompt\": [\"one\", 2]}\n",
                    "export.jsonl:1: \"prompt\"[1] must be a string, not 2"),
        export_case("export_row_an_array", "gsm8k", "[\"question\"]\n",
                    "export.jsonl:1: a row must be a JSON object"),
        export_case("export_row_malformed", "gsm8k", "{\"question\": \"q\"}\n{\"question\": \n",
                    "export.jsonl:2:"),
        export_case("export_invalid_utf8", "gsm8k", "{\"question\": \"caf\xC3\"}\n",
                    "export.jsonl:1:"),
        export_case("export_lone_surrogate", "gsm8k", "{\"question\": \"\\ud800\"}\n",
                    "export.jsonl:1:"),
        export_case("export_duplicate_key", "gsm8k", "{\"question\": \"a\", \"question\": \"b\"}\n",
                    "export.jsonl:1:"),
        export_case("export_empty_file", "gsm8k", "", "export.jsonl: "),
        export_case("export_blank_lines_only", "gsm8k", "\n  \n\n",
                    "export.jsonl: the export holds no rows"),
        export_case("export_unknown_dataset", "gsm8k-platinum", "{\"question\": \"q\"}\n",
                    "--dataset: unknown dataset \"gsm8k-platinum\"; the benchmark's datasets: "
                    "gsm8k, math500, humaneval, mbpp, mt-bench"),
        export_case("export_limit_zero", "gsm8k", "{\"question\": \"q\"}\n",
                    "--limit: Value 0 is not in 1…", " --limit 0"),
        export_case("export_limit_negative", "gsm8k", "{\"question\": \"q\"}\n",
                    "--limit: Value -3 is not in 1…", " --limit -3"),
        export_case("export_shuffle_seed_without_limit", "gsm8k", "{\"question\": \"q\"}\n",
                    "--shuffle-seed: goes with --limit N", " --shuffle-seed 0"),
        export_case("export_shuffle_seed_negative", "gsm8k", "{\"question\": \"q\"}\n",
                    "--shuffle-seed: Value -1 is not an integer in 0…18446744073709551615",
                    " --limit 1 --shuffle-seed -1"),
        // Past 64 bits: refused, not clamped to another seed's rows.
        export_case("export_shuffle_seed_past_64_bits", "gsm8k", "{\"question\": \"q\"}\n",
                    "--shuffle-seed: Value 18446744073709551616 is not an integer in 0…",
                    " --limit 1 --shuffle-seed 18446744073709551616"),
        export_case("export_shuffle_reads_every_row", "gsm8k",
                    "{\"question\": \"q\"}\n{\"question\": \"r\"}\n{\"question\": 3}\n",
                    "export.jsonl:3: \"question\" must be a string, not 3",
                    " --limit 1 --shuffle-seed 0"),
        export_case("export_server_backend_no_prompts", "mt-bench", "{\"prompt\": [\"a\"]}\n",
                    "--server-backend: N (--num-prompts) must be at least 1",
                    " --server-backend 0,4"),
        export_case("export_server_backend_negative", "mt-bench", "{\"prompt\": [\"a\"]}\n",
                    "--server-backend: Value -1 is not in 0…2147483647", " --server-backend 4,-1"),
        export_case("export_server_backend_one_number", "mt-bench", "{\"prompt\": [\"a\"]}\n",
                    "--server-backend: At least 2 required but received 1", " --server-backend 4"),
        // It wraps around the export, so every row is read.
        export_case("export_server_backend_reads_every_row", "gsm8k",
                    "{\"question\": \"q\"}\n{\"question\": \"r\"}\n{\"question\": 3}\n",
                    "export.jsonl:3: \"question\" must be a string, not 3",
                    " --server-backend 1,0"),
        Hostile{"export_out_is_the_input",
                [](const fs::path& dir) {
                  write(dir / "export.jsonl", std::string("{\"question\": \"q\"}\n"));
                  return "prompts build --dataset gsm8k --from " + (dir / "export.jsonl").string() +
                         " --out " + (dir / "export.jsonl").string();
                },
                "(--from); draftgate never writes over an input"},
        Hostile{"export_out_a_link_to_the_input",
                [](const fs::path& dir) {
                  write(dir / "export.jsonl", std::string("{\"question\": \"q\"}\n"));
                  fs::create_symlink(dir / "export.jsonl", dir / "link.jsonl");
                  return "prompts build --dataset gsm8k --from " + (dir / "export.jsonl").string() +
                         " --out " + (dir / "link.jsonl").string();
                },
                "(--from); draftgate never writes over an input"}),
    [](const auto& p) { return p.param.label; });

// A prompt set of text or messages read by `tau import` with the small chat checkpoint's
// tokenizer and template (no model needed to render); `flags` adds rendering flags.
Hostile rendered_prompt_case(const std::string& label, const std::string& contents,
                             const std::string& flags, const std::string& message) {
  return {label,
          [=](const fs::path& dir) {
            testing::write_chat_checkpoint(dir / "tok");
            write(dir / "prompts.jsonl", contents);
            for (const auto& [name, text] : std::vector<std::pair<std::string, std::string>>{
                     {"responses.jsonl", "{}\n"},
                     {"raise.jinja", "{{ raise_exception('bad turn') }}"},
                     {"raw.jinja", "{% raw %}{% endraw %}"},
                     {"later.jinja",
                      "{% if messages|length > 1 %}{{ raise_exception('turn 2') "
                      "}}{% endif %}x"}})
              write(dir / name, text);
            std::string f = flags;
            for (const char* name : {"raise.jinja", "raw.jinja", "later.jinja"})
              if (const auto at = f.find(name); at != std::string::npos)
                f.replace(at, std::string(name).size(), (dir / name).string());
            return "tau import --sglang-requests " + (dir / "responses.jsonl").string() +
                   " --prompts " + (dir / "prompts.jsonl").string() + " --tokenizer " +
                   (dir / "tok").string() + " " + f + " --out " + (dir / "m.json").string();
          },
          message};
}

const std::string kUserLine =
    "{\"id\": \"c\", \"messages\": [{\"role\": \"user\", \"content\": \"h\"}]}\n";

// Found by an outside tester (2026-12-07): each passed `check`, exit 0, and was refused by `eval`.
// A speculators drafter of a reduced vocabulary without `tensor`, through the structural checks.
Hostile reduced_vocab_structural_case(std::string label, std::string tensor, std::string message) {
  return {label,
          [tensor](const fs::path& dir) {
            const fs::path d = dir / "speculators-drafter";
            testing::write_speculators_drafter(kTrained / "qwen3-drafter-reference",
                                               kTrained / "qwen3-target", d, kKeptIds);
            without_tensor(tensor)(d);
            return "check --only layer_path,drafter_config,fc_excludes_target_layer --target " +
                   (kTrained / "qwen3-target").string() + " --drafter " + d.string();
          },
          message};
}

// The reference drafter's weights under another head's config (`edit` of a Llama config without
// the DFlash keys), given to `verb` ("eval", "probe", "check-target").
Hostile other_head_case(std::string label, std::function<void(json&)> edit, std::string verb,
                        std::string message) {
  return {label,
          [edit, verb](const fs::path& dir) {
            const fs::path d = copy_of(dir, "qwen3-drafter-reference");
            config_edit([edit](json& c) {
              for (const char* key : {"dflash_config", "block_size", "mask_token_id",
                                      "target_layer_ids", "num_target_layers"})
                c.erase(key);
              c["architectures"] = {"LlamaForCausalLM"};
              c["model_type"] = "llama";
              edit(c);
            })(d);
            if (verb == "probe") return "probe " + d.string();
            if (verb == "check-target") return "check --only layer_path --target " + d.string();
            return "eval --target " + target() + " --drafter " + d.string() + " --prompts " +
                   prompts() + " --max-new 2";
          },
          message};
}

// Found by an outside tester (2026-12-07): an EAGLE head's Llama config made it "a target
// checkpoint" (eval: "give it as --target"; probe: a runnable target).
INSTANTIATE_TEST_SUITE_P(
    OtherDrafterHeads, HostileInput,
    ::testing::Values(
        other_head_case(
            "eagle3_head_as_drafter",
            [](json& c) {
              c["architectures"] = {"LlamaForCausalLMEagle3"};
              c["draft_vocab_size"] = 32;
            },
            "eval",
            "given as --drafter but it is a drafter of another kind than DFlash (config.json "
            "architectures LlamaForCausalLMEagle3), which draftgate does not run"),
        other_head_case(
            "eagle_config_head_probed",
            [](json& c) {
              c["eagle_config"] = {{"eagle_aux_hidden_state_layer_ids", {1, 2}}};
            },
            "probe", "a drafter of another kind than DFlash (config.json has eagle_config)"),
        other_head_case(
            "eagle1_head_by_its_fc_as_target", [](json&) {}, "check-target",
            "given as --target but it is a drafter of another kind than DFlash (its "
            "tensors hold fc.weight, which a drafter head holds and no target)")),
    [](const auto& p) { return p.param.label; });

INSTANTIATE_TEST_SUITE_P(
    DrafterLoadability, HostileInput,
    ::testing::Values(
        // Found by an outside tester (2026-12-07): each passed the structural checks and was
        // refused by `eval`.
        reduced_vocab_structural_case("reduced_vocabulary_without_d2t_structural", "d2t",
                                      "draft_vocab_size 44 is below the target's 64 but the "
                                      "checkpoint has no \"d2t\" tensor"),
        reduced_vocab_structural_case("reduced_vocabulary_without_lm_head_structural",
                                      "lm_head.weight",
                                      "draft_vocab_size 44 is below the target's 64 but the "
                                      "checkpoint has no lm_head.weight"),
        structural_drafter_case(
            "dflash2_codebook_under_both_names",
            [](const fs::path& d) {
              testing::edit_tensors(d, [](io::NamedTensors& tensors) {
                for (std::size_t i = 0, n = tensors.size(); i < n; ++i)
                  if (tensors[i].first == "candidate_selector.successor_codebook")
                    tensors.emplace_back(tensors[i].first + ".weight", tensors[i].second.clone());
              });
            },
            "both \"candidate_selector.successor_codebook\" and "
            "\"candidate_selector.successor_codebook.weight\" are present",
            "qwen3-drafter-dflash2"),
        structural_drafter_case("drafter_without_its_final_norm", without_tensor("norm.weight"),
                                "missing tensor \"norm.weight\""),
        structural_drafter_case("drafter_without_a_q_norm",
                                without_tensor("layers.0.self_attn.q_norm.weight"),
                                "missing tensor \"layers.0.self_attn.q_norm.weight\""),
        structural_drafter_case(
            "dflash2_kernel_size_not_its_tensors",
            config_edit([](json& c) { c["dflash_config"]["conv_kernel_size"] = 3; }),
            "tensor \"layers.0.attention_conv.base_kernel\" has shape [2, 2, 64], config implies "
            "[2, 3, 64]",
            "qwen3-drafter-dflash2"),
        structural_drafter_case("dflash2_selector_rank_not_its_tensors", config_edit([](json& c) {
                                  c["dflash_config"]["selector_rank"] = 9;
                                }),
                                "has shape [8, 64], config implies [9, 64]",
                                "qwen3-drafter-dflash2"),
        structural_drafter_case(
            "dflash2_selector_top_k_past_the_vocabulary",
            config_edit([](json& c) { c["dflash_config"]["selector_top_k"] = 65; }),
            "dflash_config.selector_top_k 65 exceeds the target's vocabulary (64)",
            "qwen3-drafter-dflash2"),
        structural_drafter_case("drafter_config_alone_block_size_0", config_edit([](json& c) {
                                  c["block_size"] = 0;
                                  c["dflash_config"]["block_size"] = 0;
                                }),
                                "block_size 0 is out of range", "qwen3-drafter-reference",
                                "drafter_config"),
        structural_drafter_case("drafter_config_alone_mask_disagrees",
                                config_edit([](json& c) { c["mask_token_id"] = 62; }),
                                "mask_token_id = 62 at the top level but 63 under dflash_config",
                                "qwen3-drafter-reference", "drafter_config"),
        // A z-lab drafter's d2t was ignored by eval (z-lab's reference never reads it; vLLM maps
        // through it).
        drafter_case(
            "zlab_drafter_d2t_not_the_identity",
            [](const fs::path& d) {
              testing::edit_tensors(d, [](io::NamedTensors& tensors) {
                tensors.emplace_back("d2t", at::ones({64}, at::kLong));
              });
            },
            "tensor \"d2t\" is not all zeros", "qwen3-drafter-reference")),
    [](const auto& p) { return p.param.label; });

INSTANTIATE_TEST_SUITE_P(
    PromptSets, HostileInput,
    ::testing::Values(
        prompt_case("prompt_ids_and_text", "{\"id\": \"a\", \"input_ids\": [1], \"text\": \"x\"}\n",
                    "prompts.jsonl:1: the line gives more than one of \"input_ids\", \"text\" and "
                    "\"messages\""),
        prompt_case("prompt_text_and_messages",
                    "{\"id\": \"a\", \"text\": \"x\", \"messages\": []}\n",
                    "prompts.jsonl:1: the line gives more than one"),
        prompt_case("prompt_without_input", "{\"id\": \"a\", \"label\": \"x\"}\n",
                    "prompts.jsonl:1: the line gives no prompt"),
        prompt_case("prompt_text_not_string", "{\"id\": \"a\", \"text\": [1]}\n",
                    "prompts.jsonl:1: \"text\" must be a string"),
        prompt_case("prompt_text_empty", "{\"id\": \"a\", \"text\": \"\"}\n",
                    "prompts.jsonl:1: \"text\" is empty"),
        prompt_case("prompt_text_invalid_utf8", "{\"id\": \"a\", \"text\": \"ok\xc3(\"}\n",
                    "prompts.jsonl:1: the line is not valid UTF-8 at byte"),
        prompt_case("prompt_messages_invalid_utf8",
                    "{\"id\": \"a\", \"messages\": [{\"role\": \"user\", \"content\": "
                    "\"\xed\xa0\x80\"}]}\n",
                    "prompts.jsonl:1: the line is not valid UTF-8 at byte"),
        prompt_case("prompt_messages_lone_surrogate_escape",
                    "{\"id\": \"a\", \"text\": \"\\ud800\"}\n", "prompts.jsonl:1:"),
        prompt_case("prompt_messages_not_array", "{\"id\": \"a\", \"messages\": {}}\n",
                    "messages must be a JSON array"),
        prompt_case("prompt_messages_empty", "{\"id\": \"a\", \"messages\": []}\n",
                    "prompts.jsonl:1: \"messages\" is empty"),
        prompt_case("prompt_message_unknown_role",
                    "{\"id\": \"a\", \"messages\": [{\"role\": \"human\", \"content\": \"x\"}]}\n",
                    "prompts.jsonl:1: messages/0/role: unknown role \"human\""),
        prompt_case("prompt_message_without_content",
                    "{\"id\": \"a\", \"messages\": [{\"role\": \"user\"}]}\n",
                    "/0: a message needs \"content\""),
        prompt_case("prompt_conversation_ends_with_reply",
                    "{\"id\": \"a\", \"messages\": [{\"role\": \"user\", \"content\": \"x\"}, "
                    "{\"role\": \"assistant\", \"content\": \"y\"}]}\n",
                    "prompts.jsonl:1: the conversation ends with an assistant message"),
        prompt_case("prompt_text_without_tokenizer", "{\"id\": \"a\", \"text\": \"x\"}\n",
                    "tokenizer.json"),
        Hostile{"prompt_thinking_flag_without_messages",
                [](const fs::path&) {
                  return "eval" + qwen3_pair() + " --prompts " + prompts() +
                         " --enable-thinking false";
                },
                "--enable-thinking: only \"messages\" prompts are rendered by a chat template"},
        rendered_prompt_case("prompt_template_raises", kUserLine, "--chat-template raise.jinja",
                             "raise.jinja: line 1: the template raised an exception: bad turn "
                             "(rendering "),
        rendered_prompt_case("prompt_template_unsupported", kUserLine, "--chat-template raw.jinja",
                             "raw.jinja: line 1: unsupported template construct"),
        rendered_prompt_case(
            "prompt_later_turn_template_fails",
            "{\"id\": \"c\", \"messages\": [{\"role\": \"user\", \"content\": \"h\"}, "
            "{\"role\": \"user\", \"content\": \"again\"}]}\n",
            "--chat-template later.jinja",
            "later.jinja: line 1: the template raised an exception: turn 2 (rendering "),
        golden_case(
            "golden_prompt_rendering_not_object", [](json& g) { g["prompt_set"]["rendering"] = 3; },
            "golden prompt_set.rendering must be null or an object"),
        golden_case(
            "golden_prompt_rendering_thinking_not_bool",
            [](json& g) {
              g["prompt_set"]["rendering"] = {{"tokenizer_sha256", std::string(64, 'a')},
                                              {"template_sha256", std::string(64, 'b')},
                                              {"enable_thinking", "no"}};
            },
            "golden prompt_set.rendering.enable_thinking must be true, false or null"),
        golden_case(
            "golden_prompt_rendering_template_not_sha",
            [](json& g) {
              g["prompt_set"]["rendering"] = {{"tokenizer_sha256", std::string(64, 'a')},
                                              {"template_sha256", "abc"}};
            },
            "golden prompt_set.rendering.template_sha256 must be a SHA-256 or null")),
    [](const auto& p) { return p.param.label; });

}  // namespace
}  // namespace draftgate::hostile
