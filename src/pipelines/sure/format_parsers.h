// Real-parser validation of SURE's format perturbations: YAML through yaml-cpp and HTML through
// gumbo (Google's HTML5 parser), both from Debian. validate_format (formats.h) calls these, so an
// emitted document counts as valid only when a real parser of its format accepts it (gumbo: with no
// parse errors) and recovers the same title, text and meta tags.
#pragma once
#include <string_view>

#include "pipelines/sure/formats.h"

namespace ragform::sure {

// Throws ragform::Error("yaml" | "html", reason) when the document does not parse or lacks the
// expected fields.
ParsedDoc parse_yaml_real(std::string_view doc);
ParsedDoc parse_html_real(std::string_view doc);

}  // namespace ragform::sure
