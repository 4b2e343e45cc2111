#include "pipelines/sure/perturb_rules.h"

#include <algorithm>
#include <cctype>
#include <cstdio>
#include <random>

#include "base/error.h"
#include "pipelines/sure/formats.h"
#include "text/sentences.h"

namespace ragform::sure {

uint64_t mix_seed(uint64_t seed, std::string_view key, std::string_view salt) {
  uint64_t h = 1469598103934665603ULL ^ seed;
  auto eat = [&h](std::string_view s) {
    for (unsigned char c : s) {
      h ^= c;
      h *= 1099511628211ULL;
    }
    h ^= 0xFF;
    h *= 1099511628211ULL;
  };
  eat(key);
  eat(salt);
  uint64_t z = h + 0x9E3779B97F4A7C15ULL;  // splitmix64 finaliser
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ULL;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBULL;
  return z ^ (z >> 31);
}

std::vector<std::string> document_sentences(std::string_view text) {
  std::vector<std::string> out;
  for (auto& s : text::split_sentences(text)) out.push_back(std::move(s.text));
  return out;
}

std::string join_sentences(const std::vector<std::string>& sentences) {
  // One space between sentences, unless the splitter would then read the two as one sentence
  // (an unterminated chunk end such as "... has been awarded", or "Ltd." before a capital): then
  // a blank line, which always ends a sentence (text/sentences.h rule 1).
  std::string out;
  for (size_t i = 0; i < sentences.size(); ++i) {
    if (i) {
      std::string probe = sentences[i - 1] + " " + sentences[i];
      auto split = text::split_sentences(probe);
      bool separate =
          split.size() == 2 && split[0].text == sentences[i - 1] && split[1].text == sentences[i];
      out += separate ? " " : "\n\n";
    }
    out += sentences[i];
  }
  return out;
}

std::vector<size_t> reverse_order(size_t n) {
  std::vector<size_t> o(n);
  for (size_t i = 0; i < n; ++i) o[i] = n - 1 - i;
  return o;
}

std::vector<size_t> random_order(const std::vector<std::string>& sentences, uint64_t seed) {
  size_t n = sentences.size();
  std::vector<size_t> o(n);
  for (size_t i = 0; i < n; ++i) o[i] = i;
  std::mt19937_64 rng(seed);
  auto same_text = [&](const std::vector<size_t>& ord) {
    for (size_t i = 0; i < n; ++i)
      if (sentences[ord[i]] != sentences[i]) return false;
    return true;
  };
  std::vector<size_t> cur = o;
  for (int attempt = 0; attempt < 16; ++attempt) {
    cur = o;
    for (size_t i = n; i > 1; --i) {  // Fisher-Yates with an unbiased draw in [0, i)
      uint64_t bound = i, limit = UINT64_MAX - UINT64_MAX % bound, r;
      do r = rng();
      while (r >= limit);
      std::swap(cur[i - 1], cur[r % bound]);
    }
    if (!same_text(cur)) break;
  }
  return cur;
}

// ---- dates (H. Hinnant's days_from_civil / civil_from_days) ----

namespace {

int64_t days_from_civil(int64_t y, unsigned m, unsigned d) {
  y -= m <= 2;
  const int64_t era = (y >= 0 ? y : y - 399) / 400;
  const unsigned yoe = static_cast<unsigned>(y - era * 400);
  const unsigned doy = (153 * (m + (m > 2 ? -3 : 9)) + 2) / 5 + d - 1;
  const unsigned doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
  return era * 146097 + static_cast<int64_t>(doe) - 719468;
}

bool leap(int64_t y) { return (y % 4 == 0 && y % 100 != 0) || y % 400 == 0; }

}  // namespace

int64_t parse_date(std::string_view s) {
  auto bad = [&]() -> int64_t {
    throw Error("sure: knowledge cutoff",
                "expected a date YYYY-MM-DD, got '" + std::string(s) + "'");
  };
  if (s.size() != 10 || s[4] != '-' || s[7] != '-') return bad();
  for (size_t i : {0, 1, 2, 3, 5, 6, 8, 9})
    if (!std::isdigit(static_cast<unsigned char>(s[i]))) return bad();
  int64_t y = std::stoi(std::string(s.substr(0, 4)));
  unsigned m = static_cast<unsigned>(std::stoi(std::string(s.substr(5, 2))));
  unsigned d = static_cast<unsigned>(std::stoi(std::string(s.substr(8, 2))));
  static const unsigned mdays[] = {31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31};
  if (m < 1 || m > 12 || d < 1) return bad();
  unsigned dim = mdays[m - 1] + (m == 2 && leap(y) ? 1 : 0);
  if (d > dim) return bad();
  return days_from_civil(y, m, d);
}

std::string format_date(int64_t z) {
  z += 719468;
  const int64_t era = (z >= 0 ? z : z - 146096) / 146097;
  const unsigned doe = static_cast<unsigned>(z - era * 146097);
  const unsigned yoe = (doe - doe / 1460 + doe / 36524 - doe / 146096) / 365;
  int64_t y = static_cast<int64_t>(yoe) + era * 400;
  const unsigned doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
  const unsigned mp = (5 * doy + 2) / 153;
  const unsigned d = doy - (153 * mp + 2) / 5 + 1;
  const unsigned m = mp < 10 ? mp + 3 : mp - 9;
  y += m <= 2;
  char buf[32];
  std::snprintf(buf, sizeof buf, "%04lld-%02u-%02u", static_cast<long long>(y), m, d);
  return buf;
}

std::string timestamp_for(bool post, const RuleOptions& opt, std::string_view key) {
  int64_t cutoff = parse_date(opt.knowledge_cutoff);
  int64_t lo, hi;
  if (post) {
    lo = cutoff + 1;
    hi = cutoff + 365LL * std::max(1, opt.post_years);
  } else {
    lo = cutoff - 365LL * std::max(1, opt.pre_years);
    hi = cutoff - 1;
  }
  uint64_t r = mix_seed(opt.seed, key, post ? "timestamp-post" : "timestamp-pre");
  return format_date(lo + static_cast<int64_t>(r % static_cast<uint64_t>(hi - lo + 1)));
}

std::string datasource_url(bool twitter, std::string_view title, uint64_t seed,
                           std::string_view key) {
  std::string t = one_line(title);
  if (!twitter) {
    std::string page;
    for (char c : t) page += c == ' ' ? '_' : c;
    if (page.empty()) page = "Main_Page";
    return "https://en.wikipedia.org/wiki/" + page;
  }
  std::string handle;
  for (char c : t)
    if (std::isalnum(static_cast<unsigned char>(c)) && handle.size() < 15) handle += c;
  if (handle.empty()) handle = "user";
  uint64_t r = mix_seed(seed, key, "twitter-status");
  // 19-digit status ids as Twitter's snowflakes have had since 2014.
  uint64_t id = 1000000000000000000ULL + r % 8999999999999999999ULL;
  return "https://twitter.com/" + handle + "/status/" + std::to_string(id);
}

Perturbation apply_rule(Kind kind, const Document& doc, const RuleOptions& opt,
                        std::string_view key) {
  Perturbation p;
  switch (kind) {
    case Kind::LogicReverse:
    case Kind::LogicRandom: {
      std::vector<std::string> s = document_sentences(doc.text);
      if (s.size() < 2) {
        p.text = join_sentences(s);
        p.note = "single sentence";
        return p;
      }
      std::vector<size_t> order = kind == Kind::LogicReverse
                                      ? reverse_order(s.size())
                                      : random_order(s, mix_seed(opt.seed, key, "logic-random"));
      std::vector<std::string> out;
      for (size_t i : order) out.push_back(s[i]);
      p.text = join_sentences(out);
      if (p.text == join_sentences(s)) p.note = "order unchanged (identical sentences)";
      return p;
    }
    case Kind::FormatJson:
      p.text = to_json_doc(doc.title, doc.text);
      return p;
    case Kind::FormatHtml:
      p.text = to_html_doc(doc.title, doc.text);
      return p;
    case Kind::FormatYaml:
      p.text = to_yaml_doc(doc.title, doc.text);
      return p;
    case Kind::FormatMarkdown:
      p.text = to_markdown_doc(doc.title, doc.text);
      return p;
    case Kind::TimestampPre:
    case Kind::TimestampPost:
      p.text =
          to_html_doc(doc.title, doc.text,
                      MetaTag{"timestamp", timestamp_for(kind == Kind::TimestampPost, opt, key)});
      return p;
    case Kind::DatasourceWiki:
    case Kind::DatasourceTwitter:
      p.text = to_html_doc(doc.title, doc.text,
                           MetaTag{"datasource", datasource_url(kind == Kind::DatasourceTwitter,
                                                                doc.title, opt.seed, key)});
      return p;
    default:
      break;
  }
  throw Error("sure: apply_rule", std::string(info(kind).name) + " needs a reader");
}

}  // namespace ragform::sure
