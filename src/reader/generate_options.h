// A generation's options, declared once (base/options.h): `ragform generate`'s flags
// (cli/cmd_generate.cpp), the keywords, defaults and order of Python's Reader._generate,
// ragform.Model.generate and OpenAIReader.generate (python/src/engine.cpp,
// ragform._ragform.options("generate")) come from this visit(); reader.h's GenerateParams takes
// its defaults from it. generate_params.h checks them (generate_params) into the reader's
// GenerateParams. The server's /v1/completions keeps the OpenAI API's field names, defaults and
// ranges (max_tokens, temperature 1 in [0, 2]): a contract of its own, not a copy of these.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "base/options.h"

namespace ragform::reader {

// The highest sampling temperature any front end accepts: above 100 a temperature only flattens
// the distribution further, so it is taken for a typing error.
inline constexpr double kMaxTemperature = 100.0;

struct GenerateRequest {
  int64_t n_predict = 64;
  double temp = 0.0;
  std::vector<std::string> stop;
  bool stop_after_line = false;
  int64_t top_k = 0;
  double top_p = 1.0;
  uint64_t seed = 0;
  bool ignore_eos = false;

  template <class V>
  void visit(V&& v) {
    v(OptionDecl{"n_predict", "-n,--n-predict", "N", "maximum tokens to generate"}
          .count(0, 2147483647)
          .first(),
      n_predict);
    v(OptionDecl{"temp", "--temp", "T", "sampling temperature (0 = greedy)"}
          .real(0, kMaxTemperature)
          .first(),
      temp);
    v(OptionDecl{"stop", "--stop", "TEXT", "stop before this text (repeatable)"}.repeated().first(),
      stop);
    v(OptionDecl{"stop_after_line", "--stop-after-line", "",
                 "stop at the first newline that follows text (leading newlines do not stop: a "
                 "base model's answer after 'Answer:' often starts with one)"}
          .flag_only()
          .first(),
      stop_after_line);
    v(OptionDecl{"top_k", "--top-k", "K", "sample from the K most likely tokens (0 = all)"}
          .count(0, 2147483647)
          .first(),
      top_k);
    // 0 is in the range but refused by generate_params: an empty nucleus holds no token.
    v(OptionDecl{"top_p", "--top-p", "P", "nucleus sampling mass (above 0)"}.real(0, 1).first(),
      top_p);
    v(OptionDecl{"seed", "--seed", "S", "random seed for sampling"}.count(0).first(), seed);
    v(OptionDecl{"ignore_eos", "--ignore-eos", "", "keep generating past end-of-generation tokens"}
          .flag_only()
          .first(),
      ignore_eos);
  }
};

}  // namespace ragform::reader
