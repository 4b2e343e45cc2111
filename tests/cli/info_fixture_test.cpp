// `ragform info` end to end on the fixture models, a vocabulary-only file, a model with a chat
// template (written to a temp file), and bad input.
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "engine/gguf/gguf.h"
#include "support/test_support.h"

namespace {

using ragform::testing::run_ragform;

TEST(InfoCli, TextCardOfTinyQwen2) {
  REQUIRE_SHARED(m, "fixtures/models/tiny-qwen2.gguf");
  auto r = run_ragform("info '" + m.string() + "'");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  for (const char* want :
       {"architecture  qwen2", "n_embd 32, n_layer 2, n_head 4, n_head_kv 2, head_dim 8, n_ff 96",
        "rope          neox, base 1e+06, n_rot 8", "eps 1e-06", "tied (token_embd reused)",
        "gpt2 (BPE), pre qwen2, 151936 tokens", "bos 151643 \"<|endoftext|>\"",
        "chat template none (raw completion)", "f16       1 tensors"})
    EXPECT_NE(r.out.find(want), std::string::npos) << want << "\n" << r.out;
}

TEST(InfoCli, JsonOfEveryFixtureModel) {
  REQUIRE_SHARED(types_path, "fixtures/models/tensor_types.json");
  auto j = nlohmann::json::parse(ragform::testing::read_file(types_path));
  for (auto& [file, info] : j.items()) {
    SCOPED_TRACE(file);
    auto r = run_ragform("info --json '" +
                         ragform::testing::shared_path("fixtures/models/" + file).string() + "'");
    ASSERT_EQ(r.exit_code, 0) << r.err;
    auto card = nlohmann::json::parse(r.out);
    EXPECT_EQ(card["architecture"], info["general.architecture"]);
    EXPECT_EQ(card["n_tensors"], info["n_tensors"]);
    EXPECT_EQ(card["vocab_only"], false);
    bool qwen = card["architecture"] == "qwen2";
    EXPECT_EQ(card["rope"]["type"], qwen ? "neox" : "norm");
    EXPECT_EQ(card["rope"]["freq_base"].get<double>(), qwen ? 1e6 : 1e4);
    EXPECT_EQ(card["norm"]["eps"].get<double>(), qwen ? 1e-6 : 1e-5);
    EXPECT_EQ(card["tied_output"], qwen);
    EXPECT_EQ(card["n_head_kv"].get<int>() * 2, card["n_head"].get<int>());  // all 2:1 GQA here
    int64_t counted = 0;
    for (auto& t : card["tensor_types"]) counted += t["count"].get<int64_t>();
    EXPECT_EQ(counted, info["n_tensors"].get<int64_t>());
  }
}

TEST(InfoCli, VocabOnlyFileSaysSo) {
  REQUIRE_SHARED(v, "fixtures/vocab/ggml-vocab-llama-spm.gguf");
  auto r = run_ragform("info '" + v.string() + "'");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("tensors       none: vocabulary only"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("llama (SPM), pre default, 32000 tokens, add_bos yes, add_eos no"),
            std::string::npos)
      << r.out;
  auto rj = run_ragform("info --json '" + v.string() + "'");
  ASSERT_EQ(rj.exit_code, 0) << rj.err;
  auto card = nlohmann::json::parse(rj.out);
  EXPECT_EQ(card["vocab_only"], true);
  EXPECT_EQ(card["n_params"], 0);
  EXPECT_TRUE(card["tied_output"].is_null());
  EXPECT_EQ(card["tokenizer"]["special"]["bos"]["text"], "<s>");
}

TEST(InfoCli, DetectsTheChatTemplateFamily) {
  REQUIRE_SHARED(m, "fixtures/models/stories260K.gguf");
  auto f = ragform::gguf::File::open(m.string());
  auto w = ragform::gguf::Writer::copy_of(*f);
  w.set("tokenizer.chat_template",
        ragform::gguf::Value::str("{% for message in messages %}{{ '<|start_header_id|>' + "
                                  "message['role'] + '<|end_header_id|>\\n\\n' }}{% endfor %}"));
  auto path = ragform::testing::temp_dir("info-chat") / "chat.gguf";
  w.write(path.string());
  auto r = run_ragform("info '" + path.string() + "'");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("chat template llama3"), std::string::npos) << r.out;
  auto rj = run_ragform("info --json --metadata '" + path.string() + "'");
  ASSERT_EQ(rj.exit_code, 0) << rj.err;
  auto card = nlohmann::json::parse(rj.out);
  EXPECT_EQ(card["chat_template"]["family"], "llama3");
  EXPECT_EQ(card["chat_template"]["present"], true);
  EXPECT_EQ(card["metadata"]["llama.block_count"], "5");
  EXPECT_EQ(card["tensors"].size(), 48u);
}

TEST(InfoCli, BadInputIsAOneLineError) {
  auto r = run_ragform("info /nonexistent/model.gguf");
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_NE(r.err.find("/nonexistent/model.gguf"), std::string::npos) << r.err;
  auto dir = ragform::testing::temp_dir("info-bad");
  static const char kJunk[] = "GGUF\x07\x00\x00\x00 not really";
  ragform::testing::write_file(dir / "junk.gguf", std::string(kJunk, sizeof kJunk - 1));
  auto r2 = run_ragform("info '" + (dir / "junk.gguf").string() + "'");
  EXPECT_EQ(r2.exit_code, 1);
  EXPECT_NE(r2.err.find("unsupported GGUF version 7"), std::string::npos) << r2.err;
  auto r3 = run_ragform("info");
  EXPECT_EQ(r3.exit_code, 2) << r3.err;
}

}  // namespace
