#include "engine/tokenizer/chat_template.h"

#include <array>
#include <utility>

#include "base/error.h"
#include "base/excerpt.h"
#include "base/options.h"
#include "engine/tokenizer/tokenizer.h"

namespace ragform::tok {

namespace {

constexpr std::array<std::pair<ChatFamily, const char*>, 15> kNames = {{
    {ChatFamily::None, "none"},
    {ChatFamily::ChatML, "chatml"},
    {ChatFamily::Llama2, "llama2"},
    {ChatFamily::Llama2Sys, "llama2-sys"},
    {ChatFamily::Llama2SysBos, "llama2-sys-bos"},
    {ChatFamily::Llama2SysStrip, "llama2-sys-strip"},
    {ChatFamily::MistralV1, "mistral-v1"},
    {ChatFamily::MistralV3, "mistral-v3"},
    {ChatFamily::MistralV3Tekken, "mistral-v3-tekken"},
    {ChatFamily::MistralV7, "mistral-v7"},
    {ChatFamily::MistralV7Tekken, "mistral-v7-tekken"},
    {ChatFamily::Phi3, "phi3"},
    {ChatFamily::Llama3, "llama3"},
    {ChatFamily::Gemma, "gemma"},
    {ChatFamily::Unknown, "unknown"},
}};

// Names llama.cpp accepts in place of a template for families ragform does not render.
constexpr std::array<const char*, 30> kOtherLlamaCppNames = {
    "phi4",       "falcon3",     "zephyr",      "monarch",       "orion",     "openchat",
    "vicuna",     "vicuna-orca", "deepseek",    "deepseek2",     "deepseek3", "command-r",
    "chatglm3",   "chatglm4",    "glmedge",     "minicpm",       "exaone3",   "exaone4",
    "rwkv-world", "granite",     "gigachat",    "megrez",        "yandex",    "bailing",
    "llama4",     "smolvlm",     "hunyuan-moe", "hunyuan-dense", "kimi-k2",   "dots1"};

// llama.cpp's trim(): isspace() in the C locale, i.e. ASCII whitespace only.
bool is_space(char c) {
  return c == ' ' || c == '\t' || c == '\n' || c == '\v' || c == '\f' || c == '\r';
}
std::string trim(const std::string& s) {
  size_t b = 0, e = s.size();
  while (b < e && is_space(s[b])) ++b;
  while (e > b && is_space(s[e - 1])) --e;
  return s.substr(b, e - b);
}

// The rendered prompt and which of its bytes the template wrote. Contents come from the
// conversation (a server takes them from its client), so they go through content(); the family's
// fixed markers go through tmpl(), role names through role().
class Out {
 public:
  void tmpl(std::string_view s) {
    if (s.empty()) return;
    if (!spans_.empty() && spans_.back().end == r_.size())
      spans_.back().end += s.size();  // adjacent template text is one span
    else
      spans_.push_back({r_.size(), r_.size() + s.size()});
    r_.append(s);
  }
  void content(std::string_view s) { r_.append(s); }
  // A role the formats know is the template's (Phi-3 writes it inside its marker, "<|user|>", a
  // control token); any other role name is the client's text: with it a message must not be able
  // to spell another marker ("end" would make Phi-3's "<|end|>").
  void role(std::string_view r) {
    for (const char* known : {"system", "user", "assistant", "model", "tool"})
      if (r == known) return tmpl(r);
    content(r);
  }
  RenderedChat take() { return {std::move(r_), std::move(spans_)}; }

 private:
  std::string r_;
  std::vector<TextSpan> spans_;
};

void render_mistral_v7(Out& out, bool tekken, const std::vector<ChatMessage>& msgs) {
  const std::string sp = tekken ? "" : " ";
  for (const auto& m : msgs) {
    if (m.role == "system") {
      out.tmpl("[SYSTEM_PROMPT]" + sp);
      out.content(m.content);
      out.tmpl("[/SYSTEM_PROMPT]");
    } else if (m.role == "user") {
      out.tmpl("[INST]" + sp);
      out.content(m.content);
      out.tmpl("[/INST]");
    } else {
      out.tmpl(sp);
      out.content(m.content);
      out.tmpl("</s>");
    }
  }
}

// Mistral v1/v3/v3-tekken (mistralai cookbook "chat_templates.md"): a system message opens the
// first [INST] block and is followed by "\n\n"; assistant turns close the block with </s>.
void render_mistral_v1_v3(Out& out, ChatFamily f, const std::vector<ChatMessage>& msgs) {
  const std::string lead = f == ChatFamily::MistralV1 ? " " : "";
  const std::string trail = f == ChatFamily::MistralV3Tekken ? "" : " ";
  const bool trim_assistant = f == ChatFamily::MistralV3;
  bool inside_turn = false;
  for (const auto& m : msgs) {
    if (!inside_turn) {
      out.tmpl(lead + "[INST]" + trail);
      inside_turn = true;
    }
    if (m.role == "system") {
      out.content(m.content);
      out.tmpl("\n\n");
    } else if (m.role == "user") {
      out.content(m.content);
      out.tmpl(lead + "[/INST]");
    } else {
      out.tmpl(trail);
      out.content(trim_assistant ? trim(m.content) : m.content);
      out.tmpl("</s>");
      inside_turn = false;
    }
  }
}

// Llama 2 (huggingface.co/blog/llama2 "How to prompt Llama 2"). The first "[INST] " is written
// without BOS (the tokenizer adds it); later turns start with "<s>[INST] " only in the -bos
// variant, as llama.cpp renders it.
void render_llama2(Out& out, ChatFamily f, const std::vector<ChatMessage>& msgs) {
  const bool system_block = f != ChatFamily::Llama2;
  const bool bos_inside = f == ChatFamily::Llama2SysBos;
  const bool strip = f == ChatFamily::Llama2SysStrip;
  bool inside_turn = true;
  out.tmpl("[INST] ");
  for (const auto& m : msgs) {
    const std::string content = strip ? trim(m.content) : m.content;
    if (!inside_turn) {
      inside_turn = true;
      out.tmpl(bos_inside ? "<s>[INST] " : "[INST] ");
    }
    if (m.role == "system") {
      if (system_block) {
        out.tmpl("<<SYS>>\n");
        out.content(content);
        out.tmpl("\n<</SYS>>\n\n");
      } else {
        out.content(content);  // no system support: prepend the text to the first turn
        out.tmpl("\n");
      }
    } else if (m.role == "user") {
      out.content(content);
      out.tmpl(" [/INST]");
    } else {
      out.content(content);
      out.tmpl("</s>");
      inside_turn = false;
    }
  }
}

// Gemma (google/gemma-7b-it, as llama.cpp renders it): no system role, so system texts (trimmed)
// are collected and written before the next non-model turn's content; "assistant" becomes
// "model"; every content is trimmed.
void render_gemma(Out& out, const std::vector<ChatMessage>& msgs) {
  std::string system;
  for (const auto& m : msgs) {
    if (m.role == "system") {
      system += trim(m.content);
      continue;
    }
    const std::string role = m.role == "assistant" ? "model" : m.role;
    out.tmpl("<start_of_turn>");
    out.role(role);
    out.tmpl("\n");
    if (!system.empty() && role != "model") {
      out.content(system);
      out.tmpl("\n\n");
      system.clear();
    }
    out.content(trim(m.content));
    out.tmpl("<end_of_turn>\n");
  }
}

}  // namespace

std::string family_name(ChatFamily f) {
  for (const auto& [fam, name] : kNames)
    if (fam == f) return name;
  return "unknown";
}

std::optional<ChatFamily> family_from_name(std::string_view name) {
  for (const auto& [fam, n] : kNames)
    if (name == n) return fam;
  return std::nullopt;
}

std::string renderable_family_names() {
  std::string out;
  for (const auto& [fam, n] : kNames)
    if (fam != ChatFamily::None && fam != ChatFamily::Unknown)
      out += (out.empty() ? "" : ", ") + std::string(n);
  return out;
}

ChatFamily chat_format(std::string_view name) {
  const auto f = family_from_name(name);
  if (!f || *f == ChatFamily::None || *f == ChatFamily::Unknown)
    throw OptionError("chat_template", "unknown chat format '" + excerpt(name) + "' (expected " +
                                           renderable_family_names() + ")");
  return *f;
}

ChatFamily chat_family_of(std::string_view file_template, std::string_view name) {
  return name.empty() ? detect_chat_family(file_template) : chat_format(name);
}

ChatFamily detect_chat_family(std::string_view tmpl) {
  if (tmpl.empty()) return ChatFamily::None;
  // 1. The text may be a family name (llama.cpp: llm_chat_template_from_str).
  if (auto f = family_from_name(tmpl); f && *f != ChatFamily::None && *f != ChatFamily::Unknown)
    return *f;
  for (const char* other : kOtherLlamaCppNames)
    if (tmpl == other) return ChatFamily::Unknown;

  // 2. Markers, in llama.cpp's order (an earlier rule wins over a later one).
  auto has = [&](std::string_view marker) { return tmpl.find(marker) != std::string_view::npos; };
  if (has("<|im_start|>")) {
    // Phi-4 (<|im_sep|>) and SmolVLM (<end_of_utterance>) reuse <|im_start|> but are not ChatML.
    if (has("<|im_sep|>") || has("<end_of_utterance>")) return ChatFamily::Unknown;
    return ChatFamily::ChatML;
  }
  if (tmpl.substr(0, 7) == "mistral" || has("[INST]")) {
    if (has("[SYSTEM_PROMPT]")) return ChatFamily::MistralV7;
    if (has("' [INST] ' + system_message") || has("[AVAILABLE_TOOLS]")) {
      if (has(" [INST]")) return ChatFamily::MistralV1;
      if (has("\"[INST]\"")) return ChatFamily::MistralV3Tekken;
      return ChatFamily::MistralV3;
    }
    if (has("content.strip()")) return ChatFamily::Llama2SysStrip;
    if (has("bos_token + '[INST]")) return ChatFamily::Llama2SysBos;
    if (has("<<SYS>>")) return ChatFamily::Llama2Sys;
    return ChatFamily::Llama2;
  }
  if (has("<|assistant|>") && has("<|end|>")) return ChatFamily::Phi3;
  // Families llama.cpp checks before Gemma and Llama 3 that ragform does not render: ChatGLM-4,
  // Falcon 3 / GLM-Edge, Zephyr, Monarch; after Gemma: Orion, OpenChat, Vicuna, DeepSeek coder,
  // Command-R. A template carrying their markers is theirs even if it mentions header ids.
  if (has("[gMASK]<sop>") || (has("<|assistant|>") && has("<|user|>")) ||
      (has("<|{{ item['role'] }}|>") && has("<|begin_of_image|>")) ||
      (has("<|user|>") && has("<|endoftext|>")) || has("bos_token + message['role']"))
    return ChatFamily::Unknown;
  if (has("<start_of_turn>")) return ChatFamily::Gemma;
  if (has("'\\n\\nAssistant: ' + eos_token") || has("GPT4 Correct ") ||
      (has("USER: ") && has("ASSISTANT: ")) || (has("### Instruction:") && has("<|EOT|>")) ||
      (has("<|START_OF_TURN_TOKEN|>") && has("<|USER_TOKEN|>")))
    return ChatFamily::Unknown;
  if (has("<|start_header_id|>") && has("<|end_header_id|>")) return ChatFamily::Llama3;
  return ChatFamily::Unknown;
}

RenderedChat render_chat_spans(ChatFamily family, const std::vector<ChatMessage>& messages,
                               bool add_generation_prompt) {
  Out out;
  switch (family) {
    case ChatFamily::None:
      for (size_t i = 0; i < messages.size(); ++i) {
        out.tmpl(i ? "\n\n" : "");
        out.content(messages[i].content);
      }
      break;
    case ChatFamily::ChatML:
      for (const auto& m : messages) {
        out.tmpl("<|im_start|>");
        out.role(m.role);
        out.tmpl("\n");
        out.content(m.content);
        out.tmpl("<|im_end|>\n");
      }
      if (add_generation_prompt) out.tmpl("<|im_start|>assistant\n");
      break;
    case ChatFamily::Llama2:
    case ChatFamily::Llama2Sys:
    case ChatFamily::Llama2SysBos:
    case ChatFamily::Llama2SysStrip:
      render_llama2(out, family, messages);
      break;
    case ChatFamily::MistralV1:
    case ChatFamily::MistralV3:
    case ChatFamily::MistralV3Tekken:
      render_mistral_v1_v3(out, family, messages);
      break;
    case ChatFamily::MistralV7:
    case ChatFamily::MistralV7Tekken:
      render_mistral_v7(out, family == ChatFamily::MistralV7Tekken, messages);
      break;
    case ChatFamily::Phi3:
      for (const auto& m : messages) {
        out.tmpl("<|");
        out.role(m.role);
        out.tmpl("|>\n");
        out.content(m.content);
        out.tmpl("<|end|>\n");
      }
      if (add_generation_prompt) out.tmpl("<|assistant|>\n");
      break;
    case ChatFamily::Llama3:
      // Llama 3 trims every message (llama.cpp does; Meta's template applies | trim).
      for (const auto& m : messages) {
        out.tmpl("<|start_header_id|>");
        out.role(m.role);
        out.tmpl("<|end_header_id|>\n\n");
        out.content(trim(m.content));
        out.tmpl("<|eot_id|>");
      }
      if (add_generation_prompt) out.tmpl("<|start_header_id|>assistant<|end_header_id|>\n\n");
      break;
    case ChatFamily::Gemma:
      render_gemma(out, messages);
      if (add_generation_prompt) out.tmpl("<start_of_turn>model\n");
      break;
    case ChatFamily::Unknown:
      throw Error(
          "chat template",
          "the model's chat template is of a family ragform cannot render (supported: "
          "chatml, llama2*, mistral-v1/v3/v7, phi3, llama3, gemma); use raw completion or name a "
          "family explicitly");
  }
  return out.take();
}

std::string render_chat(ChatFamily family, const std::vector<ChatMessage>& messages,
                        bool add_generation_prompt) {
  return render_chat_spans(family, messages, add_generation_prompt).text;
}

ChatPrompt tokenize_chat(const Tokenizer& tk, ChatFamily family,
                         const std::vector<ChatMessage>& messages, bool add_generation_prompt,
                         bool add_special) {
  RenderedChat r = render_chat_spans(family, messages, add_generation_prompt);
  std::vector<int32_t> ids = tk.encode_with_special_spans(r.text, r.template_spans, add_special);
  return {std::move(r.text), std::move(ids)};
}

}  // namespace ragform::tok
