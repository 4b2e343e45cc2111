// Byte-level BPE pre-tokenisation: splitting text into words before merges, selected by
// `tokenizer.ggml.pre`, exactly as llama.cpp's `unicode_regex_split` does it:
//  - a pre-tokeniser is a list of regexes applied in turn; each regex splits every piece left by
//    the previous one into its matches and the unmatched gaps between them (both kept);
//  - the GPT-2 and Llama-3 regexes run as hand-written scanners over code point categories
//    (llama.cpp's custom splitters, which differ from the regex only in corner cases);
//  - a regex using \p{L}, \p{N}, \p{P}, \p{S} or \p{M} runs (PCRE2, JIT) on a "collapsed" byte
//    string where each non-ASCII code point becomes one byte naming its category, and the
//    classes are rewritten to match those bytes — the same trick llama.cpp plays on std::regex;
//  - any other regex runs on the code points (PCRE2 UTF mode) with non-ASCII whitespace folded
//    to U+000B, as llama.cpp's std::wregex path does.
// Invalid UTF-8 never throws: it decodes leniently (unicode_props.h).
// Verification: gpt-2 (scanner) and qwen2 (collapsed-regex path) match llama.cpp's tokenizer
// test vectors (the vocab fixtures); the llama-bpe (Llama 3) scanner agrees with its regex on those
// vector strings but has no vocabulary to check ids against. default, deepseek-llm, deepseek-coder,
// falcon, mpt, starcoder, refact and the other names are implemented from llama.cpp's regex
// lists and checked only on hand-worked splits (tests/engine/tokenizer/tokenizer_test.cpp):
// they are unverified against llama.cpp output. Category tables are Unicode 14 (Python 3.11);
// llama.cpp's may be newer, which only matters for code points assigned after 14.0.
#pragma once
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace ragform::tok {

// What a `tokenizer.ggml.pre` name selects (llama.cpp llama-vocab.cpp, load()).
struct PreTokenizerSpec {
  std::string name;                  // canonical name
  std::vector<std::string> regexes;  // applied in order
  bool clean_spaces = true;          // detokeniser's " ." / " 's" clean-up
  bool ignore_merges = false;        // a word that is itself a token is emitted whole
  std::optional<bool> add_bos;       // default add_bos before metadata overrides it
  bool no_bos = false;               // the BOS id is cleared (chatglm)
};

// Looks up a pre-tokeniser name (aliases included); nullopt when unknown. The empty name is
// llama.cpp's fallback "default".
std::optional<PreTokenizerSpec> find_pre_tokenizer(std::string_view name);
// All canonical names supported, for error messages and docs.
std::vector<std::string> pre_tokenizer_names();

class PreTokenizer {
 public:
  // Compiles the regexes; throws ragform::Error naming the regex if PCRE2 rejects it.
  explicit PreTokenizer(const std::vector<std::string>& regexes);
  ~PreTokenizer();
  PreTokenizer(const PreTokenizer&) = delete;
  PreTokenizer& operator=(const PreTokenizer&) = delete;

  // Splits `text` into words; each word is UTF-8 re-encoded from the leniently decoded code
  // points (so invalid bytes appear as U+FFFD). Thread-safe.
  void split(std::string_view text, std::vector<std::string>* words) const;

 private:
  struct Stage;
  std::vector<std::unique_ptr<Stage>> stages_;
};

}  // namespace ragform::tok
