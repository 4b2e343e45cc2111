// `ragform kv generate`'s data (Appendix B): identifier layouts, the three formats sharing their
// digits, both densities, the gold pair at every position, determinism in the seed, and the rows
// read back by the lost-in-the-middle KV loader and cnorm's kv items.
#include "pipelines/cnorm/kvgen.h"

#include <gtest/gtest.h>

#include <regex>

#include "base/error.h"
#include "eval/datasets.h"
#include "pipelines/cnorm/tasks.h"
#include "support/test_support.h"

namespace ragform::cnorm {

TEST(CnormKvGen, UuidLayoutAndFormats) {
  uint64_t st = 7;
  std::string id = random_uuid_id(st, 1);
  EXPECT_TRUE(std::regex_match(
      id, std::regex("[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}")))
      << id;
  std::string four = random_uuid_id(st, 4);
  EXPECT_EQ(four.size(), 4 * 36 + 3);
  EXPECT_EQ(std::count(four.begin(), four.end(), '-'), 19);
  EXPECT_EQ(to_kv_format(four, KvFormat::Plain, "&").size(), 128u);
  EXPECT_EQ(to_kv_format("550e8400-e29b-41d4-a716-446655440000", KvFormat::Modified, "&"),
            "550e8400&e29b&41d4&a716&446655440000");  // the paper's example
  EXPECT_EQ(to_kv_format("550e8400-e29b-41d4-a716-446655440000", KvFormat::Plain, ""),
            "550e8400e29b41d4a716446655440000");
  EXPECT_EQ(to_kv_format("550e8400-e29b", KvFormat::Modified, "\xC2\xB7"),
            "550e8400\xC2\xB7"
            "e29b");
  EXPECT_THROW(parse_kv_format("guid"), UsageError);
  KvSpec s;
  EXPECT_THROW(apply_density(s, "medium"), UsageError);
}

TEST(CnormKvGen, GoldAtEveryPositionSameDigitsAcrossFormats) {
  KvSpec s;
  apply_density(s, "high");
  s.samples = 2;
  s.seed = 3;
  auto uuid = generate_kv(s);
  ASSERT_EQ(uuid.size(), 2u * 10);
  for (size_t j = 0; j < 10; ++j) {
    const auto& r = uuid[j];
    EXPECT_EQ(r["gold_index"], j);
    EXPECT_EQ(r["id"], "kv-high-uuid-0-g" + std::to_string(j));
    ASSERT_EQ(r["ordered_kv_records"].size(), 10u);
    EXPECT_EQ(r["ordered_kv_records"][j][0], r["key"]);
    EXPECT_EQ(r["ordered_kv_records"][j][1], r["value"]);
    EXPECT_EQ(r["key"].get<std::string>().size(), 4u * 36 + 3);
    // The distractors keep their order: removing the gold gives the same list at every j.
    auto others = r["ordered_kv_records"];
    others.erase(j);
    auto ref = uuid[0]["ordered_kv_records"];
    ref.erase(0);
    EXPECT_EQ(others, ref);
  }
  EXPECT_NE(uuid[0]["key"], uuid[10]["key"]);  // samples differ
  EXPECT_EQ(generate_kv(s), uuid);             // seeded
  s.format = KvFormat::Modified;
  s.delimiter = "&";
  auto mod = generate_kv(s);
  EXPECT_EQ(mod[4]["key"], to_kv_format(uuid[4]["key"], KvFormat::Modified, "&"));
  EXPECT_EQ(mod[4]["ordered_kv_records"][7][1],
            to_kv_format(uuid[4]["ordered_kv_records"][7][1], KvFormat::Modified, "&"));
  s.seed = 4;
  s.format = KvFormat::Uuid;
  EXPECT_NE(generate_kv(s)[0]["key"], uuid[0]["key"]);
  s.format = KvFormat::Modified;
  s.delimiter = "a b";
  EXPECT_THROW(generate_kv(s), UsageError);
  // Pass 6: refused naming the flag given, not cnorm's --delims.
  s.delimiter = std::string(100000, 'z');
  try {
    generate_kv(s);
    ADD_FAILURE() << "a 100 KB delimiter was accepted";
  } catch (const UsageError& e) {
    const std::string m = e.what();
    EXPECT_EQ(m.rfind("--delimiter: delimiter 'zzz", 0), 0u) << m.substr(0, 200);
    EXPECT_NE(m.find("' is longer than 16 bytes"), std::string::npos) << m.substr(0, 200);
    EXPECT_LT(m.size(), 200u);
  }
  s.delimiter = "a b";
  try {
    generate_kv(s);
  } catch (const UsageError& e) {
    EXPECT_STREQ(e.what(), "--delimiter: delimiter 'a b' contains whitespace");
  }
}

TEST(CnormKvGen, LowDensityOnePositionReadsAsKvItems) {
  KvSpec s;  // low density: 40 x 32
  s.samples = 5;
  s.all_positions = false;
  s.format = KvFormat::Plain;
  auto rows = generate_kv(s);
  ASSERT_EQ(rows.size(), 5u);
  auto dir = ragform::testing::temp_dir("cnorm_kvgen");
  std::string text;
  for (const auto& r : rows) text += r.dump() + "\n";
  ragform::testing::write_file(dir / "kv.jsonl", text);
  auto recs = eval::load_qa_file((dir / "kv.jsonl").string()).records;
  ASSERT_EQ(recs.size(), 5u);
  auto items = build_kv_items(recs);
  for (size_t i = 0; i < 5; ++i) {
    EXPECT_EQ(items[i].id, rows[i]["id"]);
    EXPECT_EQ(items[i].natural_position, rows[i]["gold_index"].get<size_t>());
    EXPECT_EQ(items[i].distractors.size(), 39u);
    EXPECT_EQ(items[i].question.size(), 32u);
    EXPECT_EQ(items[i].answers, std::vector<std::string>{rows[i]["value"].get<std::string>()});
    EXPECT_EQ(items[i].question.find('-'), std::string::npos);
  }
}

}  // namespace ragform::cnorm
