// `ragform classify -m MODEL (-f FILE [--pair-file FILE2] | --input F.jsonl) [--json]`: the
// classification head of a cross-encoder / NLI model (reader/encoder.h, pooling rank) on a text or
// the pair [CLS] a [SEP] b [SEP] (b = --pair-file; token type 1 on b when the model has a 2-row
// token-type table). --input gives one result line per JSONL record (fields `text`, optional
// `pair`). --json result shape (the contract):
//   {"labels": [...], "scores": [...raw outputs...], "probs": [...softmax...]}
#include <cstdio>
#include <string>

#include "base/error.h"
#include "base/json_keys.h"
#include "base/mapped_file.h"
#include "cli/args.h"
#include "cli/command.h"
#include "cli/encoder_flags.h"
#include "cli/json_out.h"
#include "eval/jsonl.h"

namespace ragform::cli {
namespace {

int cmd_classify(const std::vector<std::string>& argv) {
  Args a("classify",
         "Score a text or a text pair with a cross-encoder / NLI classifier (GGUF bert with a "
         "classification head).",
         "Labels come from bert.classifier.output_labels (LABEL_0.. when absent). Scores are the\n"
         "head's raw outputs; probs their softmax. See docs/encoders.md.");
  EncoderFlags ef(a);
  auto& file = a.opt<std::string>("-f,--file", "FILE", "the (first) text, exact bytes");
  auto& pair_file =
      a.opt<std::string>("--pair-file", "FILE2", "the second text of the pair, exact bytes");
  auto& input =
      a.opt<std::string>("--input", "F.jsonl",
                         "classify every record's `text` (and `pair`, if present); one line each");
  auto& json = a.flag("--json", "print one JSON object per result on stdout");
  if (!a.parse(argv)) return 0;
  if (file.seen == input.seen) throw UsageError("classify", "give exactly one of -f or --input");
  if (pair_file.seen && !file.seen) throw UsageError("--pair-file", "goes with -f");

  std::vector<reader::TextPair> pairs;
  if (file.seen) {
    reader::TextPair p{read_file_bytes(file.value), std::nullopt};
    if (pair_file.seen) p.b = read_file_bytes(pair_file.value);
    pairs.push_back(std::move(p));
  } else {
    eval::for_each_json_record(input.value, {}, [&](const eval::JsonRow& row_in) {
      // A line is its text and pair: another key is refused (pass 21: a misspelt "pari"
      // classified the text alone), a null one is absent (base/json_keys.h).
      const nlohmann::json value = without_nulls(row_in.value);
      try {
        only_json_keys(value, {"text", "pair"}, "line", "a line of --input");
      } catch (const UnknownKeyError& e) {
        const std::string why = e.what();  // "line: 'pari' is not supported (...)"
        throw eval::RowError(why.substr(why.find(": ") + 2));  // (the file:line says where)
      }
      if (!value.contains("text") || !value["text"].is_string())
        throw eval::RowError("missing string field 'text'");
      reader::TextPair p{value["text"].get<std::string>(), std::nullopt};
      if (value.contains("pair")) {
        if (!value["pair"].is_string()) throw eval::RowError("field 'pair' is not a string");
        p.b = value["pair"].get<std::string>();
      }
      pairs.push_back(std::move(p));
    });
  }

  auto enc = ef.open();
  auto res = enc->classify(pairs);
  size_t n_trunc = 0;
  for (const auto& c : res) n_trunc += c.truncated ? 1 : 0;
  report_truncation("classify", n_trunc, res.size());
  for (const auto& c : res) {
    if (json.value) {
      nlohmann::ordered_json j;
      j["labels"] = c.labels;
      nlohmann::ordered_json s = nlohmann::ordered_json::array(),
                             p = nlohmann::ordered_json::array();
      for (float v : c.scores) s.push_back(f9(v));
      for (float v : c.probs) p.push_back(f9(v));
      j["scores"] = std::move(s);
      j["probs"] = std::move(p);
      print_json_line(j);
      continue;
    }
    for (size_t i = 0; i < c.labels.size(); ++i)
      std::printf("%-16s score %10.6f  prob %.6f\n", c.labels[i].c_str(), double(c.scores[i]),
                  double(c.probs[i]));
    if (res.size() > 1) std::printf("\n");
  }
  return 0;
}

}  // namespace

RAGFORM_COMMAND("classify", "score a text pair with a cross-encoder / NLI classifier", cmd_classify,
                35);

}  // namespace ragform::cli
