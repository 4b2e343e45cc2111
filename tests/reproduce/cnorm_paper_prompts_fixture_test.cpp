// `reproduce cnorm` renders the paper's own prompts: the NQ sweep's App. D prompt carries its
// "Search Results:" label, and the key-value task's App. B prompt has no "JSON data:" line (the
// lost-in-the-middle files beside the data differ from the paper in both).
#include <gtest/gtest.h>

#include "reproduce/reproduce.h"
#include "support/test_support.h"

namespace {

using namespace ragform;

reproduce::Job job_of(const std::string& experiment) {
  reproduce::Options opt;
  opt.paper = "cnorm";
  opt.experiment = experiment;
  opt.scale = reproduce::Scale::Smoke;
  opt.shared_dir = ragform::testing::shared_dir().string();
  opt.tool_version = "test";
  const auto planned = reproduce::plan(opt);
  EXPECT_EQ(planned.size(), 1u);
  EXPECT_TRUE(planned.at(0).missing.empty()) << planned.at(0).missing;
  return reproduce::make_job(planned.at(0), opt);
}

TEST(ReproduceCnormPrompts, NqSweepUsesAppendixDsPrompt) {
  REQUIRE_SHARED(nq, "data/lost-in-the-middle/nq-open-oracle.jsonl.gz");
  const auto job = job_of("nq-sweep");
  EXPECT_NE(job.sample_prompt.find("Search Results: "), std::string::npos) << job.sample_prompt;
}

TEST(ReproduceCnormPrompts, KvRetrievalUsesAppendixBsPrompt) {
  REQUIRE_SHARED(kv, "data/lost-in-the-middle/kv-retrieval-75_keys.jsonl.gz");
  const auto job = job_of("kv-retrieval");
  EXPECT_EQ(job.sample_prompt.find("JSON data:"), std::string::npos) << job.sample_prompt;
  EXPECT_FALSE(job.sample_prompt.empty());
}

}  // namespace
