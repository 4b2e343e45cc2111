#include "pipelines/sure/perturb_llm.h"

#include <algorithm>
#include <cctype>
#include <exception>
#include <set>

#include "base/error.h"

namespace ragform::sure {

namespace {
std::string trim(const std::string& s) {
  size_t b = 0, e = s.size();
  while (b < e && std::isspace(static_cast<unsigned char>(s[b]))) ++b;
  while (e > b && std::isspace(static_cast<unsigned char>(s[e - 1]))) --e;
  return s.substr(b, e - b);
}
}  // namespace

std::string llm_prompt(const PromptSet& prompts, const LlmRequest& req) {
  switch (req.kind) {
    case Kind::StyleSimple:
      return fill(prompts.get("style_simple"), {{"document", req.doc.text}});
    case Kind::StyleComplex:
      return fill(prompts.get("style_complex"), {{"document", req.doc.text}});
    case Kind::SourceLlmGenerated:
    case Kind::SourceSelfGenerated:
      return fill(prompts.get("paraphrase"), {{"document", req.doc.text}});
    case Kind::LogicLlmRanked: {
      std::vector<std::string> s = document_sentences(req.doc.text);
      std::string list;
      for (size_t i = 0; i < s.size(); ++i)
        list += "[" + std::to_string(i + 1) + "] " + s[i] + (i + 1 < s.size() ? "\n" : "");
      return fill(prompts.get("rank_sentences"), {{"question", req.question}, {"sentences", list}});
    }
    default:
      break;
  }
  throw Error("sure: llm_prompt", std::string(info(req.kind).name) + " is rule-based");
}

std::string clean_rewrite(const std::string& output) {
  std::string s = trim(output);
  size_t nl = s.find('\n');
  if (nl != std::string::npos) {
    std::string first = trim(s.substr(0, nl));
    std::string low;
    for (char c : first) low += static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    if (!first.empty() && first.back() == ':' &&
        (low.rfind("here", 0) == 0 || low.rfind("sure", 0) == 0 ||
         low.find("rewritten") != std::string::npos || low.find("paraphrase") != std::string::npos))
      s = trim(s.substr(nl + 1));
  }
  if (s.size() >= 2 && s.front() == '"' && s.back() == '"' && s.find('"', 1) == s.size() - 1)
    s = s.substr(1, s.size() - 2);
  return s;
}

std::vector<size_t> parse_ranking(const std::string& output, size_t n, std::string& note) {
  std::vector<size_t> order;
  std::set<size_t> seen;
  size_t invalid = 0, dup = 0;
  for (size_t i = 0; i < output.size();) {
    if (!std::isdigit(static_cast<unsigned char>(output[i]))) {
      ++i;
      continue;
    }
    size_t j = i;
    while (j < output.size() && std::isdigit(static_cast<unsigned char>(output[j]))) ++j;
    std::string num = output.substr(i, j - i);
    i = j;
    size_t v = num.size() > 6 ? 0 : static_cast<size_t>(std::stoul(num));
    if (v < 1 || v > n) {
      ++invalid;
      continue;
    }
    if (!seen.insert(v - 1).second) {
      ++dup;
      continue;
    }
    order.push_back(v - 1);
  }
  note.clear();
  if (order.empty()) {
    note = "no ranking parsed: fallback to document order";
    order.clear();
    for (size_t i = 0; i < n; ++i) order.push_back(i);
    return order;
  }
  size_t missing = n - order.size();
  for (size_t i = 0; i < n; ++i)
    if (!seen.count(i)) order.push_back(i);
  if (missing || invalid || dup)
    note = "partial ranking: " + std::to_string(missing) + " missing, " + std::to_string(invalid) +
           " out of range, " + std::to_string(dup) + " repeated";
  return order;
}

Perturbation parse_llm_output(const LlmRequest& req, const std::string& output) {
  Perturbation p;
  if (req.kind == Kind::LogicLlmRanked) {
    std::vector<std::string> s = document_sentences(req.doc.text);
    if (s.size() < 2) {
      p.text = join_sentences(s);
      p.note = "single sentence";
      return p;
    }
    std::vector<size_t> order = parse_ranking(output, s.size(), p.note);
    std::vector<std::string> out;
    for (size_t i : order) out.push_back(s[i]);
    p.text = join_sentences(out);
    return p;
  }
  p.text = clean_rewrite(output);
  if (p.text.empty()) {
    p.failed = true;
    p.note = "empty rewrite";
  }
  return p;
}

std::vector<Perturbation> run_llm_perturbations(reader::Reader& reader, const PromptSet& prompts,
                                                const std::vector<LlmRequest>& reqs,
                                                const LlmOptions& opt,
                                                reader::MeasuredTally* tally) {
  reader::MeasuredTally own;
  reader::MeasuredTally& t = tally ? *tally : own;
  std::vector<Perturbation> out(reqs.size());
  reader::GenerateParams gp;
  gp.max_tokens = opt.max_tokens;
  gp.temperature = opt.temperature;
  gp.seed = opt.seed;
  size_t B = std::max<size_t>(1, opt.batch);
  for (size_t b = 0; b < reqs.size(); b += B) {
    size_t e = std::min(reqs.size(), b + B);
    std::vector<std::string> ps;
    for (size_t i = b; i < e; ++i) ps.push_back(llm_prompt(prompts, reqs[i]));
    const std::vector<reader::Attempt> gens = reader::generate_each(reader, ps, gp);
    for (size_t i = b; i < e; ++i) {
      const reader::Attempt& at = gens[i - b];
      if (!at.gen) {
        out[i].failed = true;
        out[i].note = "reader error: " + at.error;
        t.failed(at.error, at.status);
        continue;
      }
      t.measured();
      out[i] = parse_llm_output(reqs[i], at.gen->text);
    }
    t.fail_fast("sure perturb");
  }
  if (!tally) own.check("sure perturb");
  return out;
}

}  // namespace ragform::sure
