// libFuzzer target for the data-file loaders (eval/jsonl.h, eval/datasets.h, eval/datasets_check.h,
// sure/pairs.h): any byte string is a data file that either loads or is refused with
// ragform::Error (DataError naming the line). Every layout (JSONL, JSON array, keyed object,
// single document), plain or gzip, is reached from the bytes alone. Checked on every input:
//   - strict and skip-bad loading with format detection; a record of every concrete format built
//     from every good row (RowError is a refusal, never a crash);
//   - `data check`'s report, text and JSON (invalid UTF-8 in the data must not make it throw);
//   - SURE's pairs reader;
//   - invariants of what loaded: rows_ok counts the records delivered, kv.gold_index and the
//     supporting facts' context_index point inside the record.
#include <cstddef>
#include <cstdint>

#include "base/error.h"
#include "eval/datasets.h"
#include "eval/datasets_check.h"
#include "fuzz_file.h"
#include "pipelines/sure/pairs.h"

namespace {

using namespace ragform;

void check_record(const eval::QaRecord& r) {
  if (r.kv && !r.kv->records.empty() && r.kv->gold_index >= r.kv->records.size()) __builtin_trap();
  if (r.hotpot)
    for (const auto& f : r.hotpot->supporting_facts)
      if (f.context_index < -1 || f.context_index >= static_cast<int>(r.ctxs.size()))
        __builtin_trap();
  for (const auto& c : r.ctxs) {
    if (c.sentences.size() != c.sentence_offsets.size()) __builtin_trap();
    for (size_t i = 0; i < c.sentences.size(); ++i)
      if (c.sentence_offsets[i] + c.sentences[i].size() > c.text.size()) __builtin_trap();
  }
  if (r.choice && (r.choice->answer_index < 0 || r.choice->answer_index > 3)) __builtin_trap();
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  static fuzz::ScratchFile scratch(".jsonl");
  const std::string& path = scratch.write(data, size);

  for (bool skip : {false, true}) {
    eval::LoadOptions lo;
    lo.read.skip_bad = skip;
    lo.read.keep_reasons = 3;
    try {
      eval::LoadResult res = eval::load_qa_file(path, lo);
      if (res.info.stats.rows_ok != res.records.size()) __builtin_trap();
      for (const auto& r : res.records) check_record(r);
    } catch (const Error&) {
    }
  }

  // Every good row as every concrete format: the field checks of each loader.
  try {
    eval::ReadOptions ro;
    ro.skip_bad = true;
    eval::for_each_json_record(path, ro, [](const eval::JsonRow& row) {
      (void)eval::detect_format(row.value);
      for (eval::Format f : eval::known_formats()) {
        try {
          check_record(eval::to_qa_record(row.value, f, {row.line, row.key}));
        } catch (const eval::RowError&) {
        }
      }
    });
  } catch (const Error&) {
  }

  try {
    eval::DatasetCheck c = eval::check_dataset(path, eval::Format::Auto, true, 3);
    volatile size_t sink =
        c.to_text().size() +
        c.to_json().dump(-1, ' ', false, nlohmann::json::error_handler_t::strict).size();
    (void)sink;
  } catch (const Error&) {
  }

  try {
    (void)sure::read_pairs(path);
  } catch (const Error&) {
  }
  return 0;
}
