#include "report/svg_chart.h"

#include <algorithm>
#include <cmath>
#include <limits>

#include <fmt/format.h>

#include "core/units.h"

namespace dtbench::report {
namespace {

constexpr double kWidth = 780, kHeight = 380;
constexpr double kLeft = 78, kRight = 250, kTop = 36, kBottom = 58;
constexpr double kPlotW = kWidth - kLeft - kRight, kPlotH = kHeight - kTop - kBottom;
const char* const kPalette[] = {"#1f77b4", "#d62728", "#2ca02c", "#ff7f0e", "#9467bd",
                                "#8c564b", "#e377c2", "#17becf", "#7f7f7f", "#bcbd22"};

const char* color(std::size_t i) { return kPalette[i % (sizeof(kPalette) / sizeof(*kPalette))]; }

std::string number(double v) {
  if (v == 0) return "0";
  const double a = std::fabs(v);
  if (a >= 1e6 || a < 1e-3) return fmt::format("{:.2g}", v);
  return fmt::format("{:g}", std::round(v * 1000) / 1000);
}

// `extra`: height below the plot beyond the usual (long slanted labels).
std::string open_svg(const std::string& title, const std::string& x_label, const std::string& y_label,
                     double extra = 0, double plot_w = kPlotW) {
  const double height = kHeight + extra;
  const double width = kLeft + plot_w + kRight;
  std::string s = fmt::format(
      "<svg class=\"chart\" xmlns=\"http://www.w3.org/2000/svg\" viewBox=\"0 0 {0} {1}\" "
      "width=\"{0}\" height=\"{1}\" role=\"img\" aria-label=\"{2}\">\n",
      width, height, html_escape(title));
  s += fmt::format("<text class=\"title\" x=\"{}\" y=\"20\" text-anchor=\"middle\">{}</text>\n",
                   kLeft + plot_w / 2, html_escape(title));
  s += fmt::format("<text class=\"xlabel\" x=\"{}\" y=\"{}\" text-anchor=\"middle\">{}</text>\n",
                   kLeft + plot_w / 2, height - 12, html_escape(x_label));
  s += fmt::format(
      "<text class=\"ylabel\" x=\"16\" y=\"{0}\" text-anchor=\"middle\" "
      "transform=\"rotate(-90 16 {0})\">{1}</text>\n",
      kTop + kPlotH / 2, html_escape(y_label));
  s += fmt::format(
      "<rect class=\"frame\" x=\"{}\" y=\"{}\" width=\"{}\" height=\"{}\" fill=\"none\" "
      "stroke=\"#999\"/>\n",
      kLeft, kTop, plot_w, kPlotH);
  return s;
}

std::string y_axis(const std::vector<double>& ticks, double lo, double hi, double plot_w = kPlotW) {
  std::string s;
  for (double t : ticks) {
    const double y = kTop + kPlotH - (t - lo) / (hi - lo) * kPlotH;
    s += fmt::format(
        "<line x1=\"{0}\" x2=\"{1}\" y1=\"{2:.1f}\" y2=\"{2:.1f}\" stroke=\"#e5e5e5\"/>"
        "<text class=\"tick\" x=\"{3}\" y=\"{4:.1f}\" text-anchor=\"end\">{5}</text>\n",
        kLeft, kLeft + plot_w, y, kLeft - 6, y + 4, number(t));
  }
  return s;
}

std::string legend(const std::vector<std::string>& names, double plot_w = kPlotW) {
  std::string s = "<g class=\"legend\">\n";
  for (std::size_t i = 0; i < names.size(); ++i) {
    const double y = kTop + 8 + 18.0 * static_cast<double>(i);
    s += fmt::format(
        "<rect x=\"{}\" y=\"{:.1f}\" width=\"12\" height=\"12\" fill=\"{}\"/>"
        "<text x=\"{}\" y=\"{:.1f}\">{}</text>\n",
        kLeft + plot_w + 12, y - 10, color(i), kLeft + plot_w + 30, y, html_escape(names[i]));
  }
  return s + "</g>\n";
}

std::string empty_note() {
  return fmt::format("<text class=\"empty\" x=\"{}\" y=\"{}\" text-anchor=\"middle\">no data</text>\n",
                     kLeft + kPlotW / 2, kTop + kPlotH / 2);
}

}  // namespace

std::string html_escape(const std::string& s) {
  std::string out;
  out.reserve(s.size());
  for (char c : s) {
    switch (c) {
      case '&': out += "&amp;"; break;
      case '<': out += "&lt;"; break;
      case '>': out += "&gt;"; break;
      case '"': out += "&quot;"; break;
      case '\'': out += "&#39;"; break;
      default: out += c;
    }
  }
  return out;
}

std::vector<double> nice_ticks(double lo, double hi, int target) {
  if (!(hi > lo)) hi = lo + 1;
  const double raw = (hi - lo) / std::max(1, target);
  const double mag = std::pow(10.0, std::floor(std::log10(raw)));
  double step = mag;
  for (double m : {1.0, 2.0, 5.0, 10.0})
    if (m * mag >= raw) {
      step = m * mag;
      break;
    }
  // From the last step at or below lo to the first at or above hi.
  const double start = std::floor(lo / step) * step;
  const int n = std::max(1, static_cast<int>(std::ceil((hi - start) / step - 1e-9)));
  std::vector<double> out;
  for (int i = 0; i <= n; ++i) {
    const double t = start + step * i;
    out.push_back(std::fabs(t) < step * 1e-9 ? 0.0 : t);
  }
  return out;
}

std::string render_svg(const LineChart& c) {
  std::string s = open_svg(c.title, c.x_label, c.y_label);
  double xlo = std::numeric_limits<double>::infinity(), xhi = -xlo, yhi = 0;
  std::vector<double> xs;
  for (const auto& ser : c.series)
    for (std::size_t i = 0; i < ser.x.size() && i < ser.y.size(); ++i) {
      if (c.log_x && !(ser.x[i] > 0)) continue;
      const double x = c.log_x ? std::log2(ser.x[i]) : ser.x[i];
      xlo = std::min(xlo, x);
      xhi = std::max(xhi, x);
      xs.push_back(ser.x[i]);
      yhi = std::max(yhi, ser.y[i] + (i < ser.err.size() ? ser.err[i] : 0.0));
    }
  if (xs.empty()) return s + empty_note() + "</svg>\n";
  if (xhi == xlo) {
    xlo -= 1;
    xhi += 1;
  }
  const auto yt = nice_ticks(0, yhi > 0 ? yhi : 1);
  const double ylo = 0, ytop = yt.back();
  s += y_axis(yt, ylo, ytop);
  auto px = [&](double x) { return kLeft + ((c.log_x ? std::log2(x) : x) - xlo) / (xhi - xlo) * kPlotW; };
  auto py = [&](double y) { return kTop + kPlotH - (y - ylo) / (ytop - ylo) * kPlotH; };
  // x ticks: the data's own x values (few), else a linear/log spread.
  std::sort(xs.begin(), xs.end());
  xs.erase(std::unique(xs.begin(), xs.end()), xs.end());
  // The data's own values when there are few and their labels have room
  // (rank counts, message sizes); else evenly spaced ticks.
  std::vector<double> xt;
  double gap = kPlotW;
  for (std::size_t i = 1; i < xs.size(); ++i) gap = std::min(gap, px(xs[i]) - px(xs[i - 1]));
  if (xs.size() <= 12 && gap >= 48) {
    xt = xs;
  } else if (c.log_x) {
    for (double e = std::ceil(xlo); e <= xhi; e += std::max(1.0, std::ceil((xhi - xlo) / 10)))
      xt.push_back(std::exp2(e));
  } else {
    xt = nice_ticks(xlo, xhi);
  }
  for (double t : xt) {
    const double x = px(t);
    if (x < kLeft - 0.5 || x > kLeft + kPlotW + 0.5) continue;
    s += fmt::format(
        "<line x1=\"{0:.1f}\" x2=\"{0:.1f}\" y1=\"{1}\" y2=\"{2}\" stroke=\"#999\"/>"
        "<text class=\"tick xtick\" x=\"{0:.1f}\" y=\"{3}\" text-anchor=\"middle\">{4}</text>\n",
        x, kTop + kPlotH, kTop + kPlotH + 5, kTop + kPlotH + 18,
        c.x_bytes ? format_bytes(static_cast<std::uint64_t>(t)) : number(t));
  }
  s += "<g class=\"plot\">\n";
  std::vector<std::string> names;
  for (std::size_t k = 0; k < c.series.size(); ++k) {
    const auto& ser = c.series[k];
    names.push_back(ser.name);
    std::string pts;
    std::string marks;
    for (std::size_t i = 0; i < ser.x.size() && i < ser.y.size(); ++i) {
      if (c.log_x && !(ser.x[i] > 0)) continue;
      const double x = px(ser.x[i]), y = py(ser.y[i]);
      pts += fmt::format("{:.1f},{:.1f} ", x, y);
      marks += fmt::format("<circle cx=\"{:.1f}\" cy=\"{:.1f}\" r=\"3\" fill=\"{}\"><title>{}: {}, {}</title></circle>",
                           x, y, color(k), html_escape(ser.name), number(ser.x[i]), number(ser.y[i]));
      if (i < ser.err.size() && ser.err[i] > 0)
        marks += fmt::format(
            "<line class=\"err\" x1=\"{0:.1f}\" x2=\"{0:.1f}\" y1=\"{1:.1f}\" y2=\"{2:.1f}\" "
            "stroke=\"{3}\"/>",
            x, py(std::max(0.0, ser.y[i] - ser.err[i])), py(ser.y[i] + ser.err[i]), color(k));
    }
    s += fmt::format("<polyline fill=\"none\" stroke=\"{}\" stroke-width=\"2\" points=\"{}\"/>{}\n",
                     color(k), pts, marks);
  }
  s += "</g>\n" + legend(names) + "</svg>\n";
  return s;
}

std::string render_svg(const BarChart& c) {
  const std::size_t n = c.categories.size();
  // Category labels slant just enough that neighbours, a slot apart, clear
  // each other (the distance between two parallel labels is slot × sin of
  // the angle; a label is about 14 px tall), from 20° up to vertical; the
  // chart grows downwards for what the longest one then needs, and wider
  // where even vertical labels would not fit (a slot under 16 px).
  constexpr double kLabelHeight = 14, kCharWidth = 6.2;
  const double plot_w = std::max(kPlotW, 16.0 * static_cast<double>(n));
  const double slot_w = n > 0 ? plot_w / static_cast<double>(n) : plot_w;
  const double slant = std::clamp(std::asin(std::min(1.0, kLabelHeight / slot_w)), 20 * M_PI / 180, M_PI / 2);
  std::size_t longest = 0;
  for (const auto& cat : c.categories) longest = std::max(longest, cat.size());
  const double drop = 14 + static_cast<double>(longest) * kCharWidth * std::sin(slant) + 6;
  std::string s = open_svg(c.title, "", c.y_label, std::max(0.0, drop - kBottom), plot_w);
  double yhi = 0;
  for (std::size_t i = 0; i < n; ++i) {
    double stack = 0;
    for (const auto& ser : c.series) {
      const double v = i < ser.values.size() ? ser.values[i] : 0;
      stack = c.stacked ? stack + v : std::max(stack, v);
    }
    yhi = std::max(yhi, stack);
  }
  if (n == 0 || c.series.empty()) return s + empty_note() + "</svg>\n";
  const auto yt = nice_ticks(0, yhi > 0 ? yhi : 1);
  const double ytop = yt.back();
  s += y_axis(yt, 0, ytop, plot_w);
  auto py = [&](double y) { return kTop + kPlotH - y / ytop * kPlotH; };
  const double slot = slot_w;
  const double group_w = slot * 0.8;
  const std::size_t per = c.stacked ? 1 : c.series.size();
  const double bar_w = group_w / static_cast<double>(per);
  s += "<g class=\"plot\">\n";
  std::string labels;
  for (std::size_t i = 0; i < n; ++i) {
    const double x0 = kLeft + slot * static_cast<double>(i) + slot * 0.1;
    double base = 0;
    for (std::size_t k = 0; k < c.series.size(); ++k) {
      const double v = i < c.series[k].values.size() ? c.series[k].values[i] : 0;
      const double x = c.stacked ? x0 : x0 + bar_w * static_cast<double>(k);
      const double y0 = c.stacked ? base : 0;
      s += fmt::format(
          "<rect x=\"{:.1f}\" y=\"{:.1f}\" width=\"{:.1f}\" height=\"{:.1f}\" fill=\"{}\">"
          "<title>{} / {}: {}</title></rect>",
          x, py(y0 + v), std::max(0.5, bar_w - 1), std::max(0.0, py(y0) - py(y0 + v)), color(k),
          html_escape(c.categories[i]), html_escape(c.series[k].name), number(v));
      if (c.stacked) base += v;
    }
    const double cx = x0 + group_w / 2;
    labels += fmt::format(
        "<text class=\"tick xtick\" x=\"{0:.1f}\" y=\"{1}\" text-anchor=\"end\" "
        "transform=\"rotate({3:.0f} {0:.1f} {1})\">{2}</text>\n",
        cx, kTop + kPlotH + 14, html_escape(c.categories[i]), -slant * 180 / M_PI);
  }
  std::vector<std::string> names;
  for (const auto& ser : c.series) names.push_back(ser.name);
  s += "\n</g>\n" + labels + legend(names, plot_w) + "</svg>\n";
  return s;
}

std::string render_svg(const HeatMap& h) {
  std::string s = open_svg(h.title, h.x_label, h.y_label);
  const std::size_t nr = h.rows.size(), nc = h.columns.size();
  double lo = std::numeric_limits<double>::infinity(), hi = -lo;
  for (const auto& row : h.values)
    for (double v : row) {
      lo = std::min(lo, v);
      hi = std::max(hi, v);
    }
  if (nr == 0 || nc == 0 || !(hi >= lo)) return s + empty_note() + "</svg>\n";
  const double cw = kPlotW / static_cast<double>(nc), ch = kPlotH / static_cast<double>(nr);
  // White (lo) to #b2182b (hi).
  auto fill = [&](double v) {
    const double t = hi > lo ? (v - lo) / (hi - lo) : 0.5;
    const auto mix = [&](int a, int b) { return static_cast<int>(std::lround(a + (b - a) * t)); };
    return fmt::format("#{:02x}{:02x}{:02x}", mix(255, 178), mix(255, 24), mix(255, 43));
  };
  s += "<g class=\"plot\">\n";
  for (std::size_t r = 0; r < nr; ++r)
    for (std::size_t c = 0; c < nc; ++c) {
      const double v = r < h.values.size() && c < h.values[r].size() ? h.values[r][c] : 0;
      s += fmt::format(
          "<rect x=\"{:.1f}\" y=\"{:.1f}\" width=\"{:.1f}\" height=\"{:.1f}\" fill=\"{}\">"
          "<title>{}, {}: {} {}</title></rect>",
          kLeft + cw * static_cast<double>(c), kTop + ch * static_cast<double>(r), cw, ch, fill(v),
          html_escape(h.rows[r]), html_escape(h.columns[c]), number(v), html_escape(h.value_label));
    }
  s += "\n</g>\n";
  // Row labels at the left; column labels below, every k-th where they would
  // crowd (about 48 px apart at least).
  for (std::size_t r = 0; r < nr; ++r)
    s += fmt::format("<text class=\"tick\" x=\"{}\" y=\"{:.1f}\" text-anchor=\"end\">{}</text>\n", kLeft - 6,
                     kTop + ch * (static_cast<double>(r) + 0.5) + 4, html_escape(h.rows[r]));
  const std::size_t every = std::max<std::size_t>(1, static_cast<std::size_t>(std::ceil(48.0 / cw)));
  for (std::size_t c = 0; c < nc; c += every)
    s += fmt::format("<text class=\"tick xtick\" x=\"{:.1f}\" y=\"{}\" text-anchor=\"middle\">{}</text>\n",
                     kLeft + cw * (static_cast<double>(c) + 0.5), kTop + kPlotH + 18, html_escape(h.columns[c]));
  // The colour bar, beside the plot.
  const double bx = kLeft + kPlotW + 16, bw = 14;
  s += "<g class=\"legend\">\n";
  for (int i = 0; i < 20; ++i) {
    const double v = hi - (hi - lo) * i / 19.0;
    s += fmt::format("<rect x=\"{}\" y=\"{:.1f}\" width=\"{}\" height=\"{:.1f}\" fill=\"{}\"/>", bx,
                     kTop + kPlotH * i / 20.0, bw, kPlotH / 20.0 + 0.5, fill(v));
  }
  s += fmt::format("<text x=\"{}\" y=\"{}\">{} {}</text><text x=\"{}\" y=\"{}\">{} {}</text>\n</g>\n", bx + bw + 6,
                   kTop + 10, number(hi), html_escape(h.unit), bx + bw + 6, kTop + kPlotH, number(lo),
                   html_escape(h.unit));
  return s + "</svg>\n";
}

}  // namespace dtbench::report
