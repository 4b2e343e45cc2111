// The "steer" object of /v1/completions, /v1/score and /v1/attention: the same numbers as the
// CLI's --steer flags for the same prompt (completions through the continuous-batching engine,
// which must not reuse steered prefix rows for an unsteered request); malformed objects are 400s.
#include <string>

#include "serve_harness.h"

namespace {

using nlohmann::json;
using namespace ragform::testing;

const std::string kPrompt =
    "Once upon a time, there was a little girl named Lily. She loved to play outside in the sun.";

json post(httplib::Client& c, const std::string& path, const json& req) {
  auto r = c.Post(path.c_str(), req.dump(), "application/json");
  EXPECT_TRUE(r);
  if (!r) return json();
  EXPECT_EQ(r->status, 200) << r->body;
  return json::parse(r->body);
}

TEST(ServeSteer, MatchesTheCli) {
  REQUIRE_SHARED(model, "fixtures/models/stories260K.gguf");
  const auto dir = temp_dir("serve_steer");
  write_file(dir / "prompt.txt", kPrompt);
  ServeProcess srv({"-m", model.string()});
  httplib::Client c("127.0.0.1", srv.port());
  const json steer = {{"rule", "reallocate:0.75"}, {"spans", {{48, 57}}}, {"layers", "-2..-1"}};
  const std::string flags = " --steer reallocate:0.75 --steer-spans 48:57 --steer-layers -2..-1";
  const std::string cli_model = "-m " + quoted(model) + " --file " + quoted(dir / "prompt.txt");

  // Unsteered first, so the cache holds the prompt's unsteered rows; then steered; then unsteered.
  const json plain =
      post(c, "/v1/completions", {{"prompt", kPrompt}, {"max_tokens", 24}, {"temperature", 0}});
  const json steered =
      post(c, "/v1/completions",
           {{"prompt", kPrompt}, {"max_tokens", 24}, {"temperature", 0}, {"steer", steer}});
  const json again =
      post(c, "/v1/completions", {{"prompt", kPrompt}, {"max_tokens", 24}, {"temperature", 0}});
  auto cli = run_ragform("generate " + cli_model + " -n 24 --json" + flags);
  ASSERT_EQ(cli.exit_code, 0) << cli.err;
  EXPECT_EQ(steered["choices"][0]["text"], json::parse(cli.out)["text"]);
  EXPECT_NE(steered["choices"][0]["text"], plain["choices"][0]["text"]);
  EXPECT_EQ(again["choices"][0]["text"], plain["choices"][0]["text"]);

  const json att = post(c, "/v1/attention", {{"prompt", kPrompt}, {"steer", steer}});
  cli = run_ragform("attention " + cli_model + " --json" + flags);
  ASSERT_EQ(cli.exit_code, 0) << cli.err;
  const json cj = json::parse(cli.out);
  ASSERT_EQ(att["rows"][0]["mean"].size(), cj["mean"].size());
  for (size_t i = 0; i < cj["mean"].size(); ++i)
    EXPECT_NEAR(att["rows"][0]["mean"][i].get<double>(), cj["mean"][i].get<double>(), 1e-8);

  const json sc =
      post(c, "/v1/score",
           {{"prompt", kPrompt}, {"continuation", " Lily was happy."}, {"steer", steer}});
  cli = run_ragform("score " + cli_model + " -c ' Lily was happy.' --json" + flags);
  ASSERT_EQ(cli.exit_code, 0) << cli.err;
  EXPECT_NEAR(sc["sum"].get<double>(), json::parse(cli.out)["sum"].get<double>(), 1e-6);

  for (const json& bad :
       {json("rescale:2"), json{{"rule", "boost:2"}, {"spans", {{0, 4}}}},
        json{{"rule", "rescale:2"}}, json{{"rule", "rescale:2"}, {"spans", {{4, 4}}}},
        json{{"rule", "rescale:2"}, {"spans", {{0, 4000}}}},
        json{{"rule", "rescale:2"}, {"spans", {{0, 4}}}, {"layers", {99}}}}) {
    SCOPED_TRACE(bad.dump());
    expect_api_error(c.Post("/v1/completions",
                            json{{"prompt", kPrompt}, {"max_tokens", 2}, {"steer", bad}}.dump(),
                            "application/json"),
                     400);
  }
}

}  // namespace
