#include "cli/spotlight_flags.h"

#include <cstdio>

#include "base/error.h"
#include "reader/encoder_settings.h"

namespace ragform::cli {

using namespace ragform::spotlight;

SpotlightEncoderFlags::SpotlightEncoderFlags(Args& a)
    : rf(a, false),
      encoder(a.opt<std::string>(
          "--encoder", "NAME",
          "static (word vectors), hidden (reader hidden states) or model (--encoder-model)",
          "static")),
      encoder_model(a.opt<std::string>(
          "--encoder-model", "FILE",
          "encoder GGUF (bert: BGE, MiniLM, ...) for --encoder model: word-piece final states "
          "averaged per word",
          "")),
      vectors(a.opt<std::string>("--vectors", "FILE",
                                 "word vectors JSON {word: [floats]} for --encoder static", "")),
      opt_flags(a, opts) {}

TokenEncoder& SpotlightEncoderFlags::open() {
  opt_flags.apply();
  try {
    check_encoder_options(opts);
  } catch (const OptionError& e) {
    throw opt_flags.spell(e);
  }
  if (encoder.value == "static") {
    if (vectors.value.empty())
      throw UsageError("spotlight", "--encoder static needs --vectors FILE");
    wv = std::make_unique<WordVectors>(WordVectors::load(vectors.value));
    enc = std::make_unique<StaticEncoder>(*wv, oov_policy(opts));
  } else if (encoder.value == "hidden") {
    if (rf.model.value.empty())
      throw UsageError("spotlight", "--encoder hidden needs -m MODEL.gguf");
    open_reader();
    enc = std::make_unique<HiddenEncoder>(*reader, int(opts.layer));
  } else if (encoder.value == "model") {
    if (encoder_model.value.empty())
      throw UsageError("spotlight", "--encoder model needs --encoder-model FILE");
    model_enc = std::make_unique<reader::NativeEncoder>(
        encoder_model.value, reader::native_encoder_options({}, rf.native_options().engine));
    auto me = std::make_unique<ModelEncoder>(*model_enc);
    model_encoder = me.get();
    enc = std::move(me);
  } else {
    throw UsageError("spotlight",
                     "--encoder must be static, hidden or model, got '" + encoder.value + "'");
  }
  return *enc;
}

void SpotlightEncoderFlags::report_encoder_cost() const {
  if (!model_encoder) return;
  const double s = model_encoder->seconds();
  std::fprintf(stderr, "spotlight: encoder model: %zu word-pieces in %.3f s (%.0f pieces/s)%s\n",
               model_encoder->pieces(), s, s > 0 ? double(model_encoder->pieces()) / s : 0.0,
               model_encoder->truncated_texts()
                   ? (", " + std::to_string(model_encoder->truncated_texts()) +
                      " texts truncated to the model's length")
                         .c_str()
                   : "");
}

reader::Reader& SpotlightEncoderFlags::open_reader() {
  if (!reader) reader = rf.open_native();
  return *reader;
}

SpotlightScoreFlags::SpotlightScoreFlags(Args& a)
    : opt_flags(a, opts),
      K(opt_flags.option<Opt<long long>>("K")),
      alpha(a.opt<std::string>("--alpha", "A",
                               "query-token weights (eq. 8): idf, uniform, or learned:FILE (an "
                               "alpha file of `spotlight train-alpha`)",
                               alpha_spec(default_score_params()))),
      max_ctx(a.opt<int>("--max-context-tokens", "N",
                         "cut each context after N encoder tokens (0 = whole; paper: 512)",
                         default_score_params().max_context_tokens)),
      titles(a.opt<std::string>(
          "--title-context", "on|off",
          "score each sentence with its paragraph title's tokens as context tokens",
          default_score_params().title_context ? "on" : "off")),
      lexical(a.opt<double>("--lexical-weight", "L",
                            "weight of BM25 over title + sentence in the score (0 = none)",
                            default_score_params().lexical_weight)),
      paragraph(a.opt<double>("--paragraph-weight", "P",
                              "weight of BM25 over title + paragraph in the score (0 = none)",
                              default_score_params().paragraph_weight)),
      paper(a.flag("--paper-defaults",
                   "the paper's settings: k 5, lambda 0.5, alpha uniform (the paper's 1/n), "
                   "contexts cut at 512 tokens, no title context, no BM25 (flags given override "
                   "them)")) {}

ScoreParams SpotlightScoreFlags::params() {
  opt_flags.apply();
  try {
    check_score_options(opts);
  } catch (const OptionError& e) {
    throw opt_flags.spell(e);
  }
  ScoreParams p = score_params(opts, paper.value ? paper_score_params() : default_score_params());
  if (alpha.seen) set_alpha(p, alpha.value);
  if (max_ctx.seen) p.max_context_tokens = max_ctx.value;
  if (titles.seen) {
    if (titles.value != "on" && titles.value != "off")
      throw UsageError("spotlight", "--title-context must be on or off");
    p.title_context = titles.value == "on";
  }
  if (lexical.seen) p.lexical_weight = lexical.value;
  if (paragraph.seen) p.paragraph_weight = paragraph.value;
  if (p.max_context_tokens < 0) throw UsageError("spotlight", "--max-context-tokens must be >= 0");
  if (p.lexical_weight < 0 || p.paragraph_weight < 0 || p.lexical_weight + p.paragraph_weight > 1)
    throw UsageError("spotlight",
                     "--lexical-weight and --paragraph-weight must be >= 0 with a sum <= 1");
  return p;
}

}  // namespace ragform::cli
