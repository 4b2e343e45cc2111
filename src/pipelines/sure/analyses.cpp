#include "pipelines/sure/analyses.h"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <random>
#include <set>

#include "base/error.h"
#include "base/excerpt.h"
#include "base/options.h"
#include "eval/stats.h"
#include "pipelines/sure/evaluate.h"
#include "pipelines/sure/perturb_rules.h"
#include "pipelines/sure/taxonomy.h"
#include "text/metrics.h"
#include "text/sentences.h"

namespace ragform::sure {

std::map<std::string, std::vector<std::string>> select_sig(
    const std::vector<std::vector<Outcome>>& runs, size_t n_per_perturbation, uint64_t seed) {
  if (runs.empty()) throw Error("sure sig", "no runs given");
  // (pair id, perturbation) -> labels across runs.
  std::map<std::pair<std::string, std::string>, std::vector<int>> labels;
  std::map<std::pair<std::string, std::string>, bool> golden;
  for (size_t r = 0; r < runs.size(); ++r) {
    for (const auto& o : runs[r]) {
      auto key = std::make_pair(o.perturbation, o.pair_id);
      auto& v = labels[key];
      if (v.size() != r) continue;  // missing in an earlier run, or a duplicate
      v.push_back(o.label());
      golden[key] = o.subset == Subset::KG || o.subset == Subset::UG;
    }
  }
  std::map<std::string, std::vector<std::string>> out;
  for (const auto& k : all_kinds()) {
    std::vector<std::string> cand;
    for (const auto& [key, v] : labels) {
      if (key.first != k.name || v.size() != runs.size() || !golden[key]) continue;
      if (std::all_of(v.begin(), v.end(), [](int c) { return c != 0; })) cand.push_back(key.second);
    }
    std::mt19937_64 rng(mix_seed(seed, k.name, "sig"));
    for (size_t i = cand.size(); i > 1; --i) {
      std::uniform_int_distribution<size_t> d(0, i - 1);
      std::swap(cand[i - 1], cand[d(rng)]);
    }
    if (cand.size() > n_per_perturbation) cand.resize(n_per_perturbation);
    if (!cand.empty()) out[k.name] = cand;
  }
  return out;
}

TrainingData synthesize_training_data(const store::RunStore& store, int64_t run) {
  std::map<std::string, store::Result> originals;
  std::vector<store::Result> perturbed;
  store.for_each_result(run, [&](const store::Result& r) {
    if (r.status != store::Status::ok) return;
    if (r.variant == "original") {
      originals[r.instance] = r;
    } else if (r.variant != "closed-book") {
      perturbed.push_back(r);
    }
  });
  TrainingData td;
  for (const auto& p : perturbed) {
    auto it = originals.find(p.instance);
    if (it == originals.end() || !p.correct || !it->second.correct) continue;
    if (!p.extra.value("golden", false) || *p.correct == *it->second.correct) continue;
    ++td.unrobust_pairs;
    const store::Result& good = *p.correct ? p : it->second;
    const store::Result& bad = *p.correct ? it->second : p;
    for (const store::Result* r : std::vector<const store::Result*>{&it->second, &p}) {
      nlohmann::ordered_json s;
      s["prompt"] = r->prompt;
      s["completion"] = good.output;
      s["id"] = p.instance;
      s["perturbation"] = p.variant;
      s["document"] = r == &p ? "perturbed" : "original";
      td.sft.push_back(s);
      nlohmann::ordered_json d;
      d["prompt"] = r->prompt;
      d["chosen"] = good.output;
      d["rejected"] = bad.output;
      d["id"] = p.instance;
      d["perturbation"] = p.variant;
      d["document"] = s["document"];
      td.dpo.push_back(d);
    }
  }
  return td;
}

int count_syllables(const std::string& word) {
  int n = 0;
  bool prev = false;
  std::string w;
  for (char c : word)
    if (std::isalpha(static_cast<unsigned char>(c)))
      w += static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  if (w.empty()) return 0;
  for (char c : w) {
    bool v = std::string_view("aeiouy").find(c) != std::string_view::npos;
    if (v && !prev) ++n;
    prev = v;
  }
  if (w.size() > 2 && w.back() == 'e' && w[w.size() - 2] != 'l' && n > 1) --n;  // silent e
  return std::max(1, n);
}

double flesch_reading_ease(const std::string& text) {
  auto ws = text::words(text);
  size_t sentences = std::max<size_t>(1, text::split_sentences(text).size());
  if (ws.empty()) throw Error("flesch_reading_ease", "text has no words");
  double syl = 0;
  for (const auto& w : ws) syl += count_syllables(w);
  double n = static_cast<double>(ws.size());
  return 206.835 - 1.015 * (n / static_cast<double>(sentences)) - 84.6 * (syl / n);
}

double distinct_1(const std::string& text) {
  auto ws = text::words(text);
  if (ws.empty()) throw Error("distinct_1", "text has no words");
  std::set<std::string> u;
  for (auto w : ws) {
    for (auto& c : w) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    u.insert(w);
  }
  return static_cast<double>(u.size()) / static_cast<double>(ws.size());
}

AttentionQueryToken parse_attention_query(const std::string& s) {
  if (s == "question") return AttentionQueryToken::QuestionEnd;
  if (s == "prompt") return AttentionQueryToken::PromptEnd;
  throw OptionError("query", "expected question or prompt, got '" + excerpt(s) + "'");
}

namespace {

std::string ascii_lower(const std::string& s) {
  std::string out;
  for (char c : s) out += static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return out;
}

bool word_byte(char c) {
  auto u = static_cast<unsigned char>(c);
  return u >= 0x80 || std::isalnum(u);
}

}  // namespace

std::optional<std::pair<size_t, size_t>> find_answer_span(const std::string& text,
                                                          const std::vector<std::string>& answers) {
  std::string low = ascii_lower(text);
  std::optional<std::pair<size_t, size_t>> best;
  for (const auto& a : answers) {
    std::string al = ascii_lower(a);
    if (al.empty()) continue;
    for (size_t at = low.find(al); at != std::string::npos; at = low.find(al, at + 1)) {
      size_t end = at + al.size();
      // A boundary is needed only where the answer itself begins / ends with a word character
      // ("U.S." may end before a letter-less edge either way).
      bool left_ok = at == 0 || !word_byte(al.front()) || !word_byte(low[at - 1]);
      bool right_ok = end == low.size() || !word_byte(al.back()) || !word_byte(low[end]);
      if (!left_ok || !right_ok) continue;
      if (!best || at < best->first || (at == best->first && end > best->second))
        best = std::make_pair(at, end);
      break;
    }
  }
  return best;
}

std::optional<double> answer_span_attention(reader::Reader& reader, const std::string& prompt,
                                            const std::string& grounding,
                                            const std::string& question,
                                            const std::vector<std::string>& answers,
                                            const AttentionOptions& opt) {
  size_t g = prompt.find(grounding);
  if (g == std::string::npos) throw Error("sure attention", "grounding not found in prompt");
  auto span = find_answer_span(grounding, answers);
  if (!span) return std::nullopt;
  int t0 = reader.count_tokens(prompt.substr(0, g + span->first));
  int t1 = reader.count_tokens(prompt.substr(0, g + span->second));
  const int n_prompt = reader.count_tokens(prompt);
  int qpos = n_prompt - 1;
  if (opt.query == AttentionQueryToken::QuestionEnd) {
    // t_q (4.3): the question's last token; the question follows the document in P = (I, G, Q).
    size_t q = question.empty() ? std::string::npos : prompt.rfind(question);
    if (q == std::string::npos || q < g + grounding.size())
      throw Error("sure attention", "question not found in the prompt after the document");
    qpos = reader.count_tokens(prompt.substr(0, q + question.size())) - 1;
  }
  reader::AttentionQuery aq;
  aq.layers = {opt.layer};
  aq.heads = opt.heads;
  aq.query_positions = {qpos};
  reader::AttentionResult ar = reader.attention(prompt, aq);
  if (ar.rows.empty()) throw Error("sure attention", "reader returned no attention rows");
  if (!ar.ids.empty() && ar.ids.size() != static_cast<size_t>(n_prompt))
    throw Error("sure attention", "prompt was truncated (" + std::to_string(ar.ids.size()) +
                                      " of " + std::to_string(n_prompt) + " tokens): raise --ctx");
  const auto& row = ar.rows[0].mean;
  if (row.size() != static_cast<size_t>(qpos) + 1)
    throw Error("sure attention", "attention row of " + std::to_string(row.size()) +
                                      " positions for query position " + std::to_string(qpos));
  t1 = std::max(t1, t0 + 1);
  if (t0 < 0 || t1 > qpos + 1)
    throw Error("sure attention", "answer span outside the attention row");
  double s = 0;
  for (int t = t0; t < t1; ++t) s += row[static_cast<size_t>(t)];
  return s / (t1 - t0);
}

AttentionSampling parse_attention_sampling(const std::string& s) {
  if (s == "category") return AttentionSampling::Category;
  if (s == "outcome") return AttentionSampling::Outcome;
  throw OptionError("sample_by", "expected category or outcome, got '" + excerpt(s) + "'");
}

const char* sampling_name(AttentionSampling s) {
  return s == AttentionSampling::Category ? "category" : "outcome";
}

nlohmann::ordered_json AttentionSampleOptions::to_json() const {
  nlohmann::ordered_json j;
  j["by"] = sampling_name(by);
  j["per_group"] = per_group;
  j["seed"] = seed;
  return j;
}

std::vector<LabelledPair> labelled_golden_pairs(const store::RunStore& store, int64_t run,
                                                std::vector<Pair> pairs) {
  std::map<std::pair<std::string, std::string>, int> labels;
  for (const auto& o : outcomes_from_store(store, run))
    if (o.subset == Subset::KG || o.subset == Subset::UG)
      labels[{o.pair_id, o.perturbation}] = o.label();
  std::vector<LabelledPair> out;
  for (auto& p : pairs) {
    auto it = labels.find({p.id, p.perturbation});
    if (it != labels.end()) out.push_back({std::move(p), it->second});
  }
  return out;
}

namespace {

const char* outcome_name(int label) { return label == 0 ? "Robust" : label < 0 ? "Win" : "Lose"; }

}  // namespace

std::vector<LabelledPair> sample_attention_pairs(std::vector<LabelledPair> pairs,
                                                 const AttentionSampleOptions& opt,
                                                 std::map<std::string, size_t>* drawn) {
  const bool by_category = opt.by == AttentionSampling::Category;
  // The outcome keys ("-1", "0", "1") and their seeds are those of the sampling before the
  // category strata existed, so --sample-by outcome draws the pairs it drew then.
  std::map<std::string, std::vector<LabelledPair>> strata;
  for (auto& lp : pairs) {
    std::string key = by_category ? lp.pair.category : std::to_string(lp.label);
    strata[key].push_back(std::move(lp));
  }
  std::vector<LabelledPair> out;
  for (auto& [key, ps] : strata) {
    std::mt19937_64 rng(mix_seed(opt.seed, key, "attention"));
    std::shuffle(ps.begin(), ps.end(), rng);
    if (ps.size() > opt.per_group) ps.resize(opt.per_group);
    if (drawn) (*drawn)[by_category ? key : outcome_name(std::stoi(key))] = ps.size();
    for (auto& lp : ps) out.push_back(std::move(lp));
  }
  return out;
}

AttentionShift measure_attention_shift(reader::Reader& reader, const PromptSet& prompts,
                                       const std::vector<LabelledPair>& pairs,
                                       const AttentionOptions& opt, bool chain_of_note) {
  AttentionShift out;
  for (const auto& [p, c] : pairs) {
    const std::string go = grounding_original(p), gp = grounding_perturbed(p);
    auto a0 = answer_span_attention(reader, rag_prompt(prompts, go, p.question, chain_of_note), go,
                                    p.question, p.answers, opt);
    auto a1 = answer_span_attention(reader, rag_prompt(prompts, gp, p.question, chain_of_note), gp,
                                    p.question, p.answers, opt);
    if (!a0 || !a1) {
      ++out.no_span;
      continue;
    }
    out.rows.emplace_back(c, *a0, *a1);
  }
  return out;
}

nlohmann::ordered_json AttentionReport::to_json() const {
  nlohmann::ordered_json j;
  for (const auto& g : groups)
    j["groups"].push_back({{"group", g.group},
                           {"n", g.n},
                           {"A_org", g.a_org},
                           {"A_pert", g.a_pert},
                           {"dA", g.delta}});
  j["welch_t"] = welch_t ? nlohmann::ordered_json(*welch_t) : nlohmann::ordered_json(nullptr);
  j["welch_p"] = welch_p ? nlohmann::ordered_json(*welch_p) : nlohmann::ordered_json(nullptr);
  return j;
}

AttentionReport attention_report(const std::vector<std::tuple<int, double, double>>& rows) {
  AttentionReport rep;
  std::vector<double> robust, changed;
  const std::pair<const char*, int> groups[] = {{"Robust", 0}, {"Win", -1}, {"Lose", 1}};
  for (const auto& [name, c] : groups) {
    AttentionGroup g;
    g.group = name;
    for (const auto& [label, a, b] : rows) {
      if (label != c) continue;
      ++g.n;
      g.a_org += a;
      g.a_pert += b;
      g.delta += std::fabs(a - b);  // eq. 4
      (c == 0 ? robust : changed).push_back(std::fabs(a - b));
    }
    if (g.n) {
      g.a_org /= static_cast<double>(g.n);
      g.a_pert /= static_cast<double>(g.n);
      g.delta /= static_cast<double>(g.n);
    }
    rep.groups.push_back(g);
  }
  if (robust.size() >= 2 && changed.size() >= 2) {
    try {
      auto w = eval::welch_t_test(robust, changed);
      rep.welch_t = w.t;
      rep.welch_p = w.p;
    } catch (const Error&) {
      // both variances zero: no test
    }
  }
  return rep;
}

double oracle_score(reader::Reader& reader, const std::string& prompt,
                    const std::vector<std::string>& answers) {
  if (answers.empty()) throw Error("oracle_score", "no answers");
  double s = 0;
  for (const auto& a : answers) s += reader.score(prompt, " " + a).sum;  // eq. 5
  return s / static_cast<double>(answers.size());                        // footnote 7
}

double perplexity(reader::Reader& reader, const std::string& text) {
  auto r = reader.score(text, "");
  if (r.tokens.empty()) throw Error("perplexity", "text has fewer than two tokens");
  return std::exp(-r.sum / static_cast<double>(r.tokens.size()));
}

std::vector<std::vector<OracleDoc>> oracle_documents(reader::Reader& reader,
                                                     const PromptSet& prompts,
                                                     const std::vector<eval::QaRecord>& records,
                                                     const common::RunHooks& hooks) {
  std::vector<std::vector<OracleDoc>> per_query;
  const common::Stage stage(hooks, "sure oracle", records.size());
  for (const auto& r : records) {
    std::vector<OracleDoc> docs;
    for (const auto& c : r.ctxs) {
      if (text::substring_match(c.text, r.answers) == 0) continue;  // A.2: answer-bearing docs
      OracleDoc d;
      std::string g = c.title.empty() ? c.text : "(Title: " + c.title + ") " + c.text;
      d.oracle = oracle_score(reader, rag_prompt(prompts, g, r.question, false), r.answers);
      d.f.flesch = flesch_reading_ease(c.text);
      d.f.distinct1 = distinct_1(c.text);
      d.f.tokens = reader.count_tokens(c.text);
      d.f.ppl = perplexity(reader, c.text);
      docs.push_back(d);
    }
    per_query.push_back(std::move(docs));
    stage.add();
  }
  return per_query;
}

nlohmann::ordered_json KsFeatureRow::to_json() const {
  nlohmann::ordered_json j;
  j["feature"] = feature;
  j["ks_d"] = d;
  j["p"] = p;
  j["control_ks_d"] = control_d;
  j["control_p"] = control_p;
  return j;
}

std::vector<KsFeatureRow> oracle_ks(const std::vector<std::vector<OracleDoc>>& per_query,
                                    uint64_t seed) {
  std::vector<DocFeatures> top, bottom, ca, cb;
  std::mt19937_64 rng(seed);
  for (const auto& docs : per_query) {
    if (docs.size() < 2) continue;
    size_t hi = 0, lo = 0;
    for (size_t i = 1; i < docs.size(); ++i) {
      if (docs[i].oracle > docs[hi].oracle) hi = i;
      if (docs[i].oracle < docs[lo].oracle) lo = i;
    }
    if (hi == lo) lo = hi == 0 ? 1 : 0;  // all scores equal: any other document
    top.push_back(docs[hi].f);
    bottom.push_back(docs[lo].f);
    std::uniform_int_distribution<size_t> d(0, docs.size() - 1);
    size_t a = d(rng), b = d(rng);
    while (b == a) b = d(rng);
    ca.push_back(docs[a].f);
    cb.push_back(docs[b].f);
  }
  if (top.size() < 2) throw Error("sure oracle", "fewer than 2 queries with 2+ documents");
  std::vector<KsFeatureRow> rows;
  const std::pair<const char*, double DocFeatures::*> feats[] = {
      {"flesch", &DocFeatures::flesch},
      {"distinct1", &DocFeatures::distinct1},
      {"token_length", &DocFeatures::tokens},
      {"ppl", &DocFeatures::ppl}};
  for (const auto& [name, m] : feats) {
    auto col = [m = m](const std::vector<DocFeatures>& v) {
      std::vector<double> out;
      for (const auto& f : v) out.push_back(f.*m);
      return out;
    };
    auto e = eval::ks_two_sample(col(top), col(bottom));
    auto c = eval::ks_two_sample(col(ca), col(cb));
    rows.push_back({name, e.d, e.p, c.d, c.p});
  }
  return rows;
}

}  // namespace ragform::sure
