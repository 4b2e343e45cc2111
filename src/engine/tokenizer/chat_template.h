// Chat templates: recognise a model's prompt format from the Jinja text stored in its GGUF
// (`tokenizer.chat_template`) and render a conversation in that format.
//
// ragform does not run Jinja. Like llama.cpp's `llm_chat_detect_template` /
// `llm_chat_apply_template` (src/llama-chat.cpp), it detects the template *family* from
// distinctive markers in the text and renders the family's fixed format. Rendering is meant to
// be byte-identical to llama.cpp's for every family listed below; which of them have reference
// vectors is recorded in docs/formats.md.
//
// The rendered prompt never contains the leading BOS: the tokenizer adds it (add_special), as
// llama.cpp does. `ChatFamily::None` is raw completion (base models, or the user asking for it).
//
// Message contents (and roles) are text: special-token text inside them stays text, so a message
// cannot close its own turn or open another. Only the template's own markers become special
// tokens. tokenize_chat is the one way a conversation becomes token ids.
#pragma once
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "engine/tokenizer/tokenizer.h"

namespace ragform::tok {

enum class ChatFamily {
  None,             // no template: raw completion, message contents joined by "\n\n"
  ChatML,           // <|im_start|>role\n...<|im_end|>\n  (Qwen, SmolLM, Hermes, ...)
  Llama2,           // [INST] ... [/INST], system text folded into the first turn without <<SYS>>
  Llama2Sys,        // ... with <<SYS>>\n...\n<</SYS>>\n\n
  Llama2SysBos,     // ... and "<s>" before every [INST] after the first
  Llama2SysStrip,   // ... and message contents trimmed of surrounding whitespace
  MistralV1,        // " [INST] ... [/INST]"
  MistralV3,        // "[INST] ... [/INST]", assistant replies trimmed
  MistralV3Tekken,  // "[INST]...[/INST]" without the inner spaces
  MistralV7,        // [SYSTEM_PROMPT] ...[/SYSTEM_PROMPT][INST] ...[/INST]
  MistralV7Tekken,  // ... without the inner spaces (named explicitly only; llama.cpp never
                    // detects it from template text either)
  Phi3,             // <|role|>\n...<|end|>\n
  Llama3,           // <|start_header_id|>role<|end_header_id|>\n\n...<|eot_id|>
  Gemma,            // <start_of_turn>role\n...<end_of_turn>\n, "assistant" written "model"
  Unknown,          // a template llama.cpp would classify as another family (Zephyr,
                    // Phi-4, ...) or not at all: detected but not renderable
};

struct ChatMessage {
  std::string role;  // "system", "user", "assistant" (other roles pass through where the format
                     // writes the role name, as llama.cpp does)
  std::string content;
};

// The family of a Jinja chat template, by llama.cpp's marker rules (same order, same markers).
// An empty template is None. The template text may also be a family name ("chatml", "llama3",
// "mistral-v7", ...), as llama.cpp accepts.
ChatFamily detect_chat_family(std::string_view tmpl);

// Stable lower-case name: "none", "chatml", "llama2", "llama2-sys", "llama2-sys-bos",
// "llama2-sys-strip", "mistral-v1", "mistral-v3", "mistral-v3-tekken", "mistral-v7",
// "mistral-v7-tekken", "phi3", "llama3", "gemma", "unknown" (llama.cpp's names where it has one).
std::string family_name(ChatFamily f);
// Inverse of family_name (for a --chat-template flag); nullopt for an unknown name.
std::optional<ChatFamily> family_from_name(std::string_view name);
// The names of the families ragform renders (not "none" or "unknown"), comma-separated in the
// order above: what a chat format setting accepts.
std::string renderable_family_names();
// A chat format by its name (--chat-template, chat_template=): OptionError("chat_template") naming
// the accepted ones for a name ragform does not render ("none" and "unknown" included).
ChatFamily chat_format(std::string_view name);
// The family a model's chat prompts take: `name`'s when given (chat_format), else the one detected
// from the file's template text (None when it has none).
ChatFamily chat_family_of(std::string_view file_template, std::string_view name);

// Renders `messages` in the family's format; `add_generation_prompt` appends the opening of an
// assistant turn where the format has one (ChatML, Phi-3, Llama-3, Gemma; the [INST] formats end
// with "[/INST]" already). Throws ragform::Error for ChatFamily::Unknown.
std::string render_chat(ChatFamily family, const std::vector<ChatMessage>& messages,
                        bool add_generation_prompt);

// render_chat's text and the byte ranges of it the template wrote (sorted, disjoint; adjacent
// template text is one range). Everything outside them came from the messages.
struct RenderedChat {
  std::string text;
  std::vector<TextSpan> template_spans;
};
RenderedChat render_chat_spans(ChatFamily family, const std::vector<ChatMessage>& messages,
                               bool add_generation_prompt);

// The rendered prompt and its token ids: special-token text is parsed only where the template
// wrote it (Tokenizer::encode_with_special_spans), BOS/EOS added as the vocabulary asks when
// add_special. For contents without special-token text the ids are encode(text, add_special,
// true)'s, i.e. llama.cpp's.
struct ChatPrompt {
  std::string text;
  std::vector<int32_t> ids;
};
ChatPrompt tokenize_chat(const Tokenizer& tk, ChatFamily family,
                         const std::vector<ChatMessage>& messages, bool add_generation_prompt,
                         bool add_special = true);

}  // namespace ragform::tok
