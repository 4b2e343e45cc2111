// SpotlightRAG's selected sentences emphasised by attention (select.h emphasis_steering, run.h
// GenerateOptions::emphasis_factor, `spotlight select --emphasis`): the sentences' byte ranges are
// their text in the prompt, and the library's answers are, bit for bit, what `ragform generate
// --steer rescale:A --steer-spans ...` gives the same prompt.
#include <gtest/gtest.h>

#include <sstream>

#include <nlohmann/json.hpp>

#include "eval/datasets.h"
#include "pipelines/spotlight/answer.h"
#include "pipelines/spotlight/run.h"
#include "pipelines/spotlight/select.h"
#include "reader/native_reader.h"
#include "support/test_support.h"

namespace fs = std::filesystem;
using namespace ragform;
using nlohmann::json;
namespace rt = ragform::testing;

namespace {

// The answer line `ragform generate` gives the prompt with extra flags (greedy, 12 tokens): a
// greedy continuation stopped after its first non-empty line (answer.h) is this one's prefix up
// to that line's end, so both have the same answer line.
std::string cli_answer(const fs::path& model, const fs::path& prompt, const std::string& flags) {
  auto g = rt::run_ragform("generate -m " + rt::quoted(model) + " --file " + rt::quoted(prompt) +
                           " -n 12 --json " + flags);
  EXPECT_EQ(g.exit_code, 0) << g.err;
  return g.exit_code == 0 ? spotlight::answer_line(json::parse(g.out)["text"].get<std::string>())
                          : "";
}

TEST(SpotlightEmphasis, AnswersAsGenerateWithSteeredSpans) {
  REQUIRE_SHARED(hotpot, "data/hotpotqa-distractor/dev.jsonl");
  REQUIRE_SHARED(glove, "data/embeddings/glove-50d-5k.json");
  REQUIRE_SHARED(model, "fixtures/models/stories260K.gguf");
  const fs::path dir = rt::temp_dir("spotlight-emphasis");
  eval::LoadOptions lo;
  lo.limit = 4;
  auto recs = eval::load_qa_file(hotpot.string(), lo).records;
  auto wv = spotlight::WordVectors::load(glove.string());
  spotlight::StaticEncoder enc(wv);
  store::RunStore st(dir / "s.sqlite", store::RunStore::Mode::create,
                     store::RunStore::Durability::normal);
  spotlight::RunOptions ro;
  const auto ev = spotlight::run_eval(enc, st, recs, ro);
  reader::NativeReader r(model.string());
  spotlight::GenerateOptions go;
  go.spotlight_run = ev.run;
  go.max_tokens = 12;
  go.emphasis_factor = 8.0;
  const auto gen = spotlight::run_generate(r, st, recs, go);
  go.emphasis_factor = 1.0;
  const auto plain = spotlight::run_generate(r, st, recs, go);
  EXPECT_NE(gen.run, plain.run);  // emphasised and plain answers are different runs

  std::map<std::string, store::Result> prompts;
  for (const auto& row : st.results(ev.run))
    if (row.variant == "spotlight") prompts[row.instance] = row;
  size_t checked = 0;
  for (const auto& row : st.results(gen.run)) {
    const store::Result& p = prompts.at(row.instance);
    ASSERT_EQ(p.extra["spans"].size(), p.extra["selected"].size());
    std::string spans;
    for (size_t i = 0; i < p.extra["spans"].size(); ++i) {
      const size_t b = p.extra["spans"][i][0], e = p.extra["spans"][i][1];
      // Each span is its sentence's text in the prompt.
      const std::string text = p.extra["selected"][i]["text"];
      EXPECT_EQ(p.prompt.substr(b, e - b), text.substr(text.find_first_not_of(' ')));
      spans += (i ? "," : "") + std::to_string(b) + ":" + std::to_string(e);
    }
    rt::write_file(dir / "prompt.txt", p.prompt);
    EXPECT_EQ(row.output,
              cli_answer(model, dir / "prompt.txt", "--steer rescale:8 --steer-spans " + spans));
    ++checked;
  }
  EXPECT_EQ(checked, prompts.size());
  EXPECT_GT(checked, 0u);
  // The emphasis reaches the answers: some differ from the plain run's.
  size_t differ = 0;
  std::map<std::string, std::string> plain_out;
  for (const auto& row : st.results(plain.run)) plain_out[row.instance] = row.output;
  for (const auto& row : st.results(gen.run)) differ += row.output != plain_out[row.instance];
  EXPECT_GT(differ, 0u);
}

TEST(SpotlightEmphasis, SelectPrintsTheSteeringOfItsPrompt) {
  REQUIRE_SHARED(hotpot, "data/hotpotqa-distractor/dev.jsonl");
  REQUIRE_SHARED(glove, "data/embeddings/glove-50d-5k.json");
  REQUIRE_SHARED(model, "fixtures/models/stories260K.gguf");
  const fs::path dir = rt::temp_dir("spotlight-emphasis-select");
  auto s = rt::run_ragform("spotlight select --input " + rt::quoted(hotpot) + " --vectors " +
                           rt::quoted(glove) +
                           " --limit 2 --json --emphasis attention --emphasis-factor 6");
  ASSERT_EQ(s.exit_code, 0) << s.err;
  std::istringstream in(s.out);
  size_t lines = 0;
  reader::NativeReader r(model.string());
  for (std::string line; std::getline(in, line); ++lines) {
    const json j = json::parse(line);
    const std::string prompt = j["prompt"];
    EXPECT_EQ(prompt.find("<Rel"), std::string::npos);  // attention instead of the tokens
    EXPECT_EQ(j["steer"]["rule"], "rescale:6");
    // The library's answer with the selection's emphasis = generate with the printed steering.
    spotlight::Selection sel;
    sel.prompt = prompt;
    std::istringstream sp(j["steer"]["spans"].get<std::string>());
    for (std::string part; std::getline(sp, part, ',');) {
      spotlight::Selected x;
      x.begin = std::stoul(part.substr(0, part.find(':')));
      x.end = std::stoul(part.substr(part.find(':') + 1));
      sel.selected.push_back(x);
    }
    ASSERT_EQ(sel.selected.size(), j["selected"].size());
    for (size_t i = 0; i < sel.selected.size(); ++i) {
      const std::string text = j["selected"][i]["text"];
      EXPECT_EQ(prompt.substr(sel.selected[i].begin, sel.selected[i].end - sel.selected[i].begin),
                text.substr(text.find_first_not_of(' ')));
    }
    const auto g =
        spotlight::answer_and_grade(r, prompt, {"x"}, 12, spotlight::emphasis_steering(sel, 6.0));
    rt::write_file(dir / "prompt.txt", prompt);
    EXPECT_EQ(g.text, cli_answer(model, dir / "prompt.txt",
                                 "--steer rescale:6 --steer-spans " +
                                     j["steer"]["spans"].get<std::string>()));
    EXPECT_FALSE(r.steering.active());  // the reader's own steering restored
  }
  EXPECT_EQ(lines, 2u);
  // "both" keeps the tokens; the factor needs attention emphasis.
  auto both = rt::run_ragform("spotlight select --input " + rt::quoted(hotpot) + " --vectors " +
                              rt::quoted(glove) + " --limit 1 --json --emphasis both");
  ASSERT_EQ(both.exit_code, 0) << both.err;
  EXPECT_NE(json::parse(both.out)["prompt"].get<std::string>().find("<Rel"), std::string::npos);
  EXPECT_EQ(rt::run_ragform("spotlight select --input " + rt::quoted(hotpot) + " --vectors " +
                            rt::quoted(glove) + " --emphasis-factor 3")
                .exit_code,
            2);
}

}  // namespace
