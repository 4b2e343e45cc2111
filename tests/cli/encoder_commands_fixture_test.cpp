// `ragform embed` and `ragform classify` through the real binary: the JSON contract, every
// llama.cpp reference of tiny-bert / tiny-bert-nli within 2e-3 per value, --input JSONL, pairs,
// truncation counting and usage errors.
#include <cmath>
#include <cstring>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "support/test_support.h"

namespace {
using nlohmann::json;
using ragform::testing::quoted;
using ragform::testing::run_ragform;
using ragform::testing::shared_path;

std::string model(const std::string& name) {
  return "-m " + quoted(shared_path("fixtures/models/" + name + ".gguf"));
}

std::vector<float> read_f32(const std::filesystem::path& p) {
  std::string b = ragform::testing::read_file(p);
  std::vector<float> v(b.size() / 4);
  std::memcpy(v.data(), b.data(), v.size() * 4);
  return v;
}

// The ref's prompt written to a file (-f reads exact bytes).
std::filesystem::path prompt_file(const json& meta, const std::string& tag) {
  auto dir = ragform::testing::temp_dir(tag);
  auto p = dir / "prompt.txt";
  ragform::testing::write_file(p, meta["prompt"].get<std::string>());
  return p;
}

TEST(EncoderCommands, EmbedMatchesEveryTinyBertRef) {
  for (const char* dir : {"p1-none", "p1-mean", "p1-cls", "p2-none", "p2-mean", "p2-cls"}) {
    SCOPED_TRACE(dir);
    REQUIRE_SHARED(ref, std::string("fixtures/ref/tiny-bert/") + dir);
    const json meta = json::parse(ragform::testing::read_file(ref / "meta.json"));
    const std::string pooling = meta["settings"]["pooling"];
    auto r = run_ragform("embed " + model("tiny-bert") + " -f " +
                         quoted(prompt_file(meta, std::string("embed-") + dir)) + " --pooling " +
                         pooling + " --json");
    ASSERT_EQ(r.exit_code, 0) << r.err;
    const json j = json::parse(r.out);
    EXPECT_EQ(j["model"], "tiny-bert.gguf");
    EXPECT_EQ(j["pooling"], pooling);
    EXPECT_EQ(j["n_tokens"], meta["prompt_ids"].size());
    std::vector<float> got, want;
    if (pooling == "none") {
      ASSERT_FALSE(j.contains("embedding"));
      ASSERT_EQ(j["embeddings"].size(), meta["prompt_ids"].size());
      for (const auto& row : j["embeddings"]) {
        ASSERT_EQ(row.size(), 64u);
        for (const auto& v : row) got.push_back(v.get<float>());
      }
      want = read_f32(ref / meta["embeddings"]["file"].get<std::string>());
    } else {
      ASSERT_FALSE(j.contains("embeddings"));
      got = j["embedding"].get<std::vector<float>>();
      want = meta["pooled"].get<std::vector<float>>();
    }
    ASSERT_EQ(got.size(), want.size());
    for (size_t i = 0; i < got.size(); ++i) ASSERT_NEAR(got[i], want[i], 2e-3) << "value " << i;
  }
}

TEST(EncoderCommands, DefaultPoolingIsTheFilesAndNormalizeGivesUnitLength) {
  REQUIRE_SHARED(ref, "fixtures/ref/tiny-bert/p1-mean");
  const json meta = json::parse(ragform::testing::read_file(ref / "meta.json"));
  const auto f = prompt_file(meta, "embed-norm");
  auto r = run_ragform("embed " + model("tiny-bert") + " -f " + quoted(f) + " --json");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(json::parse(r.out)["pooling"], "mean");  // bert.pooling_type = 1 in the file
  auto rn = run_ragform("embed " + model("tiny-bert") + " -f " + quoted(f) + " --normalize --json");
  ASSERT_EQ(rn.exit_code, 0) << rn.err;
  const auto raw = json::parse(r.out)["embedding"].get<std::vector<double>>();
  const auto unit = json::parse(rn.out)["embedding"].get<std::vector<double>>();
  double norm = 0, n2 = 0;
  for (double v : raw) norm += v * v;
  for (double v : unit) n2 += v * v;
  EXPECT_NEAR(n2, 1.0, 1e-6);
  for (size_t i = 0; i < raw.size(); ++i) EXPECT_NEAR(unit[i], raw[i] / std::sqrt(norm), 1e-6);
}

TEST(EncoderCommands, ClassifyMatchesTheNliRefs) {
  for (const char* dir : {"p1-rank", "p2-rank"}) {
    SCOPED_TRACE(dir);
    REQUIRE_SHARED(ref, std::string("fixtures/ref/tiny-bert-nli/") + dir);
    const json meta = json::parse(ragform::testing::read_file(ref / "meta.json"));
    auto r = run_ragform("classify " + model("tiny-bert-nli") + " -f " +
                         quoted(prompt_file(meta, std::string("cls-") + dir)) + " --json");
    ASSERT_EQ(r.exit_code, 0) << r.err;
    const json j = json::parse(r.out);
    EXPECT_EQ(j["labels"], json({"entailment", "neutral", "contradiction"}));
    const auto want = meta["pooled"].get<std::vector<double>>();
    const auto scores = j["scores"].get<std::vector<double>>();
    const auto probs = j["probs"].get<std::vector<double>>();
    ASSERT_EQ(scores.size(), 3u);
    double z = 0;
    for (double s : want) z += std::exp(s);
    for (size_t i = 0; i < 3; ++i) {
      EXPECT_NEAR(scores[i], want[i], 2e-3);
      EXPECT_NEAR(probs[i], std::exp(want[i]) / z, 2e-3);
    }
  }
}

TEST(EncoderCommands, PairsAndJsonlInputGiveOneLineEach) {
  auto dir = ragform::testing::temp_dir("cls-jsonl");
  ragform::testing::write_file(dir / "in.jsonl",
                               "{\"text\": \"The capital of France is\"}\n"
                               "{\"text\": \"The capital of France is\", \"pair\": \"Paris.\"}\n");
  ragform::testing::write_file(dir / "a.txt", "The capital of France is");
  ragform::testing::write_file(dir / "b.txt", "Paris.");
  auto r = run_ragform("classify " + model("tiny-bert-nli") + " --input " +
                       quoted(dir / "in.jsonl") + " --json");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  auto lines = ragform::testing::json_lines(r.out);
  ASSERT_EQ(lines.size(), 2u);
  auto rp = run_ragform("classify " + model("tiny-bert-nli") + " -f " + quoted(dir / "a.txt") +
                        " --pair-file " + quoted(dir / "b.txt") + " --json");
  ASSERT_EQ(rp.exit_code, 0) << rp.err;
  EXPECT_EQ(json::parse(rp.out)["scores"], lines[1]["scores"]);
  EXPECT_NE(lines[0]["scores"], lines[1]["scores"]);  // the pair changes the input
  // Issue 40, pass 21: a line is its text and pair: a misspelt "pari" classified the text alone;
  // a null pair is no pair.
  ragform::testing::write_file(dir / "typo.jsonl",
                               "{\"text\": \"The capital of France is\", \"pari\": \"Paris.\"}\n");
  auto typo = run_ragform("classify " + model("tiny-bert-nli") + " --input " +
                          quoted(dir / "typo.jsonl") + " --json");
  EXPECT_NE(typo.exit_code, 0);
  EXPECT_NE(typo.err.find("typo.jsonl:1: 'pari' is not supported (a line of --input takes text, "
                          "pair)"),
            std::string::npos)
      << typo.err;
  ragform::testing::write_file(dir / "null.jsonl",
                               "{\"text\": \"The capital of France is\", \"pair\": null}\n");
  auto null_pair = run_ragform("classify " + model("tiny-bert-nli") + " --input " +
                               quoted(dir / "null.jsonl") + " --json");
  ASSERT_EQ(null_pair.exit_code, 0) << null_pair.err;
  EXPECT_EQ(json::parse(null_pair.out)["scores"], lines[0]["scores"]);

  ragform::testing::write_file(dir / "e.jsonl", "{\"text\": \"one\"}\n{\"text\": \"two words\"}\n");
  auto re = run_ragform("embed " + model("tiny-bert") + " --input " + quoted(dir / "e.jsonl") +
                        " --json");
  ASSERT_EQ(re.exit_code, 0) << re.err;
  auto el = ragform::testing::json_lines(re.out);
  ASSERT_EQ(el.size(), 2u);
  EXPECT_EQ(el[0]["n_tokens"], 3);  // [CLS] one [SEP]
  EXPECT_EQ(el[1]["n_tokens"], 4);
}

TEST(EncoderCommands, TruncationIsCountedOrAnError) {
  auto dir = ragform::testing::temp_dir("embed-trunc");
  std::string longtext;
  for (int i = 0; i < 40; ++i) longtext += "word ";
  ragform::testing::write_file(dir / "in.jsonl",
                               "{\"text\": \"" + longtext + "\"}\n{\"text\": \"short\"}\n");
  auto r = run_ragform("embed " + model("tiny-bert") + " --input " + quoted(dir / "in.jsonl") +
                       " --max-tokens 16 --json");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.err.find("1 of 2 inputs truncated"), std::string::npos) << r.err;
  EXPECT_EQ(ragform::testing::json_lines(r.out)[0]["n_tokens"], 16);
  auto re = run_ragform("embed " + model("tiny-bert") + " --input " + quoted(dir / "in.jsonl") +
                        " --max-tokens 16 --truncate error --json");
  EXPECT_EQ(re.exit_code, 1);
  EXPECT_NE(re.err.find("tokens is longer than the model's 16"), std::string::npos) << re.err;
  // A length past the model's position table is refused naming it (pass 22: it was read as the
  // table's length without a word).
  auto past = run_ragform("embed " + model("tiny-bert") + " --input " + quoted(dir / "in.jsonl") +
                          " --max-tokens 1000000 --json");
  EXPECT_EQ(past.exit_code, 2) << past.err;
  EXPECT_NE(past.err.find("--max-tokens: 1000000 is more than the "), std::string::npos)
      << past.err;
  EXPECT_NE(past.err.find(" positions of tiny-bert.gguf"), std::string::npos) << past.err;
}

TEST(EncoderCommands, UsageErrors) {
  auto dir = ragform::testing::temp_dir("embed-usage");
  ragform::testing::write_file(dir / "a.txt", "text");
  const std::string f = " -f " + quoted(dir / "a.txt");
  EXPECT_EQ(run_ragform("embed " + model("tiny-bert") + f + " --pooling sum").exit_code, 2);
  EXPECT_EQ(run_ragform("embed " + model("tiny-bert") + f + " --pooling rank").exit_code, 2);
  EXPECT_EQ(run_ragform("embed " + model("tiny-bert")).exit_code, 2);
  // A classifier's own pooling is rank: embed asks for an explicit pooling.
  EXPECT_EQ(run_ragform("embed " + model("tiny-bert-nli") + f).exit_code, 2);
  // No classification head.
  auto r = run_ragform("classify " + model("tiny-bert") + f);
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_NE(r.err.find("classification head"), std::string::npos) << r.err;
  // A decoder is not an encoder, and vice versa.
  auto d = run_ragform("embed " + model("tiny-llama") + f);
  EXPECT_EQ(d.exit_code, 1);
  EXPECT_NE(d.err.find("not an encoder"), std::string::npos) << d.err;
  auto g = run_ragform("generate " + model("tiny-bert") + " -p hi -n 1");
  EXPECT_EQ(g.exit_code, 1);
  EXPECT_NE(g.err.find("ragform embed"), std::string::npos) << g.err;
}

}  // namespace

namespace {
TEST(EncoderCommands, SpotlightRunsWithAnEncoderModel) {
  REQUIRE_SHARED(data, "data/hotpotqa-distractor/dev.jsonl");
  const std::string enc =
      " --encoder model --encoder-model " + quoted(shared_path("fixtures/models/tiny-bert.gguf"));
  auto r = run_ragform("spotlight select --input " + quoted(data) + " --limit 2 --json" + enc);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(ragform::testing::json_lines(r.out).size(), 2u);
  EXPECT_NE(r.err.find("encoder model:"), std::string::npos) << r.err;
  auto e = run_ragform("spotlight eval --input " + quoted(data) + " --limit 3 --json" + enc);
  ASSERT_EQ(e.exit_code, 0) << e.err;
  bool recall = false;
  for (const auto& j : ragform::testing::json_lines(e.out))
    recall |= j.value("method", "") == "spotlight";
  EXPECT_TRUE(recall) << e.out;
  // The flag pair is checked.
  EXPECT_EQ(run_ragform("spotlight select --input " + quoted(data) + " --encoder model").exit_code,
            2);
}
}  // namespace
