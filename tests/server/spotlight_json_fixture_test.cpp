// One Spotlight selection, one JSON (pipelines/spotlight/selection_json.h): for the first
// HotpotQA dev question, `ragform spotlight select --json`, POST /v1/rag/spotlight and Python's
// ragform.spotlight.select give the same bytes (Python's full-precision scores rounded as the
// CLI prints them, "%.9g"), and the spotlight row `spotlight eval --store` writes names the same
// sentences with the same R (normalised) and R_raw (raw).
#include <gtest/gtest.h>

#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <nlohmann/json.hpp>

#include "server/serve_harness.h"
#include "store/run_store.h"

namespace ragform::testing {
namespace {

using nlohmann::json;
namespace fs = std::filesystem;

std::string first_line(const std::string& path) {
  std::ifstream in(path);
  std::string line;
  std::getline(in, line);
  return line;
}

// The request body of a HotpotQA record: its passages with their sentences as given.
json spotlight_request(const json& rec) {
  json docs = json::array();
  for (size_t i = 0; i < rec["context"]["title"].size(); ++i)
    docs.push_back(
        {{"title", rec["context"]["title"][i]}, {"sentences", rec["context"]["sentences"][i]}});
  return {{"id", rec["id"]}, {"question", rec["question"]}, {"documents", docs}};
}

double round9(double v) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.9g", v);
  return std::strtod(buf, nullptr);
}

// Python's selection of the record in `record_file`, printed as the CLI prints JSON (compact,
// UTF-8, floats "%.9g"), by Debian's python3 with the package of this checkout and the built
// module copied into a temporary directory.
RunResult python_select(const fs::path& module, const fs::path& record_file,
                        const fs::path& vectors) {
  return run_python("spotlight-json-py", module, R"(import json, sys
import ragform.spotlight
def r9(x):
    if isinstance(x, float):
        return float("%.9g" % x)
    if isinstance(x, dict):
        return {k: r9(v) for k, v in x.items()}
    if isinstance(x, list):
        return [r9(v) for v in x]
    return x
with open(sys.argv[1], encoding="utf-8") as f:
    rec = json.loads(f.readline())
got = ragform.spotlight.select(rec, vectors=sys.argv[2])
sys.stdout.write(json.dumps(r9(got), ensure_ascii=False, separators=(",", ":")) + "\n")
)",
                    {record_file.string(), vectors.string()});
}

TEST(SpotlightJsonFixture, CliServerPythonAndStoreAgree) {
  REQUIRE_SHARED(dev, "data/hotpotqa-distractor/dev.jsonl");
  REQUIRE_SHARED(vectors, "data/embeddings/glove-50d-5k.json");
  REQUIRE_SHARED(model, "fixtures/models/stories260K.gguf");
  const fs::path dir = temp_dir("spotlight-json");
  const std::string line = first_line(dev.string());
  const json rec = json::parse(line);
  write_file(dir / "one.jsonl", line + "\n");

  auto cli = run_ragform("spotlight select --input " + quoted(dir / "one.jsonl") + " --vectors " +
                         quoted(vectors) + " --json");
  ASSERT_EQ(cli.exit_code, 0) << cli.err;
  const std::string want = cli.out.substr(0, cli.out.find('\n'));
  ASSERT_FALSE(want.empty());

  // The server: byte for byte.
  ServeProcess srv({"-m", model.string(), "--ctx", "128", "--vectors", vectors.string()});
  httplib::Client c("127.0.0.1", srv.port());
  c.set_read_timeout(120, 0);
  auto r = c.Post("/v1/rag/spotlight", spotlight_request(rec).dump(), "application/json");
  ASSERT_TRUE(r);
  ASSERT_EQ(r->status, 200) << r->body;
  EXPECT_EQ(r->body, want);
  EXPECT_EQ(srv.stop(), 0) << srv.log();

  // The store row of the same question and settings: the same sentences, R and R_raw.
  auto ev = run_ragform("spotlight eval --input " + quoted(dir / "one.jsonl") + " --vectors " +
                        quoted(vectors) + " --store " + quoted(dir / "runs.sqlite"));
  ASSERT_EQ(ev.exit_code, 0) << ev.err;
  store::RunStore st(dir / "runs.sqlite", store::RunStore::Mode::read_only);
  const json sel = json::parse(want)["selected"];
  size_t rows = 0;
  for (const store::Result& row : st.results(std::nullopt)) {
    if (row.variant != "spotlight") continue;
    ++rows;
    EXPECT_EQ(row.prompt, json::parse(want)["prompt"]);
    const json& stored = row.extra.at("selected");
    ASSERT_EQ(stored.size(), sel.size());
    for (size_t i = 0; i < sel.size(); ++i) {
      EXPECT_EQ(stored[i]["title"], sel[i]["title"]) << i;
      EXPECT_EQ(stored[i]["category"], sel[i]["category"]) << i;
      EXPECT_EQ(round9(stored[i]["R"].get<double>()), sel[i]["R"].get<double>()) << i;
      EXPECT_EQ(round9(stored[i]["R_raw"].get<double>()), sel[i]["R_raw"].get<double>()) << i;
    }
  }
  EXPECT_EQ(rows, 1u);

  // Python, when this tree built the module.
  const fs::path module = python_module();
  if (module.empty()) GTEST_SKIP() << "no Python module in " << RAGFORM_BINARY_DIR << "/python";
  auto py = python_select(module, dir / "one.jsonl", vectors);
  ASSERT_EQ(py.exit_code, 0) << py.err;
  EXPECT_EQ(py.out, want + "\n");
}

}  // namespace
}  // namespace ragform::testing
