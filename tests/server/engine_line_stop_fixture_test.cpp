// The stop rule "after the first non-empty line" (runtime::GenerateOptions::stop_after_line) on
// stories260K, in the two decode loops that share it (runtime/generate.h apply_stop): greedy
// generation with the rule is the generation without it cut at runtime::line_stop_at, and the
// server's continuous-batching engine gives the same ids, text and finish reason, its streamed
// pieces concatenating to that text.
#include <gtest/gtest.h>

#include <mutex>

#include "engine/runtime/context.h"
#include "engine/runtime/generate.h"
#include "reader/native_reader.h"
#include "server/engine.h"
#include "support/test_support.h"

namespace ragform::server {
namespace {

TEST(EngineLineStopFixture, GenerateAndEngineStopAfterTheFirstLine) {
  REQUIRE_SHARED(path, "fixtures/models/stories260K.gguf");
  reader::NativeOptions no;
  no.n_ctx = 256;
  reader::NativeReader rd(path.string(), no);
  const std::vector<std::string> prompts = {"Tom had a ball", "Once upon a time", "Lily and Tom",
                                            "The little dog.\n"};
  runtime::GenerateOptions full;
  full.max_tokens = 120;
  runtime::GenerateOptions line = full;
  line.stop_after_line = true;

  std::vector<runtime::GenerateOutput> want;
  size_t stopped = 0;
  {
    runtime::ContextParams cp;
    cp.n_ctx = 256;
    runtime::Context ctx(rd.model(), cp);
    for (const std::string& p : prompts) {
      const auto ids = rd.prompt_tokens(p);
      const runtime::GenerateOutput all = runtime::generate(ctx, rd.tokenizer(), {ids}, full).at(0);
      const runtime::GenerateOutput one = runtime::generate(ctx, rd.tokenizer(), {ids}, line).at(0);
      const size_t cut = runtime::line_stop_at(all.text);
      if (cut == std::string::npos) {
        EXPECT_EQ(one.text, all.text) << p;
        EXPECT_EQ(one.finish_reason, all.finish_reason) << p;
      } else {
        ++stopped;
        EXPECT_EQ(one.text, all.text.substr(0, cut)) << p;
        EXPECT_EQ(one.finish_reason, "stop") << p;
        ASSERT_LE(one.ids.size(), all.ids.size()) << p;
        EXPECT_TRUE(std::equal(one.ids.begin(), one.ids.end(), all.ids.begin())) << p;
      }
      EXPECT_EQ(runtime::line_stop_at(one.text), std::string::npos) << p;
      want.push_back(one);
    }
  }
  EXPECT_GT(stopped, 0u) << "no prompt reached a newline after text: the rule was not exercised";

  SchedulerOptions eo;
  eo.n_ctx = 256;
  eo.max_batch = 2;
  Engine eng(rd, eo);
  std::mutex mu;
  std::vector<std::string> streamed(prompts.size());
  std::vector<std::future<runtime::GenerateOutput>> futs;
  for (size_t i = 0; i < prompts.size(); ++i) {
    CompletionHooks h;
    h.on_text = [&, i](const std::string& d) {
      std::lock_guard<std::mutex> lock(mu);
      streamed[i] += d;
      return true;
    };
    futs.push_back(eng.complete(rd.prompt_tokens(prompts[i]), line, h));
  }
  for (size_t i = 0; i < prompts.size(); ++i) {
    const runtime::GenerateOutput got = futs[i].get();
    EXPECT_EQ(got.ids, want[i].ids) << prompts[i];
    EXPECT_EQ(got.text, want[i].text) << prompts[i];
    EXPECT_EQ(got.finish_reason, want[i].finish_reason) << prompts[i];
    std::lock_guard<std::mutex> lock(mu);
    EXPECT_EQ(streamed[i], want[i].text) << prompts[i];
  }
}

}  // namespace
}  // namespace ragform::server
