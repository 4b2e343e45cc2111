// Context::eval runs a batch larger than ContextParams::max_pass_tokens as several passes
// (context.h): on tiny-gemma3 (sliding layers of window 16 and a global one) the outputs are the
// bits of one pass — logits (all rows, or the last), hidden states, attention taps whose queries
// fall in different passes and come unsorted, several sequences at once — and a long prompt given
// in one eval() call leaves its sliding layers holding a window and a pass, not every row.
#include <gtest/gtest.h>

#include <cstring>

#include "context_feed.h"
#include "engine/model/model.h"
#include "engine/runtime/context.h"
#include "support/test_support.h"

namespace ragform::runtime {
namespace {

using testing::random_tokens;

// Everything one eval() of `inputs` returns, flattened in order.
std::vector<float> flat(const std::vector<SeqOutput>& outs) {
  std::vector<float> v;
  for (const SeqOutput& o : outs) {
    for (int p : o.logit_positions) v.push_back(float(p));
    v.insert(v.end(), o.logits.begin(), o.logits.end());
    for (const AttentionRow& r : o.attention) {
      v.push_back(float(r.layer));
      v.push_back(float(r.query_pos));
      for (const auto& h : r.heads) v.insert(v.end(), h.begin(), h.end());
    }
    v.insert(v.end(), o.hidden.begin(), o.hidden.end());
  }
  return v;
}

bool same_bits(const std::vector<float>& a, const std::vector<float>& b) {
  return a.size() == b.size() && std::memcmp(a.data(), b.data(), a.size() * sizeof(float)) == 0;
}

// inputs on fresh sequences 0..n-1 of a context that runs passes of at most `pass` tokens.
std::vector<float> run(const model::Model& m, int pass, std::vector<SeqInput> inputs,
                       size_t* kv_bytes = nullptr) {
  ContextParams cp{4096, KvType::F32, nullptr};
  cp.max_pass_tokens = pass;
  Context ctx(m, cp);
  for (SeqInput& in : inputs) in.seq = ctx.new_sequence();
  const auto v = flat(ctx.eval(inputs));
  if (kv_bytes) *kv_bytes = ctx.kv_bytes();
  for (const SeqInput& in : inputs) EXPECT_EQ(ctx.n_past(in.seq), int(in.tokens.size()));
  return v;
}

TEST(PassSplit, OutputsAreThoseOfOnePass) {
  REQUIRE_SHARED(path, "fixtures/models/tiny-gemma3.gguf");
  auto m = model::Model::load(path.string());
  const int V = m->hp().n_vocab;
  SeqInput all;  // every row's logits and hidden states, taps in two passes, unsorted
  all.tokens = random_tokens(700, V, 1);
  all.logits = LogitsMode::All;
  all.hidden_layer = 2;
  all.attn_layers = {5, 0};
  all.attn_queries = {650, 3, 300, 3, 699};
  SeqInput last;  // the last row's logits and the default tap (the final token)
  last.tokens = random_tokens(333, V, 2);
  last.attn_layers = {1};
  SeqInput none;  // nothing read
  none.tokens = random_tokens(90, V, 3);
  none.logits = LogitsMode::None;
  const std::vector<SeqInput> inputs = {all, last, none};
  const auto one = run(*m, 1 << 20, inputs);
  ASSERT_FALSE(one.empty());
  for (int pass : {1000, 256, 100, 7})
    EXPECT_TRUE(same_bits(one, run(*m, pass, inputs))) << "passes of " << pass << " tokens";
}

TEST(PassSplit, ALongPromptInOneCallHoldsAWindowAndAPass) {
  REQUIRE_SHARED(path, "fixtures/models/tiny-gemma3.gguf");
  auto m = model::Model::load(path.string());
  SeqInput in;
  in.tokens = random_tokens(3000, m->hp().n_vocab, 4);
  size_t one_pass = 0, passes = 0;
  const auto a = run(*m, 1 << 20, {in}, &one_pass), b = run(*m, 256, {in}, &passes);
  EXPECT_TRUE(same_bits(a, b));
  // One pass keeps all 3,000 rows of every layer; passes of 256 keep 3,000 rows of the global
  // layer and at most 2 x 16 + 64 + 256, rounded to 256, of the five sliding ones.
  const double row = double(one_pass) / (6.0 * 3000);
  EXPECT_LE(double(passes), row * (3000 + 5 * 512) * 1.02) << passes << " vs " << one_pass;
}

}  // namespace
}  // namespace ragform::runtime
