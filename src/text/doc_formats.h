// Document formats: a passage (title, text) rendered as JSON, HTML, YAML or Markdown. Shared
// presentation code, below the pipelines: SURE's format perturbations (section 3.2, Figure 9)
// and C-NORM's document-wrapper candidates both use these renderings. SURE's validators that
// parse them back stay in pipelines/sure/formats.h.
//
//   JSON      {"title": T, "text": D}, 2-space indent, by nlohmann-json (escaping is its own).
//   HTML      <html lang="en"><head><meta charset="UTF-8">[<meta name='K' content='V'>]
//             <title>T</title></head><body> D </body></html>, one element per line as in
//             SURE's Figure 9. Figure 9 puts the bare {Title} in <head>; bare text there would
//             end the head in a real HTML parser, so the title goes in <title> (the faithful
//             reading). Text escapes & < > as &amp; &lt; &gt;; attribute values also ' as &#39;.
//   YAML      "Title: T\nText: D\n". A value is a plain scalar when that is unambiguous (no
//             indicator first character, no ": " or " #", not a bool/null/number look-alike,
//             one line), else a double-quoted scalar (\\ \" and \xNN/\uNNNN escapes for control
//             characters), or a literal block "|2-" ("|2" when it ends with one line break)
//             when it spans several lines.
//   Markdown  "# T\nD" (as Figure 9): an ATX heading line, then the paragraph; document lines
//             starting with '#' get a backslash so they cannot become headings.
// Titles are collapsed to one line (runs of whitespace -> one space) in every template.
#pragma once
#include <optional>
#include <string>
#include <string_view>

namespace ragform::text {

// One optional <meta name='name' content='content'> in the HTML head (metadata perturbations).
struct MetaTag {
  std::string name, content;
};

std::string to_json_doc(std::string_view title, std::string_view text);
std::string to_html_doc(std::string_view title, std::string_view text,
                        const std::optional<MetaTag>& meta = std::nullopt);
std::string to_yaml_doc(std::string_view title, std::string_view text);
std::string to_markdown_doc(std::string_view title, std::string_view text);

std::string one_line(std::string_view s);  // whitespace runs -> ' ', trimmed
std::string html_escape(std::string_view s, bool attribute);
// Whether a YAML value can be written as a plain scalar (the rule above; SURE's YAML validator
// checks plain values with it).
bool yaml_plain_ok(std::string_view s);

}  // namespace ragform::text
