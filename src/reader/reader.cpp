#include "reader/reader.h"

#include <chrono>

#include "base/error.h"
#include "reader/measured.h"

namespace ragform::reader {

std::vector<Generation> Reader::generate_batch(const std::vector<std::string>& prompts,
                                               const GenerateParams& p) {
  std::vector<Generation> out;
  out.reserve(prompts.size());
  if (!p.seeds.empty() && p.seeds.size() != prompts.size())
    throw Error("generate", "one seed per prompt expected");
  GenerateParams one = p;
  one.seeds.clear();
  for (size_t i = 0; i < prompts.size(); ++i) {
    one.seed = p.seeds.empty() ? p.seed + i : p.seeds[i];
    out.push_back(generate(prompts[i], one));
  }
  return out;
}

std::string stop_strings_problem(const std::vector<std::string>& stop) {
  if (stop.size() > kMaxStopStrings)
    return "'stop' holds " + std::to_string(stop.size()) + " strings, more than the limit of " +
           std::to_string(kMaxStopStrings);
  for (size_t i = 0; i < stop.size(); ++i) {
    if (stop[i].empty()) return "'stop' strings must not be empty";
    if (stop[i].size() > kMaxStopBytes)
      return "'stop' string " + std::to_string(i) + " is " + std::to_string(stop[i].size()) +
             " bytes, longer than the limit of " + std::to_string(kMaxStopBytes);
  }
  return "";
}

namespace {
double ms_since(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
}
}  // namespace

std::vector<Attempt> generate_each(Reader& r, const std::vector<std::string>& prompts,
                                   const GenerateParams& p) {
  std::vector<Attempt> out(prompts.size());
  auto t0 = std::chrono::steady_clock::now();
  try {
    std::vector<Generation> gens = r.generate_batch(prompts, p);
    if (gens.size() == prompts.size()) {
      const double ms = ms_since(t0);
      for (size_t i = 0; i < gens.size(); ++i) {
        out[i].gen = std::move(gens[i]);
        out[i].ms = ms;
        out[i].batched = true;
      }
      return out;
    }
  } catch (const Error&) {
    // Retried one by one below: the error belongs to one prompt, or to all of them.
  }
  for (size_t i = 0; i < prompts.size(); ++i) {
    GenerateParams one = p;
    one.seeds.clear();
    if (i < p.seeds.size()) one.seed = p.seeds[i];
    t0 = std::chrono::steady_clock::now();
    try {
      out[i].gen = r.generate(prompts[i], one);
    } catch (const Error& e) {
      out[i].error = e.what();
      out[i].status = failure_status(e);
    }
    out[i].ms = ms_since(t0);
  }
  return out;
}

}  // namespace ragform::reader
