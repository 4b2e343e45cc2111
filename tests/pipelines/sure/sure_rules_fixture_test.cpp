// Rule-based perturbations on real NQ passages (lost-in-the-middle nq-open-oracle): answers are
// preserved, logic keeps the multiset of sentences, every format output parses and round-trips.
#include <gtest/gtest.h>

#include <algorithm>

#include "eval/datasets.h"
#include "pipelines/sure/formats.h"
#include "pipelines/sure/perturb_rules.h"
#include "support/test_support.h"
#include "text/metrics.h"

using namespace ragform;
using namespace ragform::sure;

namespace {
bool has_markup_char(const std::vector<std::string>& answers) {
  for (const auto& a : answers)
    if (a.find_first_of("&<>") != std::string::npos) return true;
  return false;
}
}  // namespace

TEST(SureRulesFixture, NqPassages) {
  REQUIRE_SHARED(path, "data/lost-in-the-middle/nq-open-oracle.jsonl.gz");
  eval::LoadOptions lo;
  lo.limit = 400;
  auto recs = eval::load_qa_file(path.string(), lo).records;
  ASSERT_EQ(recs.size(), 400u);
  RuleOptions opt;
  opt.seed = 7;
  size_t docs = 0, with_answer = 0, reordered = 0, single = 0;
  for (const auto& r : recs) {
    for (size_t di = 0; di < r.ctxs.size(); ++di) {
      const auto& c = r.ctxs[di];
      Document d{c.title, c.text};
      std::string key = r.id + "/" + std::to_string(di);
      bool had = text::substring_match(c.text, r.answers) > 0;
      ++docs;
      with_answer += had;
      std::vector<std::string> orig = document_sentences(c.text);
      std::sort(orig.begin(), orig.end());
      for (Kind k : select_kinds("logic/reverse,logic/random,format,metadata")) {
        Perturbation p = apply_rule(k, d, opt, key);
        SCOPED_TRACE(std::string(info(k).name) + " " + key);
        if (info(k).category == std::string("logic")) {
          std::vector<std::string> got = document_sentences(p.text);
          std::sort(got.begin(), got.end());
          EXPECT_EQ(got, orig);
          if (p.note.empty()) ++reordered;
          if (p.note == "single sentence") ++single;
        } else {
          DocFormat f = k == Kind::FormatJson       ? DocFormat::Json
                        : k == Kind::FormatYaml     ? DocFormat::Yaml
                        : k == Kind::FormatMarkdown ? DocFormat::Markdown
                                                    : DocFormat::Html;
          ParsedDoc pd = validate_format(f, p.text);
          EXPECT_EQ(pd.title, one_line(c.title));
          EXPECT_EQ(pd.text, c.text);
          if (f == DocFormat::Html && k != Kind::FormatHtml) {
            EXPECT_EQ(pd.meta.size(), 1u);
          }
        }
        // Answer preservation on the raw perturbed text (what the reader sees); HTML escapes an
        // answer with & < > (the preservation filter drops such pairs).
        if (had && !(has_markup_char(r.answers) &&
                     (k == Kind::FormatHtml || info(k).category == std::string("metadata")))) {
          EXPECT_GT(text::substring_match(p.text, r.answers), 0) << p.text;
        }
        if (!had) {
          EXPECT_EQ(text::substring_match(p.text, r.answers), 0) << p.text;
        }
      }
    }
  }
  EXPECT_EQ(docs, 400u);
  EXPECT_GT(with_answer, 350u);
  EXPECT_GT(reordered, 600u);
  std::printf("docs %zu with answer %zu reordered %zu single-sentence %zu\n", docs, with_answer,
              reordered, single);
}
