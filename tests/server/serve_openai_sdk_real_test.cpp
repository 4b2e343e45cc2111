// The official OpenAI Python SDK against `ragform serve` on the trained reader and encoder: the
// SDK's own request builders, with their defaults (base64 embeddings, the SDK's message objects
// sent back, streaming), each answer checked against the same request sent as plain JSON
// (tests/server/openai_sdk_calls.py). Compatibility found by adversarial passes one shape at a
// time (issue 40: base64, null keys of a message, text_offset) is checked here on every run.
// The SDK is installed by scripts/models.sh in the models' environment (RAGFORM_MODELS_PYTHON).
#include <cstdlib>
#include <string>

#include "serve_harness.h"
#include "support/real_models.h"

namespace ragform::testing {
namespace {

TEST(ServeOpenAiSdk, TheSdksOwnCallsAgreeWithPlainRequests) {
  REQUIRE_REAL_MODEL(gemma, "RAGFORM_GEMMA");
  REQUIRE_REAL_MODEL(minilm, "RAGFORM_MINILM");
  const std::string py = real_model_path("RAGFORM_MODELS_PYTHON");
  if (py.empty())
    GTEST_SKIP() << "RAGFORM_MODELS_PYTHON is not set: install the models and the SDK with "
                    "`eval \"$(scripts/models.sh --print)\"`";
  const auto dir = temp_dir("openai-sdk");
  if (std::system(("'" + py + "' -c 'import openai' >/dev/null 2>&1").c_str()) != 0)
    GTEST_SKIP() << py << " has no openai package: run scripts/models.sh";
  // The trained Gemma's file carries no chat template: the server is told its family.
  ServeProcess dec({"-m", gemma, "--chat-template", "gemma", "--api-key", "sdk-key"});
  ServeProcess enc({"-m", minilm, "-t", "1", "--api-key", "sdk-key"});
  const std::filesystem::path script =
      std::filesystem::path(RAGFORM_SOURCE_DIR) / "tests" / "server" / "openai_sdk_calls.py";
  const std::string cmd = "'" + py + "' " + quoted(script) +
                          " http://127.0.0.1:" + std::to_string(dec.port()) +
                          " http://127.0.0.1:" + std::to_string(enc.port()) + " sdk-key >" +
                          quoted(dir / "out") + " 2>" + quoted(dir / "err");
  const int status = std::system(cmd.c_str());
  const std::string out = read_file(dir / "out"), err = read_file(dir / "err");
  EXPECT_EQ(status, 0) << out << err;
  EXPECT_NE(out.find("checks passed"), std::string::npos) << out << err;
  EXPECT_EQ(dec.stop(), 0) << dec.log();
  EXPECT_EQ(enc.stop(), 0) << enc.log();
}

}  // namespace
}  // namespace ragform::testing
