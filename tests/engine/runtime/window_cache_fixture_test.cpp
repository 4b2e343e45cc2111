// The sliding-window layers' bounded KV cache (forward.h, SeqCache::windowed): on tiny-gemma3
// (layers 0-4 slide over 16 keys, layer 5 is global) a context that drops the rows no query can
// see gives the same bits as one that keeps every row (ContextParams::keep_all_rows) — logits and
// attention taps, F32 and F16 caches, prompts of 300, 2,000 and 9,000 tokens arriving in one
// batch, in chunks that cross tiles and drops, and token by token, steered by every rule, next to
// other sequences — while its sliding layers hold a window and a batch instead of every row.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstring>
#include <string>

#include "context_feed.h"
#include "engine/model/model.h"
#include "engine/runtime/attention.h"
#include "engine/runtime/context.h"
#include "support/test_support.h"

namespace ragform::runtime {
namespace {

using testing::random_tokens;

struct Fed {
  std::vector<float> logits;     // every step's last-row logits, in order
  std::vector<float> attention;  // every tapped row, every head, in order
  size_t kv_bytes = 0;           // after the last step
};

// Feeds `toks` to one fresh sequence in the given chunks (the rest token by token), taking the
// last row's logits and the attention of a sliding layer (0) and the global one (5) at each step.
Fed feed(Context& ctx, const std::vector<int32_t>& toks, const std::vector<int>& chunks,
         const Steering& steer = {}) {
  Fed run;
  const int seq = ctx.new_sequence();
  if (steer.active()) ctx.set_steering(seq, steer);
  size_t at = 0, k = 0;
  while (at < toks.size()) {
    const size_t n = k < chunks.size() ? size_t(chunks[k++]) : 1;
    SeqInput in;
    in.seq = seq;
    in.tokens.assign(toks.begin() + long(at), toks.begin() + long(std::min(toks.size(), at + n)));
    in.attn_layers = {0, 5};
    auto out = ctx.eval({in});
    run.logits.insert(run.logits.end(), out[0].logits.begin(), out[0].logits.end());
    for (const AttentionRow& r : out[0].attention)
      for (const auto& h : r.heads) run.attention.insert(run.attention.end(), h.begin(), h.end());
    at += in.tokens.size();
  }
  run.kv_bytes = ctx.kv_bytes();
  ctx.free_sequence(seq);
  return run;
}

bool same_bits(const std::vector<float>& a, const std::vector<float>& b) {
  return a.size() == b.size() && std::memcmp(a.data(), b.data(), a.size() * sizeof(float)) == 0;
}

#define REQUIRE_TINY_GEMMA3(m)                                  \
  REQUIRE_SHARED(m##_path, "fixtures/models/tiny-gemma3.gguf"); \
  auto m = model::Model::load(m##_path.string())

TEST(WindowCache, TheModelHasSlidingLayers) {
  REQUIRE_TINY_GEMMA3(m);
  ASSERT_EQ(m->hp().n_swa, 16);
  ASSERT_TRUE(m->hp().is_swa(0));
  ASSERT_FALSE(m->hp().is_swa(5));
}

// Prompt lengths, chunkings (the rest token by token) and both cache types.
struct Case {
  int n;
  std::vector<int> chunks;
  KvType kv;
};

class WindowCacheCase : public ::testing::TestWithParam<Case> {};

TEST_P(WindowCacheCase, SameBitsAsKeepingEveryRowWithFewerRows) {
  REQUIRE_TINY_GEMMA3(m);
  const Case& c = GetParam();
  const auto toks = random_tokens(c.n, m->hp().n_vocab, uint32_t(c.n));
  ContextParams keep{c.n, c.kv, nullptr};
  keep.keep_all_rows = true;
  Context all(*m, keep);
  Context win(*m, {c.n, c.kv, nullptr});
  const Fed a = feed(all, toks, c.chunks), w = feed(win, toks, c.chunks);
  EXPECT_TRUE(same_bits(a.logits, w.logits));
  EXPECT_TRUE(same_bits(a.attention, w.attention));
  ASSERT_FALSE(w.attention.empty());
  // Five of six layers slide: each holds at most its window, a tile and the largest batch, rounded
  // up to the 256-row growth step, where the other context's layers hold every row.
  const int biggest = std::max(1, *std::max_element(c.chunks.begin(), c.chunks.end()));
  const int bound = (std::max(biggest + 16 + kKeyTile, 2 * 16 + kKeyTile) + 255) / 256 * 256;
  const double row_bytes = double(a.kv_bytes) / (6.0 * c.n);
  EXPECT_LE(double(w.kv_bytes), row_bytes * (c.n + 5.0 * std::min(bound, c.n)) * 1.02)
      << w.kv_bytes << " vs " << a.kv_bytes;
  if (2 * bound < c.n) {
    EXPECT_LT(double(w.kv_bytes), 0.6 * double(a.kv_bytes));
  }
}

INSTANTIATE_TEST_SUITE_P(Prompts, WindowCacheCase,
                         ::testing::Values(Case{300, {300}, KvType::F32},
                                           Case{300, {17, 64, 100}, KvType::F16},
                                           Case{2000, {2000}, KvType::F32},
                                           Case{2000, {1, 63, 512, 700}, KvType::F32},
                                           Case{2000, {1000, 900, 50}, KvType::F16},
                                           Case{9000, {2048, 2048, 2048, 2048, 700}, KvType::F32},
                                           Case{9000, {4500, 4400, 60}, KvType::F16}));

// Steered rows start at the window's first tile too (steer_row from `first`): every rule, spans
// before the window of the later rows and inside it.
TEST(WindowCache, SteeredRowsKeepTheirBits) {
  REQUIRE_TINY_GEMMA3(m);
  const int n = 700;
  const auto toks = random_tokens(n, m->hp().n_vocab, 77);
  std::vector<Steering> rules(4);
  rules[0].rule = Steering::Rescale;
  rules[0].value = 3.0f;
  rules[0].spans = {{10, 40}, {600, 640}};
  rules[0].prompt_end = 650;
  rules[1].rule = Steering::Reallocate;
  rules[1].value = 0.4f;
  rules[1].spans = {{5, 30}, {300, 330}};
  rules[2].rule = Steering::Reallocate;
  rules[2].spans = {{5, 30}, {300, 330}, {640, 660}};
  rules[2].shares = {0.2f, 0.3f, 0.1f};
  rules[3].rule = Steering::Redistribute;
  rules[3].spans = {{5, 30}, {300, 330}, {640, 660}};
  rules[3].shares = {1.0f, 2.0f, 0.5f};
  for (Steering& st : rules) {
    st.layers = {0, 2, 5};
    ContextParams keep{n, KvType::F32, nullptr};
    keep.keep_all_rows = true;
    Context all(*m, keep);
    Context win(*m, {n, KvType::F32, nullptr});
    const std::vector<int> chunks{300, 1, 100, 250};
    const Fed a = feed(all, toks, chunks, st), w = feed(win, toks, chunks, st);
    EXPECT_TRUE(same_bits(a.logits, w.logits)) << "rule " << int(st.rule);
    EXPECT_TRUE(same_bits(a.attention, w.attention)) << "rule " << int(st.rule);
    // And the rule did something: the unsteered run differs.
    Context plain(*m, {n, KvType::F32, nullptr});
    EXPECT_FALSE(same_bits(feed(plain, toks, chunks).logits, w.logits)) << "rule " << int(st.rule);
  }
}

// Several sequences in one batch, each at its own position: the windowed context equals the other.
TEST(WindowCache, SequencesInOneBatch) {
  REQUIRE_TINY_GEMMA3(m);
  ContextParams keep{3000, KvType::F32, nullptr};
  keep.keep_all_rows = true;
  Context all(*m, keep);
  Context win(*m, {3000, KvType::F32, nullptr});
  auto step = [&](Context& ctx) {
    std::vector<float> got;
    std::vector<int> seqs{ctx.new_sequence(), ctx.new_sequence(), ctx.new_sequence()};
    const int lens[3][3] = {{900, 1, 300}, {40, 700, 1}, {1, 1, 1500}};
    for (int round = 0; round < 3; ++round) {
      std::vector<SeqInput> batch;
      for (int s = 0; s < 3; ++s) {
        SeqInput in;
        in.seq = seqs[size_t(s)];
        in.tokens = random_tokens(lens[s][round], m->hp().n_vocab, uint32_t(10 * round + s));
        in.attn_layers = {1};
        batch.push_back(in);
      }
      for (const SeqOutput& o : ctx.eval(batch)) {
        got.insert(got.end(), o.logits.begin(), o.logits.end());
        for (const auto& h : o.attention[0].heads) got.insert(got.end(), h.begin(), h.end());
      }
    }
    return got;
  };
  EXPECT_TRUE(same_bits(step(all), step(win)));
}

// truncate() back into the window works; behind the dropped rows it refuses and says why, leaving
// the sequence as it was; a context that keeps every row truncates anywhere.
TEST(WindowCache, TruncateNeedsTheRowsOfTheWindow) {
  REQUIRE_TINY_GEMMA3(m);
  const int n = 1200;
  const auto toks = random_tokens(n, m->hp().n_vocab, 3);
  ContextParams keep{n, KvType::F32, nullptr};
  keep.keep_all_rows = true;
  Context all(*m, keep);
  Context win(*m, {n, KvType::F32, nullptr});
  auto fill = [&](Context& ctx, int seq, int from, int to) {
    SeqInput in;
    in.seq = seq;
    in.tokens.assign(toks.begin() + from, toks.begin() + to);
    return ctx.eval({in})[0].logits;
  };
  const int sa = all.new_sequence(), sw = win.new_sequence();
  fill(all, sa, 0, 600);
  fill(all, sa, 600, n);
  fill(win, sw, 0, 600);
  fill(win, sw, 600, n);  // drops the sliding layers' rows before the window of position 600
  // Back 10 tokens: the window of position 1190 is still held.
  win.truncate(sw, n - 10);
  all.truncate(sa, n - 10);
  EXPECT_TRUE(same_bits(fill(all, sa, n - 10, n), fill(win, sw, n - 10, n)));
  try {
    win.truncate(sw, 100);
    ADD_FAILURE() << "truncating behind the dropped rows was accepted";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("sliding-window layers hold positions from"),
              std::string::npos)
        << e.what();
  }
  EXPECT_EQ(win.n_past(sw), n);
  all.truncate(sa, 100);
  EXPECT_EQ(all.n_past(sa), 100);
}

}  // namespace
}  // namespace ragform::runtime
