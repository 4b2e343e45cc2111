// reader::generate_each: a batch first, each prompt alone when the batch fails; only ragform
// errors become per-prompt errors.
#include <gtest/gtest.h>

#include <stdexcept>

#include "reader/reader.h"
#include "support/fake_reader.h"

namespace ragform::reader {
namespace {

// A FakeReader whose batch call fails whenever one prompt would (a server rejecting the request).
class AllOrNothing : public testing::FakeReader {
 public:
  int batch_calls = 0;
  std::vector<uint64_t> seeds_seen;
  std::vector<Generation> generate_batch(const std::vector<std::string>& prompts,
                                         const GenerateParams& p) override {
    ++batch_calls;
    for (const auto& pr : prompts)
      if (!fail_marker.empty() && pr.find(fail_marker) != std::string::npos)
        throw Error("fake", "batch rejected");
    return Reader::generate_batch(prompts, p);
  }
  Generation generate(const std::string& prompt, const GenerateParams& p) override {
    seeds_seen.push_back(p.seed);
    return FakeReader::generate(prompt, p);
  }
};

TEST(GenerateEach, OneBatchWhenItSucceeds) {
  AllOrNothing r;
  r.answer = [](const std::string& p) { return "<" + p + ">"; };
  auto out = generate_each(r, {"a", "b"}, {});
  ASSERT_EQ(out.size(), 2u);
  EXPECT_EQ(r.batch_calls, 1);
  EXPECT_TRUE(out[0].batched);
  EXPECT_EQ(out[1].gen->text, "<b>");
}

TEST(GenerateEach, AFailingPromptFailsAloneWithItsMessageAndSeed) {
  AllOrNothing r;
  r.answer = [](const std::string& p) { return "<" + p + ">"; };
  r.fail_marker = "BAD";
  GenerateParams gp;
  gp.seeds = {11, 22, 33};
  auto out = generate_each(r, {"a", "BAD b", "c"}, gp);
  ASSERT_EQ(out.size(), 3u);
  EXPECT_FALSE(out[0].batched);
  EXPECT_EQ(out[0].gen->text, "<a>");
  EXPECT_FALSE(out[1].gen.has_value());
  EXPECT_EQ(out[1].error, "fake: simulated remote failure");
  EXPECT_EQ(out[2].gen->text, "<c>");
  // Every prompt alone kept its own seed.
  EXPECT_EQ(r.seeds_seen, (std::vector<uint64_t>{11, 22, 33}));
}

TEST(GenerateEach, ProgrammingErrorsPropagate) {
  testing::FakeReader r;
  r.answer = [](const std::string&) -> std::string { throw std::logic_error("bug"); };
  EXPECT_THROW(generate_each(r, {"a"}, {}), std::logic_error);
}

}  // namespace
}  // namespace ragform::reader
