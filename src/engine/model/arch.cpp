#include "engine/model/arch.h"

#include "base/error.h"

namespace ragform::model {

namespace {
using ArchFn = const ArchSpec& (*)();
const ArchFn kArchitectures[] = {&llama_arch, &qwen2_arch, &qwen3_arch, &gemma3_arch, &phi3_arch};
}  // namespace

const ArchSpec& find_arch(const std::string& name) {
  for (ArchFn f : kArchitectures)
    if (name == f().name) return f();
  std::string list;
  for (auto& n : supported_archs()) list += (list.empty() ? "" : ", ") + n;
  throw Error("model", "unsupported architecture '" + name + "' (supported: " + list + ")");
}

std::vector<std::string> supported_archs() {
  std::vector<std::string> out;
  for (ArchFn f : kArchitectures) out.push_back(f().name);
  return out;
}

}  // namespace ragform::model
