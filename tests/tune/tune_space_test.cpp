// The search space of `ragform tune`: candidates, the space file (JSON and YAML) and its errors.
#include <gtest/gtest.h>

#include <string>

#include "base/error.h"
#include "support/test_support.h"
#include "tune/run.h"
#include "tune/tune.h"

namespace {

using namespace ragform;
using namespace ragform::tune;

TEST(TuneSpace, CandidatesDeduplicateOriginalAndSpotlight) {
  Space s = default_space(Task::Qa);
  set_dimension(s, "delimiter", "original,-,_");
  set_dimension(s, "p", "0.5,1");
  set_dimension(s, "format", "plain,json");
  set_dimension(s, "order", "retrieved");
  set_dimension(s, "k", "all");
  set_dimension(s, "spotlight", "off,3");
  std::vector<Presentation> c = candidates(s, Task::Qa);
  // Per format: original once (p ignored) and 2 delimiters x 2 ratios; spotlight 3 once.
  ASSERT_EQ(c.size(), 2u * (1 + 2 * 2) + 1);
  EXPECT_EQ(label(c[0]), "delim=original,format=plain,order=retrieved,k=all,spotlight=off");
  EXPECT_EQ(label(c[1]), "delim=-,p=0.5,format=plain,order=retrieved,k=all,spotlight=off");
  EXPECT_EQ(label(c[3]), "delim=-,p=1,format=plain,order=retrieved,k=all,spotlight=off");
  EXPECT_EQ(label(c.back()), "delim=original,format=plain,order=retrieved,k=all,spotlight=3");
  EXPECT_EQ(searched_dimensions(s),
            (std::vector<std::string>{"delimiter", "p", "format", "spotlight"}));
  EXPECT_EQ(candidates(default_space(Task::Qa), Task::Qa).size(), 423u);
  EXPECT_EQ(candidates(default_space(Task::Needle), Task::Needle).size(), 216u);
  EXPECT_EQ(candidates(default_space(Task::Kv), Task::Kv).size(), 5u);  // p does not vary a UUID
}

TEST(TuneSpace, TaskRefusesDimensionsThatDoNotApply) {
  Space s = default_space(Task::Kv);
  set_dimension(s, "format", "plain,json");
  EXPECT_THROW(candidates(s, Task::Kv), UsageError);
  s = default_space(Task::Kv);
  set_dimension(s, "spotlight", "off,2");
  EXPECT_THROW(candidates(s, Task::Kv), UsageError);
  EXPECT_THROW(set_dimension(s, "format", "xml"), UsageError);
  EXPECT_THROW(set_dimension(s, "p", "1.5"), UsageError);
  EXPECT_THROW(set_dimension(s, "k", "-1"), UsageError);
  EXPECT_THROW(set_dimension(s, "spotlight", "0"), UsageError);
  EXPECT_THROW(set_dimension(s, "colour", "red"), UsageError);
}

TEST(TuneSpace, JsonAndYamlFilesAgree) {
  auto dir = ragform::testing::temp_dir("tune_space_file");
  ragform::testing::write_file(
      dir / "s.json",
      R"({"delimiter": ["original", "-"], "p": [0.5, 1], "format": ["plain",
                               "yaml"], "order": ["edges"], "k": ["all", 3], "spotlight": ["off",
                               "2+tokens"]})");
  ragform::testing::write_file(dir / "s.yaml",
                               "delimiter: [original, '-']\np: [0.5, 1]\nformat: [plain, yaml]\n"
                               "order:\n  - edges\nk: [all, 3]\nspotlight: ['off', 2+tokens]\n");
  const Space base = default_space(Task::Qa);
  Space j = load_space_file((dir / "s.json").string(), base);
  Space y = load_space_file((dir / "s.yaml").string(), base);
  EXPECT_EQ(space_to_json(j), space_to_json(y));
  EXPECT_EQ(j.ks, (std::vector<size_t>{0, 3}));
  EXPECT_EQ(j.spotlight.back(), (SpotlightValue{2, true}));
  EXPECT_EQ(candidates(j, Task::Qa).size(), 2u * (2 * (1 + 2)) + 2);

  ragform::testing::write_file(dir / "bad.json", R"({"p": [0.5, "x"]})");
  try {
    load_space_file((dir / "bad.json").string(), base);
    FAIL() << "accepted p = x";
  } catch (const UsageError& e) {
    EXPECT_NE(std::string(e.what()).find("bad.json: p"), std::string::npos) << e.what();
  }
}

TEST(TuneSpace, NeedleRecordsOfDisjointSeedsDiffer) {
  auto a = needle_records(8, 6, 1), b = needle_records(8, 6, 2);
  ASSERT_EQ(a.size(), 8u);
  for (size_t i = 0; i < a.size(); ++i) {
    EXPECT_NE(a[i].id, b[i].id);
    EXPECT_EQ(a[i].ctxs.size(), 6u);
    EXPECT_EQ(gold_index(a[i], Task::Needle), [&] {
      for (size_t d = 0; d < a[i].ctxs.size(); ++d)
        if (a[i].ctxs[d].text.find(a[i].answers[0] + " liked") != std::string::npos) return int(d);
      return -1;
    }());
  }
}

}  // namespace
