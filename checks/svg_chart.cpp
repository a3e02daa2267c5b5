#include "checks/svg_chart.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <sstream>

#include "checks/report.h"
#include "draftgate/format.h"

namespace draftgate::checks::svg {
namespace {

constexpr double kWidth = 560, kHeight = 260;
constexpr double kLeft = 60, kRight = 16, kTop = 40, kBottom = 46;
constexpr double kPlotW = kWidth - kLeft - kRight, kPlotH = kHeight - kTop - kBottom;

std::string esc(const std::string& s) { return xml_escape(s); }

// A coordinate: always finite (callers pass only finite values), one decimal.
std::string px(double v) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.1f", v);
  return buf;
}

std::string value_text(const Chart& c, double v) {
  return c.value_text ? c.value_text(v) : number_text(v);
}

// The y range over every finite value (and the threshold), from 0 for bars.
struct Scale {
  double lo = 0, hi = 1;
  // The y pixel of v, or nothing when v (or the range) is too extreme to place.
  std::optional<double> y(double v) const {
    const double t = (v - lo) / (hi - lo);
    if (!std::isfinite(t)) return std::nullopt;
    return kTop + kPlotH * (1 - std::clamp(t, 0.0, 1.0));
  }
};

Scale scale_of(const Chart& c, bool from_zero) {
  bool any = false;
  double lo = 0, hi = 0;
  auto take = [&](double v) {
    if (!std::isfinite(v)) return;
    lo = any ? std::min(lo, v) : v;
    hi = any ? std::max(hi, v) : v;
    any = true;
  };
  for (const auto& s : c.series)
    for (double v : s.values) take(v);
  if (c.threshold) take(*c.threshold);
  if (from_zero) lo = std::min(lo, 0.0), hi = std::max(hi, 0.0);
  if (!any || !(hi - lo > 0) || !std::isfinite(hi - lo)) {
    const double mid = any ? lo : 0;
    return {from_zero ? 0 : mid - 1, from_zero ? std::max(mid, 0.0) + 1 : mid + 1};
  }
  const double pad = (hi - lo) * 0.05;
  return {from_zero ? lo : lo - pad, hi + pad};
}

double x_center(std::size_t i, std::size_t n) {
  return kLeft +
         kPlotW * (static_cast<double>(i) + 0.5) / static_cast<double>(std::max<std::size_t>(n, 1));
}

// The frame: title, y ticks with grid lines, x category labels (thinned past 24), axis titles,
// legend.
std::string frame(const Chart& c, const Scale& s, std::size_t n) {
  std::ostringstream o;
  o << "<text class=\"title\" x=\"" << px(kLeft) << "\" y=\"16\">" << esc(c.title) << "</text>\n";
  for (int k = 0; k <= 4; ++k) {
    const double v = s.lo + (s.hi - s.lo) * k / 4.0;
    const double y = kTop + kPlotH * (1 - k / 4.0);
    o << "<line class=\"grid\" x1=\"" << px(kLeft) << "\" x2=\"" << px(kLeft + kPlotW) << "\" y1=\""
      << px(y) << "\" y2=\"" << px(y) << "\"/><text class=\"tick\" x=\"" << px(kLeft - 4)
      << "\" y=\"" << px(y + 4) << "\" text-anchor=\"end\">" << esc(number_text(v, 3))
      << "</text>\n";
  }
  const std::size_t every = n > 24 ? (n + 23) / 24 : 1;
  for (std::size_t i = 0; i < n; i += every)
    o << "<text class=\"tick\" x=\"" << px(x_center(i, n)) << "\" y=\"" << px(kTop + kPlotH + 14)
      << "\" text-anchor=\"middle\">"
      << esc(i < c.categories.size() ? c.categories[i] : std::to_string(i)) << "</text>\n";
  o << "<text class=\"axis\" x=\"" << px(kLeft + kPlotW / 2) << "\" y=\"" << px(kHeight - 6)
    << "\" text-anchor=\"middle\">" << esc(c.x_label) << "</text>\n"
    << "<text class=\"axis\" transform=\"translate(14," << px(kTop + kPlotH / 2)
    << ") rotate(-90)\" text-anchor=\"middle\">" << esc(c.y_label) << "</text>\n";
  double lx = kLeft + kPlotW;
  for (std::size_t i = c.series.size(); i-- > 0;) {
    lx -= 8 + 7.0 * static_cast<double>(std::min<std::size_t>(c.series[i].name.size(), 40)) + 14;
    o << "<rect class=\"swatch s" << i << "\" x=\"" << px(lx) << "\" y=\"22\" width=\"10\" "
      << "height=\"10\"/><text class=\"legend\" x=\"" << px(lx + 14) << "\" y=\"31\">"
      << esc(c.series[i].name) << "</text>\n";
  }
  return o.str();
}

std::string open_svg(const std::string& id, double height = kHeight) {
  return "<svg class=\"chart\" data-chart=\"" + esc(id) +
         "\" xmlns=\"http://www.w3.org/2000/svg\" " + "viewBox=\"0 0 " + px(kWidth) + " " +
         px(height) + "\" width=\"" + px(kWidth) + "\" height=\"" + px(height) +
         "\" role=\"img\">\n";
}

// A value that cannot be drawn, as text at its place.
std::string non_finite_mark(double x, double v) {
  return "<text class=\"nonfinite\" x=\"" + px(x) + "\" y=\"" + px(kTop + kPlotH - 4) +
         "\" text-anchor=\"middle\">" + esc(number_text(v)) + "</text>\n";
}

std::string tooltip(const Chart& c, std::size_t series, std::size_t i, double v) {
  std::string where = i < c.categories.size() ? c.categories[i] : std::to_string(i);
  const bool noted = series == 0 && i < c.notes.size() && !c.notes[i].empty();
  return "<title>" +
         esc(c.series[series].name + ", " + c.x_label + " " + where + ": " +
             (noted ? c.notes[i] : value_text(c, v))) +
         "</title>";
}

// Categories on the x axis: as many as labels or values, whichever is more.
std::size_t columns(const Chart& c) {
  std::size_t n = c.categories.size();
  for (const auto& s : c.series) n = std::max(n, s.values.size());
  return n;
}

}  // namespace

std::string number_text(double v, int significant) {
  if (std::isnan(v)) return "NaN";
  if (std::isinf(v)) return v > 0 ? "+inf" : "-inf";
  return format_number(v, significant);
}

std::string bar_chart(const Chart& c) {
  const std::size_t n = columns(c);
  const Scale scale = scale_of(c, true);
  std::ostringstream o;
  o << open_svg(c.id) << frame(c, scale, n);
  const double group = kPlotW / static_cast<double>(std::max<std::size_t>(n, 1));
  const double width = group * 0.8 / static_cast<double>(std::max<std::size_t>(c.series.size(), 1));
  const double base = scale.y(std::max(scale.lo, 0.0)).value_or(kTop + kPlotH);
  for (std::size_t si = 0; si < c.series.size(); ++si)
    for (std::size_t i = 0; i < c.series[si].values.size(); ++i) {
      const double v = c.series[si].values[i];
      const double x =
          kLeft + group * (static_cast<double>(i) + 0.1) + width * static_cast<double>(si);
      const auto y = std::isfinite(v) ? scale.y(v) : std::nullopt;
      if (!y) {
        o << non_finite_mark(x + width / 2, v);
        continue;
      }
      o << "<rect class=\"bar s" << si << "\" x=\"" << px(x) << "\" y=\"" << px(std::min(*y, base))
        << "\" width=\"" << px(width) << "\" height=\"" << px(std::abs(base - *y)) << "\">"
        << tooltip(c, si, i, v) << "</rect>\n";
    }
  return o.str() + "</svg>\n";
}

std::string line_chart(const Chart& c) {
  const std::size_t n = columns(c);
  const Scale scale = scale_of(c, false);
  std::ostringstream o;
  o << open_svg(c.id) << frame(c, scale, n);
  if (const auto y_threshold = c.threshold ? scale.y(*c.threshold) : std::nullopt) {
    const double y = *y_threshold;
    o << "<line class=\"threshold\" x1=\"" << px(kLeft) << "\" x2=\"" << px(kLeft + kPlotW)
      << "\" y1=\"" << px(y) << "\" y2=\"" << px(y) << "\"/><text class=\"threshold-label\" x=\""
      << px(kLeft + kPlotW - 2) << "\" y=\"" << px(y - 4) << "\" text-anchor=\"end\">"
      << esc(c.threshold_label) << "</text>\n";
  }
  for (std::size_t si = 0; si < c.series.size(); ++si) {
    std::string path, points;
    bool pen_down = false;  // a value that cannot be drawn breaks the line
    for (std::size_t i = 0; i < c.series[si].values.size(); ++i) {
      const double v = c.series[si].values[i];
      const double x = x_center(i, n);
      const auto y = std::isfinite(v) ? scale.y(v) : std::nullopt;
      if (!y) {
        points += non_finite_mark(x, v);
        pen_down = false;
        continue;
      }
      path += (pen_down ? " L" : " M") + px(x) + " " + px(*y);
      pen_down = true;
      points += "<circle class=\"pt s" + std::to_string(si) + "\" cx=\"" + px(x) + "\" cy=\"" +
                px(*y) + "\" r=\"3\">" + tooltip(c, si, i, v) + "</circle>\n";
    }
    if (!path.empty()) o << "<path class=\"line s" << si << "\" d=\"" << path.substr(1) << "\"/>\n";
    o << points;
  }
  return o.str() + "</svg>\n";
}

std::string source_map(const std::string& id, const std::vector<Slice>& slices,
                       std::int64_t layers) {
  // Columns: -1 (embeddings) .. layers-1, widened to take any layer a slice names.
  std::int64_t lo = -1, hi = std::max<std::int64_t>(layers - 1, 0);
  for (const auto& s : slices) {
    lo = std::min({lo, s.declared, s.detected});
    hi = std::max({hi, s.declared, s.detected});
  }
  const double columns = static_cast<double>(hi - lo + 1);
  const double row = 22, height = kTop + row * static_cast<double>(slices.size()) + 40;
  auto cx = [&](std::int64_t l) {
    return kLeft + kPlotW * (static_cast<double>(l - lo) + 0.5) / columns;
  };
  std::ostringstream o;
  o << open_svg(id, height) << "<text class=\"title\" x=\"" << px(kLeft)
    << "\" y=\"16\">fc input: declared (ring) vs detected (dot) layer per slice</text>\n";
  const std::int64_t every = std::max<std::int64_t>(1, (hi - lo + 24) / 24);
  const double bottom = kTop + row * static_cast<double>(slices.size());
  for (std::int64_t l = lo; l <= hi; l += every)
    o << "<text class=\"tick\" x=\"" << px(cx(l)) << "\" y=\"" << px(bottom + 14)
      << "\" text-anchor=\"middle\">" << (l < 0 ? std::string("emb") : std::to_string(l))
      << "</text>\n";
  o << "<text class=\"axis\" x=\"" << px(kLeft + kPlotW / 2) << "\" y=\"" << px(bottom + 32)
    << "\" text-anchor=\"middle\">target layer (emb = the embeddings)</text>\n";
  for (std::size_t i = 0; i < slices.size(); ++i) {
    const Slice& s = slices[i];
    const double y = kTop + row * (static_cast<double>(i) + 0.5);
    const bool match = s.declared == s.detected && !s.after_final_norm;
    const std::string detected = s.detected < 0
                                     ? std::string("the embeddings")
                                     : "layer " + std::to_string(s.detected) +
                                           (s.after_final_norm ? " after the final norm" : "");
    o << "<line class=\"grid\" x1=\"" << px(kLeft) << "\" x2=\"" << px(kLeft + kPlotW) << "\" y1=\""
      << px(y) << "\" y2=\"" << px(y) << "\"/><text class=\"tick\" x=\"" << px(kLeft - 4)
      << "\" y=\"" << px(y + 4) << "\" text-anchor=\"end\">slice " << i << "</text>\n"
      << "<circle class=\"declared\" cx=\"" << px(cx(s.declared)) << "\" cy=\"" << px(y)
      << "\" r=\"7\"><title>slice " << i << " declared: layer " << s.declared
      << "</title></circle>\n"
      << "<circle class=\"detected " << (match ? "match" : "mismatch") << "\" cx=\""
      << px(cx(s.detected)) << "\" cy=\"" << px(y) << "\" r=\"4\"><title>slice " << i
      << " detected: " << detected << "</title></circle>\n";
  }
  return o.str() + "</svg>\n";
}

}  // namespace draftgate::checks::svg
