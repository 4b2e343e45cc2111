// `ragform index build --corpus F -o DIR [--dense -m ENCODER.gguf] [--faiss flat|hnsw|ivf]
// [--append]`: a retrieval index of a passage corpus (retrieval/index_build.h, docs/retrieval.md).
#include <cstdio>
#include <optional>
#include <string>

#include "base/error.h"
#include "cli/args.h"
#include "cli/command.h"
#include "cli/json_out.h"
#include "cli/reader_flags.h"
#include "cli/retrieval_flags.h"
#include "cli/run_hooks.h"
#include "retrieval/index_build.h"

namespace ragform::cli {
namespace {

int index_build(const std::vector<std::string>& argv) {
  Args a("index build", "Build a retrieval index of a passage corpus.",
         "Corpus: JSONL {\"id\", \"title\", \"text\"} (plain or gzip) or DPR TSV "
         "`id<TAB>text<TAB>title`.\n"
         "Writes DIR/index.sqlite (passages + SQLite FTS5 BM25 over title + text) and, with\n"
         "--dense, DIR/dense.faiss + DIR/dense.json (FAISS index of L2-normalised passage\n"
         "vectors, inner product; the encoder's SHA-256 is recorded). Passages longer than the\n"
         "encoder's context are cut to its first n_ctx word-pieces (counted). --append adds to an\n"
         "existing index and resumes a killed build (identical passages already indexed are\n"
         "skipped). See docs/retrieval.md.");
  auto& corpus = a.opt<std::string>("--corpus", "F", "passages: JSONL or DPR TSV").required();
  auto& out = a.opt<std::string>("-o,--output", "DIR", "index directory").required();
  auto& dense = a.flag("--dense", "also build a dense (FAISS) index with the encoder -m");
  auto& model = a.opt<std::string>("-m,--model", "FILE", "encoder model (GGUF, BERT family)");
  auto& faiss =
      a.opt<std::string>("--faiss", "KIND", "flat (exact), hnsw or ivf", std::string("flat"));
  auto& hnsw_m = a.opt<int>("--hnsw-m", "N", "HNSW links per node", 32).range(2, 256);
  auto& append = a.flag("--append", "add to an existing index (or resume an interrupted build)");
  auto& threads = threads_flag(a);
  auto& batch = a.opt<int>("--batch", "N", "passages per encoder call", 256).range(1, 65536);
  auto& checkpoint =
      a.opt<int>("--checkpoint", "N", "passages between commits (resume points)", 20000)
          .range(1, kMaxInt);
  auto& json = a.flag("--json", "print the summary as one JSON object");
  if (!a.parse(argv)) return 0;
  if (dense.value != model.seen)
    throw UsageError(dense.value ? "--dense" : "-m", dense.value
                                                         ? "needs the encoder model (-m FILE)"
                                                         : "is used with --dense only");
  if (faiss.seen && !dense.value) throw UsageError("--faiss", "is used with --dense only");

  retrieval::BuildOptions o;
  o.corpus = corpus.value;
  o.dir = out.value;
  o.append = append.value;
  o.faiss = retrieval::parse_faiss_kind(faiss.value);
  o.hnsw_m = hnsw_m.value;
  o.batch = size_t(batch.value);
  o.checkpoint = size_t(checkpoint.value);
  IndexEncoder enc;
  if (dense.value) {
    enc = open_index_encoder(model.value, threads.value);
    o.encoder = enc.encoder.get();
    o.encoder_name = enc.id.name;
    o.encoder_sha256 = enc.id.sha256;
    retrieval::DenseIndex::set_threads(threads.value);
  }
  std::optional<Progress> progress;
  o.hooks = cli_run_hooks(&progress);
  auto s = retrieval::build_index(o);
  if (s.truncated > 0)
    std::fprintf(stderr, "index: %zu of %zu passages truncated to the encoder's context\n",
                 s.truncated, s.embedded);
  if (json.value) {
    nlohmann::ordered_json j;
    j["index"] = out.value;
    j["read"] = s.read;
    j["added"] = s.added;
    j["already_indexed"] = s.already_indexed;
    j["passages"] = s.total;
    j["dense"] = s.dense;
    j["embedded"] = s.embedded;
    j["truncated"] = s.truncated;
    print_json_line(j);
  } else {
    std::printf("index %s: %zu passages (%zu read, %zu new, %zu already indexed)",
                out.value.c_str(), s.total, s.read, s.added, s.already_indexed);
    if (s.dense) std::printf("; %zu vectors added, %zu truncated", s.embedded, s.truncated);
    std::printf("\n");
  }
  return 0;
}

int cmd_index(const std::vector<std::string>& args) {
  return run_verbs("index", "Retrieval indexes (SQLite FTS5 BM25, FAISS dense vectors).",
                   {{"build", "build or extend an index of a passage corpus", index_build}}, args);
}

}  // namespace

RAGFORM_COMMAND("index", "build a retrieval index (BM25 FTS5, FAISS dense) of a corpus", cmd_index,
                36);

}  // namespace ragform::cli
