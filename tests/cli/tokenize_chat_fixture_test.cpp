// `ragform tokenize --chat`: the text becomes the user turn of the model's chat template.
#include <gtest/gtest.h>
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

}  // namespace
