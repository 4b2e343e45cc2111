// SURE's taxonomy of spurious features (sure-spurious-features.txt, section 3.2): five categories,
// fifteen perturbations, each with a stable name used in every file and command:
//   style/simple  style/complex                       (LLM rewrite, readability)
//   source/llm-generated  source/self-generated       (LLM paraphrase by a second reader / by the
//                                                      reader under test)
//   logic/reverse  logic/random  logic/llm-ranked     (sentence order; the last asks a reader)
//   format/json  format/html  format/yaml  format/markdown          (Figure 9 templates)
//   metadata/timestamp-pre  metadata/timestamp-post                 (HTML + <meta timestamp>)
//   metadata/datasource-wiki  metadata/datasource-twitter           (HTML + <meta datasource>)
// The paper counts 13 subtypes (timestamp and datasource each as one with two values); the issue's
// output contract names all 15.
#pragma once
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace ragform::sure {

enum class Kind {
  StyleSimple,
  StyleComplex,
  SourceLlmGenerated,
  SourceSelfGenerated,
  LogicReverse,
  LogicRandom,
  LogicLlmRanked,
  FormatJson,
  FormatHtml,
  FormatYaml,
  FormatMarkdown,
  TimestampPre,
  TimestampPost,
  DatasourceWiki,
  DatasourceTwitter,
};

// Which reader a perturbation needs: none (rule-based), the perturbation reader (style, LLM-ranked,
// LLM-generated source: "a configurable second reader"), or the reader under test (self-generated).
enum class NeedsReader { None, Perturber, UnderTest };

struct KindInfo {
  Kind kind;
  const char* name;      // "format/json"
  const char* category;  // "format"
  NeedsReader needs;
  bool embeds_title;  // the perturbed text already carries the title (format, metadata templates)
};

// All fifteen, in the order of the paper's Table 1.
const std::vector<KindInfo>& all_kinds();
const KindInfo& info(Kind k);
std::optional<Kind> parse_kind(std::string_view name);
// The five category names in Table 1 order.
const std::vector<std::string>& categories();

// A --kinds list: comma-separated category names ("logic") and/or full names ("format/json"), or
// "all". Order follows all_kinds(); duplicates collapse. Throws UsageError naming a bad entry.
std::vector<Kind> select_kinds(const std::string& list);

}  // namespace ragform::sure
