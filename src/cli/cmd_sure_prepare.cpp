// `ragform sure prepare --index DIR --input Q.jsonl -m READER [-k 100] [--per-cell N]
// [--per-question N] --seed S [--known FILE] [--store DB]`: SURE's instance preparation
// (pipelines/sure/prepare.h) — BM25 retrieval of the top k passages (retrieval/retriever.h),
// closed-book Known/Unknown, Golden/Noise passages, N questions per cell K-G, K-N, U-G, U-N with
// up to --per-question passages each; writes the JSONL `sure perturb` reads.
#include <cstdio>
#include <filesystem>
#include <string>
#include <thread>

#include <unistd.h>

#include "base/error.h"
#include "base/paths.h"
#include "base/progress.h"
#include "cli/args.h"
#include "cli/json_out.h"
#include "cli/option_flags.h"
#include "cli/reader_flags.h"
#include "cli/remote_flags.h"
#include "cli/run_hooks.h"
#include "cli/sure_prepare.h"
#include "cli/sure_verbs.h"
#include "eval/jsonl.h"
#include "pipelines/common/common.h"
#include "pipelines/sure/sure.h"
#include "retrieval/questions.h"
#include "retrieval/retriever.h"
#include "store/run_store.h"
#include "store/sha256.h"

namespace ragform::cli {

namespace {

// The questions of `path` that have gold answers (the others cannot be graded: counted on stderr).
std::vector<retrieval::Question> questions_with_answers(const std::string& path) {
  std::vector<retrieval::Question> qs;
  size_t no_answers = 0;
  eval::for_each_json_record(path, {}, [&](const eval::JsonRow& row) {
    auto q = retrieval::question_from_json(row.value, row.line);
    if (q.answers.empty())
      ++no_answers;
    else
      qs.push_back(std::move(q));
  });
  if (no_answers)
    std::fprintf(stderr, "sure prepare: %zu questions without gold answers skipped\n", no_answers);
  return qs;
}

// Each question as a QA record whose contexts are its top k passages from the index, retrieved in
// blocks of 256 questions.
std::vector<eval::QaRecord> retrieve_records(const std::string& index,
                                             const std::vector<retrieval::Question>& qs, int k) {
  retrieval::RetrieverOptions ro;
  ro.threads = std::max(1, std::min(4, int(std::thread::hardware_concurrency())));
  retrieval::Retriever retriever(index, ro);
  std::vector<eval::QaRecord> recs;
  const size_t B = 256;
  for (size_t b = 0; b < qs.size(); b += B) {
    std::vector<std::string> texts;
    for (size_t i = b; i < std::min(qs.size(), b + B); ++i) texts.push_back(qs[i].question);
    auto res = retriever.retrieve(texts, k);
    for (size_t i = 0; i < res.size(); ++i) {
      eval::QaRecord r;
      r.id = qs[b + i].id;
      r.question = qs[b + i].question;
      r.answers = qs[b + i].answers;
      for (auto& c : res[i]) {
        eval::Context x;
        x.id = c.id;
        x.title = c.title;
        x.text = c.text;
        x.score = c.score;
        r.ctxs.push_back(std::move(x));
      }
      recs.push_back(std::move(r));
    }
  }
  return recs;
}

// The instances on stdout, the counts and the cells left short on stderr; a cell's passages are
// counted only when a question may bring more than one.
void print_prepare_summary(const sure::PrepareSummary& sum, const sure::PrepareOptions& o) {
  for (const auto& row : sum.rows) print_json_line(row);
  std::string cells;
  std::string empty;
  for (size_t c = 0; c < 4; ++c) {
    cells += std::string(c ? ", " : "") + sure::kCells[c] + " " +
             std::to_string(sum.cells[c].chosen) + "/" + std::to_string(o.per_cell);
    if (o.per_question != 1) cells += " (" + std::to_string(sum.cells[c].passages) + " passages)";
    if (sum.cells[c].chosen == 0) empty += std::string(empty.empty() ? "" : ", ") + sure::kCells[c];
  }
  std::fprintf(stderr,
               "sure prepare: %zu questions: %zu known, %zu unknown (%zu generated, %zu already "
               "done, %zu unmeasured); cells %s%s\n",
               sum.questions, sum.known, sum.unknown, sum.generated, sum.skipped_done,
               sum.unmeasured, cells.c_str(), empty.empty() ? "" : ("; empty: " + empty).c_str());
}

}  // namespace

int run_sure_prepare(const std::vector<std::string>& argv) {
  Args a(
      "sure prepare", "Build SURE's instances from retrieval (SURE 3.1, eq. 1).",
      "Retrieves the top k passages of every question from --index (BM25), asks the reader the\n"
      "question closed-book (Known iff a normalised gold answer is in its response; or the\n"
      "verdicts of --known FILE, JSONL {\"id\", \"known\": bool}), marks each passage Golden (it\n"
      "contains a gold answer) or Noise, and writes N questions per cell K-G, K-N, U-G, U-N\n"
      "(seeded), each with up to --per-question of its passages of that cell, as the JSONL\n"
      "`sure perturb` reads. The paper makes every retrieved passage an instance: -k 100\n"
      "--per-question 100. Closed-book answers go to --store (resumable). Cell counts and empty\n"
      "cells are reported on stderr. See docs/sure.md and docs/retrieval.md.");
  ReaderFlags rf(a, false);
  RemoteFlags xf(a);
  auto& index =
      a.opt<std::string>("--index", "DIR", "retrieval index (ragform index build)").required();
  auto& input = a.opt<std::string>("--input", "Q.jsonl", "questions with gold answers").required();
  auto& k = a.opt<int>("-k,--top-k", "N", "passages retrieved per question", 100).range(1, 100000);
  sure::PrepareOptions o;  // --per-cell ... --batch (pipelines/sure/prepare.h)
  OptionFlags<sure::PrepareOptions> declared(a, o);
  auto& known = a.opt<std::string>("--known", "FILE", "closed-book verdicts instead of the reader");
  auto& store_path =
      a.opt<std::string>("--store", "DB", "run store of the closed-book answers (SQLite)");
  auto& prompts_dir =
      a.opt<std::string>("--prompts", "DIR", "prompt directory (default: SURE's)", "");
  if (!a.parse(argv)) return 0;
  declared.apply();
  const bool have_reader = xf.reader.value == "openai" || !rf.model.value.empty();
  if (!known.seen && !have_reader)
    throw UsageError(
        "sure prepare",
        "needs a reader (-m MODEL.gguf, or --reader openai --base-url URL) or --known FILE");
  if (!known.seen && !store_path.seen)
    throw UsageError("--store", "the closed-book answers need a run store (--store DB)");
  if (have_reader) xf.check();

  if (known.seen) o.known = sure::read_known_file(known.value);

  // Questions with answers, and their retrieved passages.
  const std::vector<eval::QaRecord> recs =
      retrieve_records(index.value, questions_with_answers(input.value), k.value);

  std::unique_ptr<reader::Reader> reader;
  sure::PromptSet prompts;
  if (!o.known) {
    reader = xf.open(rf);
    prompts = sure::load_prompts(prompts_dir.value.empty()
                                     ? find_data_dir("prompts/sure", RAGFORM_SOURCE_PROMPTS)
                                     : prompts_dir.value);
  }
  // With --known and no --store the store only holds the run's identity: a temporary file.
  std::filesystem::path db = store_path.seen
                                 ? std::filesystem::path(store_path.value)
                                 : std::filesystem::temp_directory_path() /
                                       ("ragform-prepare-" + std::to_string(getpid()) + ".sqlite");
  std::optional<sure::PrepareSummary> sum;
  {
    store::RunStore st(db, store::RunStore::Mode::create, store::RunStore::Durability::normal);
    if (reader) {
      o.origin = common::origin_for(*reader);
    } else {  // verdicts from --known: no reader made the run
      o.origin.tool_version = common::tool_version();
      o.origin.model_path = rf.model.value;
      o.origin.reader = "known-file";
      o.origin.chat_mode = "";
    }
    std::optional<Progress> progress;
    o.hooks = cli_run_hooks(&progress);
    sum = sure::run_prepare(reader.get(), st, prompts, recs, o);
  }
  if (!store_path.seen) {
    std::error_code ec;
    for (const char* suffix : {"", "-wal", "-shm"})
      std::filesystem::remove(db.string() + suffix, ec);
  }
  print_prepare_summary(*sum, o);
  return 0;
}

}  // namespace ragform::cli
