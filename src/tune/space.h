// The search space of `ragform tune`: the values of each presentation dimension (presentation.h)
// and the candidates they make. A dimension with one value is not searched (it keeps that value).
//
// Candidates, in this order (ties of every ranking go to the earlier candidate):
//   for each k, for each order, for each spotlight value:
//     spotlight off: for each format, for each p, for each delimiter — the delimiter "original"
//                    only once per (k, order, format), at the first p and with p = 0 (C-NORM's
//                    rule: the unformatted text ignores p);
//     spotlight K:   one candidate (delimiter original, format plain: selection keeps the
//                    sentences as written).
// A dimension that does not apply to the task is refused (kv: formats and spotlight).
//
// The space file (--space FILE, JSON or YAML) maps dimension names to value lists; a missing key
// keeps the default's values (JSON: {"delimiter": ["original", "-"], "p": [0.5, 1], "format":
// ["plain", "json"], "order": ["retrieved", "edges"], "k": [0, 3], "spotlight": ["off", "3",
// "3+tokens"]}; k 0 and "all" are every document).
#pragma once
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "tune/presentation.h"

namespace ragform::tune {

struct SpotlightValue {
  int K = 0;  // 0 = off
  bool tokens = false;
  bool operator==(const SpotlightValue&) const = default;
};
SpotlightValue parse_spotlight_value(const std::string& s);  // "off" | "K" | "K+tokens"
std::string spotlight_value_name(const SpotlightValue& v);

struct Space {
  std::vector<std::string> delimiters;  // C-NORM delimiter names
  std::vector<double> ps;
  std::vector<std::string> formats;
  std::vector<Order> orders;
  std::vector<size_t> ks;  // 0 = all
  std::vector<SpotlightValue> spotlight;
  uint64_t format_seed = 0;
};

// The default space of a task. qa: delimiters original, none, -, _, :; p 0.5, 1; every format;
// orders retrieved, reversed, edges; k all, 5, 3; spotlight off, 6, 6+tokens. needle (short
// stories for small models): the same delimiters and p; formats plain, json, yaml, html (the
// markdown heading of a title-less slot says nothing more than json's); orders retrieved,
// reversed, edges; k all, 3; spotlight off. kv: the delimiters at p 1 only (format plain, order
// retrieved, k all, spotlight off; C-NORM's kv rule replaces every dash of a UUID for any p > 0).
// Prompts longer than the reader's context (--ctx: by default the model file's context_length;
// stories260K's file states 2048 though it was trained on 512, so give --ctx 512) are dropped
// before the search (run.h), so k and formats are capped for the model, and the output says how
// many candidates that removed, the cap and where it came from.
Space default_space(Task t);

// The dimensions with more than one value, in the order delimiter, p, format, order, k,
// spotlight (the profile's "searched").
std::vector<std::string> searched_dimensions(const Space& s);

// The most candidates a space may span (before the duplicates of `original` are removed); the
// default spaces span a few hundred (qa 423).
inline constexpr size_t kMaxCandidates = 20000;

// Every candidate (see above). Throws UsageError for an empty dimension, a value that does not
// apply to the task, or a space of more than kMaxCandidates.
std::vector<Presentation> candidates(const Space& s, Task t);

nlohmann::ordered_json space_to_json(const Space& s);
// Overrides the dimensions `j` names (an object of arrays). Error "<where>: <dimension>: <why>".
Space space_from_json(const nlohmann::json& j, Space base, const std::string& where);
// A JSON (.json) or YAML (anything else) space file over `base`.
Space load_space_file(const std::string& path, Space base);

// A comma-separated flag value (--delims, --p, --formats, --orders, --k, --spotlight) as the
// dimension's values: split at commas; for delimiters, `comma` is ",", and a name given twice is a
// UsageError. A list (a space file's array, a Python list) is a list: it is never split.
std::vector<std::string> dimension_values(const std::string& dimension, const std::string& list);
// Sets one dimension of `s` to `values`. UsageError naming the dimension for a bad value.
void set_dimension(Space& s, const std::string& dimension, const std::vector<std::string>& values);
// set_dimension(s, dimension, dimension_values(dimension, list)).
void set_dimension(Space& s, const std::string& dimension, const std::string& list);

// "delimiter: original, none, -, _, :\n  p: 0.5, 1\n..." and the candidate count, for --help.
std::string describe_space(const Space& s, Task t);

}  // namespace ragform::tune
