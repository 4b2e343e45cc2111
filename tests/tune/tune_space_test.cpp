// The search space of `ragform tune`: candidates, the space file (JSON and YAML) and its errors.
#include <gtest/gtest.h>

#include <string>

#include "base/error.h"
#include "base/stable_hash.h"
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
  // The dimension is named once, and the message says K's range (issue 40, fourth pass:
  // "spotlight: spotlight: '10000' is not off, K or K+tokens (K >= 1)").
  ragform::testing::write_file(dir / "spot.json", R"({"spotlight": [10000]})");
  try {
    load_space_file((dir / "spot.json").string(), base);
    FAIL() << "accepted spotlight = 10000";
  } catch (const UsageError& e) {
    EXPECT_NE(std::string(e.what()).find("spot.json: spotlight: '10000' is not off, K or K+tokens "
                                         "(K from 1 to 9999)"),
              std::string::npos)
        << e.what();
  }
}

// Adjacent seeds give make_needle_items' items shifted by a few places (it seeds item i with
// seed ^ (C + i)): tune's splits use derive_seed's, which share none of them.
TEST(TuneSpace, NeedleRecordsOfDisjointSeedsDiffer) {
  std::vector<ragform::eval::QaRecord> near = needle_records(32, 6, 2);
  EXPECT_GT(drop_dev_overlap(needle_records(24, 6, 1), near), 0u);
  auto a = needle_records(24, 6, ragform::derive_seed(0, "tune dev")),
       b = needle_records(32, 6, ragform::derive_seed(0, "tune holdout"));
  EXPECT_EQ(drop_dev_overlap(a, b), 0u);
  ASSERT_EQ(a.size(), 24u);
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

namespace {

// Issue 40, item 11: a list in a file is a list. A comma-separated flag is split; an array never.
TEST(TuneSpace, AFileListIsNeverSplitAtCommas) {
  using namespace ragform::tune;
  auto dir = ragform::testing::temp_dir("tune_space_commas");
  ragform::testing::write_file(dir / "s.json", R"({"delimiter": ["a,b", ","]})");
  ragform::testing::write_file(dir / "s.yaml", "delimiter: ['a,b', ',']\n");
  for (const char* f : {"s.json", "s.yaml"}) {
    const Space s = load_space_file((dir / f).string(), default_space(Task::Qa));
    EXPECT_EQ(s.delimiters, (std::vector<std::string>{"a,b", ","})) << f;
  }
  ragform::testing::write_file(dir / "twice.json", R"({"delimiter": [",", "comma"]})");
  EXPECT_THROW(load_space_file((dir / "twice.json").string(), default_space(Task::Qa)),
               ragform::UsageError);
  // The flag's grammar: commas separate, `comma` is the comma.
  EXPECT_EQ(dimension_values("delimiter", "comma,-,none"),
            (std::vector<std::string>{",", "-", "none"}));
  EXPECT_EQ(dimension_values("k", "all,3"), (std::vector<std::string>{"all", "3"}));
  Space s = default_space(Task::Qa);
  set_dimension(s, "delimiter", std::vector<std::string>{"a,b"});
  EXPECT_EQ(s.delimiters, std::vector<std::string>{"a,b"});
}

// Issue 40, D8: a list or map as a key ended in "yaml-cpp: error at line 1, column 3: bad
// conversion" (exit 1); it is a bad space file named with FILE:LINE (exit 2) like the others.
TEST(TuneSpace, AComplexYamlKeyIsABadSpaceFileWithItsLine) {
  using namespace ragform::tune;
  auto dir = ragform::testing::temp_dir("tune_space_complex_key");
  for (const std::string text :
       {"? [a, b]\n: c\ndelimiter: [\"-\"]\n", "delimiter: [\"-\"]\n? {x: 1}\n: c\n",
        "delimiter: [\"-\"]\n{[a]: 1}: c\n"}) {
    const auto path = (dir / "c.yaml").string();
    ragform::testing::write_file(dir / "c.yaml", text);
    try {
      load_space_file(path, default_space(Task::Qa));
      ADD_FAILURE() << "accepted " << text;
    } catch (const ragform::UsageError& e) {
      const std::string m = e.what();
      const std::string line = text[0] == '?' ? ":1" : ":2";
      EXPECT_NE(m.find(path + line + ": not a YAML space: complex keys"), std::string::npos) << m;
    }
  }
}

// Pass 6: a second YAML document (after `---`, or after `...`) was silently ignored, and so was a
// key given twice (JSON or YAML): both are refused, the YAML ones with their line.
TEST(TuneSpace, ASecondDocumentOrADuplicateKeyIsRefused) {
  using namespace ragform::tune;
  auto dir = ragform::testing::temp_dir("tune_space_documents");
  const auto path = (dir / "s.yaml").string();
  struct Case {
    std::string text, where, why;
  };
  for (const Case& c : std::vector<Case>{
           {"delimiter: [\"-\"]\n---\nk: [1]\n", ":2",
            "only one document is read; a second starts here"},
           {"---\ndelimiter: [\"-\"]\n...\nk: [1]\n", ":4",
            "only one document is read; a second starts here"},
           {"delimiter: [\"-\"]\n---\n", ":2", "only one document is read; a second starts here"},
           {"k: [1]\ndelimiter: [\"-\"]\nk: [2]\n", ":3", "duplicate key 'k'"},
           {"{k: [1], 'k': [2]}\n", ":1", "duplicate key 'k'"},
       }) {
    ragform::testing::write_file(dir / "s.yaml", c.text);
    try {
      load_space_file(path, default_space(Task::Qa));
      ADD_FAILURE() << "accepted " << c.text;
    } catch (const ragform::UsageError& e) {
      EXPECT_EQ(std::string(e.what()), path + c.where + ": not a YAML space: " + c.why) << c.text;
    }
  }
  // One document, with its end marker, comments and blank lines after it: accepted.
  ragform::testing::write_file(dir / "s.yaml", "---\nk: [1, 2]\n...\n# the end\n\n");
  EXPECT_EQ(load_space_file(path, default_space(Task::Qa)).ks, (std::vector<size_t>{1, 2}));
  ragform::testing::write_file(dir / "d.json", R"({"k": [1], "p": [0.5], "k": [2]})");
  try {
    load_space_file((dir / "d.json").string(), default_space(Task::Qa));
    ADD_FAILURE() << "a JSON space with k twice was accepted";
  } catch (const ragform::UsageError& e) {
    EXPECT_EQ(std::string(e.what()), (dir / "d.json").string() +
                                         ":1: space is not valid JSON: duplicate key at column "
                                         "24: 'k' twice in one object");
  }
  // The same key in two objects is no duplicate; a JSON space still parses as before.
  ragform::testing::write_file(dir / "ok.json", R"({"k": [3], "delimiter": ["-"]})");
  EXPECT_EQ(load_space_file((dir / "ok.json").string(), default_space(Task::Qa)).ks,
            (std::vector<size_t>{3}));
  ragform::testing::write_file(dir / "bad.json", "{\"k\": [3],\n \"p\": tru}");
  try {
    load_space_file((dir / "bad.json").string(), default_space(Task::Qa));
    ADD_FAILURE() << "bad JSON accepted";
  } catch (const ragform::UsageError& e) {
    EXPECT_NE(std::string(e.what()).find("bad.json:2: space is not valid JSON"), std::string::npos)
        << e.what();
  }
}

}  // namespace

namespace {

// Issue 40, item 15: the candidates are counted before any is built.
TEST(TuneSpace, ASpaceOverTheCapIsRefusedAtOnce) {
  using namespace ragform::tune;
  Space s = default_space(Task::Qa);
  s.ks.clear();
  for (size_t k = 1; k <= 200000; ++k) s.ks.push_back(k);
  try {
    candidates(s, Task::Qa);
    ADD_FAILURE() << "a space of 200000 k values was accepted";
  } catch (const ragform::UsageError& e) {
    EXPECT_NE(std::string(e.what()).find("more than the 20000 a search takes"), std::string::npos)
        << e.what();
  }
}

}  // namespace

namespace {

// Issue 40, item 18: a space file that is not JSON is a bad space file like any other (exit 2).
// Issue 40, pass 19: a dimension given as null (YAML's `k:`) keeps its default; an unknown one is
// named once ("s.json: K: space: unknown dimension" before).
TEST(TuneSpace, ANullDimensionIsNotGivenAndAnUnknownOneIsNamedOnce) {
  using namespace ragform::tune;
  const Space base = default_space(Task::Qa);
  const Space s =
      space_from_json(nlohmann::json{{"k", nullptr}, {"delimiter", {"-"}}}, base, "s.json");
  EXPECT_EQ(s.ks, base.ks);
  try {
    space_from_json(nlohmann::json{{"K", {3}}}, base, "s.json");
    ADD_FAILURE() << "accepted";
  } catch (const ragform::UsageError& e) {
    EXPECT_EQ(std::string(e.what()),
              "s.json: unknown dimension 'K' (delimiter, p, format, order, k, spotlight, "
              "format_seed)");
  }
}

// Pass 20: a value given twice is refused in every dimension (repeated p, format, order and k
// values were searched as aliases), and a bad value names its dimension once.
TEST(TuneSpace, AValueTwiceIsRefusedAndABadOneNamedOnce) {
  using namespace ragform::tune;
  const Space base = default_space(Task::Qa);
  for (const auto& [dim, vals] :
       std::vector<std::pair<std::string, nlohmann::json>>{{"p", {0.5, 0.5}},
                                                           {"format", {"plain", "plain"}},
                                                           {"order", {"retrieved", "retrieved"}},
                                                           {"k", {3, 3}},
                                                           {"k", {"all", "all"}}}) {
    try {
      space_from_json(nlohmann::json{{dim, vals}}, base, "s.json");
      ADD_FAILURE() << dim << " accepted";
    } catch (const ragform::UsageError& e) {
      EXPECT_NE(std::string(e.what()).find("given twice"), std::string::npos) << e.what();
    }
  }
  try {
    space_from_json(nlohmann::json{{"p", {"0x1p-1"}}}, base, "s.json");
    ADD_FAILURE() << "accepted";
  } catch (const ragform::UsageError& e) {
    EXPECT_EQ(std::string(e.what()).find("space: p"), std::string::npos) << e.what();
    EXPECT_EQ(std::string(e.what()).rfind("s.json: p: ", 0), 0u) << e.what();
  }
}

TEST(TuneSpace, InvalidJsonIsAUsageErrorOnItsLine) {
  using namespace ragform::tune;
  auto dir = ragform::testing::temp_dir("tune_space_badjson");
  ragform::testing::write_file(dir / "s.json", "{\"delimiter\": [\"-\"\n");
  try {
    load_space_file((dir / "s.json").string(), default_space(Task::Qa));
    ADD_FAILURE() << "accepted";
  } catch (const ragform::UsageError& e) {
    EXPECT_NE(std::string(e.what()).find("s.json:1: space is not valid JSON"), std::string::npos)
        << e.what();
  }
}

}  // namespace
