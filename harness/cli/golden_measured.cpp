// `draftgate golden record --measured FILE`: a golden from the reference drafter's τ as a serving
// engine measured it (draftgate tau import), so min_tau --measured can gate later drafters
// measured the same way.

#include <iostream>

#include "cli_options.h"
#include "draftgate/error.h"
#include "draftgate/format.h"
#include "draftgate/golden/golden.h"
#include "draftgate/io/atomic_file.h"
#include "draftgate/io/output_file.h"
#include "verbs.h"

namespace draftgate::cli {
namespace fs = std::filesystem;

int record_measured_golden(const std::string& measured, const std::string& out, bool force) {
  io::check_outputs({{out, "--out"}}, {{measured, "--measured"}});
  std::error_code ec;
  if (fs::exists(out, ec) && !force)
    throw Error(out, "golden file exists; refusing to overwrite it",
                "pass --force to replace the baseline");
  require_slots({{measured, io::ArtifactKind::kMeasuredTau, "--measured"}});
  const tau::MeasuredTau m = tau::read_measured_tau(measured);
  if (!m.prompt_set_sha256)
    throw Error(measured, "the measurement names no prompt set, so nothing can be compared with it",
                "import it again with --prompts FILE (the held-out prompt set it was run on)");
  // Without --force the golden is linked into place, never replacing one that appeared meanwhile.
  io::write_text_atomically(out, golden::measured_golden_json(m).dump(2) + "\n",
                            force ? io::WriteMode::kReplace : io::WriteMode::kCreateNew);
  std::cout << "golden " << out << ": " << m.engine << " τ " << m.tau_definition << " "
            << format_number(m.tau(), 6) << " (pooled " << format_number(m.tau_pooled, 6)
            << ") over " << m.drafts << " drafts, " << m.num_speculative_tokens
            << " speculative tokens, prompt set " << m.prompt_set_sha256->substr(0, 12) << "…\n";
  return 0;
}

}  // namespace draftgate::cli
