// Rule-based perturbations g(.) of SURE (section 3.3 "Automated Perturbation"; Figure 9):
// logic Reverse / Random over the document's sentences (text/sentences.h), the four format
// templates (formats.h), and the metadata templates: the HTML template with one extra
// <meta name='timestamp'|'datasource' content='...'>.
//
// Choices where the paper is vague (also in docs/sure.md):
//  - Logic: sentences are re-joined with one space (a blank line where a space would merge two
//    sentences, e.g. after the unterminated end of a 100-word chunk), so the perturbed document
//    splits into the same multiset of sentences. A
//    one-sentence document cannot be reordered; it is returned unchanged with note "single
//    sentence".
//  - Random: a uniform shuffle (Fisher-Yates) seeded by hash(seed, document key); when there are
//    at least 2 distinct sentences a draw equal to the original order is redrawn (up to 16 times)
//    so "random" really changes the order.
//  - Timestamp: an ISO date (YYYY-MM-DD) drawn uniformly, seeded per document, from
//    [cutoff - pre_years, cutoff - 1 day] (pre) or [cutoff + 1 day, cutoff + post_years] (post);
//    the knowledge cutoff is configurable (default 2023-10-01).
//  - Datasource: a pseudo URL, https://en.wikipedia.org/wiki/<Title_with_underscores> (wiki) or
//    https://twitter.com/<handle>/status/<19-digit id> (twitter; handle from the title's letters
//    and digits, at most 15 characters, id seeded).
// Every function is deterministic in (options.seed, key): the same document always gets the same
// perturbation, whatever order documents are processed in.
#pragma once
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "pipelines/sure/taxonomy.h"

namespace ragform::sure {

struct Document {
  std::string title;
  std::string text;
};

struct RuleOptions {
  uint64_t seed = 0;
  std::string knowledge_cutoff = "2023-10-01";  // YYYY-MM-DD
  int pre_years = 10;                           // timestamp-pre window before the cutoff
  int post_years = 2;                           // timestamp-post window after the cutoff
};

struct Perturbation {
  std::string text;     // the perturbed document (with its title when the template embeds it)
  std::string note;     // empty, or why the result is degenerate / a fallback ("single sentence")
  bool failed = false;  // no usable perturbation (reader error, empty rewrite): never evaluated
};

// Applies a rule-based kind (info(kind).needs == NeedsReader::None); `key` identifies the document
// for seeding (e.g. "<instance id>/<doc index>"). Throws Error for a kind that needs a reader or a
// malformed knowledge cutoff.
Perturbation apply_rule(Kind kind, const Document& doc, const RuleOptions& opt,
                        std::string_view key);

// The sentence texts of a document (split_sentences) and their re-joining.
std::vector<std::string> document_sentences(std::string_view text);
std::string join_sentences(const std::vector<std::string>& sentences);

// Order helpers, exposed for tests and for the LLM-ranked fallback.
std::vector<size_t> reverse_order(size_t n);
std::vector<size_t> random_order(const std::vector<std::string>& sentences, uint64_t seed);

// Seeding: a 64-bit hash of (seed, key, salt) (FNV-1a then splitmix64).
uint64_t mix_seed(uint64_t seed, std::string_view key, std::string_view salt);

// Dates: days since 1970-01-01 <-> "YYYY-MM-DD" (proleptic Gregorian). parse_date throws Error
// on anything but a valid date in that form.
int64_t parse_date(std::string_view ymd);
std::string format_date(int64_t days);
std::string timestamp_for(bool post, const RuleOptions& opt, std::string_view key);
std::string datasource_url(bool twitter, std::string_view title, uint64_t seed,
                           std::string_view key);

}  // namespace ragform::sure
