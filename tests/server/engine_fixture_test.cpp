// The server engine in process, on stories260K: continuous batching gives what runtime::generate
// gives one prompt at a time — greedy and seeded sampling, stop strings, max_tokens 0 — for
// completions submitted together and while others are running; streamed pieces concatenate to
// the final text and never carry text a stop string later removes; a cancelled completion frees
// its place. Also stable_prefix (what may be streamed) on hand-made cases.
#include <gtest/gtest.h>

#include <mutex>

#include "engine/runtime/context.h"
#include "engine/runtime/generate.h"
#include "reader/native_reader.h"
#include "server/engine.h"
#include "support/test_support.h"

namespace ragform::server {
namespace {

using testing::shared_path;

TEST(StablePrefix, HoldsBackStopPrefixesAndSplitCharacters) {
  EXPECT_EQ(stable_prefix("abc", {}), 3u);
  EXPECT_EQ(stable_prefix("", {"x"}), 0u);
  // "wor" may become "world": held back.
  EXPECT_EQ(stable_prefix("Hello wor", {"world"}), 6u);
  EXPECT_EQ(stable_prefix("Hello word", {"world"}), 10u);
  EXPECT_EQ(stable_prefix("line\n", {"\n\n"}), 4u);
  EXPECT_EQ(stable_prefix("xy", {"xyz"}), 0u);
  // The longest held-back tail over all stop strings wins.
  EXPECT_EQ(stable_prefix("foo #", {"END", "##"}), 4u);
  EXPECT_EQ(stable_prefix("foo EN", {"END", "##"}), 4u);
  EXPECT_EQ(stable_prefix("foo EN#", {"END", "##"}), 6u);
  // A stop string that is a suffix of itself ("aa" ends "a"): "ba" holds one byte back.
  EXPECT_EQ(stable_prefix("ba", {"aa"}), 1u);
  // Incomplete UTF-8 at the end: € is E2 82 AC, é is C3 A9, 😀 is F0 9F 98 80.
  EXPECT_EQ(stable_prefix("abc\xC3", {}), 3u);
  EXPECT_EQ(stable_prefix("abc\xC3\xA9", {}), 5u);
  EXPECT_EQ(stable_prefix("abc\xE2\x82", {}), 3u);
  EXPECT_EQ(stable_prefix("abc\xE2\x82\xAC", {}), 6u);
  EXPECT_EQ(stable_prefix("a\xF0\x9F\x98", {}), 1u);
  EXPECT_EQ(stable_prefix("a\xF0\x9F\x98\x80", {}), 5u);
  // Both rules: the stop tail goes first, then the character boundary.
  EXPECT_EQ(stable_prefix("a\xC3\xA9!", {"!!"}), 3u);
}

struct Case {
  std::string prompt;
  runtime::GenerateOptions opt;
};

std::vector<Case> cases() {
  std::vector<Case> cs;
  auto add = [&](std::string p, int n, double temp, uint64_t seed, std::vector<std::string> stop) {
    Case c;
    c.prompt = std::move(p);
    c.opt.max_tokens = n;
    c.opt.sampling.temperature = temp;
    c.opt.sampling.top_k = temp > 0 ? 40 : 0;
    c.opt.sampling.seed = seed;
    c.opt.stop = std::move(stop);
    cs.push_back(std::move(c));
  };
  add("Once upon a time", 40, 0, 0, {});
  add("Lily and Tom", 30, 0, 0, {"."});  // stops at the first sentence end
  add("The little dog", 50, 0.9, 7, {});
  add("One day, a girl named", 25, 0.8, 123, {"the park"});
  add("The sun was", 0, 0, 0, {});
  add("Tom had a ball", 60, 0, 0, {"\n"});
  return cs;
}

TEST(ServeEngineFixture, ContinuousBatchingEqualsGenerateOneByOne) {
  REQUIRE_SHARED(path, "fixtures/models/stories260K.gguf");
  reader::NativeOptions no;
  no.n_ctx = 256;
  reader::NativeReader rd(path.string(), no);

  // The reference: runtime::generate, one prompt at a time on a fresh context.
  std::vector<Case> cs = cases();
  std::vector<runtime::GenerateOutput> want;
  {
    runtime::ContextParams cp;
    cp.n_ctx = 256;
    runtime::Context ctx(rd.model(), cp);
    for (auto& c : cs)
      want.push_back(
          runtime::generate(ctx, rd.tokenizer(), {rd.prompt_tokens(c.prompt)}, c.opt).at(0));
  }
  EXPECT_EQ(want[1].finish_reason, "stop");

  SchedulerOptions eo;
  eo.n_ctx = 256;
  eo.max_batch = 4;  // fewer places than cases: later ones join as earlier ones finish
  Engine eng(rd, eo);
  std::mutex mu;
  std::vector<std::string> streamed(cs.size());
  std::vector<int> finished(cs.size(), 0);
  std::vector<std::future<runtime::GenerateOutput>> futs;
  for (size_t i = 0; i < cs.size(); ++i) {
    CompletionHooks h;
    h.on_text = [&, i](const std::string& d) {
      std::lock_guard<std::mutex> lock(mu);
      streamed[i] += d;
      return true;
    };
    h.on_finish = [&, i] {
      std::lock_guard<std::mutex> lock(mu);
      finished[i]++;
    };
    futs.push_back(eng.complete(rd.prompt_tokens(cs[i].prompt), cs[i].opt, h));
  }
  for (size_t i = 0; i < cs.size(); ++i) {
    auto got = futs[i].get();
    EXPECT_EQ(got.ids, want[i].ids) << cs[i].prompt;
    EXPECT_EQ(got.text, want[i].text) << cs[i].prompt;
    EXPECT_EQ(got.finish_reason, want[i].finish_reason) << cs[i].prompt;
    EXPECT_EQ(got.prompt_tokens, want[i].prompt_tokens);
    std::lock_guard<std::mutex> lock(mu);
    EXPECT_EQ(streamed[i], want[i].text) << cs[i].prompt;
    EXPECT_EQ(finished[i], 1);
  }
  EngineStats st = eng.stats();
  EXPECT_EQ(st.sequences, cs.size());
  EXPECT_EQ(st.largest_batch, 4);
  EXPECT_EQ(st.active, 0);
  // Shared passes: fewer steps than the tokens generated.
  size_t tokens = 0;
  for (auto& w : want) tokens += w.ids.size();
  EXPECT_LT(st.steps, tokens);

  // A completion submitted while another runs joins it and still gives the same text.
  auto long_one = eng.complete(rd.prompt_tokens(cs[0].prompt), cs[0].opt);
  auto joiner = eng.complete(rd.prompt_tokens(cs[2].prompt), cs[2].opt);
  EXPECT_EQ(joiner.get().text, want[2].text);
  EXPECT_EQ(long_one.get().text, want[0].text);

  // Cancelling from on_text: the completion ends early, its place is freed.
  int calls = 0;
  CompletionHooks cancel;
  cancel.on_text = [&](const std::string&) { return ++calls < 3; };
  runtime::GenerateOptions o = cs[0].opt;
  o.max_tokens = 100;
  auto c = eng.complete(rd.prompt_tokens(cs[0].prompt), o, cancel).get();
  EXPECT_EQ(c.finish_reason, "cancelled");
  EXPECT_EQ(calls, 3);
  EXPECT_LT(c.ids.size(), 10u);
  EXPECT_EQ(eng.stats().active, 0);

  // Work on the engine thread between steps; a prompt longer than the context fails its future.
  int n = 0;
  eng.run([&] { n = rd.count_tokens("Once upon a time"); }).get();
  EXPECT_EQ(n, int(rd.prompt_tokens("Once upon a time").size()));
  std::vector<int32_t> too_long(300, rd.prompt_tokens("a").back());
  EXPECT_THROW(eng.complete(too_long, cs[0].opt).get(), Error);
  EXPECT_EQ(eng.complete(rd.prompt_tokens(cs[0].prompt), cs[0].opt).get().text, want[0].text);
}

}  // namespace
}  // namespace ragform::server
