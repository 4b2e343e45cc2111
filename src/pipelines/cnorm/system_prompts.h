// Named system prompts for chat readers in C-NORM's evaluations. The paper (Appendix D, "System
// Prompt (Alignment Instruction)") gives the one used for LLaMA-2-7B-Chat; its text is kept here
// as the paper prints it (it omits one sentence of Meta's published default, about harmful
// content), under the name "llama2-chat".
#pragma once
#include <string>
#include <string_view>
#include <vector>

namespace ragform::cnorm {

// The names system_prompt_preset accepts.
const std::vector<std::string>& system_prompt_presets();
// The text of a named system prompt; UsageError naming the known ones otherwise.
const std::string& system_prompt_preset(std::string_view name);

}  // namespace ragform::cnorm
