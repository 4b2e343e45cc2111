// The report's SVG chart helpers: escaping, scales and the exact geometry of small charts
// (coordinates computed by hand from the frame: plot area x 56..548, y 242..34 for 560x300).
#include "report/svg.h"

#include <cmath>
#include <set>

#include <gtest/gtest.h>

using namespace ragform::report;

namespace {
size_t count(const std::string& s, const std::string& what) {
  size_t n = 0;
  for (size_t at = s.find(what); at != std::string::npos; at = s.find(what, at + 1)) ++n;
  return n;
}
}  // namespace

TEST(Svg, EscapesHtmlSpecials) {
  EXPECT_EQ(escape_html("<a href=\"x\">&'b'"), "&lt;a href=&quot;x&quot;&gt;&amp;&#39;b&#39;");
  EXPECT_EQ(escape_html("plain ü"), "plain ü");
}

TEST(Svg, FormatsNumbers) {
  EXPECT_EQ(fmt(0.12345, 3), "0.123");
  EXPECT_EQ(fmt(2.5, 0), "2");  // round half to even, as printf does
  EXPECT_EQ(fmt(-0.0001, 2), "0.00");
  EXPECT_EQ(fmt(NAN), "n/a");
  EXPECT_EQ(fmt(INFINITY), "n/a");
}

TEST(Svg, NiceCeiling) {
  EXPECT_DOUBLE_EQ(nice_ceiling(0.37), 0.5);
  EXPECT_DOUBLE_EQ(nice_ceiling(0.21), 0.25);
  EXPECT_DOUBLE_EQ(nice_ceiling(1.0), 1.0);
  EXPECT_DOUBLE_EQ(nice_ceiling(7), 10);
  EXPECT_DOUBLE_EQ(nice_ceiling(130), 200);
  EXPECT_DOUBLE_EQ(nice_ceiling(0), 1);
  EXPECT_DOUBLE_EQ(nice_ceiling(NAN), 1);
}

TEST(Svg, LinearScale) {
  LinearScale y{0, 1, 100, 0};
  EXPECT_DOUBLE_EQ(y(0.25), 75);
  EXPECT_DOUBLE_EQ(y(1), 0);
  EXPECT_DOUBLE_EQ((LinearScale{2, 2, 7, 9})(5), 7);
}

TEST(Svg, HeatColor) {
  EXPECT_EQ(heat_color(0), "#ffffff");
  EXPECT_EQ(heat_color(1), "#e6550d");
  EXPECT_EQ(heat_color(5), "#e6550d");
  EXPECT_EQ(heat_color(NAN), "#ffffff");
  // halfway: 255 + (230-255)/2 = 242.5 -> 243 (f3), (255+85)/2 = 170 (aa), (255+13)/2 = 134 (86)
  EXPECT_EQ(heat_color(0.5), "#f3aa86");
}

TEST(Svg, BarChartGeometry) {
  ChartOptions o;
  o.title = "t <1>";
  o.y_max = 1;
  std::string s = bar_chart({"a", "b"}, {{"s", {0.5, 1.0}, {0.1, NAN}}}, o);
  // group = 492 / 2 = 246, bar width = 0.8 * 246 = 196.8, first bar at 56 + 24.6 = 80.6;
  // y(0.5) = 242 - 0.5 * 208 = 138, y(1) = 34.
  EXPECT_NE(s.find("M80.6 242.0V138.0H277.4V242.0Z"), std::string::npos) << s;
  EXPECT_NE(s.find("M326.6 242.0V34.0H523.4V242.0Z"), std::string::npos) << s;
  // error bar of the first bar: centre 179.0, 0.4 -> 158.8, 0.6 -> 117.2; none for NaN.
  EXPECT_NE(s.find("class=\"err\" d=\"M179.0 158.8V117.2"), std::string::npos) << s;
  EXPECT_EQ(count(s, "class=\"err\""), 1u);
  EXPECT_EQ(count(s, "<path class=\"bar\""), 1u);
  EXPECT_NE(s.find("t &lt;1&gt;"), std::string::npos);
  EXPECT_EQ(s.find("t <1>"), std::string::npos);
  EXPECT_EQ(s.rfind("<svg", 0), 0u);
  EXPECT_EQ(s.substr(s.size() - 6), "</svg>");
}

TEST(Svg, BarChartMissingValueIsLabelled) {
  ChartOptions o;
  o.y_max = 1;
  std::string s = bar_chart({"a", "b"}, {{"s", {NAN, 0.25}, {}}}, o);
  EXPECT_EQ(count(s, ">n/a<"), 1u);
  EXPECT_EQ(count(s, "Z"), 1u);  // one bar outline
}

TEST(Svg, LineChartBreaksAtGaps) {
  ChartOptions o;
  o.y_max = 1;
  // x runs from 68 to 536 over positions 0..2; y(0) = 242, y(1) = 34, y(0.5) = 138.
  std::string s =
      line_chart({"1", "2", "3"}, {{"a", {0, NAN, 1}, {}}, {"b", {0.5, 0.5, 0.5}, {}}}, o);
  EXPECT_NE(s.find("d=\"M68.0 242.0M536.0 34.0\""), std::string::npos) << s;
  EXPECT_NE(s.find("d=\"M68.0 138.0L302.0 138.0L536.0 138.0\""), std::string::npos) << s;
  EXPECT_EQ(count(s, "<circle"), 5u);
  EXPECT_EQ(count(s, "class=\"lg\""), 2u);  // legend for two series
}

TEST(Svg, AutoScaleRoundsUp) {
  ChartOptions o;
  std::string s = bar_chart({"a"}, {{"s", {0.3}, {0.05}}}, o);
  // max = 0.35 -> nice 0.5: 0.3 sits at 242 - 0.6 * 208 = 117.2, top tick label "0.5".
  EXPECT_NE(s.find("V117.2"), std::string::npos) << s;
  EXPECT_NE(s.find(">0.5</text>"), std::string::npos) << s;
}

TEST(Svg, RadarPoints) {
  Point p = radar_point(0, 4, 1, 1, 100, 100, 50);
  EXPECT_NEAR(p.x, 100, 1e-9);
  EXPECT_NEAR(p.y, 50, 1e-9);
  p = radar_point(1, 4, 1, 1, 100, 100, 50);
  EXPECT_NEAR(p.x, 150, 1e-9);
  EXPECT_NEAR(p.y, 100, 1e-9);
  p = radar_point(2, 4, 0.5, 1, 100, 100, 50);
  EXPECT_NEAR(p.x, 100, 1e-9);
  EXPECT_NEAR(p.y, 125, 1e-9);
  p = radar_point(3, 4, 7, 1, 100, 100, 50);  // clamped to the rim
  EXPECT_NEAR(p.x, 50, 1e-9);
}

TEST(Svg, RadarChartPolygon) {
  ChartOptions o;
  o.width = 400;
  o.height = 384;  // centre (200, 200), radius 192 - 48 = 144
  o.y_max = 100;
  std::string s = radar_chart({"a", "b", "c", "d"}, {{"r", {100, 50, 0, 25}, {}}}, o);
  // a: (200, 56); b: (272, 200); c: centre; d: (164, 200)
  EXPECT_NE(s.find("d=\"M200.0 56.0L272.0 200.0L200.0 200.0L164.0 200.0Z\""), std::string::npos)
      << s;
}

TEST(Svg, SeriesColoursDistinctForTwelveSeries) {
  // C-NORM's nine default candidates share one legend: no two may share a colour.
  std::set<std::string> seen;
  for (size_t i = 0; i < 12; ++i) EXPECT_TRUE(seen.insert(series_color(i)).second) << i;
  EXPECT_EQ(std::string(series_color(12)), series_color(0));  // then the palette repeats
}

// Issue 24 (the HTML report, 12): hidden coinciding series, values on hover, a radar legend.

TEST(Svg, LegendSaysWhenTwoSeriesCoincide) {
  ChartOptions o;
  o.y_max = 1;
  std::string s = line_chart(
      {"1", "2"},
      {{"Baseline", {0.1, 0.2}, {}}, {"C-NORM", {0.5, NAN}, {}}, {"Min-Token", {0.5, NAN}, {}}}, o);
  EXPECT_NE(s.find(">Min-Token (= C-NORM, drawn over it)</text>"), std::string::npos) << s;
  EXPECT_NE(s.find(">C-NORM</text>"), std::string::npos);
  EXPECT_NE(s.find(">Baseline</text>"), std::string::npos);
}

TEST(Svg, BarsShowTheirValueOnHover) {
  ChartOptions o;
  o.y_max = 1;
  std::string s = bar_chart({"a", "b"}, {{"WR", {0.25, NAN}, {}}, {"LR", {0.5, 0.75}, {0.1}}}, o);
  EXPECT_NE(s.find("<title>WR — a: 0.250</title>"), std::string::npos) << s;
  EXPECT_NE(s.find("<title>LR — a: 0.500 ± 0.100</title>"), std::string::npos) << s;
  EXPECT_NE(s.find("<title>LR — b: 0.750</title>"), std::string::npos) << s;
  EXPECT_EQ(count(s, "class=\"hit\""), 3u);  // one per drawn bar, none for n/a
}

TEST(Svg, RadarOfOneReaderHasALegend) {
  ChartOptions o;
  o.y_max = 100;
  std::string s = radar_chart({"a", "b", "c"}, {{"run 1 model.gguf", {10, 20, 30}, {}}}, o);
  EXPECT_EQ(count(s, "class=\"lg\""), 1u);
  EXPECT_NE(s.find(">run 1 model.gguf</text>"), std::string::npos);
}
