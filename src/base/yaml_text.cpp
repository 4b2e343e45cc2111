#include "base/yaml_text.h"

#include <optional>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

#include <yaml-cpp/eventhandler.h>
#include <yaml-cpp/parser.h>

#include "base/json_file.h"

namespace ragform {

namespace {

// A first pass over the events, building nothing: refuses aliases and deep nesting before
// YAML::Load builds (and a later walk copies) the tree. Its own recursion stops at the bound too,
// as the parser stops at the first throw.
struct Checker : YAML::EventHandler {
  int depth = 0;
  // One entry per open collection: for a map, whether its next node is a key.
  std::vector<std::pair<bool, bool>> open_;  // (is a map, next is a key)

  // Every node passes here first: a sequence or map where a map wants a key ("? [a, b] : c") is
  // refused, as no ragform input has one and yaml-cpp's conversions of it throw "bad conversion"
  // with no line. Refused after the pass (refuse_complex_key), so that a syntax error later in
  // the text is the one reported: an unclosed "[[2, 3" reaches here as a key first.
  void node(const YAML::Mark& mark, bool collection) {
    if (!open_.empty() && open_.back().first) {
      if (open_.back().second && collection && !complex_key) complex_key = mark;
      open_.back().second = !open_.back().second;
    }
  }
  std::optional<YAML::Mark> complex_key;
  void refuse_complex_key() const {
    if (complex_key)
      throw YAML::ParserException(*complex_key,
                                  "complex keys (a list or a map as a key) are not accepted");
  }
  void open(const YAML::Mark& mark, bool map) {
    node(mark, true);
    if (++depth > kMaxJsonDepth)
      throw YAML::ParserException(
          mark, "nesting deeper than " + std::to_string(kMaxJsonDepth) + " levels");
    open_.emplace_back(map, true);
  }
  void close() {
    --depth;
    if (!open_.empty()) open_.pop_back();
  }
  void OnDocumentStart(const YAML::Mark&) override {}
  void OnDocumentEnd() override {}
  void OnNull(const YAML::Mark& mark, YAML::anchor_t) override { node(mark, false); }
  void OnAlias(const YAML::Mark& mark, YAML::anchor_t) override {
    throw YAML::ParserException(mark, "aliases (*name) are not accepted");
  }
  void OnScalar(const YAML::Mark& mark, const std::string&, YAML::anchor_t,
                const std::string&) override {
    node(mark, false);
  }
  void OnSequenceStart(const YAML::Mark& mark, const std::string&, YAML::anchor_t,
                       YAML::EmitterStyle::value) override {
    open(mark, false);
  }
  void OnSequenceEnd() override { close(); }
  void OnMapStart(const YAML::Mark& mark, const std::string&, YAML::anchor_t,
                  YAML::EmitterStyle::value) override {
    open(mark, true);
  }
  void OnMapEnd() override { close(); }
};

}  // namespace

YAML::Node load_yaml_text(std::string_view text) {
  const std::string s(text);
  {
    std::istringstream in(s);
    YAML::Parser parser(in);
    Checker check;
    // The first document only: it is the one YAML::Load builds. Looping until HandleNextDocument
    // returns false never ended on some malformed streams (yaml-cpp 0.7 returned true without
    // consuming input: the fuzz_sure_formats smoke ran forever, and CI with it).
    parser.HandleNextDocument(check);
    check.refuse_complex_key();
  }
  return YAML::Load(s);
}

}  // namespace ragform
