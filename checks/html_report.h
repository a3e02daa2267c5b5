#pragma once
// The HTML report (`check --html`, `eval --html`): one self-contained page — inline CSS and SVG,
// no script, nothing fetched — drawn from the same structured results as the JSON reports. Every
// string from a result (check names, paths, messages) is escaped; non-finite numbers are text.

#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "checks/report.h"

namespace draftgate::checks {

// The verdict matrix (suites × checks, coloured), then per check its message, measured values,
// thresholds and evidence, with the charts its measurements allow: τ histogram and per-depth
// acceptance beside the golden's (from "histogram" / "per_position_acceptance" and their
// "golden_" twins), the per-layer parity curve (log10 NMSE of "layers", against thresholds
// "max_nmse"), and the fc-input source map ("fed_slices").
std::string html_check_report(const std::vector<SuiteRun>& runs);

// `eval --html`: from the object `eval --json` writes (τ statistics, histogram, per-depth
// acceptance, per-prompt results, decoding settings, target, drafter, timing).
std::string html_eval_report(const nlohmann::json& evaluation);

}  // namespace draftgate::checks
