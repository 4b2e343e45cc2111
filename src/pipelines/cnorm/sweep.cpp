#include "pipelines/cnorm/sweep.h"

#include <algorithm>
#include <chrono>

#include "base/error.h"
#include "reader/measured.h"
#include "text/metrics.h"

namespace ragform::cnorm {

std::vector<Cell> sweep_layout(size_t n_items, size_t k, size_t n_variants) {
  std::vector<Cell> cells;
  cells.reserve(n_items * k * n_variants);
  for (size_t i = 0; i < n_items; ++i)
    for (size_t j = 0; j < k; ++j)
      for (size_t v = 0; v < n_variants; ++v) cells.push_back({i, j, v});
  return cells;
}

std::string variant_key(const std::string& variant, size_t position) {
  return variant + "@" + std::to_string(position);
}

std::string first_line(const std::string& s) {
  size_t b = s.find_first_not_of(" \t\r\n");
  if (b == std::string::npos) return "";
  size_t e = s.find('\n', b);
  std::string line = s.substr(b, e == std::string::npos ? std::string::npos : e - b);
  while (!line.empty() && (line.back() == ' ' || line.back() == '\t' || line.back() == '\r'))
    line.pop_back();
  return line;
}

void run_sweep(reader::Reader& r, const SweepSetup& setup, const std::vector<Item>& items,
               const std::function<bool(const std::string&, const std::string&)>& skip,
               const std::function<void(const CellAnswer&)>& on_answer) {
  if (setup.variants.empty()) throw Error("cnorm eval", "no variants");
  reader::GenerateParams gen = setup.gen;
  // The answer is the first non-empty line: a base reader often begins after "Answer:" with a
  // newline, which a "\n" stop string made an empty answer (runtime/generate.h).
  gen.stop_after_line = true;
  const size_t nv = setup.variants.size();
  for (size_t i = 0; i < items.size(); ++i) {
    const Item& it = items[i];
    std::vector<CellAnswer> pending;
    std::vector<std::string> prompts;
    for (size_t j = 0; j < setup.k; ++j) {
      if (setup.natural_positions && j != it.natural_position % setup.k) continue;
      auto docs = arrange(it, setup.k, j);
      for (size_t v = 0; v < nv; ++v) {
        const Variant& var = setup.variants[v];
        if (skip && skip(it.id, variant_key(var.name, j))) continue;
        CellAnswer a;
        a.instance = it.id;
        a.variant = var.name;
        a.position = j;
        a.format = var.format;
        a.prompt = render(setup.task, setup.tmpl, it, docs, var.format).text;
        prompts.push_back(a.prompt);
        pending.push_back(std::move(a));
      }
    }
    if (pending.empty()) continue;
    auto t0 = std::chrono::steady_clock::now();
    auto gens = r.generate_batch(prompts, gen);
    double ms =
        std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count() /
        double(pending.size());
    if (gens.size() != pending.size())
      throw Error("cnorm eval", "reader returned " + std::to_string(gens.size()) +
                                    " generations for " + std::to_string(pending.size()) +
                                    " prompts");
    for (size_t c = 0; c < pending.size(); ++c) {
      CellAnswer& a = pending[c];
      a.output = gens[c].text;
      a.prompt_tokens = gens[c].prompt_tokens;
      a.answer = first_line(a.output);
      // kv: the value as the variant's format writes it is right too (best_subspan_em drops
      // ASCII punctuation such as '-' and '&', not e.g. U+00B7).
      std::vector<std::string> answers = it.answers;
      if (setup.task == Task::Kv)
        for (const auto& v : it.answers) answers.push_back(format_text(Task::Kv, v, a.format));
      a.correct = !answers.empty() && text::substring_match(a.answer, answers) > 0;
      a.ms = ms;
      on_answer(a);
    }
  }
}

std::vector<VariantSummary> summarize(const std::vector<Graded>& rows,
                                      const std::vector<std::string>& variants, size_t k) {
  std::vector<VariantSummary> out;
  for (const auto& name : variants) {
    VariantSummary s;
    s.name = name;
    s.accuracy.assign(k, 0.0);
    s.n.assign(k, 0);
    std::vector<size_t> correct(k, 0);
    for (const auto& g : rows) {
      if (g.variant != name) continue;
      if (g.position >= k)
        throw Error("cnorm eval", "row of variant " + name + " at position " +
                                      std::to_string(g.position) +
                                      " outside k = " + std::to_string(k));
      ++s.n[g.position];
      if (g.correct) ++correct[g.position];
    }
    size_t used = 0;
    bool any = false;
    for (size_t j = 0; j < k; ++j) {
      if (!s.n[j]) continue;
      s.accuracy[j] = double(correct[j]) / double(s.n[j]);
      s.oaa += s.accuracy[j];
      ++used;
      if (!any || s.accuracy[j] > s.opa) {
        s.opa = s.accuracy[j];
        s.best_position = j;
        any = true;
      }
    }
    if (used) s.oaa /= double(used);
    out.push_back(std::move(s));
  }
  return out;
}

std::vector<VariantSummary> average_over_seeds(
    const std::vector<std::vector<VariantSummary>>& per_seed) {
  if (per_seed.empty()) throw Error("cnorm eval", "no seeds to average");
  std::vector<VariantSummary> out = per_seed[0];
  const double n_seeds = double(per_seed.size());
  for (auto& v : out) {
    std::fill(v.accuracy.begin(), v.accuracy.end(), 0.0);
    std::fill(v.n.begin(), v.n.end(), size_t(0));
    v.oaa = v.opa = 0;
  }
  for (const auto& seed : per_seed) {
    if (seed.size() != out.size()) throw Error("cnorm eval", "seeds have different variants");
    for (size_t i = 0; i < out.size(); ++i) {
      if (seed[i].name != out[i].name || seed[i].accuracy.size() != out[i].accuracy.size())
        throw Error("cnorm eval", "seeds have different variants or k");
      for (size_t j = 0; j < out[i].accuracy.size(); ++j) {
        out[i].accuracy[j] += seed[i].accuracy[j] / n_seeds;
        out[i].n[j] += seed[i].n[j];
      }
      out[i].oaa += seed[i].oaa / n_seeds;
      out[i].opa += seed[i].opa / n_seeds;
    }
  }
  for (auto& v : out) {
    v.best_position = 0;
    for (size_t j = 1; j < v.accuracy.size(); ++j)
      if (v.accuracy[j] > v.accuracy[v.best_position]) v.best_position = j;
  }
  return out;
}

size_t min_token_index(reader::Reader& r, Task t, const std::string& tmpl,
                       const std::vector<Item>& items, size_t k,
                       const std::vector<Delimiter>& candidates, double p, uint64_t seed) {
  if (candidates.empty()) throw Error("cnorm eval", "no candidate delimiters for Min-Token");
  size_t best = 0;
  long long best_tokens = -1;
  for (size_t c = 0; c < candidates.size(); ++c) {
    long long total = 0;
    Format f{candidates[c], p, seed};
    for (const auto& it : items)
      total += r.count_tokens(render(t, tmpl, it, arrange(it, k, 0), f).text);
    if (best_tokens < 0 || total < best_tokens) {
      best_tokens = total;
      best = c;
    }
  }
  return best;
}

size_t fit_k(reader::Reader& r, Task t, const std::string& tmpl, const std::vector<Item>& items,
             size_t k, const std::vector<Format>& formats, size_t max_tokens) {
  size_t kk = k;
  for (const auto& it : items)
    for (const auto& f : formats)
      while (true) {
        // A reader may refuse to count a prompt longer than its context (NativeReader does, with
        // Overflow::Error): that prompt does not fit either.
        std::string why;
        size_t n = max_tokens + 1;
        try {
          n = size_t(r.count_tokens(render(t, tmpl, it, arrange(it, kk, 0), f).text));
          if (n > max_tokens)
            why = std::to_string(n) + " tokens, more than the " + std::to_string(max_tokens) +
                  " available";
        } catch (const NotSupported&) {
          throw;
        } catch (const Error& e) {
          // A failed request (a wrong key, a server down) says nothing of the prompt's length:
          // the reader's error, as every runner reports it (reader/measured.h).
          if (reader::is_outage(e)) throw;
          why = e.what();
        }
        if (why.empty()) break;
        if (kk == 1)
          throw Error("cnorm",
                      "item " + it.id + ": a prompt with one document does not fit: " + why);
        --kk;
      }
  return kk;
}

}  // namespace ragform::cnorm
