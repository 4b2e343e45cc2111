// The C-NORM profile loader's errors (profile_from_json): a value that is not a profile at all is
// said to be one ("not a C-NORM profile", with what was expected), not "missing field
// 'model_sha256'"; the prefix names the profile once ("profile: ...", never "profile: profile:");
// the server's /v1/rag/normalize forwards the message as its 400.
#include <gtest/gtest.h>

#include "base/error.h"
#include "pipelines/cnorm/calibrate.h"
#include "server/serve_harness.h"
#include "support/test_support.h"

namespace ragform::cnorm {
namespace {

std::string error_of(const nlohmann::json& j, const std::string& where) {
  try {
    profile_from_json(j, where);
  } catch (const Error& e) {
    return e.what();
  }
  return "";
}

TEST(CnormProfileErrors, NotAProfileSaysWhatWasExpected) {
  const std::string s = error_of("x", "request 'profile'");
  EXPECT_EQ(s.rfind("request 'profile': not a C-NORM profile: expected the JSON object `cnorm "
                    "calibrate` writes (model_sha256, task, p, seed, S, best, candidates), got "
                    "string",
                    0),
            0u)
      << s;
  EXPECT_NE(error_of(nlohmann::json::array(), "f.json")
                .find("f.json: profile: not a C-NORM "
                      "profile"),
            std::string::npos);
  EXPECT_NE(error_of({{"name", "x"}}, "f.json").find("got an object without those fields"),
            std::string::npos);
}

// Pass 17: `cnorm eval -m PROFILE.json --profile PROFILE.json` said the profile "was calibrated on
// another model", hashing the JSON file as the model; a model that is not a GGUF file is that
// error, before the profile's check.
TEST(CnormProfileErrors, AModelThatIsNotGgufIsSaidBeforeTheProfilesCheck) {
  const auto dir = testing::temp_dir("cnorm-profile-model");
  const nlohmann::json prof = {
      {"model_sha256", std::string(64, '0')},
      {"task", "qa"},
      {"p", 0.5},
      {"seed", 0},
      {"S", 6},
      {"best", "none"},
      {"candidates", {{{"delimiter", "none"}, {"abs_mean", 0.5}, {"abs_std", 0.1}}}}};
  testing::write_file(dir / "p.json", prof.dump());
  const auto r = testing::run_ragform(
      "cnorm eval -m " + testing::quoted(dir / "p.json") + " --profile " +
      testing::quoted(dir / "p.json") + " --task qa --input " +
      testing::quoted(testing::shared_dir() / "data/lost-in-the-middle/nq-open-oracle.jsonl.gz") +
      " -k 3 --limit 1 --store " + testing::quoted(dir / "s.sqlite"));
  EXPECT_NE(r.exit_code, 0);
  EXPECT_NE(r.err.find("not a GGUF file"), std::string::npos) << r.err;
  EXPECT_EQ(r.err.find("calibrated on another model"), std::string::npos) << r.err;
}

TEST(CnormProfileErrors, ThePrefixNamesTheProfileOnce) {
  const nlohmann::json partial = {{"model_sha256", ""}, {"task", "qa"}};
  EXPECT_EQ(error_of(partial, "profile"), "profile: missing field 'p'");
  EXPECT_EQ(error_of(partial, "request 'profile'"), "request 'profile': missing field 'p'");
  EXPECT_EQ(error_of(partial, "f.json"), "f.json: profile: missing field 'p'");
}

TEST(CnormProfileErrors, ServerForwardsTheLoadersMessage) {
  REQUIRE_SHARED(model, "fixtures/models/stories260K.gguf");
  ragform::testing::ServeProcess srv({"-m", model.string()});
  httplib::Client c("127.0.0.1", srv.port());
  auto r = c.Post("/v1/rag/normalize", R"({"profile": "x", "documents": ["a b c."]})",
                  "application/json");
  const std::string msg = ragform::testing::expect_api_error(r, 400);
  EXPECT_NE(msg.find("not a C-NORM profile"), std::string::npos) << msg;
  EXPECT_EQ(msg.find("missing field"), std::string::npos) << msg;
}

}  // namespace
}  // namespace ragform::cnorm
