// Tokenizers against llama.cpp's own vectors (../shared/fixtures/vocab/*.inp/.out, add_special
// and parse_special off) and the per-model tokenize.json references (three settings + pieces).
#include <gtest/gtest.h>

#include <filesystem>
#include <nlohmann/json.hpp>
#include <sstream>

#include "engine/gguf/gguf.h"
#include "engine/tokenizer/tokenizer.h"
#include "support/test_support.h"
#include "text/utf8.h"

namespace ragform::tok {
namespace {

namespace fs = std::filesystem;
using testing::read_file;
using testing::shared_path;

struct Case {
  std::string text;
  std::vector<int32_t> ids;
};

std::vector<Case> load_vectors(const fs::path& inp, const fs::path& out) {
  const std::string sep = "\n__ggml_vocab_test__\n";
  const std::string in = read_file(inp);
  std::vector<std::string> texts;
  size_t pos = 0;
  for (size_t hit; (hit = in.find(sep, pos)) != std::string::npos; pos = hit + sep.size())
    texts.push_back(in.substr(pos, hit - pos));
  std::istringstream lines(read_file(out));
  std::vector<Case> cases;
  std::string line;
  for (const auto& t : texts) {
    EXPECT_TRUE(std::getline(lines, line)) << "missing .out line for case " << cases.size();
    Case c{t, {}};
    std::istringstream ids(line);
    for (int32_t id; ids >> id;) c.ids.push_back(id);
    cases.push_back(std::move(c));
  }
  return cases;
}

std::string hex(const std::string& s) {
  static const char* d = "0123456789abcdef";
  std::string h;
  for (unsigned char c : s) h += d[c >> 4], h += d[c & 15];
  return h;
}

// Strings that llama.cpp's clean_spaces detokeniser rewrites, so they cannot round-trip.
bool has_clean_up_pattern(const std::string& s) {
  for (const char* p : {" ?", " !", " .", " ,", " '"})
    if (s.find(p) != std::string::npos) return true;
  return false;
}

void check_vectors(const std::string& vocab_rel, const std::string& name, bool round_trip,
                   bool skip_clean_up) {
  REQUIRE_SHARED(vocab, vocab_rel);
  REQUIRE_SHARED(inp, "fixtures/vocab/ggml-vocab-" + name + ".gguf.inp");
  REQUIRE_SHARED(out, "fixtures/vocab/ggml-vocab-" + name + ".gguf.out");
  auto file = gguf::File::open(vocab.string());
  auto tok = Tokenizer::from_gguf(*file);
  const auto cases = load_vectors(inp, out);
  ASSERT_EQ(cases.size(), 46u);
  int n_rt = 0;
  for (const auto& c : cases) {
    const auto ids = tok->encode(c.text, false, false);
    EXPECT_EQ(ids, c.ids) << name << " case '" << c.text << "' (hex " << hex(c.text) << ")";
    if (round_trip && text::is_valid_utf8(c.text) &&
        !(skip_clean_up && has_clean_up_pattern(c.text))) {
      EXPECT_EQ(tok->decode(ids), c.text) << name << " round trip of '" << c.text << "'";
      ++n_rt;
    }
  }
  if (round_trip) {
    EXPECT_GT(n_rt, 30) << "round trip checked on too few cases";
  }
}

TEST(TokenizerVectors, LlamaSpm) {
  check_vectors("fixtures/vocab/ggml-vocab-llama-spm.gguf", "llama-spm", true, false);
}
TEST(TokenizerVectors, Gpt2) {
  check_vectors("fixtures/vocab/ggml-vocab-gpt-2.gguf", "gpt-2", true, true);
}

// GPT-2's detokeniser cleans up spaces (llama.cpp's three passes): " ." -> ".", " ' " -> "'",
// " 's" -> "'s", but " 't" and " 'll" keep their space.
TEST(TokenizerVectors, Gpt2DecodeCleansSpaces) {
  REQUIRE_SHARED(vocab, "fixtures/vocab/ggml-vocab-gpt-2.gguf");
  auto file = gguf::File::open(vocab.string());
  auto tok = Tokenizer::from_gguf(*file);
  EXPECT_EQ(tok->decode(tok->encode("a . b ' c 's x 't y 'll", false, false)),
            "a. b'c's x 't y 'll");
  EXPECT_EQ(tok->decode(tok->encode("Why ? No !", false, false)), "Why? No!");
}
// The real Llama 3 tokenizer (tiny-llama31's vocabulary): llama-bpe pre-tokenizer, 128256 tokens.
// Decoding cleans up spaces as for GPT-2 (llama.cpp's default clean_spaces; " ?" -> "?"), so texts
// with those patterns do not round-trip, in llama.cpp either.
TEST(TokenizerVectors, LlamaBpe) {
  check_vectors("fixtures/vocab/ggml-vocab-llama-bpe.gguf", "llama-bpe", true, true);
}
// End of turn stops generation: <|eot_id|> (128009) and <|end_of_text|> (128001) are
// end-of-generation tokens of the Llama 3 vocabulary, <|start_header_id|> is not.
TEST(TokenizerSpecials, Llama3EndOfTurn) {
  REQUIRE_SHARED(vocab, "fixtures/vocab/ggml-vocab-llama-bpe.gguf");
  auto file = gguf::File::open(vocab.string());
  auto tok = Tokenizer::from_gguf(*file);
  EXPECT_TRUE(tok->is_eog(128009));
  EXPECT_TRUE(tok->is_eog(128001));
  EXPECT_FALSE(tok->is_eog(128006));
  EXPECT_EQ(tok->encode("<|eot_id|>", false, true), std::vector<int32_t>{128009});
}
TEST(TokenizerVectors, Qwen2) {
  check_vectors("fixtures/models/tiny-qwen2.gguf", "qwen2", true, false);
}
// WordPiece lowercases, strips accents and drops spaces: no round trip (as in llama.cpp).
TEST(TokenizerVectors, BertBge) {
  check_vectors("fixtures/vocab/ggml-vocab-bert-bge.gguf", "bert-bge", false, false);
}

TEST(TokenizerRefs, EveryModelInAllSettings) {
  REQUIRE_SHARED(ref, "fixtures/ref");
  int n_models = 0;
  for (const auto& dir : fs::directory_iterator(ref)) {
    const fs::path tj = dir.path() / "tokenize.json";
    if (!fs::exists(tj)) continue;
    const std::string model = dir.path().filename().string();
    REQUIRE_SHARED(gguf_path, "fixtures/models/" + model + ".gguf");
    auto file = gguf::File::open(gguf_path.string());
    auto tok = Tokenizer::from_gguf(*file);
    const auto refs = nlohmann::json::parse(read_file(tj));
    ASSERT_FALSE(refs.empty());
    for (const auto& r : refs) {
      const std::string text = r.at("text");
      const auto want = [&](const char* k) { return r.at(k).get<std::vector<int32_t>>(); };
      EXPECT_EQ(tok->encode(text, true, false), want("ids_add_special")) << model << ": " << text;
      const auto plain = tok->encode(text, false, false);
      EXPECT_EQ(plain, want("ids_no_special")) << model << ": " << text;
      EXPECT_EQ(tok->encode(text, true, true), want("ids_add_special_parse_special"))
          << model << ": " << text;
      const auto pieces = r.at("pieces_hex_no_special").get<std::vector<std::string>>();
      ASSERT_EQ(pieces.size(), plain.size()) << model << ": " << text;
      for (size_t i = 0; i < plain.size(); ++i)
        EXPECT_EQ(hex(tok->token_to_piece(plain[i], true)), pieces[i])
            << model << ": " << text << " token " << plain[i];
      // SPM and Qwen2 BPE (no clean-up) round-trip every valid UTF-8 string.
      EXPECT_EQ(tok->decode(plain), text) << model << " round trip";
    }
    ++n_models;
  }
  EXPECT_GE(n_models, 20);
}

}  // namespace
}  // namespace ragform::tok

namespace ragform::tok {
namespace {

// `ragform tokenize` has llama-tokenize's defaults: add special tokens and parse special text.
TEST(TokenizeCli, JsonMatchesReferenceDefaults) {
  REQUIRE_SHARED(model, "fixtures/models/tiny-llama.gguf");
  REQUIRE_SHARED(refs_path, "fixtures/ref/tiny-llama/tokenize.json");
  const auto refs = nlohmann::json::parse(read_file(refs_path));
  const auto& r = refs.at(12);  // the string with <|im_start|>, <s>, [INST] and </s>
  const std::string text = r.at("text");
  const auto dir = testing::temp_dir("tokenize-cli");
  testing::write_file(dir / "in.txt", text);
  auto res = testing::run_ragform("tokenize -m " + model.string() + " --file " +
                                  (dir / "in.txt").string() + " --json");
  ASSERT_EQ(res.exit_code, 0) << res.err;
  const auto j = nlohmann::json::parse(res.out);
  EXPECT_EQ(j.at("ids").get<std::vector<int32_t>>(),
            r.at("ids_add_special_parse_special").get<std::vector<int32_t>>());
  EXPECT_EQ(j.at("pieces").size(), j.at("ids").size());
  res = testing::run_ragform("tokenize -m " + model.string() + " --file " +
                             (dir / "in.txt").string() + " --json --no-bos --no-special");
  ASSERT_EQ(res.exit_code, 0) << res.err;
  EXPECT_EQ(nlohmann::json::parse(res.out).at("ids").get<std::vector<int32_t>>(),
            r.at("ids_no_special").get<std::vector<int32_t>>());
  // Human output: one "id -> 'piece'" line per token.
  res = testing::run_ragform("tokenize -m " + model.string() + " --text 'Hello world'");
  ASSERT_EQ(res.exit_code, 0) << res.err;
  EXPECT_EQ(res.out, "     1 -> '<s>'\n 15043 -> ' Hello'\n  3186 -> ' world'\n");
  res = testing::run_ragform("tokenize -m " + model.string());
  EXPECT_EQ(res.exit_code, 2);
}

}  // namespace
}  // namespace ragform::tok

#include "engine/tokenizer/pretokenize.h"

namespace ragform::tok {
namespace {

// The GPT-2 and Llama-3 pre-tokenisers run as hand-written scanners (as in llama.cpp). Llama-3's
// vectors have no vocabulary here, so check both scanners against the same regex run through the
// PCRE2 path (wrapping it in a group defeats the scanner selection) on every vector string.
TEST(PreTokenizerScanners, AgreeWithTheirRegexOnVectorStrings) {
  REQUIRE_SHARED(inp, "fixtures/vocab/ggml-vocab-llama-bpe.gguf.inp");
  REQUIRE_SHARED(out, "fixtures/vocab/ggml-vocab-llama-bpe.gguf.out");
  REQUIRE_SHARED(strings, "fixtures/ref/inputs/tokenize_strings.json");
  std::vector<std::string> texts;
  for (const auto& c : load_vectors(inp, out)) texts.push_back(c.text);
  for (const auto& s : nlohmann::json::parse(read_file(strings))) texts.push_back(s);
  ASSERT_GT(texts.size(), 50u);
  for (const char* name : {"llama-bpe", "gpt-2"}) {
    const std::string re = find_pre_tokenizer(name)->regexes.at(0);
    PreTokenizer scanner({re}), regex({"(?:" + re + ")"});
    for (const auto& t : texts) {
      std::vector<std::string> a, b;
      scanner.split(t, &a);
      regex.split(t, &b);
      EXPECT_EQ(a, b) << name << ": '" << t << "'";
    }
  }
}

}  // namespace
}  // namespace ragform::tok

namespace ragform::tok {
namespace {

// Special-token metadata of the Qwen2.5 vocabulary as llama.cpp derives it: no BOS added, EOG =
// <|endoftext|>, <|im_end|>, the FIM pad/repo/file-sep tokens and "</s>" (a normal token in the
// file that llama.cpp's EOG heuristic turns into a control token).
TEST(TokenizerSpecials, Qwen2EndOfGeneration) {
  REQUIRE_SHARED(model, "fixtures/models/tiny-qwen2.gguf");
  auto file = gguf::File::open(model.string());
  auto tok = Tokenizer::from_gguf(*file);
  EXPECT_EQ(tok->kind(), "bpe");
  EXPECT_EQ(tok->pre(), "qwen2");
  EXPECT_FALSE(tok->add_bos());
  EXPECT_EQ(tok->bos(), 151643);
  EXPECT_EQ(tok->eos(), 151643);
  for (int32_t id : {151643, 151645, 151662, 151663, 151664, 128247}) {
    EXPECT_TRUE(tok->is_eog(id)) << id;
    EXPECT_TRUE(tok->is_control(id)) << id;
  }
  EXPECT_FALSE(tok->is_eog(151644));  // <|im_start|>
  EXPECT_EQ(tok->find_token("</s>"), 128247);
  EXPECT_EQ(tok->token_to_piece(151645, false), "");
  EXPECT_EQ(tok->token_to_piece(151645, true), "<|im_end|>");
  EXPECT_EQ(tok->decode({9707, 151645, 1879}, true), "Hello<|im_end|> world");
  EXPECT_EQ(tok->decode({9707, 151645, 1879}, false), "Hello world");
}

TEST(TokenizerSpecials, LlamaSpmAddsBos) {
  REQUIRE_SHARED(model, "fixtures/models/tiny-llama.gguf");
  auto file = gguf::File::open(model.string());
  auto tok = Tokenizer::from_gguf(*file);
  EXPECT_EQ(tok->kind(), "spm");
  EXPECT_TRUE(tok->add_bos());
  EXPECT_FALSE(tok->add_eos());
  EXPECT_TRUE(tok->is_eog(2));
  EXPECT_TRUE(tok->is_control(1));
  EXPECT_EQ(tok->encode("", true, false), std::vector<int32_t>{1});
  EXPECT_TRUE(tok->encode("", false, false).empty());
}

}  // namespace
}  // namespace ragform::tok
