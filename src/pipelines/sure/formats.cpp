#include "pipelines/sure/formats.h"

#include <cctype>
#include <cstdio>
#include <vector>

#include <nlohmann/json.hpp>

#include "base/error.h"
#include "base/json_error.h"
#include "base/json_file.h"
#include "pipelines/sure/format_parsers.h"

namespace ragform::sure {
namespace {

bool is_ws(char c) { return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\f'; }

void append_utf8(std::string& out, uint32_t cp) {
  if (cp < 0x80) {
    out += static_cast<char>(cp);
  } else if (cp < 0x800) {
    out += static_cast<char>(0xC0 | (cp >> 6));
    out += static_cast<char>(0x80 | (cp & 0x3F));
  } else if (cp < 0x10000) {
    out += static_cast<char>(0xE0 | (cp >> 12));
    out += static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
    out += static_cast<char>(0x80 | (cp & 0x3F));
  } else {
    out += static_cast<char>(0xF0 | (cp >> 18));
    out += static_cast<char>(0x80 | ((cp >> 12) & 0x3F));
    out += static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
    out += static_cast<char>(0x80 | (cp & 0x3F));
  }
}

// ---- YAML scalars ----

[[noreturn]] void fail(const char* fmt, const std::string& why) { throw Error(fmt, why); }

}  // namespace

// ---------------------------------------------------------------- HTML subset parser

namespace {

struct HtmlCursor {
  std::string_view s;
  size_t i = 0;
  void skip_ws() {
    while (i < s.size() && is_ws(s[i])) ++i;
  }
  [[noreturn]] void error(const std::string& why) const {
    fail("html", why + " at byte " + std::to_string(i));
  }
  void expect(std::string_view lit) {
    if (s.substr(i, lit.size()) != lit) error("expected '" + std::string(lit) + "'");
    i += lit.size();
  }
};

// Decodes text up to the next '<' (or a quote when `quote` != 0): the entities we emit and
// numeric references; a bare '&' or '<' inside text is an error (this subset always escapes).
std::string decode_text(HtmlCursor& c, char quote) {
  std::string out;
  while (c.i < c.s.size()) {
    char ch = c.s[c.i];
    if ((quote == 0 && ch == '<') || (quote != 0 && ch == quote)) return out;
    if (quote == 0 && ch == '>') c.error("unescaped '>' in text");
    if (ch != '&') {
      out += ch;
      ++c.i;
      continue;
    }
    size_t semi = c.s.find(';', c.i);
    if (semi == std::string_view::npos || semi - c.i > 10) c.error("bare '&' (not an entity)");
    std::string_view ent = c.s.substr(c.i + 1, semi - c.i - 1);
    if (ent == "amp") {
      out += '&';
    } else if (ent == "lt") {
      out += '<';
    } else if (ent == "gt") {
      out += '>';
    } else if (ent == "quot") {
      out += '"';
    } else if (!ent.empty() && ent[0] == '#') {
      uint32_t cp = 0;
      bool hex = ent.size() > 1 && (ent[1] == 'x' || ent[1] == 'X');
      size_t d = hex ? 2 : 1;
      if (d >= ent.size()) c.error("empty numeric character reference");
      for (; d < ent.size(); ++d) {
        char x = ent[d];
        int v = std::isdigit(static_cast<unsigned char>(x)) ? x - '0'
                : hex && std::isxdigit(static_cast<unsigned char>(x))
                    ? std::tolower(static_cast<unsigned char>(x)) - 'a' + 10
                    : -1;
        if (v < 0) c.error("bad numeric character reference");
        cp = cp * (hex ? 16 : 10) + static_cast<uint32_t>(v);
        if (cp > 0x10FFFF) c.error("character reference out of range");
      }
      append_utf8(out, cp);
    } else {
      c.error("unknown entity '&" + std::string(ent) + ";'");
    }
    c.i = semi + 1;
  }
  if (quote != 0) c.error("unterminated attribute value");
  return out;
}

struct Tag {
  std::string name;
  std::map<std::string, std::string> attrs;
  bool closing = false;
};

Tag read_tag(HtmlCursor& c) {
  c.skip_ws();
  c.expect("<");
  Tag t;
  if (c.i < c.s.size() && c.s[c.i] == '/') {
    t.closing = true;
    ++c.i;
  }
  while (c.i < c.s.size() && std::isalpha(static_cast<unsigned char>(c.s[c.i])))
    t.name += static_cast<char>(std::tolower(static_cast<unsigned char>(c.s[c.i++])));
  if (t.name.empty()) c.error("expected a tag name");
  for (;;) {
    c.skip_ws();
    if (c.i >= c.s.size()) c.error("unterminated tag <" + t.name);
    if (c.s[c.i] == '>') {
      ++c.i;
      return t;
    }
    if (t.closing) c.error("attributes on a closing tag");
    std::string key;
    while (c.i < c.s.size() &&
           (std::isalnum(static_cast<unsigned char>(c.s[c.i])) || c.s[c.i] == '-'))
      key += static_cast<char>(std::tolower(static_cast<unsigned char>(c.s[c.i++])));
    if (key.empty()) c.error("expected an attribute name in <" + t.name + ">");
    c.expect("=");
    if (c.i >= c.s.size() || (c.s[c.i] != '"' && c.s[c.i] != '\''))
      c.error("attribute value must be quoted");
    char q = c.s[c.i++];
    std::string v = decode_text(c, q);
    ++c.i;
    if (t.attrs.count(key)) c.error("duplicate attribute '" + key + "'");
    t.attrs[key] = v;
  }
}

void expect_tag(HtmlCursor& c, const Tag& t, std::string_view name, bool closing) {
  if (t.name != name || t.closing != closing)
    c.error(std::string("expected <") + (closing ? "/" : "") + std::string(name) + ">, got <" +
            (t.closing ? "/" : "") + t.name + ">");
}

}  // namespace

ParsedDoc parse_html_subset(std::string_view doc) {
  HtmlCursor c{doc};
  ParsedDoc out;
  expect_tag(c, read_tag(c), "html", false);
  expect_tag(c, read_tag(c), "head", false);
  bool charset = false, title = false;
  for (;;) {
    Tag t = read_tag(c);
    if (t.name == "head" && t.closing) break;
    if (t.closing) c.error("unexpected </" + t.name + "> in head");
    if (t.name == "meta") {
      if (t.attrs.count("charset")) {
        if (t.attrs.size() != 1 || charset) c.error("bad charset meta");
        charset = true;
      } else if (t.attrs.size() == 2 && t.attrs.count("name") && t.attrs.count("content")) {
        out.meta[t.attrs["name"]] = t.attrs["content"];
      } else {
        c.error("meta needs charset, or name and content");
      }
    } else if (t.name == "title") {
      if (title) c.error("two <title> elements");
      out.title = decode_text(c, 0);
      expect_tag(c, read_tag(c), "title", true);
      title = true;
    } else {
      c.error("unexpected <" + t.name + "> in head");
    }
  }
  if (!charset) c.error("missing <meta charset>");
  expect_tag(c, read_tag(c), "body", false);
  std::string body = decode_text(c, 0);
  if (body.size() >= 2 && body.front() == ' ' && body.back() == ' ')
    body = body.substr(1, body.size() - 2);
  out.text = body;
  expect_tag(c, read_tag(c), "body", true);
  expect_tag(c, read_tag(c), "html", true);
  c.skip_ws();
  if (c.i != doc.size()) c.error("trailing content after </html>");
  return out;
}

// ---------------------------------------------------------------- YAML subset parser

namespace {

std::string yaml_parse_double_quoted(std::string_view v, size_t line) {
  auto bad = [&](const std::string& why) {
    fail("yaml", "line " + std::to_string(line) + ": " + why);
  };
  if (v.size() < 2 || v.back() != '"') bad("unterminated double-quoted scalar");
  std::string out;
  for (size_t i = 1; i + 1 < v.size(); ++i) {
    char ch = v[i];
    if (ch == '"') bad("unescaped '\"' inside a double-quoted scalar");
    if (static_cast<unsigned char>(ch) < 0x20 && ch != '\t') bad("raw control character");
    if (ch != '\\') {
      out += ch;
      continue;
    }
    if (i + 2 >= v.size()) bad("dangling escape");
    char e = v[++i];
    switch (e) {
      case '\\':
        out += '\\';
        break;
      case '"':
        out += '"';
        break;
      case 't':
        out += '\t';
        break;
      case 'n':
        out += '\n';
        break;
      case 'x': {
        if (i + 3 > v.size() - 1) bad("short \\x escape");
        // Exactly two hex digits (std::stoul would also take a sign or spaces, and throw
        // std::invalid_argument on neither).
        uint32_t cp = 0;
        for (size_t d = i + 1; d <= i + 2; ++d) {
          auto x = static_cast<unsigned char>(v[d]);
          if (!std::isxdigit(x)) bad("\\x escape needs two hex digits");
          cp = cp * 16 +
               static_cast<uint32_t>(std::isdigit(x) ? x - '0' : std::tolower(x) - 'a' + 10);
        }
        append_utf8(out, cp);
        i += 2;
        break;
      }
      default:
        bad(std::string("unsupported escape '\\") + e + "'");
    }
  }
  return out;
}

void yaml_check_plain(std::string_view v, size_t line) {
  if (!yaml_plain_ok(v))
    fail("yaml", "line " + std::to_string(line) + ": '" + std::string(v.substr(0, 40)) +
                     "' is not a plain string scalar");
}

}  // namespace

ParsedDoc parse_yaml_subset(std::string_view doc) {
  std::vector<std::string_view> lines;
  size_t pos = 0;
  while (pos < doc.size()) {
    size_t nl = doc.find('\n', pos);
    if (nl == std::string_view::npos) nl = doc.size();
    lines.push_back(doc.substr(pos, nl - pos));
    pos = nl + 1;
  }
  ParsedDoc out;
  std::map<std::string, std::string> seen;
  for (size_t li = 0; li < lines.size(); ++li) {
    std::string_view l = lines[li];
    size_t colon = l.find(": ");
    if (colon == std::string_view::npos || colon == 0)
      fail("yaml", "line " + std::to_string(li + 1) + ": expected 'Key: value'");
    std::string key(l.substr(0, colon));
    for (char ch : key)
      if (!std::isalnum(static_cast<unsigned char>(ch)))
        fail("yaml", "line " + std::to_string(li + 1) + ": bad key '" + key + "'");
    std::string_view v = l.substr(colon + 2);
    std::string value;
    if (v == "|2-" || v == "|2") {
      std::string block;
      bool first = true;
      while (li + 1 < lines.size() &&
             (lines[li + 1].empty() || lines[li + 1].substr(0, 2) == "  ")) {
        ++li;
        if (!first) block += '\n';
        first = false;
        if (!lines[li].empty()) block += lines[li].substr(2);
      }
      while (!block.empty() && block.back() == '\n') block.pop_back();
      value = v == "|2" ? block + "\n" : block;
    } else if (!v.empty() && v.front() == '"') {
      value = yaml_parse_double_quoted(v, li + 1);
    } else {
      yaml_check_plain(v, li + 1);
      value = std::string(v);
    }
    if (seen.count(key)) fail("yaml", "duplicate key '" + key + "'");
    seen[key] = value;
  }
  if (!seen.count("Title") || !seen.count("Text") || seen.size() != 2)
    fail("yaml", "expected exactly the keys Title and Text");
  out.title = seen["Title"];
  out.text = seen["Text"];
  return out;
}

ParsedDoc parse_markdown_subset(std::string_view doc) {
  if (doc.substr(0, 2) != "# ") fail("markdown", "first line is not a level-1 ATX heading");
  size_t nl = doc.find('\n');
  if (nl == std::string_view::npos) fail("markdown", "no body after the heading");
  ParsedDoc out;
  out.title = std::string(doc.substr(2, nl - 2));
  std::string body;
  size_t pos = nl + 1;
  while (pos <= doc.size()) {
    size_t e = doc.find('\n', pos);
    if (e == std::string_view::npos) e = doc.size();
    std::string_view line = doc.substr(pos, e - pos);
    size_t lead = 0;
    while (lead < line.size() && line[lead] == ' ') ++lead;
    if (lead < line.size() && line[lead] == '#')
      fail("markdown", "a body line would be a heading: '" + std::string(line.substr(0, 40)) + "'");
    std::string l(line);
    if (lead + 1 < l.size() && l[lead] == '\\' && l[lead + 1] == '#') l.erase(lead, 1);
    body += l;
    if (e < doc.size()) body += '\n';
    pos = e + 1;
  }
  out.text = body;
  return out;
}

ParsedDoc validate_format(DocFormat format, std::string_view doc) {
  switch (format) {
    case DocFormat::Json: {
      nlohmann::json j;
      try {
        j = parse_json_text(doc);
      } catch (const JsonTextError& e) {
        fail("json", e.what());
      }
      if (!j.is_object() || j.size() != 2 || !j.contains("title") || !j.contains("text") ||
          !j["title"].is_string() || !j["text"].is_string())
        fail("json", "expected an object with string fields title and text");
      return {j["title"].get<std::string>(), j["text"].get<std::string>(), {}};
    }
    case DocFormat::Html: {
      // A real HTML5 parser must accept it with no errors and agree with the strict subset
      // parser on what it holds.
      ParsedDoc real = parse_html_real(doc), sub = parse_html_subset(doc);
      if (real.title != sub.title)
        fail("html",
             "gumbo reads title '" + real.title + "', the template parser '" + sub.title + "'");
      auto trimmed = [](const std::string& x) {
        size_t b = x.find_first_not_of(" \t\r\n"), e = x.find_last_not_of(" \t\r\n");
        return b == std::string::npos ? std::string() : x.substr(b, e - b + 1);
      };
      if (real.text != trimmed(sub.text))
        fail("html",
             "gumbo reads body '" + real.text + "', the template parser '" + sub.text + "'");
      if (real.meta != sub.meta)
        fail("html", "gumbo and the template parser disagree on the meta tags");
      return sub;
    }
    case DocFormat::Yaml: {
      ParsedDoc real = parse_yaml_real(doc), sub = parse_yaml_subset(doc);
      if (real.title != sub.title || real.text != sub.text)
        fail("yaml", "yaml-cpp and the template parser disagree on the document's content");
      return real;
    }
    case DocFormat::Markdown:
      return parse_markdown_subset(doc);
  }
  fail("format", "unknown format");
}

}  // namespace ragform::sure
