#include "engine_outputs.h"

#include <nlohmann/json.hpp>
#include <sstream>

namespace draftgate::testing {
namespace {

std::string labels(const VllmEngineCounts& e, const std::string& extra = "") {
  return "{model_name=\"" + e.model + "\",engine=\"" + std::to_string(e.engine) + "\"" + extra +
         "}";
}

std::string number(double v) {
  std::ostringstream s;
  s.precision(17);
  s << v;
  if (s.str().find_first_of(".e") == std::string::npos) s << ".0";  // prometheus_client: 1200.0
  return s.str();
}

}  // namespace

std::string vllm_scrape(const std::vector<VllmEngineCounts>& engines,
                        std::optional<double> process_start_time) {
  std::ostringstream out;
  if (process_start_time)
    out << "# HELP process_start_time_seconds Start time of the process since unix epoch in "
           "seconds.\n# TYPE process_start_time_seconds gauge\nprocess_start_time_seconds "
        << number(*process_start_time) << "\n";
  out << "# HELP vllm:num_requests_running Number of requests in model execution batches.\n"
         "# TYPE vllm:num_requests_running gauge\n";
  for (const auto& e : engines) out << "vllm:num_requests_running" << labels(e) << " 0.0\n";
  out << "# HELP vllm:kv_cache_usage_perc KV-cache usage. 1 means 100 percent usage.\n"
         "# TYPE vllm:kv_cache_usage_perc gauge\n";
  for (const auto& e : engines) out << "vllm:kv_cache_usage_perc" << labels(e) << " NaN\n";
  const struct {
    const char* name;
    const char* help;
    double VllmEngineCounts::*field;
  } families[] = {
      {"vllm:spec_decode_num_drafts", "Number of spec decoding drafts.", &VllmEngineCounts::drafts},
      {"vllm:spec_decode_num_draft_tokens", "Number of draft tokens.",
       &VllmEngineCounts::draft_tokens},
      {"vllm:spec_decode_num_accepted_tokens", "Number of accepted tokens.",
       &VllmEngineCounts::accepted}};
  for (const auto& f : families) {
    out << "# HELP " << f.name << "_total " << f.help << "\n# TYPE " << f.name
        << "_total counter\n";
    for (const auto& e : engines)
      out << f.name << "_total" << labels(e) << " " << number(e.*f.field) << "\n";
    out << "# HELP " << f.name << "_created " << f.help << "\n# TYPE " << f.name
        << "_created gauge\n";
    for (const auto& e : engines)
      out << f.name << "_created" << labels(e) << " " << number(e.created) << "\n";
  }
  const std::string per_pos = "vllm:spec_decode_num_accepted_tokens_per_pos";
  out << "# HELP " << per_pos << "_total Accepted tokens per draft position.\n# TYPE " << per_pos
      << "_total counter\n";
  for (const auto& e : engines)
    for (std::size_t i = 0; i < e.per_pos.size(); ++i)
      out << per_pos << "_total" << labels(e, ",position=\"" + std::to_string(i) + "\"") << " "
          << number(e.per_pos[i]) << "\n";
  out << "# HELP vllm:e2e_request_latency_seconds Histogram of e2e request latency in seconds.\n"
         "# TYPE vllm:e2e_request_latency_seconds histogram\n";
  for (const auto& e : engines)
    out << "vllm:e2e_request_latency_seconds_bucket" << labels(e, ",le=\"+Inf\"") << " 12.0\n"
        << "vllm:e2e_request_latency_seconds_count" << labels(e) << " 12.0\n"
        << "vllm:e2e_request_latency_seconds_sum" << labels(e) << " 48.25\n";
  return out.str();
}

std::string sglang_response(const SglangResponse& r) {
  nlohmann::json meta = {{"id", r.id},
                         {"finish_reason", {{"type", "length"}, {"length", r.completion_tokens}}},
                         {"prompt_tokens", 12},
                         {"weight_version", "default"},
                         {"completion_tokens", r.completion_tokens},
                         {"cached_tokens", 0},
                         {"spec_verify_ct", r.verify_ct},
                         {"spec_accept_length", static_cast<double>(r.completion_tokens) /
                                                    static_cast<double>(r.verify_ct)},
                         {"e2e_latency", 0.41}};
  if (r.num_speculative_tokens > 0) {
    const long proposed = r.verify_ct * r.num_speculative_tokens;
    long correct = r.completion_tokens - r.verify_ct;
    if (!r.histogram.empty()) {
      correct = 0;
      for (std::size_t j = 0; j < r.histogram.size(); ++j)
        correct += static_cast<long>(j) * r.histogram[j];
    }
    const bool old = r.vintage == "0.5.10",
               newest = r.vintage == "0.5.12" || r.vintage == "no-aliases";
    if (old) {
      meta["spec_accept_token_num"] = correct;
      meta["spec_draft_token_num"] = proposed;
    }
    if (newest) {
      meta["spec_num_correct_drafts"] = correct;
      meta["spec_num_proposed_drafts"] = proposed;
    }
    if (r.vintage == "0.5.11" || r.vintage == "0.5.12") {
      meta["spec_accepted_drafts"] = correct;
      meta["spec_proposed_drafts"] = proposed;
    }
    meta["spec_accept_rate"] = static_cast<double>(correct) / static_cast<double>(proposed);
  }
  if (!r.histogram.empty()) {
    if (r.vintage == "0.5.12" || r.vintage == "no-aliases")
      meta["spec_correct_drafts_histogram"] = r.histogram;
    if (r.vintage == "0.5.11" || r.vintage == "0.5.12") meta["spec_accept_histogram"] = r.histogram;
  }
  std::vector<long> output_ids(static_cast<std::size_t>(r.completion_tokens), 42);
  return nlohmann::json{
             {"text", "The answer is 42."}, {"output_ids", output_ids}, {"meta_info", meta}}
             .dump() +
         "\n";
}

std::string vllm_response(const VllmRequest& r) {
  nlohmann::json stats = {
      {"mean_acceptance_length",
       1.0 + static_cast<double>(r.accepted) / static_cast<double>(r.steps)},
      {"draft_acceptance_rate",
       r.drafted ? static_cast<double>(r.accepted) / static_cast<double>(r.drafted) : 0.0},
      {"num_spec_steps", r.steps},
      {"num_accepted_draft_tokens", r.accepted},
      {"num_draft_tokens", r.drafted}};
  if (r.num_spec_tokens > 0) stats["num_spec_tokens"] = r.num_spec_tokens;
  if (!r.histogram.empty()) {
    nlohmann::json sparse = nlohmann::json::object();
    for (std::size_t j = 0; j < r.histogram.size(); ++j)
      if (r.histogram[j] != 0) sparse[std::to_string(j)] = r.histogram[j];
    stats["acceptance_histogram"] = r.sparse_histogram ? sparse : nlohmann::json(r.histogram);
  }
  if (!r.per_step_accepted.empty()) {
    stats["per_step_accepted"] = r.per_step_accepted;
    stats["per_step_drafted"] = r.per_step_drafted;
  }
  nlohmann::json choice = {{"index", 0},
                           {"text", " The answer is 42."},
                           {"logprobs", nullptr},
                           {"finish_reason", "length"},
                           {"stop_reason", nullptr}};
  if (r.per_choice) choice["speculative_decoding_stats"] = stats;
  nlohmann::json response = {{"id", r.id},
                             {"object", "text_completion"},
                             {"created", 1787366173},
                             {"model", r.model},
                             {"choices", {choice}},
                             {"usage",
                              {{"prompt_tokens", 12},
                               {"total_tokens", 12 + r.steps + r.accepted + 1},
                               {"completion_tokens", r.steps + r.accepted + 1}}}};
  if (!r.per_choice) response["metrics"] = {{"speculative_decoding", stats}};
  return response.dump() + "\n";
}

}  // namespace draftgate::testing
