#include "pipelines/sure/taxonomy.h"

#include <algorithm>
#include <set>

#include "base/error.h"
#include "base/options.h"

namespace ragform::sure {

const std::vector<KindInfo>& all_kinds() {
  static const std::vector<KindInfo> kinds = {
      {Kind::StyleSimple, "style/simple", "style", NeedsReader::Perturber, false},
      {Kind::StyleComplex, "style/complex", "style", NeedsReader::Perturber, false},
      {Kind::SourceLlmGenerated, "source/llm-generated", "source", NeedsReader::Perturber, false},
      {Kind::SourceSelfGenerated, "source/self-generated", "source", NeedsReader::UnderTest, false},
      {Kind::LogicReverse, "logic/reverse", "logic", NeedsReader::None, false},
      {Kind::LogicRandom, "logic/random", "logic", NeedsReader::None, false},
      {Kind::LogicLlmRanked, "logic/llm-ranked", "logic", NeedsReader::Perturber, false},
      {Kind::FormatJson, "format/json", "format", NeedsReader::None, true},
      {Kind::FormatHtml, "format/html", "format", NeedsReader::None, true},
      {Kind::FormatYaml, "format/yaml", "format", NeedsReader::None, true},
      {Kind::FormatMarkdown, "format/markdown", "format", NeedsReader::None, true},
      {Kind::TimestampPre, "metadata/timestamp-pre", "metadata", NeedsReader::None, true},
      {Kind::TimestampPost, "metadata/timestamp-post", "metadata", NeedsReader::None, true},
      {Kind::DatasourceWiki, "metadata/datasource-wiki", "metadata", NeedsReader::None, true},
      {Kind::DatasourceTwitter, "metadata/datasource-twitter", "metadata", NeedsReader::None, true},
  };
  return kinds;
}

const KindInfo& info(Kind k) { return all_kinds()[static_cast<size_t>(k)]; }

std::optional<Kind> parse_kind(std::string_view name) {
  for (const auto& k : all_kinds())
    if (name == k.name) return k.kind;
  return std::nullopt;
}

const std::vector<std::string>& categories() {
  static const std::vector<std::string> c = {"style", "source", "logic", "format", "metadata"};
  return c;
}

std::vector<Kind> select_kinds(const std::string& list) {
  std::set<Kind> chosen;
  size_t pos = 0;
  while (pos <= list.size()) {
    size_t comma = list.find(',', pos);
    if (comma == std::string::npos) comma = list.size();
    std::string item = list.substr(pos, comma - pos);
    pos = comma + 1;
    while (!item.empty() && item.back() == ' ') item.pop_back();
    while (!item.empty() && item.front() == ' ') item.erase(item.begin());
    if (item.empty()) continue;
    bool matched = false;
    for (const auto& k : all_kinds()) {
      if (item == "all" || item == k.category || item == k.name) {
        chosen.insert(k.kind);
        matched = true;
      }
    }
    if (!matched)
      throw OptionError("kinds", "unknown perturbation or category '" + item +
                                     "' (categories: style, source, logic, format, metadata; "
                                     "or a full name such as format/json; or all)");
  }
  if (chosen.empty()) throw OptionError("kinds", "no perturbation selected");
  return {chosen.begin(), chosen.end()};
}

}  // namespace ragform::sure
