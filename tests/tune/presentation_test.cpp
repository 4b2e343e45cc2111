// The presentation renderer of `ragform tune` and its profile file.
#include <gtest/gtest.h>

#include <string>

#include "base/error.h"
#include "base/json_keys.h"
#include "support/test_support.h"
#include "tune/tune.h"

namespace {

using namespace ragform;
using tune::Order;
using tune::Presentation;
using tune::Task;

eval::QaRecord record(size_t n) {
  eval::QaRecord r;
  r.id = "q1";
  r.question = "who wrote the book?";
  r.answers = {"Ann"};
  for (size_t i = 0; i < n; ++i) {
    eval::Context c;
    c.title = "T" + std::to_string(i);
    c.text = "Doc " + std::to_string(i) + " says hello there. It has two sentences.";
    c.isgold = i == 1;
    c.score = double(i);
    r.ctxs.push_back(c);
  }
  return r;
}

// The positions of "Document [i](Title: T<j>)" in the prompt, as the list of j.
std::string shown_titles(const std::string& prompt) {
  std::string out;
  for (size_t at = prompt.find("(Title: T"); at != std::string::npos;
       at = prompt.find("(Title: T", at + 1))
    out += prompt[at + 9];
  return out;
}

TEST(TunePresentation, OriginalIsAppendixDLayout) {
  const std::string tmpl = tune::template_for(Task::Qa);
  tune::Rendered r = tune::render(record(3), tune::original_presentation(), Task::Qa, tmpl);
  EXPECT_NE(r.prompt.find("Document [1](Title: T0) Doc 0 says hello there. It has two sentences.\n"
                          "Document [2](Title: T1)"),
            std::string::npos)
      << r.prompt;
  EXPECT_NE(r.prompt.find("who wrote the book?"), std::string::npos);
  EXPECT_EQ(r.documents, 3u);
  EXPECT_EQ(r.gold_position, 1);
}

TEST(TunePresentation, KAndOrders) {
  const std::string tmpl = tune::template_for(Task::Qa);
  Presentation p;
  EXPECT_EQ(shown_titles(tune::render(record(5), p, Task::Qa, tmpl).prompt), "01234");
  p.order = Order::Reversed;
  EXPECT_EQ(shown_titles(tune::render(record(5), p, Task::Qa, tmpl).prompt), "43210");
  p.order = Order::Edges;  // most relevant at both edges, least in the middle
  EXPECT_EQ(shown_titles(tune::render(record(5), p, Task::Qa, tmpl).prompt), "02431");
  p.order = Order::Score;  // scores 0..4: descending
  EXPECT_EQ(shown_titles(tune::render(record(5), p, Task::Qa, tmpl).prompt), "43210");
  p.order = Order::Retrieved;
  p.k = 2;
  tune::Rendered r = tune::render(record(5), p, Task::Qa, tmpl);
  EXPECT_EQ(shown_titles(r.prompt), "01");
  EXPECT_EQ(r.gold_position, 1);
  p.k = 1;
  EXPECT_EQ(tune::render(record(5), p, Task::Qa, tmpl).gold_position, -1);  // gold dropped
}

TEST(TunePresentation, DelimiterAndFormatUseCnormAndSureRenderers) {
  const std::string tmpl = tune::template_for(Task::Qa);
  Presentation p;
  p.delimiter = "-";
  p.p = 1.0;
  std::string s = tune::render(record(1), p, Task::Qa, tmpl).prompt;
  EXPECT_NE(s.find("Doc-0-says-hello-there."), std::string::npos) << s;
  p = {};
  p.format = "json";
  s = tune::render(record(1), p, Task::Qa, tmpl).prompt;
  EXPECT_NE(s.find("Document [1] {\n  \"title\": \"T0\""), std::string::npos) << s;
  p.format = "html";
  s = tune::render(record(1), p, Task::Qa, tmpl).prompt;
  EXPECT_NE(s.find("<title>T0</title>"), std::string::npos) << s;
}

TEST(TunePresentation, SpotlightSelectsSentences) {
  const std::string tmpl = tune::template_for(Task::Qa);
  eval::QaRecord r = record(2);
  r.ctxs[1].text = "Filler words only. Ann wrote the book in a cabin.";
  Presentation p;
  p.spotlight = 1;
  std::string s = tune::render(r, p, Task::Qa, tmpl).prompt;
  EXPECT_EQ(s, "Question: who wrote the book?\nEvidence:\nAnn wrote the book in a cabin.\nAnswer:");
  p.spotlight_tokens = true;
  s = tune::render(r, p, Task::Qa, tmpl).prompt;
  EXPECT_NE(s.find("<Rel1.00> <other> Ann wrote the book in a cabin."), std::string::npos) << s;
  p.format = "json";
  EXPECT_THROW(tune::validate(p, Task::Qa), UsageError);
}

TEST(TunePresentation, LabelsAreDistinct) {
  Presentation a, b;
  b.delimiter = "-";
  b.p = 0.5;
  EXPECT_EQ(tune::label(a), "delim=original,format=plain,order=retrieved,k=all,spotlight=off");
  EXPECT_EQ(tune::label(b), "delim=-,p=0.5,format=plain,order=retrieved,k=all,spotlight=off");
}

TEST(TuneProfile, RoundTripAndFieldErrors) {
  tune::Profile p;
  p.presentation.delimiter = "_";
  p.presentation.p = 0.5;
  p.presentation.format = "yaml";
  p.presentation.order = Order::Edges;
  p.presentation.k = 3;
  p.searched = {"delimiter", "p", "format"};
  p.model = "m.gguf";
  p.task = Task::Needle;
  p.store = "s.sqlite";
  p.run = 4;
  auto dir = ragform::testing::temp_dir("tune_profile");
  const std::string path = (dir / "p.json").string();
  tune::save_profile(path, p);
  EXPECT_EQ(tune::load_profile(path), p);

  nlohmann::json j = tune::profile_to_json(p);
  j["presentation"]["k"] = "three";
  try {
    tune::profile_from_json(j, "p.json");
    FAIL() << "accepted a string k";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("p.json: presentation: k: must be a non-negative integer"),
              std::string::npos)
        << e.what();
  }
  j = tune::profile_to_json(p);
  j["schema_version"] = 9;
  EXPECT_THROW(tune::profile_from_json(j, "p.json"), Error);
  // A key a profile does not have, at the top or in its run, is refused (issue 40, pass 18); a
  // null one is a key not given.
  j = tune::profile_to_json(p);
  j["objectve"] = "em";
  EXPECT_THROW(tune::profile_from_json(j, "p.json"), UnknownKeyError);
  j = tune::profile_to_json(p);
  j["run"]["stroe"] = "x";
  EXPECT_THROW(tune::profile_from_json(j, "p.json"), UnknownKeyError);
  j = tune::profile_to_json(p);
  j["objectve"] = nullptr;
  EXPECT_EQ(tune::profile_from_json(j, "p.json"), p);
  // Pass 19: null is a key not given at every level ("why": null was "must be a string"), and
  // every fault is one class, a UsageError (CLI exit 2, Python ValueError), as unknown keys are.
  j = tune::profile_to_json(p);
  for (const char* k : {"why", "deployed", "winner", "searched", "objective"}) j[k] = nullptr;
  j["run"]["id"] = nullptr;
  j["presentation"]["spotlight_tokens"] = nullptr;
  EXPECT_NO_THROW(tune::profile_from_json(j, "p.json"));
  j = tune::profile_to_json(p);
  j["why"] = 5;
  EXPECT_THROW(tune::profile_from_json(j, "p.json"), UsageError);
  // The deploy decision: it round-trips; "original" of another presentation, an empty or unknown
  // value, and a run id past int64 are refused; a decision without a reason says so.
  {
    tune::Profile d = p;
    d.deployed = "tuned";
    d.winner = tune::label(p.presentation);
    EXPECT_EQ(tune::profile_from_json(tune::profile_to_json(d), "p.json"), d);
    EXPECT_EQ(tune::deployment_note(d),
              "deployed the tuned presentation (the profile gives no reason)");
    nlohmann::json bad = tune::profile_to_json(d);
    for (const nlohmann::json& v : {nlohmann::json("original"), nlohmann::json(""),
                                    nlohmann::json("maybe"), nlohmann::json(1)}) {
      bad["deployed"] = v;
      EXPECT_THROW(tune::profile_from_json(bad, "p.json"), Error) << v;
    }
    bad = tune::profile_to_json(d);
    bad["run"]["id"] = uint64_t(-1);
    EXPECT_THROW(tune::profile_from_json(bad, "p.json"), Error);
    tune::Profile o = d;
    o.presentation = tune::original_presentation();
    o.presentation.k = 3;  // the control: the largest k that fits
    o.deployed = "original";
    o.why = "the held-out split does not confirm the winner";
    EXPECT_EQ(tune::profile_from_json(tune::profile_to_json(o), "p.json"), o);
  }
  EXPECT_THROW(tune::profile_from_json(nlohmann::json::object(), "p.json"), Error);
}

// Issue 40, item 12: what a profile leaves out or misspells is not silently the original's value.
TEST(TuneProfile, IncompleteOrIncoherentPresentationsAreRefused) {
  const nlohmann::json base = tune::profile_to_json(tune::Profile{});
  auto error_of = [&](const nlohmann::json& presentation) -> std::string {
    nlohmann::json j = base;
    j["presentation"] = presentation;
    try {
      tune::profile_from_json(j, "p.json");
    } catch (const Error& e) {
      return e.what();
    }
    return "";
  };
  EXPECT_NE(error_of({{"delimiter", "none"}}).find("presentation: p: missing: delimiter 'none'"),
            std::string::npos);
  EXPECT_NE(error_of({{"spotlight_tokens", true}}).find("spotlight_tokens: true needs spotlight"),
            std::string::npos);
  EXPECT_NE(error_of({{"delimeter", "-"}, {"p", 1}})
                .find("'delimeter' is not supported (a presentation takes delimiter, p,"),
            std::string::npos);
  // A null key is a key not given (pass 19: {"k": null} was "must be a non-negative integer").
  EXPECT_EQ(error_of({{"k", nullptr}, {"junk", nullptr}}), "");
  // 10^12 sentences wrapped to a negative int, then "must be at least 0" (item 18).
  EXPECT_NE(
      error_of({{"spotlight", 1000000000000LL}}).find("spotlight: must be at most 2147483647"),
      std::string::npos);
  // What the original presentation leaves out is its own value, and a full one is read whole.
  EXPECT_EQ(error_of(nlohmann::json::object()), "");
  EXPECT_EQ(error_of({{"delimiter", "-"}, {"p", 0.5}, {"format", "json"}}), "");
  EXPECT_EQ(error_of({{"spotlight", 2}, {"spotlight_tokens", true}}), "");
}

}  // namespace
