// One ownership style for the engine's thread pool: whoever runs on a pool holds a share of it
// (runtime::Context and runtime::Encoder alike), a missing pool is made by one rule (shared_pool,
// engine_options.h) for EngineOptions and ContextParams, and loading a model takes no pool.
#include <gtest/gtest.h>

#include <memory>
#include <type_traits>

#include "engine/model/bert.h"
#include "engine/model/engine_options.h"
#include "engine/model/model.h"
#include "engine/runtime/context.h"
#include "engine/runtime/encoder.h"
#include "engine/tokenizer/tokenizer.h"
#include "support/test_support.h"

namespace ragform::testing {
namespace {

template <class T>
concept HasPool = requires(T t) {
  t.pool;
};

template <class R, class A, class B>
B second_parameter(R (*)(A, B));

// Loading a model takes what loading uses (the load mode and the kernel policy), not the pool and
// thread count that only running a model needs (a parameter it would ignore).
TEST(PoolOwnership, LoadingAModelTakesNoPool) {
  using ModelLoad = std::remove_cvref_t<decltype(second_parameter(&model::Model::load))>;
  using BertLoad = std::remove_cvref_t<decltype(second_parameter(&model::BertModel::load))>;
  EXPECT_FALSE(HasPool<ModelLoad>);
  EXPECT_FALSE(HasPool<BertLoad>);
  EXPECT_TRUE(HasPool<EngineOptions>);
  EXPECT_TRUE((std::is_base_of_v<ModelLoad, EngineOptions>));  // a reader passes its options on
}

TEST(PoolOwnership, OneRuleForAPoolOrThreads) {
  auto p = std::make_shared<ThreadPool>(2);
  EXPECT_EQ(shared_pool(p, 5), p);
  EXPECT_EQ(shared_pool(nullptr, 3)->size(), 3);
  EngineOptions e;
  e.threads = 3;
  EXPECT_EQ(e.pool_or_new()->size(), 3);
  e.pool = p;
  EXPECT_EQ(e.pool_or_new(), p);
}

TEST(PoolOwnership, ContextMakesItsPoolByTheRule) {
  REQUIRE_SHARED(path, "fixtures/models/stories260K.gguf");
  auto m = model::Model::load(path.string());
  runtime::ContextParams cp;
  cp.n_ctx = 64;
  cp.threads = 3;
  runtime::Context own(*m, cp);
  EXPECT_EQ(own.pool().size(), 3);
  cp.pool = std::make_shared<ThreadPool>(2);
  runtime::Context shared(*m, cp);
  EXPECT_EQ(&shared.pool(), cp.pool.get());
}

TEST(PoolOwnership, EncoderKeepsItsPoolAlive) {
  REQUIRE_SHARED(path, "fixtures/models/tiny-bert.gguf");
  auto m = model::BertModel::load(path.string());
  auto tok = tok::Tokenizer::from_gguf(m->file());
  auto in = runtime::encoder_input(*tok, "a short passage", 512, runtime::Truncate::Error);
  auto pool = std::make_shared<ThreadPool>(2);
  std::weak_ptr<ThreadPool> seen = pool;
  runtime::Encoder enc(*m, pool);
  EXPECT_EQ(pool.use_count(), 2);  // the encoder holds a share, as a Context does
  const auto want = enc.encode({in}, {model::Pooling::Mean, 4096});
  pool.reset();  // the caller lets go: the encoder's share keeps the pool running
  ASSERT_FALSE(seen.expired());
  const auto got = enc.encode({in}, {model::Pooling::Mean, 4096});
  EXPECT_EQ(got.at(0).pooled, want.at(0).pooled);
}

}  // namespace
}  // namespace ragform::testing
