#include "report/svg.h"

#include <algorithm>
#include <cmath>
#include <cstdio>

namespace ragform::report {

std::string escape_html(const std::string& s) {
  std::string o;
  o.reserve(s.size() + s.size() / 8);
  for (char c : s) {
    switch (c) {
      case '&':
        o += "&amp;";
        break;
      case '<':
        o += "&lt;";
        break;
      case '>':
        o += "&gt;";
        break;
      case '"':
        o += "&quot;";
        break;
      case '\'':
        o += "&#39;";
        break;
      default:
        o += c;
    }
  }
  return o;
}

std::string fmt(double v, int decimals) {
  if (!std::isfinite(v)) return "n/a";
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.*f", decimals, v);
  std::string s = buf;
  if (s == "-0" || s.find_first_not_of("-0.") == std::string::npos) s.erase(0, s[0] == '-');
  return s;
}

double nice_ceiling(double v) {
  if (!(v > 0) || !std::isfinite(v)) return 1;
  double e = std::pow(10.0, std::floor(std::log10(v)));
  for (double m : {1.0, 2.0, 2.5, 5.0, 10.0})
    if (m * e >= v * (1 - 1e-12)) return m * e;
  return 10 * e;
}

double LinearScale::operator()(double v) const {
  if (d1 == d0) return r0;
  return r0 + (v - d0) * (r1 - r0) / (d1 - d0);
}

const char* series_color(size_t i) {
  // Okabe-Ito's eight colour-blind-safe colours, then four of Tol's muted set: C-NORM's nine
  // default delimiters (and the first rows of an (f, p) grid) each get their own colour.
  static const char* k[] = {"#0072B2", "#E69F00", "#009E73", "#CC79A7", "#D55E00", "#56B4E9",
                            "#F0E442", "#000000", "#882255", "#44AA99", "#999933", "#888888"};
  return k[i % (sizeof k / sizeof k[0])];
}

std::string heat_color(double t) {
  if (!std::isfinite(t)) t = 0;
  t = std::clamp(t, 0.0, 1.0);
  // white (255,255,255) -> (230,85,13)
  auto mix = [&](int a, int b) { return int(std::lround(a + (b - a) * t)); };
  char buf[8];
  std::snprintf(buf, sizeof buf, "#%02x%02x%02x", mix(255, 230), mix(255, 85), mix(255, 13));
  return buf;
}

namespace {

std::string n1(double v) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.1f", v);
  return buf;
}

// Tick labels: as many decimals as the step needs.
std::string tick_label(double v, double step) {
  int dec = step >= 1 ? 0 : int(std::ceil(-std::log10(step) - 1e-9));
  if (std::fabs(step * std::pow(10.0, dec) - std::round(step * std::pow(10.0, dec))) > 1e-9) ++dec;
  return fmt(v, std::min(dec, 4));
}

struct Frame {
  int W, H;
  double left = 56, right = 12, top = 34, bottom = 58;
  double x0() const { return left; }
  double x1() const { return W - right; }
  double y0() const { return H - bottom; }  // bottom of the plot area
  double y1() const { return top; }
};

std::string open_svg(const ChartOptions& o, const std::string& cls) {
  return "<svg xmlns=\"http://www.w3.org/2000/svg\" class=\"chart " + cls + "\" viewBox=\"0 0 " +
         std::to_string(o.width) + " " + std::to_string(o.height) + "\" width=\"" +
         std::to_string(o.width) + "\" height=\"" + std::to_string(o.height) +
         "\" role=\"img\" aria-label=\"" + escape_html(o.title) + "\">" + "<title>" +
         escape_html(o.title) + "</title>" + "<text class=\"ct\" x=\"" + n1(o.width / 2.0) +
         "\" y=\"18\" text-anchor=\"middle\">" + escape_html(o.title) + "</text>";
}

double data_max(const std::vector<Series>& series) {
  double m = 0;
  for (const auto& s : series)
    for (size_t i = 0; i < s.values.size(); ++i) {
      double v = s.values[i];
      if (!std::isfinite(v)) continue;
      if (i < s.errors.size() && std::isfinite(s.errors[i])) v += s.errors[i];
      m = std::max(m, v);
    }
  return m;
}

// The legend's name of each series. A series drawn exactly over an earlier one (same values, the
// same gaps) would hide it without a word, so its entry says which series it coincides with.
std::vector<std::string> legend_names(const std::vector<Series>& series) {
  std::vector<std::string> out;
  for (size_t i = 0; i < series.size(); ++i) {
    std::string name = series[i].name;
    for (size_t j = 0; j < i; ++j) {
      const auto& a = series[i].values;
      const auto& b = series[j].values;
      bool same = a.size() == b.size() && !a.empty();
      for (size_t k = 0; same && k < a.size(); ++k)
        same = (std::isfinite(a[k]) || std::isfinite(b[k])) ? a[k] == b[k] : true;
      if (same) {
        name += " (= " + series[j].name + ", drawn over it)";
        break;
      }
    }
    out.push_back(name);
  }
  return out;
}

// One legend row at y (text baseline): a swatch and the name of each series.
std::string legend(const std::vector<Series>& series, double x, double y) {
  std::string s;
  const std::vector<std::string> names = legend_names(series);
  for (size_t i = 0; i < series.size(); ++i) {
    s += "<rect x=\"" + n1(x) + "\" y=\"" + n1(y - 9) + "\" width=\"10\" height=\"10\" fill=\"" +
         series_color(i) + "\"/>";
    s += "<text class=\"lg\" x=\"" + n1(x + 14) + "\" y=\"" + n1(y) + "\">" +
         escape_html(names[i]) + "</text>";
    x += 24 + 7.0 * double(names[i].size());
  }
  return s;
}

// Horizontal grid lines with labels, the y axis label, the x axis label and the legend.
std::string axes(const Frame& f, const LinearScale& y, const ChartOptions& o,
                 const std::vector<Series>& series) {
  std::string s;
  double range = y.d1 - y.d0;
  double step = nice_ceiling(range / 5);
  for (double v = y.d0; v <= y.d1 + step * 1e-9; v += step) {
    double py = y(v);
    s += "<line class=\"grid\" x1=\"" + n1(f.x0()) + "\" x2=\"" + n1(f.x1()) + "\" y1=\"" + n1(py) +
         "\" y2=\"" + n1(py) + "\"/>";
    s += "<text class=\"tick\" x=\"" + n1(f.x0() - 4) + "\" y=\"" + n1(py + 4) +
         "\" text-anchor=\"end\">" + tick_label(v, step) + "</text>";
  }
  if (!o.y_label.empty())
    s += "<text class=\"al\" transform=\"translate(12," + n1((f.y0() + f.y1()) / 2) +
         ") rotate(-90)\" text-anchor=\"middle\">" + escape_html(o.y_label) + "</text>";
  if (!o.x_label.empty())
    s += "<text class=\"al\" x=\"" + n1((f.x0() + f.x1()) / 2) + "\" y=\"" + n1(f.H - 22.0) +
         "\" text-anchor=\"middle\">" + escape_html(o.x_label) + "</text>";
  if (series.size() > 1) s += legend(series, f.x0(), f.H - 3.0);
  return s;
}

LinearScale y_scale(const Frame& f, const ChartOptions& o, const std::vector<Series>& series) {
  double top = o.y_max > o.y_min ? o.y_max : nice_ceiling(data_max(series));
  if (top <= o.y_min) top = o.y_min + 1;
  return {o.y_min, top, f.y0(), f.y1()};
}

}  // namespace

std::string bar_chart(const std::vector<std::string>& categories, const std::vector<Series>& series,
                      const ChartOptions& opt) {
  Frame f{opt.width, opt.height};
  size_t nc = std::max<size_t>(categories.size(), 1), ns = std::max<size_t>(series.size(), 1);
  double group = (f.x1() - f.x0()) / double(nc);
  // Labels wider than their group (~6 px per character at 10 px) are slanted, with room below.
  size_t longest = 0;
  for (const auto& c : categories) longest = std::max(longest, c.size());
  const bool slant = 6.0 * double(longest) > group;
  if (slant) f.bottom += std::min(70.0, 4.2 * double(longest));
  LinearScale y = y_scale(f, opt, series);
  std::string s = open_svg(opt, "bars") + axes(f, y, opt, series);
  double bw = group * 0.8 / double(ns);
  for (size_t si = 0; si < series.size(); ++si) {
    const Series& se = series[si];
    std::string d, err, hover;
    for (size_t c = 0; c < categories.size() && c < se.values.size(); ++c) {
      double v = se.values[c];
      double bx = f.x0() + group * double(c) + group * 0.1 + bw * double(si);
      if (!std::isfinite(v)) {
        s += "<text class=\"tick\" x=\"" + n1(bx + bw / 2) + "\" y=\"" + n1(f.y0() - 4) +
             "\" text-anchor=\"middle\">n/a</text>";
        continue;
      }
      double vy = y(std::clamp(v, y.d0, y.d1)), by = y(y.d0);
      d += "M" + n1(bx) + " " + n1(by) + "V" + n1(vy) + "H" + n1(bx + bw) + "V" + n1(by) + "Z";
      // The value on hover, as the line charts' markers give it: an invisible box over the bar.
      hover += "<rect class=\"hit\" x=\"" + n1(bx) + "\" y=\"" + n1(std::min(vy, by)) +
               "\" width=\"" + n1(bw) + "\" height=\"" + n1(std::max(1.0, std::fabs(by - vy))) +
               "\" fill=\"#000\" fill-opacity=\"0\"><title>" + escape_html(se.name) + " — " +
               escape_html(categories[c]) + ": " + fmt(v) +
               (c < se.errors.size() && std::isfinite(se.errors[c]) && se.errors[c] > 0
                    ? " ± " + fmt(se.errors[c])
                    : std::string()) +
               "</title></rect>";
      if (c < se.errors.size() && std::isfinite(se.errors[c]) && se.errors[c] > 0) {
        double lo = y(std::clamp(v - se.errors[c], y.d0, y.d1));
        double hi = y(std::clamp(v + se.errors[c], y.d0, y.d1));
        double cx = bx + bw / 2;
        err += "M" + n1(cx) + " " + n1(lo) + "V" + n1(hi) + "M" + n1(cx - 3) + " " + n1(hi) + "H" +
               n1(cx + 3) + "M" + n1(cx - 3) + " " + n1(lo) + "H" + n1(cx + 3);
      }
    }
    if (!d.empty())
      s += "<path class=\"bar\" fill=\"" + std::string(series_color(si)) + "\" d=\"" + d + "\">" +
           "<title>" + escape_html(se.name) + "</title></path>";
    if (!err.empty()) s += "<path class=\"err\" d=\"" + err + "\"/>";
    s += hover;
  }
  for (size_t c = 0; c < categories.size(); ++c) {
    double cx = f.x0() + group * (double(c) + 0.5), cy = f.y0() + 14;
    s += "<text class=\"tick\" x=\"" + n1(cx) + "\" y=\"" + n1(cy) + "\"" +
         (slant ? " transform=\"rotate(-35 " + n1(cx) + " " + n1(cy - 8) + ")\" text-anchor=\"end\""
                : std::string(" text-anchor=\"middle\"")) +
         ">" + escape_html(categories[c]) + "</text>";
  }
  return s + "</svg>";
}

std::string line_chart(const std::vector<std::string>& x_labels, const std::vector<Series>& series,
                       const ChartOptions& opt) {
  Frame f{opt.width, opt.height};
  LinearScale y = y_scale(f, opt, series);
  std::string s = open_svg(opt, "lines") + axes(f, y, opt, series);
  size_t n = x_labels.size();
  LinearScale x{0, double(n > 1 ? n - 1 : 1), f.x0() + 12, f.x1() - 12};
  for (size_t i = 0; i < n; ++i)
    s += "<text class=\"tick\" x=\"" + n1(x(double(i))) + "\" y=\"" + n1(f.y0() + 14) +
         "\" text-anchor=\"middle\">" + escape_html(x_labels[i]) + "</text>";
  for (size_t si = 0; si < series.size(); ++si) {
    std::string d, dots;
    bool pen = false;
    for (size_t i = 0; i < n && i < series[si].values.size(); ++i) {
      double v = series[si].values[i];
      if (!std::isfinite(v)) {
        pen = false;
        continue;
      }
      double px = x(double(i)), py = y(std::clamp(v, y.d0, y.d1));
      d += (pen ? "L" : "M") + n1(px) + " " + n1(py);
      pen = true;
      dots += "<circle cx=\"" + n1(px) + "\" cy=\"" + n1(py) + "\" r=\"2.5\" fill=\"" +
              series_color(si) + "\"><title>" + escape_html(series[si].name) + ": " + fmt(v) +
              "</title></circle>";
    }
    if (!d.empty())
      s += "<path class=\"line\" fill=\"none\" stroke=\"" + std::string(series_color(si)) +
           "\" d=\"" + d + "\"/>" + dots;
  }
  return s + "</svg>";
}

Point radar_point(size_t i, size_t n, double v, double max, double cx, double cy, double radius) {
  const double pi = 3.14159265358979323846;
  double a = 2 * pi * double(i) / double(std::max<size_t>(n, 1));
  double r = max > 0 ? radius * std::clamp(v / max, 0.0, 1.0) : 0;
  return {cx + r * std::sin(a), cy - r * std::cos(a)};
}

std::string radar_chart(const std::vector<std::string>& axes_names,
                        const std::vector<Series>& series, const ChartOptions& opt) {
  std::string s = open_svg(opt, "radar");
  double max = opt.y_max > 0 ? opt.y_max : 1;
  double cx = opt.width / 2.0, cy = (opt.height + 16) / 2.0;
  double radius = std::min(opt.width, opt.height) / 2.0 - 48;
  size_t n = axes_names.size();
  for (int ring = 1; ring <= 4; ++ring) {
    std::string d;
    for (size_t i = 0; i < n; ++i) {
      Point p = radar_point(i, n, max * ring / 4.0, max, cx, cy, radius);
      d += (i ? "L" : "M") + n1(p.x) + " " + n1(p.y);
    }
    if (!d.empty()) s += "<path class=\"grid\" fill=\"none\" d=\"" + d + "Z\"/>";
    Point lp = radar_point(0, n, max * ring / 4.0, max, cx, cy, radius);
    s += "<text class=\"tick\" x=\"" + n1(lp.x + 3) + "\" y=\"" + n1(lp.y) + "\">" +
         fmt(max * ring / 4.0, max >= 10 ? 0 : 2) + "</text>";
  }
  for (size_t i = 0; i < n; ++i) {
    Point e = radar_point(i, n, max, max, cx, cy, radius);
    Point l = radar_point(i, n, max * 1.16, max * 1.16, cx, cy, radius * 1.16);
    s += "<line class=\"grid\" x1=\"" + n1(cx) + "\" y1=\"" + n1(cy) + "\" x2=\"" + n1(e.x) +
         "\" y2=\"" + n1(e.y) + "\"/>";
    const char* anchor = l.x < cx - 1 ? "end" : (l.x > cx + 1 ? "start" : "middle");
    s += "<text class=\"tick\" x=\"" + n1(l.x) + "\" y=\"" + n1(l.y + 4) + "\" text-anchor=\"" +
         anchor + "\">" + escape_html(axes_names[i]) + "</text>";
  }
  for (size_t si = 0; si < series.size(); ++si) {
    std::string d;
    for (size_t i = 0; i < n; ++i) {
      double v = i < series[si].values.size() ? series[si].values[i] : 0;
      Point p = radar_point(i, n, std::isfinite(v) ? v : 0, max, cx, cy, radius);
      d += (i ? "L" : "M") + n1(p.x) + " " + n1(p.y);
    }
    if (!d.empty())
      s += "<path class=\"area\" fill=\"" + std::string(series_color(si)) +
           "\" fill-opacity=\"0.25\" stroke=\"" + series_color(si) + "\" d=\"" + d + "Z\"><title>" +
           escape_html(series[si].name) + "</title></path>";
  }
  // Every radar has a legend, one reader too: the polygon's colour names its run.
  s += legend(series, 10, opt.height - 3.0);
  return s + "</svg>";
}

}  // namespace ragform::report
