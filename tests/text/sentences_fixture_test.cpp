// The sentence splitter on real passages: HotpotQA distractor paragraphs (whose
// context.sentences give a gold segmentation) and lost-in-the-middle NQ gold passages.
#include <gtest/gtest.h>
#include <zlib.h>

#include <nlohmann/json.hpp>
#include <set>
#include <string>
#include <vector>

#include "support/test_support.h"
#include "text/sentences.h"

namespace ragform::text {
namespace {

std::string gunzip(const std::filesystem::path& p) {
  gzFile f = gzopen(p.string().c_str(), "rb");
  EXPECT_NE(f, nullptr) << p;
  std::string out;
  if (!f) return out;
  char buf[1 << 16];
  int n;
  while ((n = gzread(f, buf, sizeof buf)) > 0) out.append(buf, static_cast<size_t>(n));
  gzclose(f);
  return out;
}

std::vector<nlohmann::json> read_jsonl(const std::string& text) {
  std::vector<nlohmann::json> rows;
  size_t start = 0;
  while (start < text.size()) {
    size_t nl = text.find('\n', start);
    if (nl == std::string::npos) nl = text.size();
    if (nl > start) rows.push_back(nlohmann::json::parse(text.substr(start, nl - start)));
    start = nl + 1;
  }
  return rows;
}

// Every sentence's text is its span of the passage; spans are ordered, disjoint, trimmed, and
// nothing but whitespace (and bullet markers) lies outside them.
void check_spans(const std::string& passage, const std::vector<Sentence>& ss) {
  size_t prev = 0;
  for (const Sentence& s : ss) {
    ASSERT_LE(prev, s.span.begin);
    ASSERT_LT(s.span.begin, s.span.end);
    ASSERT_LE(s.span.end, passage.size());
    EXPECT_EQ(s.text, passage.substr(s.span.begin, s.span.size()));
    for (const TextSpan& w : split_words(passage.substr(prev, s.span.begin - prev))) {
      (void)w;
      ADD_FAILURE() << "non-space text outside sentences before: " << s.text;
    }
    prev = s.span.end;
  }
  EXPECT_TRUE(split_words(passage.substr(prev)).empty());
}

TEST(SentencesFixture, RecoversHotpotQaGoldSegmentation) {
  size_t paragraphs = 0, exact = 0, gold_boundaries = 0, found_boundaries = 0, correct = 0;
  std::vector<std::string> misses;
  for (const char* file :
       {"data/hotpotqa-distractor/dev.jsonl", "data/hotpotqa-distractor/train.jsonl"}) {
    REQUIRE_SHARED(path, file);
    for (const auto& row : read_jsonl(testing::read_file(path))) {
      for (const auto& para : row.at("context").at("sentences")) {
        std::string passage;
        std::set<size_t> gold;  // byte offsets where a gold sentence ends (except the last)
        for (const auto& s : para) {
          passage += s.get<std::string>();
          gold.insert(passage.size());
        }
        gold.erase(passage.size());
        // Gold sentences end before their trailing whitespace; normalise both sides to the
        // offset of the next non-space byte.
        auto next_nonspace = [&](size_t off) {
          while (off < passage.size() && (passage[off] == ' ' || passage[off] == '\n')) ++off;
          return off;
        };
        std::set<size_t> g, f;
        for (size_t off : gold) g.insert(next_nonspace(off));
        auto ss = split_sentences(passage);
        check_spans(passage, ss);
        for (size_t i = 1; i < ss.size(); ++i) f.insert(ss[i].span.begin);
        ++paragraphs;
        gold_boundaries += g.size();
        found_boundaries += f.size();
        size_t c = 0;
        for (size_t off : f) c += g.count(off);
        correct += c;
        if (f == g)
          ++exact;
        else if (misses.size() < 400) {
          for (size_t off : f)
            if (!g.count(off))
              misses.push_back(
                  "extra: " + passage.substr(off > 40 ? off - 40 : 0, off > 40 ? 40 : off) +
                  " || " + passage.substr(off, 30));
          for (size_t off : g)
            if (!f.count(off))
              misses.push_back(
                  "missed: " + passage.substr(off > 40 ? off - 40 : 0, off > 40 ? 40 : off) +
                  " || " + passage.substr(off, 30));
        }
      }
    }
  }
  double precision = double(correct) / double(found_boundaries);
  double recall = double(correct) / double(gold_boundaries);
  double exact_rate = double(exact) / double(paragraphs);
  std::printf("hotpotqa: %zu paragraphs, exact %.4f, boundary precision %.4f recall %.4f\n",
              paragraphs, exact_rate, precision, recall);
  if (getenv("RAGFORM_SHOW_MISSES"))
    for (const auto& m : misses) std::printf("MISS: %s\n", m.c_str());
  // Measured 2026-11: 5967 paragraphs, exact 0.9455, precision 0.9939, recall 0.9821. Most of
  // the remaining differences are errors of the gold segmentation itself (it splits inside titles
  // such as "Freakazoid! is ..." and after "Warner Bros.", and misses boundaries before quoted
  // sentence openers), so the thresholds sit just below the measured values.
  EXPECT_GT(paragraphs, 5900u);
  EXPECT_GE(exact_rate, 0.94);
  EXPECT_GE(precision, 0.99);
  EXPECT_GE(recall, 0.98);
}

TEST(SentencesFixture, SplitsLostInTheMiddleNqPassages) {
  REQUIRE_SHARED(path, "data/lost-in-the-middle/nq-open-oracle.jsonl.gz");
  auto rows = read_jsonl(gunzip(path));
  ASSERT_EQ(rows.size(), 2655u);
  size_t sentences = 0;
  for (const auto& row : rows) {
    std::string passage = row.at("ctxs").at(0).at("text").get<std::string>();
    auto ss = split_sentences(passage);
    check_spans(passage, ss);
    sentences += ss.size();
    if (getenv("RAGFORM_SHOW_NQ"))
      for (const auto& s : ss) std::printf("NQ| %s\n", s.text.c_str());
  }
  std::printf("nq: %zu passages, %zu sentences\n", rows.size(), sentences);
  EXPECT_GT(sentences, 9000u);
}

// Hand-checked segmentations of two NQ gold passages (rows 0 and 1 of nq-open-oracle).
TEST(SentencesFixture, NqPassagesSplitAsReadByHand) {
  REQUIRE_SHARED(path, "data/lost-in-the-middle/nq-open-oracle.jsonl.gz");
  auto rows = read_jsonl(gunzip(path));
  ASSERT_GE(rows.size(), 2u);
  std::string p0 = rows[0].at("ctxs").at(0).at("text").get<std::string>();
  auto s0 = split_sentences(p0);
  ASSERT_EQ(s0.size(), 6u);
  EXPECT_EQ(s0[1].text,
            "John Bardeen is the only laureate to win the prize twice\u2014in 1956 and 1972.");
  EXPECT_EQ(
      s0[2].text,
      "Maria Sk\u0142odowska-Curie also won two Nobel Prizes, for physics in 1903 and chemistry "
      "in 1911.");
  EXPECT_EQ(s0[5].text, "As of 2017, the prize has been awarded");
  // Two spaces separate the first two sentences: the span skips both.
  EXPECT_EQ(p0.substr(s0[0].span.end, s0[1].span.begin - s0[0].span.end), "  ");
  std::string p1 = rows[1].at("ctxs").at(0).at("text").get<std::string>();
  auto s1 = split_sentences(p1);
  ASSERT_EQ(s1.size(), 2u);
  EXPECT_EQ(s1[0].text,
            "Deadpool 2 is scheduled to be released in the United States on May 18, 2018.");
  EXPECT_EQ(s1[1].text, "A sequel, Deadpool 3, is in development.");
}

}  // namespace
}  // namespace ragform::text
