// The options of `sure perturb`, `sure filter` and `sure oracle` as a front end gives them,
// declared once (base/options.h): the CLI's flags (cli/cmd_sure.cpp) and Python's keywords of
// ragform.sure.perturb / filter / oracle come from visit(); the initial values are the defaults.
// Each *_options() validates its request (OptionError naming the key, which each front end spells
// its way) and gives the runner's options. (`sure eval` declares evaluate.h EvalOptions, `sure
// attention` attention_run.h AttentionRequest.)
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "base/options.h"
#include "pipelines/sure/perturb_plan.h"
#include "pipelines/sure/preserve.h"

namespace ragform::sure {

struct PerturbRequest {
  std::vector<std::string> kinds{"all"};  // categories and/or names
  int64_t seed = 0;
  std::string cutoff = "2023-10-01";
  int64_t docs = 0;
  int64_t max_tokens = 512;
  int64_t batch = 8;

  template <class V>
  void visit(V&& v) {
    v(OptionDecl{"kinds", "--kinds", "LIST", "categories and/or names, or all"}.list(nullptr),
      kinds);
    v(OptionDecl{"seed", "--seed", "N", "seed of random order, timestamps and URLs"}.count(0),
      seed);
    v(OptionDecl{"cutoff", "--cutoff", "DATE", "knowledge cutoff for timestamps"}, cutoff);
    v(OptionDecl{"docs", "--docs", "N", "first N documents of each record (0 = all)"}.count(
          0, 2147483647),
      docs);
    v(OptionDecl{"max_tokens", "--max-tokens", "N", "tokens per LLM rewrite"}.count(1, 2147483647),
      max_tokens);
    v(OptionDecl{"batch", "--batch", "N", "prompts per batched generation"}.count(1, 2147483647),
      batch);
  }
};

// The runner's options (the caller adds its hooks) and the kinds as one --kinds list.
struct PerturbSetup {
  PerturbOptions options;
  std::string kinds;  // "a,b,c", for select_kinds
};
PerturbSetup perturb_options(PerturbRequest req);

struct FilterRequest {
  std::string nli = "all";
  int64_t batch = 8;

  template <class V>
  void visit(V&& v) {
    v(OptionDecl{"nli", "--nli", "SCOPE",
                 "kinds NLI checks: all, llm (reader-made kinds only) or none"},
      nli);
    v(OptionDecl{"batch", "--batch", "N", "prompts per batched generation"}.count(1, 2147483647),
      batch);
  }
};
FilterOptions filter_options(FilterRequest req);

struct OracleRequest {
  int64_t seed = 0;

  template <class V>
  void visit(V&& v) {
    v(OptionDecl{"seed", "--seed", "N", "control sampling seed"}.count(0), seed);
  }
};

}  // namespace ragform::sure
