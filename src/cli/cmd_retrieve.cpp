// `ragform retrieve --index DIR --input Q.jsonl [-k 20] [--mode bm25|dense|hybrid] [-m ENCODER]
// [--json]`: the top k passages of every question (retrieval/retriever.h), one output line per
// question in the DPR/FlashRAG/lost-in-the-middle shape (retrieval/questions.h).
#include <algorithm>
#include <cstdio>
#include <string>
#include <thread>

#include "base/error.h"
#include "cli/args.h"
#include "cli/command.h"
#include "cli/json_out.h"
#include "cli/option_flags.h"
#include "cli/retrieval_flags.h"
#include "eval/jsonl.h"
#include "retrieval/questions.h"
#include "retrieval/retrieve_options.h"
#include "retrieval/retriever.h"

namespace ragform::cli {
namespace {

// Questions that got fewer than k passages. BM25 returns only passages holding one of the
// question's words, so a question of words no passage holds ("zzzqqq xyzzy", a script the corpus
// does not use) gets none; the output shows that only as a short ctxs list, so stderr says it.
struct ShortOfK {
  size_t fewer = 0, none = 0;
  void add(size_t got, size_t k) {
    fewer += got < k ? 1 : 0;
    none += got == 0 ? 1 : 0;
  }
  std::string note(size_t questions, size_t k, size_t passages, retrieval::Mode m) const {
    if (fewer == 0) return {};
    std::string s = "retrieve: " + std::to_string(fewer) + " of " + std::to_string(questions) +
                    " questions got fewer than " + std::to_string(k) + " passages (" +
                    std::to_string(none) + " got none)";
    if (passages < k) return s + ": the index holds " + std::to_string(passages) + " passages";
    if (m != retrieval::Mode::Bm25) return s;
    return s +
           ": BM25 returns only passages that hold one of a question's words (stop words "
           "aside); see docs/retrieval.md";
  }
};

int cmd_retrieve(const std::vector<std::string>& argv) {
  Args a(
      "retrieve", "Retrieve the top k passages of every question from an index.",
      "Input: JSONL with \"question\" (and \"id\", \"answers\", ...), or any QA format `ragform "
      "data`\n"
      "reads. Output (--json): one line per question, {\"id\", \"question\", \"answers\", <other\n"
      "fields>, \"ctxs\": [{\"id\", \"title\", \"text\", \"score\", \"rank\"}]} — the input of "
      "cnorm, sure\n"
      "and spotlight. Modes: bm25 (SQLite FTS5 bm25(), the default), dense (FAISS, needs the\n"
      "index's encoder -m), hybrid (reciprocal-rank fusion of both, k = 60).\n"
      "See docs/retrieval.md.");
  auto& index =
      a.opt<std::string>("--index", "DIR", "index directory (ragform index build)").required();
  auto& input = a.opt<std::string>("--input", "Q.jsonl", "questions").required();
  retrieval::RetrieveRequest req;  // -k, --mode (retrieval/retrieve_options.h)
  OptionFlags<retrieval::RetrieveRequest> declared(a, req);
  auto& model = a.opt<std::string>("-m,--model", "FILE", "the index's encoder (dense, hybrid)");
  auto& threads = a.opt<int>("-t,--threads", "N",
                             "query threads: SQLite connections, FAISS OpenMP threads, encoder "
                             "threads (0 = all cores)",
                             1)
                      .range(0, max_threads(), "0..4 x the cores");
  auto& batch = a.opt<int>("--batch", "N", "questions per batch", 64).range(1, 65536);
  auto& json = a.flag("--json", "print one JSON object per question");
  if (!a.parse(argv)) return 0;
  declared.apply();
  const retrieval::Mode m = retrieval::parse_mode(req.mode);
  if (m == retrieval::Mode::Bm25 && model.seen)
    throw UsageError("-m", "is used with --mode dense or hybrid only");
  if (m != retrieval::Mode::Bm25 && !model.seen)
    throw UsageError("--mode", req.mode + " needs the index's encoder model (-m FILE)");

  const int n_threads =
      threads.value > 0 ? threads.value : int(std::thread::hardware_concurrency());
  retrieval::RetrieverOptions o;
  o.mode = m;
  o.threads = std::max(1, n_threads);
  IndexEncoder enc;
  if (model.seen) {
    enc = open_index_encoder(model.value, threads.value);
    o.encoder = enc.encoder.get();
    o.encoder_sha256 = enc.id.sha256;
    o.encoder_name = enc.id.name;
  }
  retrieval::Retriever r(index.value, o);

  std::vector<retrieval::Question> qs;
  size_t n_questions = 0;
  ShortOfK short_of_k;
  const int k = int(req.k);
  auto flush = [&] {
    if (qs.empty()) return;
    std::vector<std::string> texts;
    for (const auto& q : qs) texts.push_back(q.question);
    auto res = r.retrieve(texts, k);
    for (const auto& ctxs : res) short_of_k.add(ctxs.size(), size_t(k));
    for (size_t i = 0; i < qs.size(); ++i) {
      if (json.value) {
        print_json_line(retrieval::retrieval_row(qs[i], res[i]));
        continue;
      }
      std::printf("# %s: %s\n", qs[i].id.c_str(), qs[i].question.c_str());
      for (const auto& c : res[i])
        std::printf("%d\t%.6g\t%s\t%s\n", c.rank, c.score, c.id.c_str(), c.title.c_str());
    }
    n_questions += qs.size();
    qs.clear();
  };
  eval::for_each_json_record(input.value, {}, [&](const eval::JsonRow& row) {
    qs.push_back(retrieval::question_from_json(row.value, row.line));
    if (qs.size() >= size_t(batch.value)) flush();
  });
  flush();
  if (r.truncated_queries() > 0)
    std::fprintf(stderr, "retrieve: %zu of %zu questions truncated to the encoder's context\n",
                 r.truncated_queries(), n_questions);
  if (std::string note = short_of_k.note(n_questions, size_t(k), r.size(), m); !note.empty())
    std::fprintf(stderr, "%s\n", note.c_str());
  return 0;
}

}  // namespace

RAGFORM_COMMAND("retrieve", "top-k passages of questions from an index (bm25, dense, hybrid)",
                cmd_retrieve, 37);

}  // namespace ragform::cli
