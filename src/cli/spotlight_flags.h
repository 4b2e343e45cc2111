// The flags `ragform spotlight select|eval|train-alpha` share: the token encoder
// (--encoder static|hidden|model and its files) and the scoring settings (-K, -k, --lambda,
// --alpha idf|uniform|learned:FILE, --title-context, the BM25 weights, --paper-defaults).
#pragma once
#include <memory>
#include <string>

#include "cli/args.h"
#include "cli/option_flags.h"
#include "cli/reader_flags.h"
#include "pipelines/spotlight/spotlight.h"
#include "reader/native_encoder.h"
#include "reader/native_reader.h"

namespace ragform::cli {

struct SpotlightEncoderFlags {
  explicit SpotlightEncoderFlags(Args& a);
  ReaderFlags rf;
  Opt<std::string>& encoder;
  Opt<std::string>& encoder_model;
  Opt<std::string>& vectors;
  // --oov, --layer: declared in pipelines/spotlight/select_options.h (EncoderOptions).
  spotlight::EncoderOptions opts;
  OptionFlags<spotlight::EncoderOptions> opt_flags;
  std::unique_ptr<spotlight::WordVectors> wv;
  std::unique_ptr<reader::NativeReader> reader;
  std::unique_ptr<spotlight::TokenEncoder> enc;
  std::unique_ptr<reader::NativeEncoder> model_enc;
  spotlight::ModelEncoder* model_encoder = nullptr;  // enc, when --encoder model

  // The encoder the flags name (the declared options applied and checked first: a UsageError
  // naming the flag).
  spotlight::TokenEncoder& open();
  // --encoder model: the encoder's cost on stderr (paper section 3.6 compares it with the
  // reader's prefill; docs/performance.md has the measurement).
  void report_encoder_cost() const;
  reader::Reader& open_reader();
};

// Scoring flags. With no flag the defaults are default_score_params() (the ranker chosen on
// HotpotQA dev, docs/spotlight.md); --paper-defaults starts from paper_score_params() instead;
// a flag given explicitly overrides either. -K, -k and --lambda are declared in
// pipelines/spotlight/select_options.h (ScoreOptions).
struct SpotlightScoreFlags {
  explicit SpotlightScoreFlags(Args& a);
  spotlight::ScoreOptions opts;
  OptionFlags<spotlight::ScoreOptions> opt_flags;
  const Opt<long long>& K;  // -K's value, as parsed
  Opt<std::string>& alpha;
  Opt<int>& max_ctx;
  Opt<std::string>& titles;
  Opt<double>& lexical;
  Opt<double>& paragraph;
  Flag& paper;
  // The settings the flags give (a learned alpha file is loaded and validated here; `opts`
  // filled in from the flags and checked).
  spotlight::ScoreParams params();
};

}  // namespace ragform::cli
