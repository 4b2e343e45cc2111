#include "base/yaml_text.h"

#include <sstream>
#include <string>

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

  void open(const YAML::Mark& mark) {
    if (++depth > kMaxJsonDepth)
      throw YAML::ParserException(
          mark, "nesting deeper than " + std::to_string(kMaxJsonDepth) + " levels");
  }
  void OnDocumentStart(const YAML::Mark&) override {}
  void OnDocumentEnd() override {}
  void OnNull(const YAML::Mark&, YAML::anchor_t) override {}
  void OnAlias(const YAML::Mark& mark, YAML::anchor_t) override {
    throw YAML::ParserException(mark, "aliases (*name) are not accepted");
  }
  void OnScalar(const YAML::Mark&, const std::string&, YAML::anchor_t,
                const std::string&) override {}
  void OnSequenceStart(const YAML::Mark& mark, const std::string&, YAML::anchor_t,
                       YAML::EmitterStyle::value) override {
    open(mark);
  }
  void OnSequenceEnd() override { --depth; }
  void OnMapStart(const YAML::Mark& mark, const std::string&, YAML::anchor_t,
                  YAML::EmitterStyle::value) override {
    open(mark);
  }
  void OnMapEnd() override { --depth; }
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
  }
  return YAML::Load(s);
}

}  // namespace ragform
