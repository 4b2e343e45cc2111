#include "pipelines/sure/prompts.h"

#include <filesystem>
#include <fstream>
#include <sstream>

#include "base/error.h"
#include "base/mapped_file.h"
#include "store/sha256.h"

namespace ragform::sure {

namespace fs = std::filesystem;

const std::string& PromptSet::get(const std::string& name) const {
  auto it = text.find(name);
  if (it == text.end()) throw Error("sure: prompts", "no prompt '" + name + "' in " + dir);
  return it->second;
}

std::string PromptSet::identity(const std::string& name) const {
  return version.at(name) + ":" + store::sha256_hex(get(name)).substr(0, 16);
}

std::string default_prompts_dir() {
  // The source tree's prompts/sure, recorded by CMake as an absolute path (not derived from
  // __FILE__, which a compiler launcher may make relative to the build directory).
  return RAGFORM_SOURCE_PROMPTS;
}

PromptSet load_prompts(const std::string& dir_in) {
  PromptSet ps;
  ps.dir = dir_in.empty() ? default_prompts_dir() : dir_in;
  if (!fs::is_directory(ps.dir))
    throw Error("sure: prompts", "directory " + ps.dir + " does not exist (use --prompts DIR)");
  static const char* names[] = {"style_simple", "style_complex",  "paraphrase", "rank_sentences",
                                "nli",          "qa_instruction", "qa_prompt",  "chain_of_note",
                                "closed_book",  "judge"};
  for (const char* n : names) {
    int best = 0;
    for (const auto& e : fs::directory_iterator(ps.dir)) {
      std::string f = e.path().filename().string();
      std::string pre = std::string(n) + ".v";
      if (f.rfind(pre, 0) != 0 || f.size() < pre.size() + 5 || f.substr(f.size() - 4) != ".txt")
        continue;
      std::string num = f.substr(pre.size(), f.size() - 4 - pre.size());
      // At most 9 digits: std::stoi threw out_of_range ("ragform: stoi") for a name like
      // nli.v99999999999.txt in a --prompts directory.
      if (num.empty() || num.size() > 9 || num.find_first_not_of("0123456789") != std::string::npos)
        continue;
      best = std::max(best, std::stoi(num));
    }
    if (best == 0)
      throw Error("sure: prompts", "missing " + std::string(n) + ".v<N>.txt in " + ps.dir);
    std::string file = std::string(n) + ".v" + std::to_string(best) + ".txt";
    std::string t = read_file_bytes((fs::path(ps.dir) / file).string(), kMaxTextFileBytes,
                                    "SURE prompt template");
    while (!t.empty() && (t.back() == '\n' || t.back() == '\r')) t.pop_back();
    ps.text[n] = t;
    ps.version[n] = std::string(n) + ".v" + std::to_string(best);
  }
  return ps;
}

std::string fill(const std::string& tmpl, const std::map<std::string, std::string>& vars) {
  std::vector<std::pair<size_t, size_t>> unused;
  return fill(tmpl, vars, "", unused);
}

std::string fill(const std::string& tmpl, const std::map<std::string, std::string>& vars,
                 const std::string& name_of_span, std::vector<std::pair<size_t, size_t>>& spans) {
  std::string out;
  size_t i = 0;
  while (i < tmpl.size()) {
    if (tmpl[i] == '{') {
      size_t close = tmpl.find('}', i);
      if (close != std::string::npos) {
        std::string name = tmpl.substr(i + 1, close - i - 1);
        bool ident = !name.empty() &&
                     name.find_first_not_of("abcdefghijklmnopqrstuvwxyz_") == std::string::npos;
        if (ident) {
          auto it = vars.find(name);
          if (it == vars.end())
            throw Error("sure: prompt template", "no value for placeholder {" + name + "}");
          if (name == name_of_span) spans.emplace_back(out.size(), out.size() + it->second.size());
          out += it->second;
          i = close + 1;
          continue;
        }
      }
    }
    out += tmpl[i++];
  }
  return out;
}

}  // namespace ragform::sure
