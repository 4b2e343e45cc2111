#include "cli/output_file.h"

#include <cstdio>

#include "base/atomic_file.h"
#include "base/error.h"
#include "base/excerpt.h"
#include "base/file_identity.h"

namespace ragform::cli {

void check_not_input(const std::string& out, const std::string& out_flag,
                     const std::vector<InputFile>& inputs) {
  if (out.empty() || out == "-") return;
  for (const InputFile& in : inputs)
    if (!in.path.empty() && same_file(out, in.path))
      throw UsageError(out_flag, "'" + excerpt(out) + "' is the " + in.flag +
                                     " file itself: write the output elsewhere");
}

void write_output(const std::string& out, const std::string& out_flag, std::string_view bytes,
                  const std::vector<InputFile>& inputs) {
  if (out.empty() || out == "-") {
    if (std::fwrite(bytes.data(), 1, bytes.size(), stdout) != bytes.size())
      throw Error(out_flag, "cannot write to stdout");
    return;
  }
  check_not_input(out, out_flag, inputs);
  write_file_atomically(out, bytes, out_flag);
}

}  // namespace ragform::cli
