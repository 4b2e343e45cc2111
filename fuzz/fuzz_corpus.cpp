// libFuzzer target for the retrieval corpus reader (retrieval/corpus.h): any byte string is a
// corpus file (JSONL, gzip or DPR TSV by its first bytes) whose passages either all read or whose
// first bad line is refused with ragform::Error; every passage read has a non-empty id and title or
// text, and a line number inside the file. parse_tsv_line is also fed each line directly.
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "base/error.h"
#include "fuzz_file.h"
#include "retrieval/corpus.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace ragform;
  const std::string_view bytes(reinterpret_cast<const char*>(data), size);
  size_t lines = 1;
  for (char c : bytes) lines += c == '\n';
  for (size_t b = 0; b <= bytes.size();) {
    size_t e = bytes.find('\n', b);
    if (e == std::string_view::npos) e = bytes.size();
    try {
      auto p = retrieval::parse_tsv_line(bytes.substr(b, e - b));
      if (p.id.empty() || (p.title.empty() && p.text.empty())) __builtin_trap();
    } catch (const Error&) {
    }
    b = e + 1;
  }
  static fuzz::ScratchFile scratch(".corpus");
  try {
    retrieval::CorpusReader r(scratch.write(data, size));
    retrieval::Passage p;
    while (r.next(p)) {
      if (p.id.empty() || (p.title.empty() && p.text.empty())) __builtin_trap();
      if (r.format() == retrieval::CorpusFormat::Tsv && (p.line == 0 || p.line > lines))
        __builtin_trap();
    }
  } catch (const Error&) {
  }
  return 0;
}
