// Gemma 3's 262k-token SentencePiece vocabulary against llama.cpp 34af94c's own tokenisation of
// the same strings (tests/data/real/gemma/tokenize.json, made outside this repository with the
// public llama.h API; strings from make_strings.py): code, CJK, emoji, whitespace runs, the chat
// turn markers and other special tokens in running text, with and without special parsing.
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "engine/gguf/gguf.h"
#include "engine/tokenizer/tokenizer.h"
#include "support/real_models.h"
#include "support/test_support.h"

namespace ragform::tok {
namespace {

std::string hex(const std::string& s) {
  static const char* d = "0123456789abcdef";
  std::string h;
  for (unsigned char c : s) h += {d[c >> 4], d[c & 15]};
  return h;
}

TEST(GemmaTokenizerReal, EveryStringTokenisesAsLlamaCpp) {
  REQUIRE_REAL_MODEL(path, "RAGFORM_GEMMA");
  const auto cases =
      nlohmann::json::parse(testing::read_file(testing::real_data_dir("gemma") / "tokenize.json"));
  ASSERT_GE(cases.size(), 250u);
  auto file = gguf::File::open(path);
  auto tk = Tokenizer::from_gguf(*file);
  int n = 0, bad = 0;
  for (const auto& c : cases) {
    const std::string text = c["text"];
    struct Mode {
      const char* key;
      bool add, parse;
    };
    for (Mode m : {Mode{"ids_add_special", true, false}, Mode{"ids_no_special", false, false},
                   Mode{"ids_parse_special", false, true}}) {
      const auto want = c[m.key].get<std::vector<int32_t>>();
      const auto got = tk->encode(text, m.add, m.parse);
      ++n;
      if (got != want) {
        ++bad;
        ADD_FAILURE() << m.key << " of '" << text << "' (hex " << hex(text) << ")";
      }
    }
  }
  std::printf("[measured] gemma tokenizer: %d of %d (string, mode) pairs equal llama.cpp's\n",
              n - bad, n);
}

}  // namespace
}  // namespace ragform::tok
