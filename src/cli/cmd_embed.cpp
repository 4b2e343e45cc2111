// `ragform embed -m MODEL (-f FILE | --input F.jsonl) [--pooling none|mean|cls|last] [--normalize]
// [--json]`: vectors from an encoder model (reader/encoder.h). One text (-f, exact bytes) gives one
// result; --input gives one result line per JSONL record (field `text`), all encoded in batched
// passes. --json result shape (the contract):
//   pooling none:  {"model", "pooling", "n_tokens", "embeddings": [[...] per token]}
//   otherwise:     {"model", "pooling", "n_tokens", "embedding": [...]}
// Vectors are not normalised unless --normalize. Without --json: a header line and the values.
#include <cstdio>
#include <string>

#include "base/error.h"
#include "base/mapped_file.h"
#include "cli/args.h"
#include "cli/command.h"
#include "cli/encoder_flags.h"
#include "cli/json_out.h"
#include "eval/jsonl.h"

namespace ragform::cli {
namespace {

nlohmann::ordered_json vec_json(const float* v, int n) {
  nlohmann::ordered_json a = nlohmann::ordered_json::array();
  for (int i = 0; i < n; ++i) a.push_back(f9(v[i]));
  return a;
}

int cmd_embed(const std::vector<std::string>& argv) {
  Args a("embed", "Embed text with an encoder model (BERT-family GGUF: BGE, E5, MiniLM, GTE).",
         "Tokenised as [CLS] text [SEP] with the model's WordPiece vocabulary (special-token text\n"
         "in the input is not parsed). Pooling defaults to the model's own (bert.pooling_type).\n"
         "See docs/encoders.md.");
  EncoderFlags ef(a);
  auto& file = a.opt<std::string>("-f,--file", "FILE", "embed the text of FILE (exact bytes)");
  auto& input = a.opt<std::string>("--input", "F.jsonl",
                                   "embed every record's `text` (JSONL); one result line each");
  auto& pooling = a.opt<std::string>(
      "--pooling", "P", "none (one vector per token), mean, cls or last (default: the model's)");
  auto& normalize = a.flag("--normalize", "L2-normalise every vector");
  auto& json = a.flag("--json", "print one JSON object per result on stdout");
  if (!a.parse(argv)) return 0;
  if (file.seen == input.seen) throw UsageError("embed", "give exactly one of -f or --input");
  std::optional<model::Pooling> pool_kind;
  if (pooling.seen) {
    if (pooling.value != "none" && pooling.value != "mean" && pooling.value != "cls" &&
        pooling.value != "last" && pooling.value != "rank")
      throw UsageError("--pooling",
                       "expected none, mean, cls or last, got '" + pooling.value + "'");
    pool_kind = model::parse_pooling(pooling.value);
    if (*pool_kind == model::Pooling::Rank)
      throw UsageError("--pooling", "rank is a classifier's pooling: use ragform classify");
  }

  std::vector<std::string> texts;
  if (file.seen) {
    texts.push_back(read_file_bytes(file.value));
  } else {
    eval::for_each_json_record(input.value, {}, [&](const eval::JsonRow& row) {
      if (!row.value.contains("text") || !row.value["text"].is_string())
        throw eval::RowError("missing string field 'text'");
      texts.push_back(row.value["text"].get<std::string>());
    });
  }

  auto enc = ef.open();
  const model::Pooling used = pool_kind.value_or(enc->default_pooling());
  auto embs = enc->embed(texts, pool_kind, normalize.value);
  size_t n_trunc = 0;
  for (const auto& e : embs) n_trunc += e.truncated ? 1 : 0;
  report_truncation("embed", n_trunc, embs.size());

  for (const auto& e : embs) {
    if (json.value) {
      nlohmann::ordered_json j;
      j["model"] = ef.model_name();
      j["pooling"] = model::pooling_name(used);
      j["n_tokens"] = e.n_tokens;
      if (used == model::Pooling::None) {
        nlohmann::ordered_json rows = nlohmann::ordered_json::array();
        for (int t = 0; t < e.n_tokens; ++t)
          rows.push_back(vec_json(e.token_vectors.data() + size_t(t) * size_t(e.n_embd), e.n_embd));
        j["embeddings"] = std::move(rows);
      } else {
        j["embedding"] = vec_json(e.vector.data(), int(e.vector.size()));
      }
      print_json_line(j);
      continue;
    }
    std::printf("# %s pooling=%s n_tokens=%d n_embd=%d\n", ef.model_name().c_str(),
                model::pooling_name(used), e.n_tokens, e.n_embd);
    auto print_row = [](const float* v, int n) {
      for (int i = 0; i < n; ++i) std::printf(i ? " %.9g" : "%.9g", double(v[i]));
      std::printf("\n");
    };
    if (used == model::Pooling::None)
      for (int t = 0; t < e.n_tokens; ++t)
        print_row(e.token_vectors.data() + size_t(t) * size_t(e.n_embd), e.n_embd);
    else
      print_row(e.vector.data(), int(e.vector.size()));
  }
  return 0;
}

}  // namespace

RAGFORM_COMMAND("embed", "embed text with an encoder model (BGE, E5, MiniLM, ...)", cmd_embed, 34);

}  // namespace ragform::cli
