// The real parsers behind SURE's format validation: yaml-cpp and gumbo accept what the templates
// emit (round trip) and reject broken documents.
#include "pipelines/sure/format_parsers.h"

#include <gtest/gtest.h>

#include "base/error.h"
#include "pipelines/sure/formats.h"

namespace ragform::sure {

TEST(SureFormatParsers, RealParsersRoundTripTheTemplates) {
  const std::string title = "Brooks & Dunn: \"Hits\" #1",
                    text = "Line one: a \"quote\" & <b>tag</b>.\nLine two # not a comment.";
  ParsedDoc y = parse_yaml_real(to_yaml_doc(title, text));
  EXPECT_EQ(y.title, title);
  EXPECT_EQ(y.text, text);
  ParsedDoc h = parse_html_real(
      to_html_doc(title, text, MetaTag{"source", "https://en.wikipedia.org/wiki/X"}));
  EXPECT_EQ(h.title, title);
  EXPECT_EQ(h.meta.at("source"), "https://en.wikipedia.org/wiki/X");
  EXPECT_NE(h.text.find("<b>tag</b>"),
            std::string::npos);  // escaped in the markup, decoded by gumbo
  EXPECT_EQ(validate_format(DocFormat::Yaml, to_yaml_doc(title, text)).text, text);
}

TEST(SureFormatParsers, BrokenDocumentsAreRejected) {
  EXPECT_THROW(parse_yaml_real("Title: [unclosed\nText: x\n"), Error);
  EXPECT_THROW(parse_yaml_real("- a list\n- not a map\n"), Error);
  EXPECT_THROW(parse_yaml_real("Title: a\n"), Error);  // no Text
  EXPECT_THROW(
      parse_html_real("<html><head><title>t</title></head><body><p>unclosed</div></body></html>"),
      Error);
  EXPECT_THROW(parse_html_real("<html><head></head><body>x</body></html>"), Error);  // no <title>
}

}  // namespace ragform::sure
