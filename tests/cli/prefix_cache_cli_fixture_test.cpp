// The prefix cache through the batch commands (issue 21, "Done when"), on stories260K: `cnorm eval`
// and `sure eval` with --prefix-cache on and off store the same prompts, prompt-token counts,
// answers and grades and print the same summaries; each prints "prefill: computed C of S prompt
// tokens", S equals the stored prompts' token count, and the run's metadata holds S and C (C = S
// without the cache, C < S with it). `cnorm calibrate` prints the line too.
#include <gtest/gtest.h>

#include <map>
#include <regex>

#include "pipelines/cnorm/cnorm_cli.h"
#include "pipelines/sure/nq_pairs_input.h"
#include "store/run_store.h"
#include "support/test_support.h"

namespace ragform {
namespace {

using testing::quoted;
using testing::run_ragform;

struct Prefill {
  long long computed = -1, submitted = -1;
};

// A command's stdout JSON lines without the "store" path (the only field that differs).
std::vector<nlohmann::json> summaries(const std::string& out) {
  auto lines = testing::json_lines(out);
  for (auto& l : lines)
    if (l.is_object()) l.erase("store");
  return lines;
}

Prefill prefill_line(const std::string& err) {
  std::smatch m;
  static const std::regex re(
      R"(prefill: computed (\d+) of (\d+) prompt tokens \([0-9.]+% reused\))");
  Prefill p;
  if (std::regex_search(err, m, re)) {
    p.computed = std::stoll(m[1]);
    p.submitted = std::stoll(m[2]);
  }
  return p;
}

struct Row {
  std::string prompt, output;
  std::optional<int64_t> prompt_tokens;
  std::optional<bool> correct;
  bool operator==(const Row&) const = default;
};

// Every row of the store by key, the stored prompt tokens summed, and the metadata's S and C
// summed over the runs.
struct Stored {
  std::map<store::Key, Row> rows;
  int64_t prompt_tokens = 0;
  int64_t meta_submitted = 0, meta_computed = 0;
};

Stored read_store(const std::filesystem::path& p) {
  store::RunStore st(p, store::RunStore::Mode::read_only);
  Stored s;
  for (const auto& r : st.results(std::nullopt)) {
    s.rows[{r.instance, r.variant}] = {r.prompt, r.output, r.prompt_tokens, r.correct};
    s.prompt_tokens += r.prompt_tokens.value_or(0);
  }
  for (const auto& run : st.runs()) {
    auto m = st.run_meta(run.id, "prefill");
    EXPECT_TRUE(m) << "run " << run.id << " has no prefill metadata";
    if (!m) continue;
    s.meta_submitted += (*m)["submitted"].get<int64_t>();
    s.meta_computed += (*m)["computed"].get<int64_t>();
  }
  return s;
}

void expect_same_and_accounted(const testing::RunResult& on, const testing::RunResult& off,
                               const std::filesystem::path& store_on,
                               const std::filesystem::path& store_off) {
  EXPECT_EQ(summaries(on.out), summaries(off.out));  // the printed summaries
  EXPECT_FALSE(summaries(on.out).empty());
  const Stored a = read_store(store_on), b = read_store(store_off);
  ASSERT_FALSE(a.rows.empty());
  EXPECT_EQ(a.rows, b.rows);
  const Prefill pa = prefill_line(on.err), pb = prefill_line(off.err);
  ASSERT_GE(pa.submitted, 0) << on.err;
  ASSERT_GE(pb.submitted, 0) << off.err;
  EXPECT_EQ(pa.submitted, a.prompt_tokens);
  EXPECT_EQ(pb.submitted, b.prompt_tokens);
  EXPECT_EQ(pb.computed, pb.submitted);
  EXPECT_LT(pa.computed, pa.submitted);
  EXPECT_EQ(a.meta_submitted, pa.submitted);
  EXPECT_EQ(a.meta_computed, pa.computed);
  EXPECT_EQ(b.meta_submitted, pb.submitted);
  EXPECT_EQ(b.meta_computed, pb.computed);
}

TEST(PrefixCacheCli, CnormEvalIsTheSameWithAndWithoutTheCache) {
  REQUIRE_SHARED(model, "fixtures/models/stories260K.gguf");
  auto dir = testing::temp_dir("prefix_cnorm");
  auto cal = run_ragform(testing::cnorm_calibrate(
      model, "--task needle -S 2 -k 3 --delims 'none,&' --ctx 512 --no-cache", dir / "p.json"));
  ASSERT_EQ(cal.exit_code, 0) << cal.err;
  EXPECT_GE(prefill_line(cal.err).submitted, 0) << cal.err;
  const std::string ev =
      testing::cnorm_eval(model, dir / "p.json", "--task needle -k 3 --limit 3 --ctx 512");
  auto on = run_ragform(ev + " --store " + quoted(dir / "on.sqlite"));
  ASSERT_EQ(on.exit_code, 0) << on.err;
  auto off = run_ragform(ev + " --prefix-cache off --store " + quoted(dir / "off.sqlite"));
  ASSERT_EQ(off.exit_code, 0) << off.err;
  expect_same_and_accounted(on, off, dir / "on.sqlite", dir / "off.sqlite");
  // A small bound still gives the same answers (entries evicted or never kept).
  auto tiny = run_ragform(ev + " --prefix-cache-mb 1 --store " + quoted(dir / "tiny.sqlite"));
  ASSERT_EQ(tiny.exit_code, 0) << tiny.err;
  EXPECT_EQ(summaries(tiny.out), summaries(off.out));
  EXPECT_EQ(read_store(dir / "tiny.sqlite").rows, read_store(dir / "off.sqlite").rows);
}

TEST(PrefixCacheCli, SureEvalIsTheSameWithAndWithoutTheCache) {
  REQUIRE_SHARED(model, "fixtures/models/stories260K.gguf");
  REQUIRE_SHARED(nq, "data/lost-in-the-middle/nq-open-oracle.jsonl.gz");
  auto dir = testing::temp_dir("prefix_sure");
  testing::write_file(dir / "qa.jsonl", testing::nq_pairs_input(nq, 3));
  auto r = run_ragform("sure perturb --input " + quoted(dir / "qa.jsonl") +
                       " --kinds logic,format,metadata");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  testing::write_file(dir / "pairs.jsonl", r.out);
  const std::string ev = "sure eval --input " + quoted(dir / "pairs.jsonl") + " -m " +
                         quoted(model) + " --ctx 1024 -n 8";
  auto on = run_ragform(ev + " --store " + quoted(dir / "on.sqlite"));
  ASSERT_EQ(on.exit_code, 0) << on.err;
  auto off = run_ragform(ev + " --prefix-cache off --store " + quoted(dir / "off.sqlite"));
  ASSERT_EQ(off.exit_code, 0) << off.err;
  expect_same_and_accounted(on, off, dir / "on.sqlite", dir / "off.sqlite");
}

TEST(PrefixCacheCli, FlagValuesAreChecked) {
  REQUIRE_SHARED(model, "fixtures/models/stories260K.gguf");
  auto r = run_ragform("generate -m " + quoted(model) + " -p hi --prefix-cache maybe");
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("--prefix-cache"), std::string::npos) << r.err;
  r = run_ragform("generate -m " + quoted(model) + " -p hi --prefix-cache-mb -1");
  EXPECT_EQ(r.exit_code, 2);
}

}  // namespace
}  // namespace ragform
