// What the `ragform cnorm` verbs share: calibrate and apply live in cmd_cnorm.cpp, eval in
// cmd_cnorm_eval.cpp. The helpers turn --input / --overflow / --system-preset into the items, the
// overflow rule and the system prompt of a task and print notes; what is not about flags and files
// is the pipeline's (pipelines/cnorm/setup.h). run_cnorm_eval is the eval verb's entry, which
// cmd_cnorm.cpp lists with the others.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "cli/reader_flags.h"
#include "eval/qa_record.h"
#include "pipelines/cnorm/cnorm.h"
#include "reader/reader.h"

namespace ragform::cli::cnorm_verbs {

// One line on stderr (notes and summaries; stdout carries the JSON).
void note(const std::string& s);

// The records of --input; UsageError when it was not given.
std::vector<eval::QaRecord> load_records(const std::string& path);

// "N questions left out" on stderr for the qa records task_items could not give k - 1 distractors.
void note_skipped(const std::vector<std::string>& skipped, size_t k);

// The items of a task (cnorm::task_items) from the --input file (qa, kv, longbench) or generated
// (needle, n_needle items; --input refused); qa records left out are noted on stderr.
std::vector<cnorm::Item> input_items(cnorm::Task task, const std::string& input, size_t k,
                                     uint64_t seed, size_t n_needle);

// --overflow (longbench only: a UsageError when given for another task).
cnorm::Overflow overflow_for(cnorm::Task task, const Opt<std::string>& flag);

// --system-preset NAME (pipelines/cnorm/system_prompts.h): sets the reader's --system text. Needs
// --chat; UsageError when --system was given as well. An empty name does nothing.
void apply_system_preset(ReaderFlags& rf, const std::string& preset);

// `ragform cnorm eval` (cmd_cnorm_eval.cpp).
int run_cnorm_eval(const std::vector<std::string>& argv);

}  // namespace ragform::cli::cnorm_verbs
