// Where a verb's output file goes: never onto a file the verb reads. `sure export --store a --sft
// a` and `sure sig ... -o LINK` (a symlink to the store) emptied the run store, `sure filter
// --rejected` its --input (issue 40, pass 12). The bytes are written whole through AtomicFile: a
// failed run leaves the old file, and an open run store is refused there too.
#pragma once
#include <string>
#include <string_view>
#include <vector>

namespace ragform::cli {

// A file the verb reads, by the flag that names it.
struct InputFile {
  std::string flag, path;
};

// UsageError(out_flag, "'OUT' is the FLAG file itself") when `out` is one of `inputs` (same_file:
// links and relative paths seen through). Empty paths are skipped.
void check_not_input(const std::string& out, const std::string& out_flag,
                     const std::vector<InputFile>& inputs);

// `bytes` to `out` (stdout when it is "" or "-"), after check_not_input.
void write_output(const std::string& out, const std::string& out_flag, std::string_view bytes,
                  const std::vector<InputFile>& inputs);

}  // namespace ragform::cli
