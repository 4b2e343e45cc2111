// YAML text from outside the process (a tune space file, a SURE format perturbation), loaded with
// the same bound as JSON (base/json_file.h) and without aliases. yaml-cpp shares an aliased node,
// but every walk of the tree (conversion to JSON, as<>) copies it once per use, so 465 bytes of
// nested aliases ("a: &a [x,x,...], b: &b [*a,*a,...], ...") grow to gigabytes; no ragform input
// needs an alias, so one is refused where it stands.
#pragma once
#include <string_view>

#include <yaml-cpp/yaml.h>

namespace ragform {

// The document of `text`. Throws YAML::ParserException (mark = where, msg = why) for text that
// is not YAML, an alias ("aliases (*name) are not accepted"), a list or map as a map's key
// ("? [a, b] : c": "complex keys ... are not accepted"), a key a map already has ("duplicate key
// 'k'"), a second document after the first ("only one document is read; a second starts here"),
// or nesting deeper than kMaxJsonDepth ("nesting deeper than 128 levels").
YAML::Node load_yaml_text(std::string_view text);

}  // namespace ragform
