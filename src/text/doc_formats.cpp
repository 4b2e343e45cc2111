#include "text/doc_formats.h"

#include <cctype>
#include <cstdio>

#include <nlohmann/json.hpp>

namespace ragform::text {
namespace {

bool is_ws(char c) { return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\f'; }

std::string yaml_double_quoted(std::string_view s) {
  std::string out = "\"";
  for (unsigned char c : s) {
    if (c == '"') {
      out += "\\\"";
    } else if (c == '\\') {
      out += "\\\\";
    } else if (c == '\t') {
      out += "\\t";
    } else if (c < 0x20 || c == 0x7F) {
      char buf[8];
      std::snprintf(buf, sizeof buf, "\\x%02X", c);
      out += buf;
    } else {
      out += static_cast<char>(c);
    }
  }
  return out + "\"";
}

std::string yaml_scalar(std::string_view s) {
  if (yaml_plain_ok(s)) return std::string(s);
  bool multiline = s.find('\n') != std::string_view::npos;
  bool control = false;
  for (unsigned char c : s)
    if ((c < 0x20 && c != '\n') || c == 0x7F) control = true;
  if (!multiline || control) return yaml_double_quoted(s);
  // Literal block, explicit indentation 2: strip chomping ("|2-"), or clip ("|2", one final line
  // break kept) when the text ends with exactly one; more final breaks go double-quoted.
  bool clip = s.back() == '\n';
  if (clip) {
    s.remove_suffix(1);
    if (s.empty() || s.back() == '\n') return yaml_double_quoted(std::string(s) + "\n");
  }
  std::string out = clip ? "|2\n" : "|2-\n";
  size_t pos = 0;
  while (pos <= s.size()) {
    size_t nl = s.find('\n', pos);
    if (nl == std::string_view::npos) nl = s.size();
    std::string_view line = s.substr(pos, nl - pos);
    if (!line.empty()) out += "  ";
    out += line;
    out += '\n';
    pos = nl + 1;
  }
  out.pop_back();
  return out;
}

}  // namespace

bool yaml_plain_ok(std::string_view s) {
  if (s.empty() || is_ws(s.front()) || is_ws(s.back())) return false;
  static const std::string_view indicators = "-?:,[]{}#&*!|>'\"%@`";
  if (indicators.find(s.front()) != std::string_view::npos) return false;
  if (s.back() == ':') return false;
  if (s.find(": ") != std::string_view::npos || s.find(" #") != std::string_view::npos)
    return false;
  for (unsigned char c : s)
    if (c < 0x20 || c == 0x7F) return false;
  // Values a YAML 1.1/1.2 resolver would turn into bool, null or a number stay strings only when
  // quoted; be conservative: anything starting with a digit, sign or dot, and the keywords.
  if (std::isdigit(static_cast<unsigned char>(s.front())) || s.front() == '+' || s.front() == '.')
    return false;
  std::string low;
  for (char c : s) low += static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  for (const char* kw : {"true", "false", "yes", "no", "on", "off", "null", "y", "n", "~"})
    if (low == kw) return false;
  return true;
}

std::string one_line(std::string_view s) {
  std::string out;
  bool space = false;
  for (char c : s) {
    if (is_ws(c)) {
      space = !out.empty();
    } else {
      if (space) out += ' ';
      space = false;
      out += c;
    }
  }
  return out;
}

std::string html_escape(std::string_view s, bool attribute) {
  std::string out;
  out.reserve(s.size() + 16);
  for (char c : s) {
    switch (c) {
      case '&':
        out += "&amp;";
        break;
      case '<':
        out += "&lt;";
        break;
      case '>':
        out += "&gt;";
        break;
      case '\'':
        if (attribute) {
          out += "&#39;";
          break;
        }
        out += c;
        break;
      case '"':
        if (attribute) {
          out += "&quot;";
          break;
        }
        out += c;
        break;
      default:
        out += c;
    }
  }
  return out;
}

std::string to_json_doc(std::string_view title, std::string_view text) {
  nlohmann::ordered_json j;
  j["title"] = one_line(title);
  j["text"] = std::string(text);
  return j.dump(2, ' ', false, nlohmann::ordered_json::error_handler_t::replace);
}

std::string to_html_doc(std::string_view title, std::string_view text,
                        const std::optional<MetaTag>& meta) {
  std::string out = "<html lang=\"en\">\n<head>\n  <meta charset=\"UTF-8\">\n";
  if (meta)
    out += "  <meta name='" + html_escape(meta->name, true) + "' content='" +
           html_escape(meta->content, true) + "'>\n";
  out += "  <title>" + html_escape(one_line(title), false) + "</title>\n</head>\n<body> ";
  out += html_escape(text, false);
  out += " </body>\n</html>";
  return out;
}

std::string to_yaml_doc(std::string_view title, std::string_view text) {
  return "Title: " + yaml_scalar(one_line(title)) + "\nText: " + yaml_scalar(text) + "\n";
}

std::string to_markdown_doc(std::string_view title, std::string_view text) {
  std::string out = "# " + one_line(title) + "\n";
  size_t pos = 0;
  while (pos <= text.size()) {
    size_t nl = text.find('\n', pos);
    if (nl == std::string_view::npos) nl = text.size();
    std::string_view line = text.substr(pos, nl - pos);
    size_t lead = 0;
    while (lead < line.size() && line[lead] == ' ') ++lead;
    if (lead < line.size() && line[lead] == '#') {
      out += std::string(line.substr(0, lead)) + "\\" + std::string(line.substr(lead));
    } else {
      out += line;
    }
    if (nl < text.size()) out += '\n';
    pos = nl + 1;
  }
  return out;
}

}  // namespace ragform::text
