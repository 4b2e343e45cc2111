// NativeReader with the prefix cache on and off (issue 21): the same generations, the same
// continuation log-probs and the same attention rows, bit for bit, for prompts that share long
// prefixes with prompts read before; the prefill accounting counts what was reused.
#include <gtest/gtest.h>

#include <cstring>

#include "reader/native_reader.h"
#include "support/test_support.h"

namespace ragform::reader {
namespace {

std::string stories() { return testing::shared_path("fixtures/models/stories260K.gguf").string(); }

NativeOptions opts(bool cache) {
  NativeOptions o;
  o.n_ctx = 512;
  o.prefix_cache = cache;
  return o;
}

const std::string kStory =
    "Once upon a time, there was a little girl named Lily. She loved to play in the park with her "
    "friend Tom. One day they found a big red ball under a tree.";

TEST(NativeReaderPrefix, SameNumbersWithAndWithoutTheCache) {
  REQUIRE_SHARED(model, "fixtures/models/stories260K.gguf");
  NativeReader on(stories(), opts(true)), off(stories(), opts(false));
  GenerateParams gp;
  gp.max_tokens = 16;
  const std::vector<std::string> prompts{kStory + " Lily said", kStory + " Tom said",
                                         kStory + " The ball", kStory + " Lily said"};
  for (int round = 0; round < 2; ++round) {
    auto a = on.generate_batch(prompts, gp), b = off.generate_batch(prompts, gp);
    ASSERT_EQ(a.size(), b.size());
    for (size_t i = 0; i < a.size(); ++i) {
      EXPECT_EQ(a[i].ids, b[i].ids) << "prompt " << i;
      EXPECT_EQ(a[i].prompt_tokens, b[i].prompt_tokens);
    }
  }
  // Continuation log-probs (SURE's oracle score) after a cached prompt.
  for (const char* cont : {" and they played.", " Tom was happy."}) {
    ScoreResult a = on.score(kStory, cont), b = off.score(kStory, cont);
    ASSERT_EQ(a.tokens.size(), b.tokens.size());
    for (size_t i = 0; i < a.tokens.size(); ++i) {
      EXPECT_EQ(a.tokens[i].id, b.tokens[i].id);
      EXPECT_EQ(std::memcmp(&a.tokens[i].logprob, &b.tokens[i].logprob, sizeof(float)), 0);
    }
    EXPECT_EQ(a.sum, b.sum);
  }
  // The final token's attention (C-NORM's ABS) and an earlier query row.
  AttentionQuery q;
  q.layers = {0, -1};
  q.query_positions = {-1, -3};
  AttentionResult a = on.attention(kStory + " Lily said", q),
                  b = off.attention(kStory + " Lily said", q);
  ASSERT_EQ(a.rows.size(), b.rows.size());
  for (size_t i = 0; i < a.rows.size(); ++i) {
    EXPECT_EQ(a.rows[i].query_position, b.rows[i].query_position);
    ASSERT_EQ(a.rows[i].heads, b.rows[i].heads);
    EXPECT_EQ(a.rows[i].mean, b.rows[i].mean);
  }
  // Hidden states of every token: computed in full either way.
  EXPECT_EQ(on.hidden(kStory, -1).states, off.hidden(kStory, -1).states);

  const PrefillCounts con = *on.prefill_counts(), coff = *off.prefill_counts();
  EXPECT_EQ(con.submitted, coff.submitted);
  EXPECT_EQ(coff.computed, coff.submitted);
  EXPECT_LT(con.computed * 3, con.submitted);  // the story is reused almost every time
}

}  // namespace
}  // namespace ragform::reader
