#include "pipelines/cnorm/tasks.h"

#include <gtest/gtest.h>

#include <set>

#include "base/error.h"

namespace ragform::cnorm {
namespace {

Item three_docs() {
  Item it;
  it.id = "q1";
  it.question = "Where?";
  it.answers = {"Paris"};
  it.gold = {"G", "Paris is big."};
  it.distractors = {{"D1", "Rome is old."}, {"D2", "Oslo is cold."}};
  return it;
}

eval::Context ctx(const std::string& text, bool gold = false) {
  eval::Context c;
  c.title = "t";
  c.text = text;
  c.isgold = gold;
  return c;
}

eval::QaRecord rec(const std::string& id, const std::string& answer,
                   std::vector<eval::Context> ctxs) {
  eval::QaRecord r;
  r.id = id;
  r.question = "q " + id;
  r.answers = {answer};
  r.ctxs = std::move(ctxs);
  return r;
}

}  // namespace

TEST(CnormTasks, ArrangeMovesOnlyTheGold) {
  Item it = three_docs();
  auto d = arrange(it, 3, 1);
  ASSERT_EQ(d.size(), 3u);
  EXPECT_EQ(d[0].title, "D1");
  EXPECT_EQ(d[1].title, "G");
  EXPECT_EQ(d[2].title, "D2");
  EXPECT_EQ(arrange(it, 3, 2)[2].title, "G");
  EXPECT_EQ(arrange(it, 2, 0)[1].title, "D1");
  EXPECT_THROW(arrange(it, 3, 3), Error);
  EXPECT_THROW(arrange(it, 4, 0), Error);
  EXPECT_THROW(arrange(it, 0, 0), Error);
}

TEST(CnormTasks, RenderQaLikeLostInTheMiddle) {
  Item it = three_docs();
  const std::string tmpl = "Docs:\n{search_results}\n\nQuestion: {question}\nAnswer:";
  Prompt p = render(Task::Qa, tmpl, it, arrange(it, 3, 1), Format{{"none", ""}, 0.0, 0});
  const std::string body =
      "Document [1](Title: D1) Rome is old.\nDocument [2](Title: G) Paris is big.\nDocument "
      "[3](Title: D2) Oslo is cold.";
  EXPECT_EQ(p.text, "Docs:\n" + body + "\n\nQuestion: Where?\nAnswer:");
  EXPECT_EQ(p.ctx_begin, 6u);
  EXPECT_EQ(p.ctx_end, 6u + body.size());
  // Formatting touches passage text only, not titles or the question.
  Prompt f = render(Task::Qa, tmpl, it, arrange(it, 3, 0), Format{{"-", "-"}, 1.0, 0});
  EXPECT_EQ(f.text,
            "Docs:\nDocument [1](Title: G) Paris-is-big.\nDocument [2](Title: D1) "
            "Rome-is-old.\nDocument [3](Title: D2) Oslo-is-cold.\n\nQuestion: Where?\nAnswer:");
}

TEST(CnormTasks, RenderKvAsModifiedUuid) {
  Item it;
  it.id = "kv";
  it.question = "a-b";
  it.answers = {"c-d"};
  it.gold = {"a-b", "c-d"};
  it.distractors = {{"e-f", "g-h"}};
  const std::string tmpl = "Data:\n{formatted_kv_records}\nKey: \"{key}\"";
  EXPECT_EQ(render(Task::Kv, tmpl, it, arrange(it, 2, 0), Format{{"&", "&"}, 0.5, 0}).text,
            "Data:\n{\"a&b\": \"c&d\",\n \"e&f\": \"g&h\"}\nKey: \"a&b\"");
  EXPECT_EQ(render(Task::Kv, tmpl, it, arrange(it, 2, 1), Format{{"&", "&"}, 0.0, 0}).text,
            "Data:\n{\"e-f\": \"g-h\",\n \"a-b\": \"c-d\"}\nKey: \"a-b\"");
}

TEST(CnormTasks, NeedleTemplate) {
  Item it;
  it.question = "The dog's name was";
  it.gold = {"", "There was a dog named Max."};
  it.distractors = {{"", "There was a cat named Sue."}};
  EXPECT_EQ(
      render(Task::Needle, needle_template(), it, arrange(it, 2, 1), Format{{"none", ""}, 0.0, 0})
          .text,
      "There was a cat named Sue. There was a dog named Max. The dog's name was");
}

TEST(CnormTasks, QaItemsTakeDistractorsWithoutTheAnswer) {
  std::vector<eval::QaRecord> rs = {rec("r0", "Paris", {ctx("Paris is the capital.", true)}),
                                    rec("r1", "Rome", {ctx("Rome is in Italy.", true)}),
                                    rec("r2", "Oslo", {ctx("Visit Paris and Oslo.", true)}),
                                    rec("r3", "Madrid", {ctx("Madrid is in Spain.", true)})};
  // Visiting orders (seeded_permutation(4, splitmix64(5 ^ fnv1a64(id))), from the Python
  // reference): r0: 3 0 1 2, r1: 3 0 2 1. r0 skips itself and r2, whose passage mentions Paris.
  auto items = build_qa_items(rs, 3, 5);
  ASSERT_EQ(items.size(), 4u);
  ASSERT_EQ(items[0].distractors.size(), 2u);
  EXPECT_EQ(items[0].distractors[0].text, "Madrid is in Spain.");
  EXPECT_EQ(items[0].distractors[1].text, "Rome is in Italy.");
  ASSERT_EQ(items[1].distractors.size(), 2u);
  EXPECT_EQ(items[1].distractors[0].text, "Madrid is in Spain.");
  EXPECT_EQ(items[1].distractors[1].text, "Paris is the capital.");
  EXPECT_EQ(build_qa_items(rs, 2, 5)[0].distractors.size(), 1u);
  EXPECT_THROW(build_qa_items(rs, 4, 5), Error);  // r0 has only two passages without "Paris"
  std::vector<std::string> skipped;
  auto kept = build_qa_items(rs, 4, 5, &skipped);
  EXPECT_EQ(skipped, std::vector<std::string>{"r0"});
  ASSERT_EQ(kept.size(), 3u);
  EXPECT_EQ(kept[0].id, "r1");
  EXPECT_EQ(kept[0].distractors.size(), 3u);
}

TEST(CnormTasks, QaItemsUseTheirOwnPassagesWhenEnough) {
  std::vector<eval::QaRecord> rs = {rec("r0", "x", {ctx("a."), ctx("b.", true), ctx("c.")})};
  auto items = build_qa_items(rs, 3, 0);
  EXPECT_EQ(items[0].gold.text, "b.");
  ASSERT_EQ(items[0].distractors.size(), 2u);
  EXPECT_EQ(items[0].distractors[0].text, "a.");
  EXPECT_EQ(items[0].distractors[1].text, "c.");
  EXPECT_EQ(items[0].natural_position, 1u);
  std::vector<eval::QaRecord> empty = {rec("e", "x", {})};
  EXPECT_THROW(build_qa_items(empty, 1, 0), Error);
}

TEST(CnormTasks, NeedleItemsAreUnambiguous) {
  auto items = make_needle_items(20, 10, 3);
  ASSERT_EQ(items.size(), 20u);
  for (const auto& it : items) {
    ASSERT_EQ(it.answers.size(), 1u);
    const std::string& name = it.answers[0];
    std::string animal = it.question.substr(4, it.question.find("'s") - 4);
    EXPECT_EQ(it.question, "The " + animal + "'s name was");
    EXPECT_EQ(it.gold.text.rfind(
                  "There was a " + animal + " named " + name + ". " + name + " liked to ", 0),
              0u)
        << it.gold.text;
    ASSERT_EQ(it.distractors.size(), 9u);
    std::set<std::string> names;
    for (const auto& d : it.distractors) {
      EXPECT_EQ(d.text.find("a " + animal + " named"), std::string::npos) << d.text;
      EXPECT_EQ(d.text.find(name), std::string::npos) << d.text;
      names.insert(
          d.text.substr(d.text.find("named ") + 6, d.text.find('.') - d.text.find("named ") - 6));
    }
    EXPECT_EQ(names.size(), 9u);
    EXPECT_LT(it.natural_position, 10u);
  }
  EXPECT_EQ(make_needle_items(3, 4, 3)[2].gold.text, make_needle_items(3, 4, 3)[2].gold.text);
  EXPECT_THROW(make_needle_items(1, 13, 0), UsageError);
}

TEST(CnormTasks, OriginalLeavesEveryTaskUnchanged) {
  const std::string text = "One two three. Four five six. Seven eight.";
  const Format orig{original_delimiter(), 1.0, 3};
  for (Task t : {Task::Qa, Task::Needle, Task::Longbench, Task::Kv})
    EXPECT_EQ(format_text(t, text, orig), text) << task_name(t);
  EXPECT_EQ(format_text(Task::Kv, "550e8400-e29b", orig), "550e8400-e29b");
  // The empty delimiter at the same p does change it: "original" is not "none".
  EXPECT_EQ(format_text(Task::Qa, text, Format{{"none", ""}, 1.0, 3}),
            "Onetwothree. Fourfivesix. Seveneight.");
  EXPECT_EQ(format_text(Task::Kv, "550e8400-e29b", Format{{"none", ""}, 1.0, 3}), "550e8400e29b");
  // In a prompt: the same bytes as the unformatted baseline.
  Item it = three_docs();
  const std::string tmpl = "{search_results}\n{question}";
  EXPECT_EQ(render(Task::Qa, tmpl, it, arrange(it, 3, 1), orig).text,
            render(Task::Qa, tmpl, it, arrange(it, 3, 1), Format{{"none", ""}, 0.0, 3}).text);
}

TEST(CnormTasks, LongbenchRendersAppendixDWithTheContextSpan) {
  Item it;
  it.id = "lb1";
  it.question = "Who went {search_results}?";
  it.choices = {"the cat", "the dog", "a bird", "no one"};
  it.gold = {"", "The dog went home. The cat stayed."};
  Prompt p = render(Task::Longbench, longbench_template(), it, arrange(it, 1, 0),
                    Format{{"&", "&"}, 1.0, 0});
  const std::string head =
      "Please read the following text and answer the question below.\n\n<text>\n";
  EXPECT_EQ(p.text, head +
                        "The&dog&went&home. The&cat&stayed.\n</text>\n\nQuestion: Who went "
                        "{search_results}?\n\nChoices:\n(A) the cat\n(B) the dog\n(C) a "
                        "bird\n(D) no one\n\nFormat your response as follows: \"The correct "
                        "answer is (insert answer here)\".");
  EXPECT_EQ(p.ctx_begin, head.size());
  EXPECT_EQ(p.text.substr(p.ctx_begin, p.ctx_end - p.ctx_begin),
            "The&dog&went&home. The&cat&stayed.");
  it.choices.pop_back();
  EXPECT_THROW(render(Task::Longbench, longbench_template(), it, arrange(it, 1, 0),
                      Format{{"&", "&"}, 1.0, 0}),
               Error);
  EXPECT_THROW(load_template(Task::Longbench, "x.prompt", ""), UsageError);
  EXPECT_EQ(load_template(Task::Longbench, "", ""), longbench_template());
}

// The default qa and kv prompts are the paper's (Appendix D's controlled setting, Appendix B),
// built in: the "Search Results:" label before the documents, no "JSON data:" line before the
// records.
TEST(CnormTasks, DefaultTemplatesAreThePapers) {
  const std::string qa = load_template(Task::Qa, "", "");
  EXPECT_EQ(qa, appendix_d_qa_template());
  EXPECT_EQ(qa,
            "Write a high-quality answer for the given question using only the provided search "
            "results (some of which might be irrelevant). The search results are ordered "
            "randomly.\n\nSearch Results: {search_results}\n\nQuestion: {question}\nAnswer:");
  Item it = three_docs();
  Prompt p = render(Task::Qa, qa, it, arrange(it, 3, 0), Format{{"none", ""}, 0.0, 0});
  EXPECT_NE(p.text.find("randomly.\n\nSearch Results: Document [1](Title: G) Paris is big.\n"
                        "Document [2](Title: D1) Rome is old."),
            std::string::npos)
      << p.text;
  // The label is not part of the documents' span (calibration's --context-span and mass).
  EXPECT_EQ(p.text.substr(p.ctx_begin, 13), "Document [1](");

  const std::string kv = load_template(Task::Kv, "", "");
  EXPECT_EQ(kv, appendix_b_kv_template());
  EXPECT_EQ(kv.find("JSON data"), std::string::npos);
  Item k;
  k.id = "kv";
  k.question = "a-b";
  k.answers = {"c-d"};
  k.gold = {"a-b", "c-d"};
  k.distractors = {{"e-f", "g-h"}};
  EXPECT_EQ(render(Task::Kv, kv, k, arrange(k, 2, 0), Format{{"none", ""}, 0.0, 0}).text,
            "Extract the value corresponding to the specified key in the JSON object below.\n\n"
            "{\"a-b\": \"c-d\",\n \"e-f\": \"g-h\"}\n\nKey: \"a-b\"\nCorresponding value:");
  // The shared folder is not read for a default (it may be missing).
  EXPECT_EQ(load_template(Task::Qa, "", "/nonexistent"), qa);
}

TEST(CnormTasks, ParseTask) {
  EXPECT_EQ(parse_task("longbench"), Task::Longbench);
  EXPECT_STREQ(task_name(Task::Longbench), "longbench");
  EXPECT_EQ(parse_task("qa"), Task::Qa);
  EXPECT_EQ(parse_task("needle"), Task::Needle);
  EXPECT_STREQ(task_name(Task::Kv), "kv");
  EXPECT_THROW(parse_task("QA"), UsageError);
}

}  // namespace ragform::cnorm
