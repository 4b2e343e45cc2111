// Format perturbations of SURE (section 3.2, Figure 9 templates) and their validators.
//
// Serialisers (the paper's placeholder templates, made to really parse):
//   JSON      {"title": T, "text": D}, 2-space indent, by nlohmann-json (escaping is its own).
//   HTML      <html lang="en"><head><meta charset="UTF-8">[<meta name='K' content='V'>]
//             <title>T</title></head><body> D </body></html>, one element per line as in
//             Figure 9. Figure 9 puts the bare {Title} in <head>; bare text there would end the
//             head in a real HTML parser, so the title goes in <title> (the faithful reading).
//             Text escapes & < > as &amp; &lt; &gt;; attribute values also ' as &#39;.
//   YAML      "Title: T\nText: D\n". A value is a plain scalar when that is unambiguous (no
//             indicator first character, no ": " or " #", not a bool/null/number look-alike,
//             one line), else a double-quoted scalar (\\ \" and \xNN/\uNNNN escapes for control
//             characters), or a literal block "|2-" ("|2" when it ends with one line
//             break) when it spans several lines.
//   Markdown  "# T\nD" (as Figure 9) — an ATX heading line, then the paragraph; document lines
//   starting with '#'
//             get a backslash so they cannot become headings.
// Titles are collapsed to one line (runs of whitespace -> one space) in every template.
//
// Validators: `validate_format` is the single entry point. JSON parses with nlohmann-json, YAML
// with yaml-cpp and HTML with gumbo (format_parsers.h; gumbo must report no parse error); YAML
// and HTML are also read by small strict parsers of exactly the subset emitted here
// (parse_html_subset, parse_yaml_subset), and both readings must agree.
#pragma once
#include <map>
#include <optional>
#include <string>
#include <string_view>

namespace ragform::sure {

enum class DocFormat { Json, Html, Yaml, Markdown };

// One optional <meta name='name' content='content'> in the HTML head (metadata perturbations).
struct MetaTag {
  std::string name, content;
};

std::string to_json_doc(std::string_view title, std::string_view text);
std::string to_html_doc(std::string_view title, std::string_view text,
                        const std::optional<MetaTag>& meta = std::nullopt);
std::string to_yaml_doc(std::string_view title, std::string_view text);
std::string to_markdown_doc(std::string_view title, std::string_view text);

// What a validator recovered from a serialised document.
struct ParsedDoc {
  std::string title, text;
  std::map<std::string, std::string> meta;  // HTML: <meta name content> pairs (not charset)
};

// Parses `doc` in `format`; throws ragform::Error("<format>", reason) when it does not parse.
ParsedDoc validate_format(DocFormat format, std::string_view doc);

// The strict subset parsers behind validate_format (exposed for tests).
ParsedDoc parse_html_subset(std::string_view doc);
ParsedDoc parse_yaml_subset(std::string_view doc);
ParsedDoc parse_markdown_subset(std::string_view doc);

// Helpers shared with the serialisers.
std::string one_line(std::string_view s);  // whitespace runs -> ' ', trimmed
std::string html_escape(std::string_view s, bool attribute);

}  // namespace ragform::sure
