#include "text/unicode_db.h"

#include <algorithm>
#include <vector>

namespace ragform::text {
namespace {

constexpr uint32_t kMaxCodepoints = 0x110000;

// One flag word per code point (2.2 MB), built once: lookups in the pre-tokeniser are hot.
const std::vector<uint16_t>& flag_table() {
  static const std::vector<uint16_t> table = [] {
    std::vector<uint16_t> t(kMaxCodepoints, kUndefined);
    using unicode_data::kFlagRuns;
    for (size_t i = 0; i < unicode_data::kFlagRunsSize; ++i) {
      const uint32_t end =
          i + 1 < unicode_data::kFlagRunsSize ? kFlagRuns[i + 1].first : kMaxCodepoints;
      std::fill(t.begin() + kFlagRuns[i].first, t.begin() + end, kFlagRuns[i].flags);
    }
    // White_Space (Unicode PropList.txt), the set llama.cpp uses.
    auto ws = [&](uint32_t a, uint32_t b) {
      for (uint32_t c = a; c <= b; ++c) t[c] |= kWhitespace;
    };
    ws(0x09, 0x0D);
    ws(0x2000, 0x200A);
    for (uint32_t c : {0x20u, 0x85u, 0xA0u, 0x1680u, 0x2028u, 0x2029u, 0x202Fu, 0x205Fu, 0x3000u})
      ws(c, c);
    return t;
  }();
  return table;
}

uint32_t lookup_pair(const unicode_data::CodepointPair* table, size_t n, uint32_t cp) {
  const auto* end = table + n;
  const auto* it = std::lower_bound(
      table, end, cp, [](const unicode_data::CodepointPair& p, uint32_t v) { return p.from < v; });
  return (it != end && it->from == cp) ? it->to : cp;
}

}  // namespace

uint16_t cp_flags(uint32_t cp) {
  return cp < kMaxCodepoints ? flag_table()[cp] : uint16_t(kUndefined);
}

uint32_t cp_tolower(uint32_t cp) {
  return lookup_pair(unicode_data::kLowercase, unicode_data::kLowercaseSize, cp);
}

uint32_t cp_nfd_first(uint32_t cp) {
  return lookup_pair(unicode_data::kNfdFirst, unicode_data::kNfdFirstSize, cp);
}

uint32_t bert_fold(uint32_t cp, bool lowercase, bool strip_accents) {
  if (strip_accents) {
    cp = cp_nfd_first(cp);  // the table holds full NFD's first code point: applying it again is
                            // a no-op, so a caller that decomposed first gets the same
    if (cp_flags(cp) & kMark) return kBertDropped;
  }
  return lowercase ? cp_tolower(cp) : cp;
}

}  // namespace ragform::text
