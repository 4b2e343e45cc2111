// ragform present: a profile from `ragform tune` applied to new records (src/tune/present.h, the
// function the server's /v1/rag/present and Python's ragform.present call too). Reads flags and
// files and prints; a bad record is "FILE:LINE: reason".
#include <cstdio>
#include <memory>

#include "base/excerpt.h"
#include "cli/command.h"
#include "cli/json_out.h"
#include "cli/option_flags.h"
#include "cli/reader_flags.h"
#include "eval/jsonl.h"
#include "store/sha256.h"
#include "tune/present.h"

namespace ragform::cli {
namespace {

void print_prompt(const std::string& prompt, bool first) {
  // Prompts span lines; one blank line between two records keeps them apart for a reader.
  if (!first) std::fputc('\n', stdout);
  std::fwrite(prompt.data(), 1, prompt.size(), stdout);
  std::fputc('\n', stdout);
}

int run_present(const std::vector<std::string>& argv) {
  Args a(
      "present", "Render records with a tuned presentation profile (from `ragform tune`).",
      "Input JSONL lines are QA records with \"ctxs\" (canonical, HotpotQA, FlashRAG, ...) or, for "
      "a kv\n"
      "profile, key-value records; the profile's task only picks the prompt template. Output: "
      "the\n"
      "rendered prompts, a blank line between records; --json prints one object per record\n"
      "{id, prompt, documents, gold_position, task, presentation[, prompt_tokens with -m]}.");
  tune::PresentRequest req;  // --profile (tune/present.h)
  OptionFlags<tune::PresentRequest> declared(a, req);
  auto& input = a.opt<std::string>("--input", "FILE", "records (JSONL, gzip ok)").required();
  auto& json = a.flag("--json", "print one JSON object per record");
  ReaderFlags rf(a, /*model_required=*/false);
  if (!a.parse(argv)) return 0;
  declared.apply();
  const tune::Profile prof = tune::present_profile(req);  // fails before any output
  // Once: whether the profile is the search's winner or the original presentation, and why. The
  // notes quote the profile file's own text: bounded, and its terminal controls escaped (a 50 MB
  // "why" was printed whole, an ESC sequence in it cleared the screen).
  if (const std::string note = tune::deployment_note(prof); !note.empty())
    std::fprintf(stderr, "present: profile: %s\n", bounded_message(note).c_str());
  std::unique_ptr<reader::NativeReader> counter;
  if (!rf.model.value.empty()) {
    counter = rf.open_native();  // only to count prompt tokens
    const std::string note =
        tune::model_mismatch_note(prof, store::sha256_file(rf.model.value), rf.model.value);
    if (!note.empty()) std::fprintf(stderr, "present: %s\n", bounded_message(note).c_str());
  }
  size_t n = 0;
  eval::for_each_json_record(input.value, {}, [&](const eval::JsonRow& row) {
    const tune::Presented p = tune::present(row.value, prof, counter.get(), {row.line, row.key});
    if (json.value)
      print_json_line(tune::presented_json(p, prof));
    else
      print_prompt(p.prompt, n == 0);
    ++n;
  });
  std::fprintf(stderr, "present: %zu record%s rendered with %s (task %s)\n", n, n == 1 ? "" : "s",
               printable(tune::label(prof.presentation)).c_str(), tune::task_name(prof.task));
  return 0;
}

}  // namespace

RAGFORM_COMMAND("present", "apply a tuned presentation profile (ragform tune) to records",
                run_present, 66);

}  // namespace ragform::cli
