#include "engine/tokenizer/unicode_props.h"

#include <algorithm>
#include <array>

namespace ragform::tok {
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

struct ByteMap {
  std::array<std::string, 256> to_unicode;
  std::array<int16_t, 512> from_cp;  // GPT-2 code points are all < 512
};

const ByteMap& byte_map() {
  static const ByteMap m = [] {
    ByteMap b;
    b.from_cp.fill(-1);
    std::array<bool, 256> direct{};
    for (int c = 0x21; c <= 0x7E; ++c) direct[c] = true;
    for (int c = 0xA1; c <= 0xAC; ++c) direct[c] = true;
    for (int c = 0xAE; c <= 0xFF; ++c) direct[c] = true;
    int n = 0;
    for (int c = 0; c < 256; ++c) {
      const uint32_t cp = direct[c] ? uint32_t(c) : uint32_t(256 + n++);
      append_cpt(b.to_unicode[c], cp);
      b.from_cp[cp] = int16_t(c);
    }
    return b;
  }();
  return m;
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

uint32_t decode_cpt(std::string_view s, size_t* pos) {
  const size_t i = *pos;
  const auto b = [&](size_t k) { return uint8_t(s[i + k]); };
  const auto cont = [&](size_t k) { return i + k < s.size() && (b(k) & 0xC0) == 0x80; };
  const uint8_t c = b(0);
  uint32_t cp = 0xFFFD;
  size_t len = 1;
  if (c < 0x80) {
    cp = c;
  } else if ((c & 0xE0) == 0xC0) {
    if (cont(1)) cp = uint32_t(c & 0x1F) << 6 | (b(1) & 0x3F), len = 2;
  } else if ((c & 0xF0) == 0xE0) {
    if (cont(1) && cont(2))
      cp = uint32_t(c & 0x0F) << 12 | uint32_t(b(1) & 0x3F) << 6 | (b(2) & 0x3F), len = 3;
  } else if ((c & 0xF8) == 0xF0) {
    if (cont(1) && cont(2) && cont(3)) {
      cp = uint32_t(c & 0x07) << 18 | uint32_t(b(1) & 0x3F) << 12 | uint32_t(b(2) & 0x3F) << 6 |
           (b(3) & 0x3F);
      len = 4;
      // llama.cpp would throw when re-encoding these; we treat the lead byte as invalid instead.
      if (cp >= kMaxCodepoints) cp = 0xFFFD, len = 1;
    }
  }
  *pos = i + len;
  return cp;
}

std::vector<uint32_t> decode_cpts(std::string_view s) {
  std::vector<uint32_t> out;
  out.reserve(s.size());
  size_t pos = 0;
  while (pos < s.size()) out.push_back(decode_cpt(s, &pos));
  return out;
}

void append_cpt(std::string& out, uint32_t cp) {
  if (cp <= 0x7F) {
    out.push_back(char(cp));
  } else if (cp <= 0x7FF) {
    out.push_back(char(0xC0 | (cp >> 6)));
    out.push_back(char(0x80 | (cp & 0x3F)));
  } else if (cp <= 0xFFFF) {
    out.push_back(char(0xE0 | (cp >> 12)));
    out.push_back(char(0x80 | ((cp >> 6) & 0x3F)));
    out.push_back(char(0x80 | (cp & 0x3F)));
  } else {
    out.push_back(char(0xF0 | ((cp >> 18) & 0x07)));
    out.push_back(char(0x80 | ((cp >> 12) & 0x3F)));
    out.push_back(char(0x80 | ((cp >> 6) & 0x3F)));
    out.push_back(char(0x80 | (cp & 0x3F)));
  }
}

const std::string& byte_to_unicode(uint8_t b) { return byte_map().to_unicode[b]; }

int unicode_to_byte(uint32_t cp) { return cp < 512 ? byte_map().from_cp[cp] : -1; }

}  // namespace ragform::tok
