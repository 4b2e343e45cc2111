// ragform data check: load a QA data file the way every pipeline will (eval/datasets.h), report
// its format, row and field counts, and its bad lines. ragform data needle: generated story-needle
// QA records. ragform data distractors: records with K documents, the gold among other
// records' gold passages.
#include <cstdio>

#include <nlohmann/json.hpp>

#include "base/error.h"
#include "base/excerpt.h"
#include "cli/args.h"
#include "cli/command.h"
#include "eval/datasets.h"
#include "eval/datasets_check.h"
#include "pipelines/cnorm/cnorm.h"

namespace ragform::cli {
namespace {

int cmd_data_check(const std::vector<std::string>& argv) {
  Args a(
      "data check",
      "Check a QA data file: detect its format, count rows and fields, list bad lines.",
      "FILE is JSONL (one record per line) or one JSON document (an array of records, or an\n"
      "object of records keyed by id), plain or gzip-compressed (detected from the bytes).\n"
      "Formats: litm-qa (lost-in-the-middle `ctxs`), nq-open (`answer`), hotpotqa (distractor),\n"
      "litm-kv (`ordered_kv_records`), poisonedrag (`adv_texts`), flashrag (`golden_answers`),\n"
      "longbench-v2 (`choice_A..D`); auto-detected from the first valid record's fields.\n\n"
      "Without --skip-bad the check stops at the first bad line and reports it as an error\n"
      "(\"ragform: FILE:LINE: reason\"). With --skip-bad every line is read and the bad ones are\n"
      "listed with their line numbers and reasons. Exit code 1 if any line is bad or the file\n"
      "holds no record, 0 otherwise. The report goes to stderr; with --json, one JSON object\n"
      "goes to stdout instead.");
  auto& file = a.positional("FILE", "the data file (.jsonl, .json, optionally .gz)");
  auto& format =
      a.opt<std::string>("--format", "NAME", "auto or a format name (see above)", "auto");
  auto& skip = a.flag("--skip-bad", "read past bad lines, count and list them");
  auto& max_listed = a.opt<int>("--max-listed", "N", "bad lines to list with --skip-bad", 50);
  auto& json = a.flag("--json", "print one JSON object on stdout instead of the report");
  if (!a.parse(argv)) return 0;

  eval::Format f = eval::parse_format(format.value);
  eval::DatasetCheck c =
      eval::check_dataset(*file.value, f, skip.value, static_cast<size_t>(max_listed.value));
  if (json.value) {
    std::printf("%s\n", c.to_json().dump().c_str());
    std::fflush(stdout);
  } else {
    std::fputs(c.to_text().c_str(), stderr);
  }
  return c.ok() ? 0 : 1;
}

// Story-needle items as lost-in-the-middle QA records (cnorm/outputs.h needle_jsonl): the input
// `demo` gives `sure perturb`, as a command so that the demo's printed steps can be run by hand.
int cmd_data_needle(const std::vector<std::string>& argv) {
  Args a("data needle", "Write generated story-needle QA records (JSONL) on stdout.",
         "The story-needle probe of `cnorm --task needle` (a fact hidden in a short story and a\n"
         "question about it), one lost-in-the-middle record per item: {\"id\", \"question\",\n"
         "\"answers\", \"ctxs\": [gold document (\"isgold\": true), distractors...]}. The same\n"
         "--count, --docs and --seed give the same records. `ragform demo` perturbs them with\n"
         "`sure perturb`.");
  auto& count = a.opt<int>("-n,--count", "N", "items", 20).range(1, int(cnorm::kMaxNeedleItems));
  auto& docs = a.opt<int>("-k,--docs", "K",
                          "documents per record (the gold one and K-1 "
                          "distractors)",
                          2)
                   .range(2, 12);
  auto& seed = a.opt<int>("--seed", "S", "seed of the items", 0).range(0, kMaxInt);
  if (!a.parse(argv)) return 0;
  const std::string lines =
      cnorm::needle_jsonl(size_t(count.value), size_t(docs.value), uint64_t(seed.value));
  std::fwrite(lines.data(), 1, lines.size(), stdout);
  if (std::fflush(stdout) != 0) throw Error("data needle", "cannot write the records");
  return 0;
}

// QA records with k documents each from a file of questions and their gold passages (NQ-Open's
// oracle file): the distractors of a record are other records' gold passages, drawn as C-NORM's qa
// task draws them (cnorm/tasks.h build_qa_items, over the whole file), and the gold is placed per
// --gold. The input of `ragform tune --task qa` and of any pipeline that reads canonical records.
int cmd_data_distractors(const std::vector<std::string>& argv) {
  Args a("data distractors",
         "Write QA records with K documents each: the gold passage among distractors.",
         "Each record of --input keeps its question, answers and gold passage (the first ctx with\n"
         "isgold, else with hasanswer, else the first) and gets K-1 distractors: its own other\n"
         "ctxs when it has K, else other records' gold passages in a seeded order, skipping any\n"
         "that contains one of its answers (C-NORM's qa task, docs/cnorm.md). The pool is the\n"
         "whole file, so --skip/--limit windows of one file draw from the same passages and are\n"
         "disjoint in questions. --gold places the gold passage: random (a slot per record from\n"
         "--seed and its id), first, last or a position 1..K. A record with too few usable\n"
         "distractors is left out with a note. The same flags give the same bytes.");
  auto& input = a.opt<std::string>("--input", "FILE", "QA records (JSONL, gzip ok)").required();
  auto& docs = a.opt<int>("-k,--docs", "K", "documents per record", 10).range(2, 1000);
  auto& seed =
      a.opt<int>("--seed", "S", "distractor order and random gold slots", 0).range(0, kMaxInt);
  auto& gold = a.opt<std::string>("--gold", "WHERE", "random, first, last or 1..K", "random");
  auto& skip = a.opt<int>("--skip", "N", "leave out the first N records", 0).range(0, kMaxInt);
  auto& limit =
      a.opt<int>("--limit", "N", "write at most N records (0 = all)", 0).range(0, kMaxInt);
  if (!a.parse(argv)) return 0;
  const size_t k = size_t(docs.value);
  const cnorm::GoldPlacement where = cnorm::parse_gold_placement(gold.value, k);
  const std::vector<eval::QaRecord> all = eval::load_qa_file(input.value).records;
  std::vector<std::string> skipped;
  const std::vector<cnorm::Item> items =
      cnorm::build_qa_items(all, k, uint64_t(seed.value), &skipped);
  std::string out;
  size_t written = 0;
  for (size_t i = size_t(skip.value); i < items.size(); ++i) {
    if (limit.value && written == size_t(limit.value)) break;
    const size_t pos = where.position(items[i], k, uint64_t(seed.value));
    out += cnorm::item_record(items[i], k, pos).dump() + "\n";
    ++written;
  }
  std::fwrite(out.data(), 1, out.size(), stdout);
  if (std::fflush(stdout) != 0) throw Error("data distractors", "cannot write the records");
  if (!skipped.empty())
    std::fprintf(stderr,
                 "data distractors: note: %zu records left out: fewer than %zu passages without "
                 "their answers (first: %s)\n",
                 skipped.size(), k - 1, excerpt(skipped.front()).c_str());
  std::fprintf(stderr, "data distractors: %zu records of %zu documents written\n", written, k);
  return 0;
}

int cmd_data(const std::vector<std::string>& args) {
  return run_verbs(
      "data",
      "Inspect QA data files (the inputs of every pipeline), generate story-needle ones, or give "
      "records K documents (the gold among distractors).",
      {{"check", "detect a file's format, count rows and fields, list bad lines", cmd_data_check},
       {"needle", "write generated story-needle QA records (JSONL)", cmd_data_needle},
       {"distractors", "write QA records with K documents: the gold among distractors",
        cmd_data_distractors}},
      args);
}

}  // namespace

RAGFORM_COMMAND("data",
                "check QA data files (format, row and field counts, bad lines); story-needle and "
                "distractor records",
                cmd_data, 85);

}  // namespace ragform::cli
