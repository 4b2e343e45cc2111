// Readers held side by side, as a library user (or the Python package) holds them: each reader
// runs on a pool it owns or shares, never on a global that another reader can replace. Run under
// ASan (the first test read freed memory when a second reader resized a global pool) and TSan
// (label "concurrency").
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include <gtest/gtest.h>

#include "reader/native_reader.h"
#include "support/test_support.h"

namespace ragform::reader {
namespace {

const std::vector<std::string> kPrompts = {"Once upon a time", "Lily and Tom went to the park",
                                           "The cat", "One day, a little girl"};

std::vector<std::string> generate_all(NativeReader& r) {
  GenerateParams p;
  p.max_tokens = 24;
  p.ignore_eos = true;
  std::vector<std::string> out;
  for (const auto& prompt : kPrompts) out.push_back(r.generate(prompt, p).text);
  return out;
}

TEST(NativeReaderConcurrency, SecondReaderLeavesTheFirstOnesPoolAlone) {
  REQUIRE_SHARED(stories, "fixtures/models/stories260K.gguf");
  std::vector<std::string> expected;
  {
    NativeReader alone(stories.string(), {});
    expected = generate_all(alone);
  }
  NativeReader a(stories.string(), {});  // all cores
  NativeOptions ob;
  ob.engine.threads = 3;
  NativeReader b(stories.string(), ob);
  EXPECT_EQ(generate_all(a), expected);
  EXPECT_EQ(generate_all(b), expected);
  EXPECT_EQ(b.pool()->size(), 3);
}

// Two models in two threads at once give the tokens each gives alone: with a pool each, and with
// one pool shared by both (its calls serialise).
void two_models_two_threads(bool shared_pool) {
  REQUIRE_SHARED(m1, "fixtures/models/stories260K.gguf");
  REQUIRE_SHARED(m2, "fixtures/models/tinyq-q8_0.gguf");
  NativeOptions o1, o2;
  if (shared_pool) {
    o1.engine.pool = std::make_shared<ThreadPool>(2);
    o2.engine.pool = o1.engine.pool;
  } else {
    o1.engine.threads = 2;
    o2.engine.threads = 2;
  }
  NativeReader r1(m1.string(), o1), r2(m2.string(), o2);
  const auto e1 = generate_all(r1), e2 = generate_all(r2);
  std::vector<std::string> g1, g2;
  for (int round = 0; round < 2; ++round) {
    std::thread t1([&] { g1 = generate_all(r1); });
    std::thread t2([&] { g2 = generate_all(r2); });
    t1.join();
    t2.join();
    EXPECT_EQ(g1, e1) << "round " << round;
    EXPECT_EQ(g2, e2) << "round " << round;
  }
}

TEST(NativeReaderConcurrency, TwoModelsInTwoThreadsWithAPoolEach) { two_models_two_threads(false); }

TEST(NativeReaderConcurrency, TwoModelsInTwoThreadsSharingOnePool) { two_models_two_threads(true); }

// Two threads calling one reader: its mutex serialises them; results equal the sequential ones.
TEST(NativeReaderConcurrency, TwoThreadsOneReader) {
  REQUIRE_SHARED(stories, "fixtures/models/stories260K.gguf");
  NativeReader r(stories.string(), {});
  const auto expected = generate_all(r);
  std::vector<std::string> g1, g2;
  std::thread t1([&] { g1 = generate_all(r); });
  std::thread t2([&] { g2 = generate_all(r); });
  t1.join();
  t2.join();
  EXPECT_EQ(g1, expected);
  EXPECT_EQ(g2, expected);
}

}  // namespace
}  // namespace ragform::reader
