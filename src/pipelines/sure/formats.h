// Format perturbations of SURE (section 3.2, Figure 9 templates) and their validators.
//
// Serialisers: text/doc_formats.h (shared with C-NORM), re-exported here under sure::.
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

#include "text/doc_formats.h"

namespace ragform::sure {

using text::html_escape;
using text::MetaTag;
using text::one_line;
using text::to_html_doc;
using text::to_json_doc;
using text::to_markdown_doc;
using text::to_yaml_doc;
using text::yaml_plain_ok;

enum class DocFormat { Json, Html, Yaml, Markdown };

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

}  // namespace ragform::sure
