// Inline SVG charts and HTML escaping for the self-contained report (report.h): no scripts, no
// fonts or images from the network, so the file opens the same anywhere, offline. Each chart is a
// string holding one <svg> element with a viewBox (it scales with the page), one <path> per series
// (lines, bars and radar polygons are paths, so a test can check that a chart really drew
// something), axis ticks on a "nice" 1-2-5 scale, and a legend.
//
// Values that are not finite are drawn as gaps (lines), left out (bars, labelled "n/a") or as 0
// (radar): a chart never shows a made-up number.
#pragma once
#include <string>
#include <vector>

namespace ragform::report {

// Text for an HTML text node or a double-quoted attribute: & < > " ' escaped.
std::string escape_html(const std::string& s);

// "%.*f" with `decimals`, "n/a" for a non-finite value.
std::string fmt(double v, int decimals = 3);

// The smallest 1, 2, 2.5 or 5 x 10^n that is >= v (v > 0); 1 for v <= 0 or non-finite.
double nice_ceiling(double v);

// Maps [d0, d1] linearly onto [r0, r1] (d0 == d1 maps everything to r0).
struct LinearScale {
  double d0 = 0, d1 = 1, r0 = 0, r1 = 1;
  double operator()(double v) const;
};

// The i-th colour of the report's palette (cycles; colour-blind safe Okabe-Ito order).
const char* series_color(size_t i);
// White (t = 0) to a dark orange-red (t = 1), clamped: "#rrggbb". For attention and match strips.
std::string heat_color(double t);

struct Series {
  std::string name;
  std::vector<double> values;  // one per category / x position
  std::vector<double> errors;  // optional: +- half-width per value (bars: error bars)
};

struct ChartOptions {
  std::string title;
  std::string x_label, y_label;
  double y_min = 0;
  double y_max = 0;  // 0 = nice_ceiling of the largest value (+ error)
  int width = 560, height = 300;
};

// Grouped vertical bars: one group per category, one bar per series, optional error bars.
std::string bar_chart(const std::vector<std::string>& categories, const std::vector<Series>& series,
                      const ChartOptions& opt);

// Lines over x positions labelled `x_labels`, one marker per finite point.
std::string line_chart(const std::vector<std::string>& x_labels, const std::vector<Series>& series,
                       const ChartOptions& opt);

// Radar (spider) chart: one spoke per axis, clockwise from the top, values on [0, y_max]
// (y_max 0 = 1); one closed polygon per series.
std::string radar_chart(const std::vector<std::string>& axes, const std::vector<Series>& series,
                        const ChartOptions& opt);

// The point of value v on spoke i of n on a radar of the given centre and radius for [0, max].
struct Point {
  double x = 0, y = 0;
};
Point radar_point(size_t i, size_t n, double v, double max, double cx, double cy, double radius);

}  // namespace ragform::report
