// serve's engine shares the reader's prefix cache (issue 21): completions whose prompts share a
// long prefix give the same tokens as with the cache off, and the engine prefills fewer tokens.
#include <gtest/gtest.h>

#include "reader/native_reader.h"
#include "server/engine.h"
#include "support/test_support.h"

namespace ragform::server {
namespace {

std::vector<runtime::GenerateOutput> run_all(reader::NativeReader& r,
                                             const std::vector<std::string>& prompts,
                                             EngineStats& stats) {
  SchedulerOptions so;
  so.n_ctx = 512;
  so.max_batch = 2;
  Engine e(r, so);
  std::vector<runtime::GenerateOutput> out;
  for (const auto& p : prompts) {
    runtime::GenerateOptions o;
    o.max_tokens = 12;
    out.push_back(e.complete(r.prompt_tokens(p), o).get());  // one after another: reuse
  }
  stats = e.stats();
  return out;
}

TEST(EnginePrefix, SharedSystemPromptIsPrefilledOnce) {
  REQUIRE_SHARED(model, "fixtures/models/stories260K.gguf");
  const std::string sys =
      "Once upon a time, there was a little girl named Lily. She loved to play in the park with "
      "her friend Tom. ";
  const std::vector<std::string> prompts{sys + "One day", sys + "Tom said", sys + "Lily saw",
                                         sys + "One day"};
  reader::NativeOptions on_opt, off_opt;
  on_opt.n_ctx = off_opt.n_ctx = 512;
  off_opt.prefix_cache = false;
  reader::NativeReader on(model.string(), on_opt), off(model.string(), off_opt);
  EngineStats son, soff;
  auto a = run_all(on, prompts, son), b = run_all(off, prompts, soff);
  ASSERT_EQ(a.size(), b.size());
  for (size_t i = 0; i < a.size(); ++i) EXPECT_EQ(a[i].ids, b[i].ids) << "prompt " << i;
  EXPECT_EQ(son.prompt_tokens, soff.prompt_tokens);
  EXPECT_EQ(soff.prompt_tokens_computed, soff.prompt_tokens);
  EXPECT_LT(son.prompt_tokens_computed * 2, son.prompt_tokens);
}

}  // namespace
}  // namespace ragform::server
