#pragma once
// Inline SVG charts for the HTML report: grouped bars, lines with a threshold, and the fc-input
// source map. Every string is escaped; a value that is not finite is never a coordinate — it is
// drawn as text ("NaN", "+inf") at its place, so a broken measurement cannot break the picture.
// Each drawn value is one element with a class the tests count: rect.bar, circle.pt,
// text.nonfinite; each chart is an <svg class="chart" data-chart=ID>.

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace draftgate::checks::svg {

struct Series {
  std::string name;            // the legend's label
  std::vector<double> values;  // one per category; NaN / ±inf allowed
};

struct Chart {
  std::string id;                       // data-chart
  std::string title;                    // above the plot
  std::string x_label, y_label;         // axis titles
  std::vector<std::string> categories;  // x tick labels, one per value
  std::vector<Series> series;           // series i is styled by CSS class s<i>
  std::optional<double> threshold;      // a dashed horizontal line (line charts)
  std::string threshold_label;
  // How a value reads in its tooltip (default: 4 significant digits).
  std::string (*value_text)(double) = nullptr;
  // Series 0: a tooltip text that replaces value i's where not empty (e.g. a value drawn at a
  // floor).
  std::vector<std::string> notes;
};

std::string bar_chart(const Chart& chart);
std::string line_chart(const Chart& chart);

// One fc-input slice: the layer its config declares, and the layer its fed features matched
// (-1: the embeddings). after_final_norm: it matched the final layer after the final norm.
struct Slice {
  std::int64_t declared = 0;
  std::int64_t detected = 0;
  bool after_final_norm = false;
};
// Rows: slices; columns: candidate layers -1 (embeddings) … layers-1. A hollow ring marks the
// declared layer, a dot the detected one (class "match" or "mismatch").
std::string source_map(const std::string& id, const std::vector<Slice>& slices,
                       std::int64_t layers);

// "NaN", "+inf", "-inf", or the number with `significant` digits.
std::string number_text(double v, int significant = 4);

}  // namespace draftgate::checks::svg
