#include "base/yaml_text.h"

#include <optional>
#include <set>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

#include <yaml-cpp/eventhandler.h>
#include <yaml-cpp/parser.h>

#include "base/excerpt.h"
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
  void node(const YAML::Mark& mark, bool collection, const std::string* scalar = nullptr) {
    if (!open_.empty() && open_.back().first) {
      if (open_.back().second && collection && !complex_key) complex_key = mark;
      // A scalar key the map has already had: yaml-cpp keeps both and a lookup sees the first,
      // so the second was silently ignored (pass 6). Refused after the pass, as a complex key.
      if (open_.back().second && scalar && !duplicate_key && !keys_.back().insert(*scalar).second)
        duplicate_key = std::make_pair(mark, *scalar);
      open_.back().second = !open_.back().second;
    }
  }
  std::optional<std::pair<YAML::Mark, std::string>> duplicate_key;
  std::optional<YAML::Mark> complex_key;
  void refuse_complex_key() const {
    if (complex_key)
      throw YAML::ParserException(*complex_key,
                                  "complex keys (a list or a map as a key) are not accepted");
    if (duplicate_key)
      throw YAML::ParserException(duplicate_key->first,
                                  "duplicate key '" + excerpt(duplicate_key->second) + "'");
  }
  void open(const YAML::Mark& mark, bool map) {
    node(mark, true);
    if (++depth > kMaxJsonDepth)
      throw YAML::ParserException(
          mark, "nesting deeper than " + std::to_string(kMaxJsonDepth) + " levels");
    open_.emplace_back(map, true);
    keys_.emplace_back();
  }
  void close() {
    --depth;
    if (!open_.empty()) open_.pop_back();
    if (!keys_.empty()) keys_.pop_back();
  }
  // The scalar keys seen in each open collection (empty for a sequence).
  std::vector<std::set<std::string>> keys_;
  void OnDocumentStart(const YAML::Mark&) override {}
  void OnDocumentEnd() override {}
  void OnNull(const YAML::Mark& mark, YAML::anchor_t) override { node(mark, false); }
  void OnAlias(const YAML::Mark& mark, YAML::anchor_t) override {
    throw YAML::ParserException(mark, "aliases (*name) are not accepted");
  }
  void OnScalar(const YAML::Mark& mark, const std::string&, YAML::anchor_t,
                const std::string& value) override {
    node(mark, false, &value);
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

// The handler of the stream after the first document: any event is a second document, refused
// where it starts (pass 6: `---` or `...` and more text were silently ignored).
struct NoMoreDocuments : YAML::EventHandler {
  [[noreturn]] static void refuse(const YAML::Mark& mark) {
    throw YAML::ParserException(mark, "only one document is read; a second starts here");
  }
  void OnDocumentStart(const YAML::Mark& mark) override { refuse(mark); }
  void OnDocumentEnd() override { refuse(YAML::Mark::null_mark()); }
  void OnNull(const YAML::Mark& mark, YAML::anchor_t) override { refuse(mark); }
  void OnAlias(const YAML::Mark& mark, YAML::anchor_t) override { refuse(mark); }
  void OnScalar(const YAML::Mark& mark, const std::string&, YAML::anchor_t,
                const std::string&) override {
    refuse(mark);
  }
  void OnSequenceStart(const YAML::Mark& mark, const std::string&, YAML::anchor_t,
                       YAML::EmitterStyle::value) override {
    refuse(mark);
  }
  void OnSequenceEnd() override { refuse(YAML::Mark::null_mark()); }
  void OnMapStart(const YAML::Mark& mark, const std::string&, YAML::anchor_t,
                  YAML::EmitterStyle::value) override {
    refuse(mark);
  }
  void OnMapEnd() override { refuse(YAML::Mark::null_mark()); }
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
    // Anything after it is a second document, refused at its first event: one more call, bounded
    // as the first (the handler throws before the parser goes on).
    NoMoreDocuments none;
    parser.HandleNextDocument(none);
  }
  return YAML::Load(s);
}

}  // namespace ragform
