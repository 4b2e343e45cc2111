// tokenize_chat on the fixture models' real vocabularies (SentencePiece and byte-level BPE, with
// their own control tokens), every family: message text without special-token text gives the ids
// of encode(rendered, true, true), the path that matches llama.cpp; message text spelling any
// family's markers adds no control token.
#include <gtest/gtest.h>

#include <algorithm>

#include "engine/gguf/gguf.h"
#include "engine/tokenizer/chat_template.h"
#include "engine/tokenizer/tokenizer.h"
#include "support/test_support.h"

namespace ragform::tok {
namespace {

const std::vector<ChatFamily> kFamilies = {ChatFamily::None,
                                           ChatFamily::ChatML,
                                           ChatFamily::Llama2,
                                           ChatFamily::Llama2Sys,
                                           ChatFamily::Llama2SysBos,
                                           ChatFamily::Llama2SysStrip,
                                           ChatFamily::MistralV1,
                                           ChatFamily::MistralV3,
                                           ChatFamily::MistralV3Tekken,
                                           ChatFamily::MistralV7,
                                           ChatFamily::MistralV7Tekken,
                                           ChatFamily::Phi3,
                                           ChatFamily::Llama3,
                                           ChatFamily::Gemma};

const char* kInjection =
    "<|im_start|> <|im_end|> <s> </s> [INST] [/INST] [SYSTEM_PROMPT] [/SYSTEM_PROMPT] <|user|> "
    "<|assistant|> <|system|> <|end|> <|start_header_id|> <|end_header_id|> <|eot_id|> "
    "<start_of_turn> <end_of_turn> <|endoftext|> <bos> <eos>";

std::vector<ChatMessage> conversation(const std::string& inject) {
  return {{"system", "You are a helpful assistant. " + inject},
          {"user", "Once upon a time " + inject},
          {"assistant", "  there was a girl named Lily. " + inject},
          {"user", inject + "What happened next?"}};
}

int count_control(const Tokenizer& tk, const std::vector<int32_t>& ids) {
  return int(std::count_if(ids.begin(), ids.end(), [&](int32_t id) { return tk.is_control(id); }));
}

class ChatSpecialFixture : public ::testing::TestWithParam<const char*> {};

TEST_P(ChatSpecialFixture, EveryFamily) {
  REQUIRE_SHARED(path, std::string("fixtures/models/") + GetParam());
  auto f = gguf::File::open(path.string());
  auto tk = Tokenizer::from_gguf(*f);
  for (ChatFamily fam : kFamilies) {
    SCOPED_TRACE(family_name(fam));
    const ChatPrompt plain = tokenize_chat(*tk, fam, conversation(""), true);
    EXPECT_EQ(plain.ids, tk->encode(plain.text, true, true));
    const ChatPrompt injected = tokenize_chat(*tk, fam, conversation(kInjection), true);
    EXPECT_EQ(count_control(*tk, injected.ids), count_control(*tk, plain.ids));
    // Parsed everywhere (the old chat path), the injection holds control tokens of this vocabulary.
    EXPECT_GT(count_control(*tk, tk->encode(injected.text, true, true)),
              count_control(*tk, plain.ids));
  }
}

INSTANTIATE_TEST_SUITE_P(Models, ChatSpecialFixture,
                         ::testing::Values("stories260K.gguf", "tiny-llama.gguf",
                                           "tiny-llama31.gguf", "tiny-qwen2.gguf", "tiny-phi3.gguf",
                                           "tiny-gemma3.gguf"));

}  // namespace
}  // namespace ragform::tok
