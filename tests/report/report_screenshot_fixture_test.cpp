// The report in a real browser (issue 10): a run store with rows of all three pipelines, rendered
// by `ragform report`, opened in headless Chromium. Checks: no console messages (the page has no
// scripts, so any is an error) and no failed loads in Chromium's log; the screenshot is a real
// PNG that is not blank and shows the charts' palette colours (decoded here with zlib); the DOM
// Chromium parsed holds the expected <svg> charts with non-empty paths. Skipped when chromium is
// not installed.
#include <zlib.h>

#include <cstdlib>
#include <filesystem>
#include <set>
#include <sstream>

#include <gtest/gtest.h>

#include "report/report_rows.h"
#include "store/run_store.h"
#include "support/test_support.h"

using namespace ragform;
namespace fs = std::filesystem;

namespace {

std::string find_chromium() {
  const char* path = std::getenv("PATH");
  std::stringstream ss(path ? path : "");
  for (std::string dir; std::getline(ss, dir, ':');)
    for (const char* name : {"chromium", "chromium-browser"}) {
      fs::path p = fs::path(dir) / name;
      if (!dir.empty() && fs::exists(p)) return p.string();
    }
  return "";
}

struct Image {
  uint32_t w = 0, h = 0;
  std::vector<uint8_t> rgb;  // w * h * 3
};

uint32_t be32(const std::string& s, size_t at) {
  return (uint32_t(uint8_t(s[at])) << 24) | (uint32_t(uint8_t(s[at + 1])) << 16) |
         (uint32_t(uint8_t(s[at + 2])) << 8) | uint32_t(uint8_t(s[at + 3]));
}

// A minimal PNG decoder for what Chromium writes: 8-bit RGB or RGBA, not interlaced.
Image decode_png(const std::string& f) {
  Image im;
  if (f.size() < 8 || f.compare(0, 8, "\x89PNG\r\n\x1a\n") != 0)
    throw std::runtime_error("not a PNG");
  std::string idat;
  int channels = 0;
  for (size_t at = 8; at + 8 <= f.size();) {
    uint32_t len = be32(f, at);
    std::string type = f.substr(at + 4, 4);
    if (at + 12 + len > f.size()) throw std::runtime_error("truncated chunk");
    if (type == "IHDR") {
      im.w = be32(f, at + 8);
      im.h = be32(f, at + 12);
      int depth = uint8_t(f[at + 16]), ctype = uint8_t(f[at + 17]), inter = uint8_t(f[at + 20]);
      if (depth != 8 || (ctype != 2 && ctype != 6) || inter != 0)
        throw std::runtime_error("unsupported PNG layout");
      channels = ctype == 2 ? 3 : 4;
    } else if (type == "IDAT") {
      idat += f.substr(at + 8, len);
    }
    at += 12 + len;
  }
  size_t stride = size_t(im.w) * size_t(channels);
  std::vector<uint8_t> raw((stride + 1) * im.h);
  uLongf n = uLongf(raw.size());
  if (uncompress(raw.data(), &n, reinterpret_cast<const Bytef*>(idat.data()), uLong(idat.size())) !=
          Z_OK ||
      n != raw.size())
    throw std::runtime_error("bad IDAT");
  std::vector<uint8_t> cur(stride), prev(stride, 0);
  im.rgb.resize(size_t(im.w) * im.h * 3);
  for (uint32_t y = 0; y < im.h; ++y) {
    const uint8_t* line = raw.data() + y * (stride + 1);
    uint8_t ft = line[0];
    for (size_t x = 0; x < stride; ++x) {
      int a = x >= size_t(channels) ? cur[x - channels] : 0, b = prev[x],
          c = x >= size_t(channels) ? prev[x - channels] : 0;
      int v = line[1 + x], pred = 0;
      if (ft == 1) pred = a;
      if (ft == 2) pred = b;
      if (ft == 3) pred = (a + b) / 2;
      if (ft == 4) {
        int p = a + b - c, pa = std::abs(p - a), pb = std::abs(p - b), pc = std::abs(p - c);
        pred = pa <= pb && pa <= pc ? a : (pb <= pc ? b : c);
      }
      if (ft > 4) throw std::runtime_error("bad filter");
      cur[x] = uint8_t(v + pred);
    }
    for (uint32_t x = 0; x < im.w; ++x)
      for (int k = 0; k < 3; ++k) im.rgb[(size_t(y) * im.w + x) * 3 + k] = cur[x * channels + k];
    std::swap(cur, prev);
  }
  return im;
}

// Rows of all three pipelines in the layouts they write (values are arbitrary but fixed).
void fill_store(const fs::path& db) {
  store::RunStore st(db, store::RunStore::Mode::create, store::RunStore::Durability::normal);
  const ragform::testing::RowWriter put{
      st, "Document [1](Title: <A> & \"B\") text\nQuestion: who?\nAnswer:", "Lily"};
  store::RunConfig rc;
  rc.tool_version = "test";
  // A long path, as real model paths are: the runs table must still fit its card.
  rc.model_path =
      "/srv/models/huggingface/hub/models--example--stories260K/snapshots/"
      "0123456789abcdef0123456789abcdef01234567/quantised/q8_0/stories260K.gguf";
  rc.model_sha256 = "abc";
  rc.reader = "native";
  rc.chat_mode = "raw";
  rc.pipeline = "cnorm calibrate";
  int64_t cal = st.begin_run(rc);
  const char* delims[] = {"none", "-", ":"};
  for (int d = 0; d < 3; ++d)
    for (int s = 0; s < 3; ++s) {
      std::vector<double> mass(10, 0.02);
      mass[0] = 0.5 - 0.1 * d;
      mass[9] = 0.2 + 0.05 * s;
      put(cal, "p" + std::to_string(s), delims[d], std::nullopt,
          {{"abs", 0.3 + 0.1 * d + 0.02 * s}, {"mu", 0.2}},
          {{"delimiter", delims[d]},
           {"p", 0.5},
           {"mass_by_position", mass},
           {"attention", {0.5, 0.1, 0.05, 0.3, 0.05}},
           {"tokens", {"<s>", "Lily", " had", " a", " dog"}}});
    }
  rc.pipeline = "cnorm eval";
  int64_t ev = st.begin_run(rc);
  for (const char* v : {"baseline", "cnorm", "min-token"})
    for (int pos = 0; pos < 5; ++pos)
      for (int q = 0; q < 2; ++q)
        put(ev, "q" + std::to_string(q), std::string(v) + "@" + std::to_string(pos),
            (pos + q + (v[0] == 'c')) % 3 != 0, {},
            {{"variant", v}, {"gold_position", pos}, {"delimiter", "-"}});
  rc.pipeline = "sure eval";
  int64_t se = st.begin_run(rc);
  const char* kinds[] = {"logic/reverse", "format/json", "metadata/timestamp-pre", "format/yaml"};
  for (int r = 0; r < 4; ++r) {
    std::string rec = "r" + std::to_string(r);
    put(se, rec, "closed-book", r % 2 == 0, {});
    put(se, rec + "#0", "original", r != 3, {});
    for (int k = 0; k < 4; ++k)
      put(se, rec + "#0", kinds[k], (r + k) % 3 != 0, {}, {{"golden", r < 2}});
  }
  rc.pipeline = "spotlight eval";
  int64_t sp = st.begin_run(rc);
  nlohmann::json sel = nlohmann::json::array(
      {{{"title", "Paris"},
        {"text", "Paris is the capital of France."},
        {"R_norm", 1.0},
        {"category", "definition"},
        {"gold", true},
        {"matches",
         {{{"q", "capital"}, {"c", "capital"}, {"s", 0.9}, {"begin", 13}, {"end", 20}}}}}});
  for (int q = 0; q < 3; ++q)
    for (const char* m : {"spotlight", "lead", "bm25"})
      put(sp, "h" + std::to_string(q), m, std::nullopt,
          {{"recall@2", 0.25 * q + (m[0] == 's' ? 0.25 : 0)}, {"recall@6", 0.5 + 0.1 * q}},
          std::string(m) == "spotlight"
              ? nlohmann::json{{"question", "capital?"}, {"selected", sel}}
              : nlohmann::json::object());
}

std::string chromium_cmd(const std::string& bin, const fs::path& profile) {
  return "timeout 60 " + bin +
         " --headless --no-sandbox --disable-gpu --disable-background-networking "
         "--disable-component-update --disable-sync --no-first-run --disable-default-apps "
         "--enable-logging=stderr --v=0 --user-data-dir='" +
         profile.string() + "' ";
}

}  // namespace

TEST(ReportScreenshot, RendersInHeadlessChromium) {
  std::string chromium = find_chromium();
  if (chromium.empty()) GTEST_SKIP() << "chromium is not installed (apt-get install chromium)";
  fs::path dir = ragform::testing::temp_dir("report-screenshot");
  fs::path db = dir / "run.sqlite", html = dir / "report.html", png = dir / "report.png";
  fill_store(db);
  auto r = ragform::testing::run_ragform("report '" + db.string() + "' -o '" + html.string() + "'");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  auto summary = nlohmann::json::parse(r.out);
  EXPECT_EQ(summary["runs"], 4);
  EXPECT_EQ(summary["sections"], 3);
  EXPECT_EQ(summary["charts"], 6) << "ABS, Figure 3, accuracy, radar, WR/LR, recall";

  std::string base = chromium_cmd(chromium, dir / "profile");
  std::string url = "file://" + fs::absolute(html).string();
  int rc = std::system((base + "--screenshot='" + png.string() + "' --window-size=1280,2000 '" +
                        url + "' > '" + (dir / "shot.out").string() + "' 2> '" +
                        (dir / "shot.log").string() + "'")
                           .c_str());
  ASSERT_EQ(rc, 0) << ragform::testing::read_file(dir / "shot.log");
  rc = std::system((base + "--dump-dom '" + url + "' > '" + (dir / "dom.html").string() + "' 2> '" +
                    (dir / "dom.log").string() + "'")
                       .c_str());
  ASSERT_EQ(rc, 0) << ragform::testing::read_file(dir / "dom.log");

  for (const char* log : {"shot.log", "dom.log"}) {
    std::string text = ragform::testing::read_file(dir / log);
    std::istringstream in(text);
    for (std::string line; std::getline(in, line);) {
      EXPECT_EQ(line.find(":CONSOLE"), std::string::npos) << log << ": " << line;
      EXPECT_EQ(line.find("Failed to load"), std::string::npos) << log << ": " << line;
    }
  }

  // The DOM: 6 charts, each with at least one path with a non-empty d.
  std::string dom = ragform::testing::read_file(dir / "dom.html");
  std::map<std::string, int> kinds;
  for (size_t at = dom.find("<svg"); at != std::string::npos; at = dom.find("<svg", at + 1)) {
    size_t end = dom.find("</svg>", at);
    ASSERT_NE(end, std::string::npos);
    std::string svg = dom.substr(at, end - at);
    size_t c = svg.find("class=\"chart ");
    ASSERT_NE(c, std::string::npos) << svg.substr(0, 200);
    std::string kind = svg.substr(c + 13, svg.find('"', c + 13) - c - 13);
    ++kinds[kind];
    // A data path (bar, line or radar area, not the grid) with a non-empty outline.
    bool drawn = false;
    for (const char* cls : {"<path class=\"bar\"", "<path class=\"line\"", "<path class=\"area\""})
      for (size_t p = svg.find(cls); p != std::string::npos && !drawn; p = svg.find(cls, p + 1)) {
        size_t d = svg.find(" d=\"M", p);
        size_t close = svg.find('>', p);
        drawn = d != std::string::npos && d < close && svg[d + 5] != '"' &&
                svg.find_first_of("LVHZ", d) < close;
      }
    EXPECT_TRUE(drawn) << "a " << kind << " chart without a drawn data path";
  }
  EXPECT_EQ(kinds["bars"], 3);   // ABS, WR vs LR, recall
  EXPECT_EQ(kinds["lines"], 2);  // Figure 3, accuracy by position
  EXPECT_EQ(kinds["radar"], 1);  // Figure 4 (3 categories)
  EXPECT_EQ(dom.find("<script"), std::string::npos);
  EXPECT_NE(dom.find("Paris is the <mark"), std::string::npos);

  // Issue 24, the HTML report. SURE's drill-down shows the instance pairs (original, perturbed,
  // both answers, the verdict) before any per-instance rows.
  size_t sure_at = dom.find("<section id=\"sure\">");
  ASSERT_NE(sure_at, std::string::npos);
  size_t pairs_at = dom.find("<h3>Instance pairs</h3>", sure_at);
  size_t rows_at = dom.find("<h3>Instances</h3>", sure_at);
  ASSERT_NE(pairs_at, std::string::npos);
  EXPECT_LT(pairs_at, rows_at);
  EXPECT_NE(dom.find("<th>answer on the original</th><th>answer on the perturbed</th>", pairs_at),
            std::string::npos);
  EXPECT_NE(dom.find("right → wrong (C = 1)", pairs_at), std::string::npos);
  // The first instance of the row drill-down is a pair instance, not a closed-book row.
  EXPECT_EQ(dom.find("<summary><b>r0#0</b>", rows_at), dom.find("<summary><b>", rows_at));
  // Coinciding series say so (the fixture's Min-Token answers are the Baseline's); the radar has
  // a legend; Figure 3's x axis labels bins; Table 1 gives pair counts; the Win/Lose chart keeps
  // the category; bars give their value on hover.
  EXPECT_NE(dom.find(">Min-Token (= Baseline, drawn over it)</text>"), std::string::npos);
  size_t radar_at = dom.find("class=\"chart radar\"");
  ASSERT_NE(radar_at, std::string::npos);
  EXPECT_LT(dom.find("class=\"lg\"", radar_at), dom.find("</svg>", radar_at));
  EXPECT_NE(dom.find(">0–10%</text>"), std::string::npos);
  EXPECT_NE(dom.find(">90–100%</text>"), std::string::npos);
  EXPECT_NE(dom.find("<th>K-G n</th>"), std::string::npos);
  EXPECT_NE(dom.find(">logic/reverse</text>"), std::string::npos);
  EXPECT_NE(dom.find("<title>WR — logic/reverse: "), std::string::npos);

  // The runs table fits its card at 1400 px: right of the page's content column nothing but the
  // page background, below the full-width header and navigation bar.
  fs::path wide = dir / "wide.png";
  rc = std::system((base + "--screenshot='" + wide.string() + "' --window-size=1400,9000 '" + url +
                    "' > /dev/null 2> '" + (dir / "wide.log").string() + "'")
                       .c_str());
  ASSERT_EQ(rc, 0) << ragform::testing::read_file(dir / "wide.log");
  Image w = decode_png(ragform::testing::read_file(wide));
  ASSERT_EQ(w.w, 1400u);
  size_t spill = 0;
  for (uint32_t y = 160; y < w.h; ++y)
    for (uint32_t x = 1280; x < w.w; ++x) {
      const uint8_t* p = &w.rgb[(size_t(y) * w.w + x) * 3];
      spill += !(p[0] == 0xf6 && p[1] == 0xf7 && p[2] == 0xf9);
    }
  EXPECT_EQ(spill, 0u) << "something is drawn right of the content column at 1400 px";

  // The screenshot: a 1280x2000 PNG, not blank, with the charts' first two palette colours.
  ASSERT_TRUE(fs::exists(png));
  Image im = decode_png(ragform::testing::read_file(png));
  EXPECT_EQ(im.w, 1280u);
  EXPECT_EQ(im.h, 2000u);
  std::set<uint32_t> colours;
  size_t blue = 0, orange = 0;
  for (size_t i = 0; i + 2 < im.rgb.size(); i += 3) {
    uint32_t c = (uint32_t(im.rgb[i]) << 16) | (uint32_t(im.rgb[i + 1]) << 8) | im.rgb[i + 2];
    colours.insert(c);
    blue += c == 0x0072B2;
    orange += c == 0xE69F00;
  }
  EXPECT_GT(colours.size(), 50u) << "the screenshot looks blank";
  EXPECT_GT(blue, 500u) << "no chart drawn in the first series colour";
  EXPECT_GT(orange, 100u) << "no chart drawn in the second series colour";
}
