// `draftgate tau measure`: τ measured on a live SGLang or vLLM server with the prompt set
// (draftgate/tau/live_measure.h), written in the measured-τ format `tau import` writes, so
// `check --measured` and `golden record --measured` gate on it.

#include <cstdlib>
#include <filesystem>
#include <iostream>

#include "cli_options.h"
#include "draftgate/error.h"
#include "draftgate/format.h"
#include "draftgate/io/atomic_file.h"
#include "draftgate/io/output_file.h"
#include "draftgate/tau/live_measure.h"
#include "prompt_options.h"
#include "verbs.h"

namespace draftgate::cli {
namespace {

struct TauMeasureOptions {
  std::string engine, url, prompts, out, model_name, save_dir, api_key_env;
  std::int64_t max_new = 256, concurrency = 1, timeout = 600, num_speculative_tokens = 0;
  decode::PromptOptions prompt_options;  // how text and messages prompts are rendered
};

// What --save-dir holds: the files `tau import` reads again.
struct SavedFiles {
  std::filesystem::path responses, before, after;
};

SavedFiles saved_files(const TauMeasureOptions& opt) {
  if (opt.save_dir.empty()) return {};
  if (!std::filesystem::is_directory(opt.save_dir))
    throw Error(opt.save_dir, "--save-dir is not an existing directory", "create it first");
  const std::filesystem::path dir(opt.save_dir);
  return {dir / "responses.jsonl", dir / "metrics-before.txt", dir / "metrics-after.txt"};
}

// The key from the environment, never from the command line (where `ps` shows it to everyone).
std::string api_key_from(const std::string& variable) {
  const char* key = std::getenv(variable.c_str());
  if (!key || !*key)
    throw Error("--api-key-env",
                "the environment variable " + variable + " is " + (key ? "empty" : "not set"),
                "export the server's API key in it");
  const std::string k(key);
  // It goes in a header line: a control character would end or split it.
  for (const unsigned char c : k)
    if (c < 0x20 || c == 0x7f)
      throw Error("--api-key-env", "the API key in " + variable + " holds a control character");
  return k;
}

int measure(const TauMeasureOptions& opt) {
  if (opt.url.rfind("http://", 0) != 0 && opt.url.rfind("https://", 0) != 0)
    throw Error("--url", "\"" + opt.url + "\" is not an http:// or https:// URL",
                "the server's address, e.g. http://localhost:30000");
  // The endpoints' paths are appended to it: a query or fragment would end up before them.
  const std::size_t host = opt.url.find("://") + 3;
  const std::string authority = opt.url.substr(host, opt.url.find_first_of("/?#", host) - host);
  if (authority.empty() || opt.url.find_first_of("?#") != std::string::npos)
    throw Error("--url",
                "\"" + opt.url + "\" is not a server address (a host, no query or fragment)",
                "the server's address, e.g. http://localhost:30000");
  // user:password@ would be printed and recorded in the measured-τ file (uploaded by CI).
  if (authority.find('@') != std::string::npos)
    throw Error("--url",
                "the URL carries credentials (user:password@), which would be printed "
                "and recorded in the measured-τ file",
                "drop them: vLLM and SGLang take a bearer token, passed with --api-key-env NAME");
  const SavedFiles saved = saved_files(opt);
  std::vector<io::RunPath> inputs = prompt_option_inputs(opt.prompt_options);
  inputs.push_back({opt.prompts, "--prompts"});
  io::check_outputs({{opt.out, "--out"},
                     {saved.responses, "--save-dir"},
                     {saved.before, "--save-dir"},
                     {saved.after, "--save-dir"}},
                    inputs);
  require_slots({{opt.prompts, io::ArtifactKind::kPromptSet, "--prompts"}});
  // Text and messages prompts are rendered here (the --tokenizer checkpoint's tokenizer.json and
  // template) and sent as token ids, so the server decodes exactly what the identity names.
  const decode::PromptSet set = read_prompts(opt.prompts, opt.prompt_options);

  tau::LiveMeasure in;
  in.engine = opt.engine;
  in.url = opt.url;
  in.prompts = &set;
  in.max_new_tokens = opt.max_new;
  in.concurrency = static_cast<std::size_t>(opt.concurrency);
  in.timeout_seconds = static_cast<long>(opt.timeout);
  if (!opt.model_name.empty()) in.model_name = opt.model_name;
  if (opt.num_speculative_tokens > 0) in.num_speculative_tokens = opt.num_speculative_tokens;
  if (!opt.api_key_env.empty()) in.api_key = api_key_from(opt.api_key_env);
  tau::LiveRun run = tau::measure_live(in);
  tau::MeasuredTau& m = run.measured;
  m.prompt_set_path = opt.prompts;
  m.prompt_set_sha256 = set.sha256;
  m.prompt_set_prompts = static_cast<std::int64_t>(set.prompts.size());
  m.prompt_set_rendering = set.rendering;
  m.inputs["prompts"] = opt.prompts;
  m.path = opt.out;

  if (!opt.save_dir.empty()) {
    io::write_text_atomically(saved.responses, run.responses);
    if (!run.metrics_before.empty()) {
      io::write_text_atomically(saved.before, run.metrics_before);
      io::write_text_atomically(saved.after, run.metrics_after);
    }
    m.inputs["saved"] = opt.save_dir;
  }
  io::write_text_atomically(opt.out, tau::to_json(m).dump(2) + "\n");
  std::cout << "measured τ " << opt.out << ": " << m.engine << " "
            << m.engine_version.value_or("(version unknown)") << " at " << opt.url << ", "
            << set.prompts.size() << " prompts, τ pooled " << format_number(m.tau_pooled, 6);
  if (m.tau_macro) std::cout << ", τ macro " << format_number(*m.tau_macro, 6);
  std::cout << " (gated on " << m.tau_definition
            << (m.tau_macro ? "" : "; pooled only: the server returned no per-request metrics")
            << "), " << m.drafts << " drafts, " << m.num_speculative_tokens
            << " speculative tokens\n";
  return 0;
}

}  // namespace

void add_tau_measure(CLI::App* tau, VerbRunner* runner) {
  auto opt = std::make_shared<TauMeasureOptions>();
  CLI::App* cmd = tau->add_subcommand(
      "measure", "Send the prompt set to a live SGLang or vLLM server and write its measured τ");
  cmd->add_option("--engine", opt->engine, "The server's engine")
      ->required()
      ->check(CLI::IsMember({"sglang", "vllm"}));
  cmd->add_option("--url", opt->url, "The server's address (http://host:port)")->required();
  cmd->add_option("--prompts", opt->prompts,
                  "The prompt set (JSONL: input_ids, text or messages per line)")
      ->required()
      ->check(path_value());
  cmd->add_option("--out", opt->out, "Measured-τ file to write (JSON)")
      ->required()
      ->check(path_value());
  cmd->add_option("--max-new", opt->max_new, "Tokens to generate per prompt (greedy)")
      ->capture_default_str()
      ->check(integer_range(1, decode::kMaxNewTokensLimit));
  cmd->add_option("--concurrency", opt->concurrency, "Requests in flight at once")
      ->capture_default_str()
      ->check(integer_range(1, 256));
  cmd->add_option("--timeout", opt->timeout, "Seconds each request may take")
      ->capture_default_str()
      ->check(integer_range(1, 86400));
  cmd->add_option("--model-name", opt->model_name,
                  "The model the server must serve (refused otherwise); needed when it serves "
                  "several");
  cmd->add_option("--num-speculative-tokens", opt->num_speculative_tokens,
                  "Draft tokens per step, when the server's answers do not say")
      ->check(integer_range(1, 4096));
  cmd->add_option("--api-key-env", opt->api_key_env,
                  "An environment variable holding the server's API key (its --api-key), sent "
                  "as a bearer token");
  add_prompt_options(cmd, opt->prompt_options, true);
  cmd->add_option("--save-dir", opt->save_dir,
                  "An existing directory for the server's answers (responses.jsonl; vLLM also "
                  "metrics-before.txt, metrics-after.txt), for `tau import`")
      ->check(path_value());
  set_example(cmd,
              "draftgate tau measure --engine sglang --url http://localhost:30000 --prompts "
              "held-out.jsonl --out measured.json");
  cmd->callback([opt, runner] { *runner = [opt] { return measure(*opt); }; });
}

}  // namespace draftgate::cli
