// `ragform tokenize --chat`: the text becomes the user turn of the model's chat template, and stays
// text: special-token text in it is not parsed (nor in `generate --chat`'s prompt), only the
// template's own markers are.
#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <nlohmann/json.hpp>

#include "engine/gguf/gguf.h"
#include "support/test_support.h"

namespace {
using nlohmann::json;
using ragform::testing::run_ragform;

TEST(TokenizeChat, RendersTheTemplateBeforeTokenising) {
  REQUIRE_SHARED(src, "fixtures/models/stories260K.gguf");
  auto dir = ragform::testing::temp_dir("tokchat");
  auto f = ragform::gguf::File::open(src.string());
  auto w = ragform::gguf::Writer::copy_of(*f);
  w.set("tokenizer.chat_template",
        ragform::gguf::Value::str(
            "{% for message in messages %}{{'<|im_start|>' + message['role'] + '\\n' + "
            "message['content'] + '<|im_end|>' + '\\n'}}{% endfor %}"));
  const std::string model = (dir / "chatml.gguf").string();
  w.write(model);
  auto r = run_ragform("tokenize -m '" + model + "' --text 'Hi' --chat --json");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const std::string rendered = "<|im_start|>user\nHi<|im_end|>\n<|im_start|>assistant\n";
  EXPECT_NE(r.err.find("chat template: chatml"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find(rendered), std::string::npos) << r.err;
  ragform::testing::write_file(dir / "rendered.txt", rendered);
  auto plain = run_ragform("tokenize -m '" + model + "' --file '" +
                           (dir / "rendered.txt").string() + "' --json");
  ASSERT_EQ(plain.exit_code, 0) << plain.err;
  EXPECT_EQ(json::parse(r.out)["ids"], json::parse(plain.out)["ids"]);
  // Without a template, --chat is a clear error.
  auto none = run_ragform("tokenize -m '" + src.string() + "' --text Hi --chat");
  EXPECT_EQ(none.exit_code, 1);
  EXPECT_NE(none.err.find("has no chat template"), std::string::npos);
}

// tiny-qwen2 with a ChatML template (the fixture has none), written to `dir`.
std::string qwen_chatml(const std::filesystem::path& src, const std::filesystem::path& dir) {
  auto f = ragform::gguf::File::open(src.string());
  auto w = ragform::gguf::Writer::copy_of(*f);
  w.set("tokenizer.chat_template", ragform::gguf::Value::str("{{'<|im_start|>' + role}}"));
  const std::string model = (dir / "qwen-chatml.gguf").string();
  w.write(model);
  return model;
}

TEST(TokenizeChat, SpecialTokenTextInTheMessageStaysText) {
  REQUIRE_SHARED(src, "fixtures/models/tiny-qwen2.gguf");
  const std::string model = qwen_chatml(src, ragform::testing::temp_dir("tokchat_inject"));
  auto ids_of = [&](const std::string& text, const std::string& flags) {
    auto r = run_ragform("tokenize -m '" + model + "' --text '" + text + "' --json " + flags);
    EXPECT_EQ(r.exit_code, 0) << r.err;
    return json::parse(r.out)["ids"].get<std::vector<int>>();
  };
  const std::vector<int> im_end = ids_of("<|im_end|>", "--no-bos");
  ASSERT_EQ(im_end.size(), 1u);  // the control token, when parsed outside chat mode
  const auto hello = ids_of("hello", "--chat");
  const auto injected = ids_of("<|im_end|>", "--chat");
  const auto partial = ids_of("<|im_end|", "--chat");
  // The template's own <|im_end|> is the only one: the message's is text (more tokens than the
  // one-token "hello", at least as many as its prefix "<|im_end|").
  EXPECT_EQ(std::count(injected.begin(), injected.end(), im_end[0]), 1);
  EXPECT_EQ(std::count(hello.begin(), hello.end(), im_end[0]), 1);
  EXPECT_GT(injected.size(), hello.size());
  EXPECT_GE(injected.size(), partial.size());
  // --no-special keeps its meaning: no special-token text is parsed, the template's included.
  const auto raw = ids_of("hello", "--chat --no-special");
  EXPECT_EQ(std::count(raw.begin(), raw.end(), im_end[0]), 0);
}

TEST(TokenizeChat, GenerateChatPromptKeepsMessageTextAsText) {
  REQUIRE_SHARED(src, "fixtures/models/tiny-qwen2.gguf");
  const std::string model = qwen_chatml(src, ragform::testing::temp_dir("genchat_inject"));
  auto prompt_tokens = [&](const std::string& text) {
    auto r = run_ragform("generate -m '" + model + "' --chat -p '" + text + "' -n 1 --json");
    EXPECT_EQ(r.exit_code, 0) << r.err;
    return json::parse(r.out)["prompt_tokens"].get<int>();
  };
  const int hello = prompt_tokens("hello"), injected = prompt_tokens("<|im_end|>");
  EXPECT_GT(injected, hello);
  EXPECT_GE(injected, prompt_tokens("<|im_end|"));
}

// Issue 40 (pass 21's leftover): --chat-template names the chat format of --chat for a file without
// a template (the trained Gemma GGUF has none) in every reader command and tokenize, as serve's
// did for /v1/chat/completions only. The rendered prompt is the named family's; a name ragform
// does not render is a usage error listing those it does; --chat-template alone is one too.
TEST(TokenizeChat, ChatTemplateNamesTheFormatOfChat) {
  REQUIRE_SHARED(src, "fixtures/models/tiny-qwen2.gguf");
  const auto dir = ragform::testing::temp_dir("chat_template_flag");
  const std::string with_file_template = qwen_chatml(src, dir);  // the file's template: chatml
  const std::string m = " -m '" + src.string() + "'";
  auto named = run_ragform("tokenize" + m + " --text Hi --chat --chat-template chatml --json");
  ASSERT_EQ(named.exit_code, 0) << named.err;
  EXPECT_NE(named.err.find("chat template: chatml"), std::string::npos) << named.err;
  auto from_file = run_ragform("tokenize -m '" + with_file_template + "' --text Hi --chat --json");
  ASSERT_EQ(from_file.exit_code, 0) << from_file.err;
  EXPECT_EQ(json::parse(named.out)["ids"], json::parse(from_file.out)["ids"]);
  // generate and score read the same flag (the reader's setting).
  auto gen = run_ragform("generate" + m + " --chat --chat-template chatml -p Hi -n 1 --json");
  ASSERT_EQ(gen.exit_code, 0) << gen.err;
  EXPECT_EQ(json::parse(gen.out)["prompt_tokens"].get<size_t>(),
            json::parse(named.out)["ids"].size());
  auto gen_file = run_ragform("generate -m '" + with_file_template + "' --chat -p Hi -n 1 --json");
  ASSERT_EQ(gen_file.exit_code, 0) << gen_file.err;
  EXPECT_EQ(json::parse(gen.out)["prompt_tokens"], json::parse(gen_file.out)["prompt_tokens"]);
  auto sc = run_ragform("score" + m + " --chat --chat-template llama3 -p Hi -c there --json");
  EXPECT_EQ(sc.exit_code, 0) << sc.err;
  // Refusals: an unknown name (listing the known ones), "none", the flag without --chat.
  for (const std::string& bad : {std::string("zephyr"), std::string("none")}) {
    for (const std::string& verb : {std::string("tokenize") + m + " --text Hi",
                                    std::string("generate") + m + " -p Hi -n 1"}) {
      auto r = run_ragform(verb + " --chat --chat-template " + bad);
      EXPECT_EQ(r.exit_code, 2) << verb << " " << r.err;
      EXPECT_NE(r.err.find("--chat-template: unknown chat format '" + bad +
                           "' (expected chatml, llama2,"),
                std::string::npos)
          << r.err;
    }
  }
  // --system alone too (pass 24: the raw prompt ran without it, in generate and serve).
  for (const std::string& verb :
       {std::string("generate") + m + " -p Hi -n 1", std::string("serve") + m + " --port 0"}) {
    auto sys = run_ragform(verb + " --system 'Be brief.'");
    EXPECT_EQ(sys.exit_code, 2) << verb << " " << sys.err;
    EXPECT_NE(sys.err.find("--system: is the system turn of --chat prompts; give --chat too"),
              std::string::npos)
        << sys.err;
  }
  auto alone = run_ragform("generate" + m + " --chat-template chatml -p Hi -n 1");
  EXPECT_EQ(alone.exit_code, 2) << alone.err;
  EXPECT_NE(alone.err.find("--chat-template: names the format of --chat; give --chat too"),
            std::string::npos)
      << alone.err;
}

}  // namespace
