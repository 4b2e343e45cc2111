// Format serialisers and their strict subset validators (formats.h), dates and seeds
// (perturb_rules.h): hand-written expected strings and rejection cases.
#include <gtest/gtest.h>

#include "base/error.h"
#include "pipelines/sure/formats.h"
#include "pipelines/sure/perturb_rules.h"
#include "pipelines/sure/taxonomy.h"

using namespace ragform::sure;

TEST(SureFormats, HtmlTemplateOfFigure9) {
  EXPECT_EQ(to_html_doc("A  Title", "x < y & z", MetaTag{"timestamp", "2020-01-02"}),
            "<html lang=\"en\">\n<head>\n  <meta charset=\"UTF-8\">\n"
            "  <meta name='timestamp' content='2020-01-02'>\n  <title>A Title</title>\n</head>\n"
            "<body> x &lt; y &amp; z </body>\n</html>");
  ParsedDoc p = parse_html_subset(to_html_doc("T's", "a<b>&c", MetaTag{"datasource", "it's"}));
  EXPECT_EQ(p.title, "T's");
  EXPECT_EQ(p.text, "a<b>&c");
  EXPECT_EQ(p.meta.at("datasource"), "it's");
}

TEST(SureFormats, HtmlValidatorRejects) {
  EXPECT_THROW(parse_html_subset("<html lang=\"en\"><head></head><body> a </body></html>"),
               ragform::Error);  // no charset
  std::string ok = to_html_doc("t", "a");
  EXPECT_NO_THROW(parse_html_subset(ok));
  std::string bad = ok;
  bad.replace(bad.find("> a <") + 2, 1, "a & b");
  EXPECT_THROW(parse_html_subset(bad), ragform::Error);  // bare &
  EXPECT_THROW(parse_html_subset(ok + "x"), ragform::Error);
  EXPECT_THROW(parse_html_subset(ok.substr(0, ok.size() - 3)), ragform::Error);
}

TEST(SureFormats, YamlScalars) {
  EXPECT_EQ(to_yaml_doc("Paris", "Capital of France."), "Title: Paris\nText: Capital of France.\n");
  EXPECT_EQ(to_yaml_doc("1984", "He said: \"no\" # x"),
            "Title: \"1984\"\nText: \"He said: \\\"no\\\" # x\"\n");
  EXPECT_EQ(to_yaml_doc("yes", "line1\nline2"), "Title: \"yes\"\nText: |2-\n  line1\n  line2\n");
  for (std::string text :
       {"a: b", "- dash", "line1\n\n line3", "tab\there", "back\\slash \"q\"", "ctrl\x01x",
        "ends with colon:", "one line\n", "two\nlines\n", "blank end\n\n"}) {
    ParsedDoc p = parse_yaml_subset(to_yaml_doc("Key: title", text));
    EXPECT_EQ(p.title, "Key: title");
    EXPECT_EQ(p.text, text);
  }
  EXPECT_THROW(parse_yaml_subset("Title: a: b\nText: c\n"), ragform::Error);
  EXPECT_THROW(parse_yaml_subset("Title: a\n"), ragform::Error);
  EXPECT_THROW(parse_yaml_subset("Title: \"a\nText: b\n"), ragform::Error);
}

// Found by fuzz/fuzz_sure_formats: a \x escape without two hex digits escaped the parser as
// std::invalid_argument (std::stoul), and "\x-1" decoded to U+FFFFFFFF (invalid UTF-8 out).
TEST(SureFormats, YamlHexEscapeNeedsTwoHexDigits) {
  EXPECT_EQ(parse_yaml_subset("Title: T\nText: \"\\x41\\x7a\\xE9\"\n").text, "Az\xC3\xA9");
  for (const char* doc : {"Title: T\nText: \"\\xZZ\"\n", "Title: T\nText: \"\\x-1\"\n",
                          "Title: T\nText: \"\\x 1\"\n", "Title: T\nText: \"\\x4\"\n"}) {
    EXPECT_THROW(parse_yaml_subset(doc), ragform::Error) << doc;
    EXPECT_THROW(validate_format(DocFormat::Yaml, doc), ragform::Error) << doc;
  }
}

TEST(SureFormats, JsonAndMarkdown) {
  EXPECT_EQ(to_json_doc("T", "say \"hi\""),
            "{\n  \"title\": \"T\",\n  \"text\": \"say \\\"hi\\\"\"\n}");
  EXPECT_EQ(validate_format(DocFormat::Json, to_json_doc("T", "x")).text, "x");
  EXPECT_EQ(to_markdown_doc("T", "a\n# not heading"), "# T\na\n\\# not heading");
  ParsedDoc m = parse_markdown_subset(to_markdown_doc("T", "a\n# not heading"));
  EXPECT_EQ(m.text, "a\n# not heading");
  EXPECT_THROW(parse_markdown_subset("# T\n## sub"), ragform::Error);
  EXPECT_THROW(validate_format(DocFormat::Json, "{\"title\": 1, \"text\": \"x\"}"), ragform::Error);
}

TEST(SureRules, DatesAndSeeds) {
  EXPECT_EQ(parse_date("1970-01-01"), 0);
  EXPECT_EQ(parse_date("2000-03-01"), 11017);
  EXPECT_EQ(format_date(11017), "2000-03-01");
  EXPECT_EQ(format_date(parse_date("2024-02-29")), "2024-02-29");
  EXPECT_THROW(parse_date("2023-02-29"), ragform::Error);
  EXPECT_THROW(parse_date("2023-1-01"), ragform::Error);
  RuleOptions o;
  o.knowledge_cutoff = "2023-10-01";
  for (int i = 0; i < 200; ++i) {
    std::string key = "doc" + std::to_string(i);
    std::string pre = timestamp_for(false, o, key), post = timestamp_for(true, o, key);
    EXPECT_LT(pre, "2023-10-01");
    EXPECT_GE(pre, "2013-10-01");
    EXPECT_GT(post, "2023-10-01");
    EXPECT_LE(post, "2025-10-01");
    EXPECT_EQ(pre, timestamp_for(false, o, key));  // deterministic
  }
  EXPECT_EQ(datasource_url(false, "Nobel Prize", 0, "k"),
            "https://en.wikipedia.org/wiki/Nobel_Prize");
  std::string tw = datasource_url(true, "Nobel Prize in Physics", 0, "k");
  EXPECT_EQ(tw.rfind("https://twitter.com/NobelPrizeinPhy/status/", 0), 0u) << tw;
  EXPECT_EQ(tw.size(), std::string("https://twitter.com/NobelPrizeinPhy/status/").size() + 19);
}

TEST(SureRules, KindsSelection) {
  EXPECT_EQ(all_kinds().size(), 15u);
  EXPECT_EQ(select_kinds("logic,format,metadata").size(), 11u);
  EXPECT_EQ(select_kinds("all").size(), 15u);
  EXPECT_EQ(select_kinds("format/json, style").size(), 3u);
  EXPECT_THROW(select_kinds("logic,bogus"), ragform::UsageError);
  for (const auto& k : all_kinds()) EXPECT_EQ(parse_kind(k.name), k.kind);
}

TEST(SureRules, ReverseAndRandomOrders) {
  Document d{"T", "First one. Second one. Third one."};
  RuleOptions o;
  EXPECT_EQ(apply_rule(Kind::LogicReverse, d, o, "k").text, "Third one. Second one. First one.");
  Perturbation single = apply_rule(Kind::LogicRandom, Document{"T", "Only one."}, o, "k");
  EXPECT_EQ(single.text, "Only one.");
  EXPECT_EQ(single.note, "single sentence");
  Perturbation r = apply_rule(Kind::LogicRandom, d, o, "k");
  EXPECT_NE(r.text, "First one. Second one. Third one.");
  EXPECT_EQ(r.text, apply_rule(Kind::LogicRandom, d, o, "k").text);
  EXPECT_THROW(apply_rule(Kind::StyleSimple, d, o, "k"), ragform::Error);
  // An unterminated chunk end is kept apart by a blank line when it is no longer last.
  EXPECT_EQ(
      apply_rule(Kind::LogicReverse, Document{"T", "Done here. As of 2017, it has"}, o, "k").text,
      "As of 2017, it has\n\nDone here.");
}
