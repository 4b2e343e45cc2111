// /v1/attention's doc_spans and bias: each row reports the documents' attention mass (and, with a
// bias curve, the calibrated relevance and ranking) exactly as `ragform attention --doc-spans
// --calibrated --bias` prints them for the same prompt; malformed fields are 400s.
#include <string>

#include "serve_harness.h"

namespace {

using nlohmann::json;
using namespace ragform::testing;

const std::string kPrompt =
    "Lily had a red ball. Tom had a big dog. Sue liked to eat cake. The dog's name was";

TEST(CalibratedAttentionServer, MatchesTheCli) {
  REQUIRE_SHARED(model, "fixtures/models/stories260K.gguf");
  const auto dir = temp_dir("calibrated_attention_server");
  const json curve = {{"curve", {0.01, 0.02, 0.2}},
                      {"layers", {{{"layer", 4}, {"curve", {0.03, 0.01, 0.3}}}}}};
  write_file(dir / "curve.json", curve.dump());
  write_file(dir / "prompt.txt", kPrompt);
  ServeProcess srv({"-m", model.string()});
  httplib::Client c("127.0.0.1", srv.port());
  const json spans = {{0, 20}, {21, 39}, {40, 62}};
  json req = {{"prompt", kPrompt}, {"layers", {-1}}, {"doc_spans", spans}, {"bias", curve}};
  auto a = c.Post("/v1/attention", req.dump(), "application/json");
  ASSERT_TRUE(a);
  ASSERT_EQ(a->status, 200) << a->body;
  const json row = json::parse(a->body)["rows"][0];
  ASSERT_EQ(row["documents"].size(), 3u);
  EXPECT_EQ(row["documents"][2]["bias"], 0.3);  // layer 4, the last of stories260K's five

  auto cli = run_ragform("attention -m " + quoted(model) + " --file " + quoted(dir / "prompt.txt") +
                         " --json --doc-spans 0:20,21:39,40:62 --calibrated --bias " +
                         quoted(dir / "curve.json"));
  ASSERT_EQ(cli.exit_code, 0) << cli.err;
  const json cj = json::parse(cli.out);
  EXPECT_EQ(row["documents"], cj["documents"]);
  EXPECT_EQ(row["ranking"], cj["ranking"]);

  // Without a bias: masses only, ranked by mass.
  req.erase("bias");
  a = c.Post("/v1/attention", req.dump(), "application/json");
  ASSERT_TRUE(a);
  ASSERT_EQ(a->status, 200) << a->body;
  const json raw = json::parse(a->body)["rows"][0];
  EXPECT_FALSE(raw["documents"][0].contains("calibrated"));
  EXPECT_EQ(raw["documents"][1]["mass"], cj["documents"][1]["mass"]);

  for (const json& bad :
       {json{{"prompt", kPrompt}, {"doc_spans", "0:20"}},
        json{{"prompt", kPrompt}, {"doc_spans", {{5, 2}}}},
        json{{"prompt", kPrompt}, {"doc_spans", {{0, 500}}}},
        json{{"prompt", kPrompt}, {"bias", curve}},
        json{{"prompt", kPrompt}, {"doc_spans", {{0, 20}}}, {"bias", curve}},
        json{{"prompt", kPrompt}, {"doc_spans", spans}, {"bias", {{"curve", "x"}}}}}) {
    auto r = c.Post("/v1/attention", bad.dump(), "application/json");
    expect_api_error(r, 400);
  }
}

}  // namespace
