// Chat-template detection and rendering. Expected strings are written by hand from each family's
// published format (Meta's Llama 2 / Llama 3 model cards, mistralai's cookbook
// "chat_templates.md", Microsoft's Phi-3 card, OpenAI's ChatML) for one conversation that
// exercises a system prompt, two finished assistant turns (one with padding spaces, which some
// formats trim) and a final user turn.
#include "engine/tokenizer/chat_template.h"

#include <gtest/gtest.h>

#include "base/error.h"

namespace ragform::tok {
namespace {

const std::vector<ChatMessage> kConversation = {
    {"system", "You are a helpful assistant"},
    {"user", "Hello"},
    {"assistant", "Hi there"},
    {"user", "Who are you"},
    {"assistant", "   I am an assistant   "},
    {"user", "Another question"},
};

TEST(ChatDetect, EmptyTemplateIsRawCompletion) {
  EXPECT_EQ(detect_chat_family(""), ChatFamily::None);
}

TEST(ChatDetect, ChatMLByImStart) {
  EXPECT_EQ(detect_chat_family("{% for message in messages %}{{'<|im_start|>' + message['role'] + "
                               "'\\n' + message['content'] + '<|im_end|>' + '\\n'}}{% endfor %}"),
            ChatFamily::ChatML);
  // Phi-4 and SmolVLM also contain <|im_start|> but are other formats.
  EXPECT_EQ(detect_chat_family("<|im_start|>{{ role }}<|im_sep|>"), ChatFamily::Unknown);
  EXPECT_EQ(detect_chat_family("<|im_start|>User:<end_of_utterance>"), ChatFamily::Unknown);
}

TEST(ChatDetect, Llama2Variants) {
  EXPECT_EQ(detect_chat_family("{{ '[INST] ' + message['content'] + ' [/INST]' }}"),
            ChatFamily::Llama2);
  EXPECT_EQ(detect_chat_family("{{ '[INST] <<SYS>>\\n' + system + '\\n<</SYS>>' }}"),
            ChatFamily::Llama2Sys);
  EXPECT_EQ(detect_chat_family("{{- bos_token + '[INST] ' + content + ' [/INST]' -}} <<SYS>>"),
            ChatFamily::Llama2SysBos);
  EXPECT_EQ(detect_chat_family("{{ '[INST] ' + content.strip() + ' [/INST]' }} <<SYS>>"),
            ChatFamily::Llama2SysStrip);
}

TEST(ChatDetect, MistralVariants) {
  EXPECT_EQ(detect_chat_family("{{- ' [INST] ' + system_message + '\\n\\n' + content }}"),
            ChatFamily::MistralV1);
  EXPECT_EQ(detect_chat_family("{{- \"[AVAILABLE_TOOLS] [\" }}{{- \"[INST] \" + content }}"),
            ChatFamily::MistralV3);
  EXPECT_EQ(detect_chat_family("{{- \"[AVAILABLE_TOOLS][\" }}{{- \"[INST]\" + content }}"),
            ChatFamily::MistralV3Tekken);
  EXPECT_EQ(detect_chat_family("[SYSTEM_PROMPT] {{ s }}[/SYSTEM_PROMPT][INST] {{ u }}[/INST]"),
            ChatFamily::MistralV7);
  // A template that starts with "mistral" takes the [INST] branch even without the marker.
  EXPECT_EQ(detect_chat_family("mistral-like {{ content }}"), ChatFamily::Llama2);
}

TEST(ChatDetect, Phi3AndLlama3) {
  EXPECT_EQ(detect_chat_family("{{'<|' + message['role'] + '|>' + '\\n' + message['content'] + "
                               "'<|end|>\\n' }}{{ '<|assistant|>\\n' }}"),
            ChatFamily::Phi3);
  EXPECT_EQ(detect_chat_family("{{ '<|start_header_id|>' + message['role'] + "
                               "'<|end_header_id|>\\n\\n' + message['content'] | trim }}"),
            ChatFamily::Llama3);
}

TEST(ChatDetect, EarlierLlamaCppRulesWin) {
  // Gemma's marker is checked before Llama 3's headers in llama.cpp: such a template is Gemma.
  EXPECT_EQ(detect_chat_family("<start_of_turn><|start_header_id|><|end_header_id|>"),
            ChatFamily::Gemma);
  // Zephyr's markers come before Gemma's in llama.cpp.
  EXPECT_EQ(detect_chat_family("<|user|><|endoftext|><start_of_turn>"), ChatFamily::Unknown);
  // ChatML beats [INST] (checked first).
  EXPECT_EQ(detect_chat_family("<|im_start|> [INST]"), ChatFamily::ChatML);
  // Zephyr (<|user|> with <|endoftext|>) is a family ragform does not render.
  EXPECT_EQ(detect_chat_family("<|user|>\n{{ c }}<|endoftext|>"), ChatFamily::Unknown);
  EXPECT_EQ(detect_chat_family("Just some text with no markers"), ChatFamily::Unknown);
}

TEST(ChatDetect, TemplateMayBeAFamilyName) {
  EXPECT_EQ(detect_chat_family("chatml"), ChatFamily::ChatML);
  EXPECT_EQ(detect_chat_family("llama3"), ChatFamily::Llama3);
  EXPECT_EQ(detect_chat_family("mistral-v7-tekken"), ChatFamily::MistralV7Tekken);
  EXPECT_EQ(detect_chat_family("gemma"), ChatFamily::Gemma);
  EXPECT_EQ(detect_chat_family("zephyr"), ChatFamily::Unknown);
}

TEST(ChatNames, RoundTrip) {
  for (ChatFamily f : {ChatFamily::None, ChatFamily::ChatML, ChatFamily::Llama2,
                       ChatFamily::Llama2Sys, ChatFamily::Llama2SysBos, ChatFamily::Llama2SysStrip,
                       ChatFamily::MistralV1, ChatFamily::MistralV3, ChatFamily::MistralV3Tekken,
                       ChatFamily::MistralV7, ChatFamily::MistralV7Tekken, ChatFamily::Phi3,
                       ChatFamily::Llama3, ChatFamily::Gemma, ChatFamily::Unknown}) {
    auto back = family_from_name(family_name(f));
    ASSERT_TRUE(back.has_value()) << family_name(f);
    EXPECT_EQ(*back, f);
  }
  EXPECT_EQ(family_name(ChatFamily::Llama2SysBos), "llama2-sys-bos");
  EXPECT_FALSE(family_from_name("ChatML").has_value());
}

TEST(ChatRender, ChatML) {
  EXPECT_EQ(render_chat(ChatFamily::ChatML, kConversation, true),
            "<|im_start|>system\nYou are a helpful assistant<|im_end|>\n"
            "<|im_start|>user\nHello<|im_end|>\n"
            "<|im_start|>assistant\nHi there<|im_end|>\n"
            "<|im_start|>user\nWho are you<|im_end|>\n"
            "<|im_start|>assistant\n   I am an assistant   <|im_end|>\n"
            "<|im_start|>user\nAnother question<|im_end|>\n"
            "<|im_start|>assistant\n");
  EXPECT_EQ(render_chat(ChatFamily::ChatML, {{"user", "Hi"}}, false),
            "<|im_start|>user\nHi<|im_end|>\n");
}

TEST(ChatRender, Llama2WithoutSystemBlock) {
  EXPECT_EQ(render_chat(ChatFamily::Llama2, kConversation, true),
            "[INST] You are a helpful assistant\nHello [/INST]Hi there</s>"
            "[INST] Who are you [/INST]   I am an assistant   </s>"
            "[INST] Another question [/INST]");
}

TEST(ChatRender, Llama2SysVariants) {
  const std::string sys = "[INST] <<SYS>>\nYou are a helpful assistant\n<</SYS>>\n\nHello [/INST]";
  EXPECT_EQ(render_chat(ChatFamily::Llama2Sys, kConversation, true),
            sys +
                "Hi there</s>[INST] Who are you [/INST]   I am an assistant   </s>"
                "[INST] Another question [/INST]");
  EXPECT_EQ(render_chat(ChatFamily::Llama2SysBos, kConversation, true),
            sys +
                "Hi there</s><s>[INST] Who are you [/INST]   I am an assistant   </s>"
                "<s>[INST] Another question [/INST]");
  EXPECT_EQ(render_chat(ChatFamily::Llama2SysStrip, kConversation, true),
            sys +
                "Hi there</s>[INST] Who are you [/INST]I am an assistant</s>"
                "[INST] Another question [/INST]");
}

TEST(ChatRender, MistralV1V3) {
  EXPECT_EQ(render_chat(ChatFamily::MistralV1, kConversation, true),
            " [INST] You are a helpful assistant\n\nHello [/INST] Hi there</s>"
            " [INST] Who are you [/INST]    I am an assistant   </s>"
            " [INST] Another question [/INST]");
  EXPECT_EQ(render_chat(ChatFamily::MistralV3, kConversation, true),
            "[INST] You are a helpful assistant\n\nHello[/INST] Hi there</s>"
            "[INST] Who are you[/INST] I am an assistant</s>"
            "[INST] Another question[/INST]");
  EXPECT_EQ(render_chat(ChatFamily::MistralV3Tekken, kConversation, true),
            "[INST]You are a helpful assistant\n\nHello[/INST]Hi there</s>"
            "[INST]Who are you[/INST]   I am an assistant   </s>"
            "[INST]Another question[/INST]");
}

TEST(ChatRender, MistralV7) {
  EXPECT_EQ(render_chat(ChatFamily::MistralV7, kConversation, true),
            "[SYSTEM_PROMPT] You are a helpful assistant[/SYSTEM_PROMPT]"
            "[INST] Hello[/INST] Hi there</s>"
            "[INST] Who are you[/INST]    I am an assistant   </s>"
            "[INST] Another question[/INST]");
  EXPECT_EQ(render_chat(ChatFamily::MistralV7Tekken, kConversation, true),
            "[SYSTEM_PROMPT]You are a helpful assistant[/SYSTEM_PROMPT]"
            "[INST]Hello[/INST]Hi there</s>"
            "[INST]Who are you[/INST]   I am an assistant   </s>"
            "[INST]Another question[/INST]");
}

TEST(ChatRender, Phi3) {
  EXPECT_EQ(render_chat(ChatFamily::Phi3, kConversation, true),
            "<|system|>\nYou are a helpful assistant<|end|>\n"
            "<|user|>\nHello<|end|>\n"
            "<|assistant|>\nHi there<|end|>\n"
            "<|user|>\nWho are you<|end|>\n"
            "<|assistant|>\n   I am an assistant   <|end|>\n"
            "<|user|>\nAnother question<|end|>\n"
            "<|assistant|>\n");
}

TEST(ChatRender, Llama3TrimsContents) {
  EXPECT_EQ(render_chat(ChatFamily::Llama3, kConversation, true),
            "<|start_header_id|>system<|end_header_id|>\n\nYou are a helpful assistant<|eot_id|>"
            "<|start_header_id|>user<|end_header_id|>\n\nHello<|eot_id|>"
            "<|start_header_id|>assistant<|end_header_id|>\n\nHi there<|eot_id|>"
            "<|start_header_id|>user<|end_header_id|>\n\nWho are you<|eot_id|>"
            "<|start_header_id|>assistant<|end_header_id|>\n\nI am an assistant<|eot_id|>"
            "<|start_header_id|>user<|end_header_id|>\n\nAnother question<|eot_id|>"
            "<|start_header_id|>assistant<|end_header_id|>\n\n");
  // Only ASCII whitespace is trimmed: a UTF-8 no-break space (C2 A0) stays.
  EXPECT_EQ(render_chat(ChatFamily::Llama3, {{"user", "\t x\xC2\xA0\n"}}, false),
            "<|start_header_id|>user<|end_header_id|>\n\nx\xC2\xA0<|eot_id|>");
}

TEST(ChatDetect, GemmaByStartOfTurn) {
  // The start of Gemma 3's own template (google/gemma-3-1b-it tokenizer_config.json).
  EXPECT_EQ(detect_chat_family("{{ bos_token }}{%- if messages[0]['role'] == 'system' -%}...{{ "
                               "'<start_of_turn>' + role + '\n' + (first_user_prefix if "
                               "loop.first else \"\") }}"),
            ChatFamily::Gemma);
}

TEST(ChatRender, GemmaFoldsSystemIntoTheUserTurn) {
  // Hand-written from llama.cpp's Gemma rule: system text (trimmed) opens the next user turn,
  // "assistant" is written "model", contents are trimmed.
  EXPECT_EQ(
      render_chat(
          ChatFamily::Gemma,
          {{"system", " Be brief. "}, {"user", "Hi\n"}, {"assistant", " Hello! "}, {"user", "Bye"}},
          true),
      "<start_of_turn>user\nBe brief.\n\nHi<end_of_turn>\n"
      "<start_of_turn>model\nHello!<end_of_turn>\n"
      "<start_of_turn>user\nBye<end_of_turn>\n"
      "<start_of_turn>model\n");
  EXPECT_EQ(render_chat(ChatFamily::Gemma, {{"user", "x"}}, false),
            "<start_of_turn>user\nx<end_of_turn>\n");
}

TEST(ChatRender, RawCompletionJoinsContents) {
  EXPECT_EQ(render_chat(ChatFamily::None, {{"user", "Once upon a time"}}, true),
            "Once upon a time");
  EXPECT_EQ(render_chat(ChatFamily::None, {{"system", "S"}, {"user", "U"}}, true), "S\n\nU");
  EXPECT_EQ(render_chat(ChatFamily::None, {}, true), "");
}

TEST(ChatRender, UnknownFamilyIsAnError) {
  EXPECT_THROW(render_chat(ChatFamily::Unknown, kConversation, true), Error);
}

}  // namespace
}  // namespace ragform::tok
