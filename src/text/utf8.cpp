#include "text/utf8.h"

namespace ragform::text {

namespace {
// Length of the maximal subpart of an ill-formed sequence starting at i (at least 1), following
// Table 3-7 of the Unicode standard (well-formed byte sequences).
size_t scan(std::string_view s, size_t i, bool* valid) {
  const auto* p = reinterpret_cast<const unsigned char*>(s.data());
  size_t n = s.size();
  unsigned c = p[i];
  *valid = false;
  if (c < 0x80) {
    *valid = true;
    return 1;
  }
  size_t need;
  unsigned lo = 0x80, hi = 0xBF;
  if (c >= 0xC2 && c <= 0xDF) {
    need = 1;
  } else if (c >= 0xE0 && c <= 0xEF) {
    need = 2;
    if (c == 0xE0) lo = 0xA0;
    if (c == 0xED) hi = 0x9F;  // no surrogates
  } else if (c >= 0xF0 && c <= 0xF4) {
    need = 3;
    if (c == 0xF0) lo = 0x90;
    if (c == 0xF4) hi = 0x8F;  // <= U+10FFFF
  } else {
    return 1;
  }
  size_t k = 1;
  for (; k <= need; ++k) {
    if (i + k >= n) return k;
    unsigned b = p[i + k];
    unsigned l = (k == 1) ? lo : 0x80, h = (k == 1) ? hi : 0xBF;
    if (b < l || b > h) return k;
  }
  *valid = true;
  return need + 1;
}
}  // namespace

size_t utf8_seq_len(std::string_view s, size_t i) {
  if (i >= s.size()) return 0;
  bool ok;
  size_t k = scan(s, i, &ok);
  return ok ? k : 0;
}

std::string describe_invalid_utf8(std::string_view line, size_t bad) {
  // A UTF-16/32 file (as Windows tools write "Unicode" text) fails at its byte-order mark; naming
  // the encoding says what to do, where byte 0xFF alone does not.
  if (bad == 0) {
    if (line.substr(0, 4) == std::string_view("\xFF\xFE\0\0", 4))
      return "the file is UTF-32 text (byte-order mark FF FE 00 00), not UTF-8: convert it, e.g. "
             "iconv -f UTF-32 -t UTF-8";
    if (line.substr(0, 2) == "\xFF\xFE" || line.substr(0, 2) == "\xFE\xFF")
      return std::string("the file is UTF-16 text (byte-order mark ") +
             (line[0] == '\xFF' ? "FF FE" : "FE FF") +
             "), not UTF-8: convert it, e.g. iconv -f UTF-16 -t UTF-8";
  }
  static const char* hex = "0123456789ABCDEF";
  const auto c = static_cast<unsigned char>(line[bad]);
  return "invalid UTF-8 at byte offset " + std::to_string(bad) + " of the line (byte 0x" +
         hex[c >> 4] + hex[c & 15] + ")";
}

bool is_valid_utf8(std::string_view s, size_t* bad_offset) {
  for (size_t i = 0; i < s.size();) {
    bool ok;
    size_t k = scan(s, i, &ok);
    if (!ok) {
      if (bad_offset) *bad_offset = i;
      return false;
    }
    i += k;
  }
  return true;
}

std::string repair_utf8(std::string_view s) {
  std::string out;
  out.reserve(s.size());
  for (size_t i = 0; i < s.size();) {
    bool ok;
    size_t k = scan(s, i, &ok);
    if (ok)
      out.append(s.substr(i, k));
    else
      out += "\xEF\xBF\xBD";
    i += k;
  }
  return out;
}

std::vector<uint32_t> decode_utf8(std::string_view s) {
  std::vector<uint32_t> out;
  out.reserve(s.size());
  const auto* p = reinterpret_cast<const unsigned char*>(s.data());
  for (size_t i = 0; i < s.size();) {
    bool ok;
    size_t k = scan(s, i, &ok);
    if (!ok) {
      out.push_back(0xFFFD);
    } else if (k == 1) {
      out.push_back(p[i]);
    } else if (k == 2) {
      out.push_back(((p[i] & 0x1Fu) << 6) | (p[i + 1] & 0x3Fu));
    } else if (k == 3) {
      out.push_back(((p[i] & 0x0Fu) << 12) | ((p[i + 1] & 0x3Fu) << 6) | (p[i + 2] & 0x3Fu));
    } else {
      out.push_back(((p[i] & 0x07u) << 18) | ((p[i + 1] & 0x3Fu) << 12) |
                    ((p[i + 2] & 0x3Fu) << 6) | (p[i + 3] & 0x3Fu));
    }
    i += k;
  }
  return out;
}

uint32_t decode_utf8_at(std::string_view s, size_t i, size_t* len) {
  bool ok;
  size_t k = scan(s, i, &ok);
  *len = k;
  if (!ok) return 0xFFFD;
  const auto* p = reinterpret_cast<const unsigned char*>(s.data()) + i;
  if (k == 1) return p[0];
  if (k == 2) return ((p[0] & 0x1Fu) << 6) | (p[1] & 0x3Fu);
  if (k == 3) return ((p[0] & 0x0Fu) << 12) | ((p[1] & 0x3Fu) << 6) | (p[2] & 0x3Fu);
  return ((p[0] & 0x07u) << 18) | ((p[1] & 0x3Fu) << 12) | ((p[2] & 0x3Fu) << 6) | (p[3] & 0x3Fu);
}

void append_utf8(std::string& out, uint32_t cp) {
  if (cp < 0x80) {
    out += char(cp);
  } else if (cp < 0x800) {
    out += char(0xC0 | (cp >> 6));
    out += char(0x80 | (cp & 0x3F));
  } else if (cp < 0x10000) {
    out += char(0xE0 | (cp >> 12));
    out += char(0x80 | ((cp >> 6) & 0x3F));
    out += char(0x80 | (cp & 0x3F));
  } else {
    out += char(0xF0 | (cp >> 18));
    out += char(0x80 | ((cp >> 12) & 0x3F));
    out += char(0x80 | ((cp >> 6) & 0x3F));
    out += char(0x80 | (cp & 0x3F));
  }
}

std::string encode_utf8(const std::vector<uint32_t>& cps) {
  std::string out;
  for (uint32_t c : cps) append_utf8(out, c);
  return out;
}

}  // namespace ragform::text
