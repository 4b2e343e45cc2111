#include "pipelines/cnorm/system_prompts.h"

#include "base/error.h"

namespace ragform::cnorm {

const std::vector<std::string>& system_prompt_presets() {
  static const std::vector<std::string> n = {"llama2-chat"};
  return n;
}

const std::string& system_prompt_preset(std::string_view name) {
  // Appendix D, word for word (the PDF's line break after "If a question does" joined).
  static const std::string llama2 =
      "You are a helpful, respectful and honest assistant. Always answer as helpfully as "
      "possible, while being safe. Please ensure that your responses are socially unbiased and "
      "positive in nature. If a question does not make any sense, or is not factually coherent, "
      "explain why instead of answering something not correct. If you don't know the answer to a "
      "question, please don't share false information.";
  if (name == "llama2-chat") return llama2;
  throw UsageError("--system-preset",
                   "unknown system prompt '" + std::string(name) + "' (known: llama2-chat)");
}

}  // namespace ragform::cnorm
