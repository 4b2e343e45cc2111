#include "cli/option_flags.h"

namespace ragform::cli {

std::vector<std::string> split_commas(const std::string&, const std::string& text) {
  std::vector<std::string> out;
  size_t from = 0;
  for (;;) {
    const size_t at = text.find(',', from);
    out.push_back(text.substr(from, at == std::string::npos ? std::string::npos : at - from));
    if (at == std::string::npos) return out;
    from = at + 1;
  }
}

}  // namespace ragform::cli
