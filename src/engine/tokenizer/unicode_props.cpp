#include "engine/tokenizer/unicode_props.h"

#include <algorithm>
#include <array>

namespace ragform::tok {
namespace {

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
      if (cp >= 0x110000) cp = 0xFFFD, len = 1;  // beyond Unicode
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
