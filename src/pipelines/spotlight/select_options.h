// `spotlight select`'s options, declared once (base/options.h): the CLI's flags
// (cli/spotlight_flags.cpp, cli/cmd_spotlight.cpp), Python's keywords and signature of
// ragform.spotlight.select (python/src/pipelines.cpp, ragform._ragform.options("spotlight.select"))
// and the fields of the server's /v1/rag/spotlight (server/api_rag.cpp) come from these visit()s.
// They are three parts because the CLI shares two of them with `spotlight eval` and `train-alpha`
// (the scoring and the encoder flags) and the server takes only the request's part (the encoder is
// the server's own configuration): SelectOptions is the whole verb, in Python's order.
#pragma once
#include <cstdint>
#include <optional>
#include <string>

#include "base/options.h"
#include "pipelines/spotlight/encoder.h"
#include "pipelines/spotlight/scoring.h"

namespace ragform::spotlight {

// K sentences; k (eq. 7) and lambda (the positional prior's weight) over the ranker's settings
// (unset: default_score_params()'s, or paper_score_params()'s under the CLI's --paper-defaults).
struct ScoreOptions {
  int64_t K = 6;
  std::optional<int64_t> k;
  std::optional<double> lambda;

  template <class V>
  void visit(V&& v) {
    v(OptionDecl{"K", "-K,--sentences", "K", "sentences to select"}.count(1, 2147483647).first(),
      K);
    v(OptionDecl{"k", "-k,--token-top-k", "k", "top-k context tokens per query token (eq. 7)"}
          .count(1, 2147483647)
          .when_unset(option_number_text(default_score_params().top_k))
          .first(),
      k);
    v(OptionDecl{"lambda", "--lambda", "W", "positional prior weight (0 = none)"}
          .real(0, 1)
          .py("lam")
          .when_unset(option_number_text(default_score_params().lambda))
          .first(),
      lambda);
  }
};

// How the selected sentences are written into the prompt (select only).
struct PromptOptions {
  std::string order = "doc";
  bool special_tokens = true;

  template <class V>
  void visit(V&& v) {
    v(OptionDecl{"order", "--order", "O", "sentence order in the prompt: doc or score"}.first(),
      order);
    v(OptionDecl{"special_tokens", "--no-special-tokens", "",
                 "leave out the <Rel> and category tokens"}
          .flag_off("include the <Rel> and category tokens (false: leave them out)")
          .first(),
      special_tokens);
  }
};

// The word-vector encoder's out-of-vocabulary rule and the hidden-state encoder's layer.
struct EncoderOptions {
  std::string oov = "match";
  int64_t layer = 1;

  template <class V>
  void visit(V&& v) {
    v(OptionDecl{"oov", "--oov", "RULE", "out-of-vocabulary words: match (identity tokens) or skip"}
          .first(),
      oov);
    v(OptionDecl{"layer", "--layer", "L",
                 "hidden-state layer for --encoder hidden (0..n_layer; negative from the end)"}
          .count(-2147483648.0, 2147483647)
          .first(),
      layer);
  }
};

// The whole verb, in Python's order: K, k, lambda (lam), order, special_tokens, oov, layer.
struct SelectOptions {
  ScoreOptions score;
  PromptOptions prompt;
  EncoderOptions encoder;

  template <class V>
  void visit(V&& v) {
    score.visit(v);
    prompt.visit(v);
    encoder.visit(v);
  }
};

// The checks of each part, once: ranges and the choices (OptionError naming the key: "order:
// expected doc or score, got 'x'").
void check_score_options(ScoreOptions& o);
void check_prompt_options(PromptOptions& o);
void check_encoder_options(EncoderOptions& o);
void check_select_options(SelectOptions& o);

// `base` with the options' k and lambda where they are set.
ScoreParams score_params(const ScoreOptions& o, ScoreParams base);
OovPolicy oov_policy(const EncoderOptions& o);

}  // namespace ragform::spotlight
