// The "steer" object of /v1/completions, /v1/score and /v1/attention: the same numbers as the
// CLI's --steer flags for the same prompt (completions through the continuous-batching engine,
// which must not reuse steered prefix rows for an unsteered request); malformed objects are 400s.
#include <string>
#include <vector>

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

// A client of /v1/... sends a JSON "steer" object, never the CLI's flags: the errors found once
// the prompt is tokenised (a span past the prompt, a layer or head outside the model, shares that
// do not match the spans) name the object's fields; the CLI keeps naming its flags.
TEST(ServeSteer, ErrorsNameTheJsonFieldsNotTheFlags) {
  REQUIRE_SHARED(model, "fixtures/models/stories260K.gguf");
  ServeProcess srv({"-m", model.string()});
  httplib::Client c("127.0.0.1", srv.port());
  struct Case {
    json steer;
    std::string field;
  };
  const std::vector<Case> cases = {
      {{{"rule", "rescale:2"}, {"spans", {{0, 4000}}}}, "steer.spans: span 0:4000 ends past"},
      {{{"rule", "rescale:2"}, {"spans", {{0, 4}}}, {"layers", {99}}},
       "steer.layers: layer 99 is outside the model's layers"},
      {{{"rule", "rescale:2"}, {"spans", {{0, 4}}}, {"layers", "3..1"}},
       "steer.layers: layer range 3..1 is empty"},
      {{{"rule", "rescale:2"}, {"spans", {{0, 4}}}, {"heads", {99}}},
       "steer.heads: head 99 is outside the model's"},
      {{{"rule", "reallocate:0.2,0.3"}, {"spans", {{0, 4}}}},
       "steer.rule: 2 per-span shares for 1 spans: give one share per steer.spans span"},
      // The object itself, read by the parser every front end shares (reader/steering_object.h):
      // an unknown key is refused (it was ignored before issue 41), and its errors name fields.
      {{{"rule", "rescale:2"}, {"spans", {{0, 4}}}, {"head", {1}}},
       "steer: unknown key 'head' (rule, spans, layers, heads)"},
      {{{"rule", "rescale:2"}}, "steer.rule: needs steer.spans"},
      {{{"rule", "rescale:2"}, {"spans", {{4, 4}}}}, "steer.spans: expected a non-empty list"},
      {{{"rule", "rescale:2"}, {"spans", {{0, 4}}}, {"heads", {-1}}},
       "steer.heads: head indices are 0, 1, ..., got -1"},
  };
  for (const Case& k : cases) {
    for (const char* path : {"/v1/completions", "/v1/score", "/v1/attention"}) {
      SCOPED_TRACE(std::string(path) + " " + k.steer.dump());
      json req = {{"prompt", kPrompt}, {"steer", k.steer}};
      if (std::string(path) == "/v1/completions") req["max_tokens"] = 2;
      if (std::string(path) == "/v1/score") req["continuation"] = " Lily";
      const std::string msg = expect_api_error(c.Post(path, req.dump(), "application/json"), 400);
      EXPECT_NE(msg.find(k.field), std::string::npos) << msg;
      EXPECT_EQ(msg.find("--steer"), std::string::npos) << msg;
    }
  }
  // Rule off needs no spans, as on the command line (`--steer off`).
  post(c, "/v1/completions",
       {{"prompt", kPrompt}, {"max_tokens", 2}, {"steer", {{"rule", "off"}}}});
  // The CLI's messages name its flags, as before.
  const auto dir = temp_dir("serve_steer_errors");
  write_file(dir / "prompt.txt", kPrompt);
  const std::string cli = "generate -m " + quoted(model) + " --file " + quoted(dir / "prompt.txt") +
                          " -n 2 --steer rescale:2 --steer-spans 0:4";
  auto r = run_ragform(cli + " --steer-heads 99");
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("--steer-heads: head 99 is outside the model's"), std::string::npos)
      << r.err;
  r = run_ragform(cli + " --steer-layers 99");
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("--steer-layers: layer 99 is outside"), std::string::npos) << r.err;
}

}  // namespace
