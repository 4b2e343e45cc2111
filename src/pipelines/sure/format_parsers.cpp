#include "pipelines/sure/format_parsers.h"

#include <gumbo.h>
#include <yaml-cpp/yaml.h>

#include "base/error.h"
#include "base/yaml_text.h"

namespace ragform::sure {

ParsedDoc parse_yaml_real(std::string_view doc) {
  YAML::Node n;
  try {
    n = load_yaml_text(doc);
  } catch (const YAML::Exception& e) {
    throw Error("yaml", std::string("yaml-cpp: ") + e.what());
  }
  if (!n.IsMap()) throw Error("yaml", "top level is not a mapping");
  if (n.size() != 2 || !n["Title"] || !n["Text"] || !n["Title"].IsScalar() || !n["Text"].IsScalar())
    throw Error("yaml", "expected exactly the scalar keys Title and Text");
  return {n["Title"].as<std::string>(), n["Text"].as<std::string>(), {}};
}

namespace {
void collect_text(const GumboNode* node, std::string& out) {
  if (node->type == GUMBO_NODE_TEXT || node->type == GUMBO_NODE_WHITESPACE) {
    out += node->v.text.text;
  } else if (node->type == GUMBO_NODE_ELEMENT) {
    const GumboVector& kids = node->v.element.children;
    for (unsigned i = 0; i < kids.length; ++i)
      collect_text(static_cast<const GumboNode*>(kids.data[i]), out);
  }
}

const GumboNode* find_child(const GumboNode* node, GumboTag tag) {
  if (node->type != GUMBO_NODE_ELEMENT) return nullptr;
  const GumboVector& kids = node->v.element.children;
  for (unsigned i = 0; i < kids.length; ++i) {
    auto* k = static_cast<const GumboNode*>(kids.data[i]);
    if (k->type == GUMBO_NODE_ELEMENT && k->v.element.tag == tag) return k;
  }
  return nullptr;
}

std::string trim(const std::string& s) {
  size_t b = s.find_first_not_of(" \t\r\n"), e = s.find_last_not_of(" \t\r\n");
  return b == std::string::npos ? std::string() : s.substr(b, e - b + 1);
}
}  // namespace

ParsedDoc parse_html_real(std::string_view doc) {
  // Figure 9's template has no doctype; HTML5 parsers report its absence (quirks mode) as a parse
  // error, which says nothing about the document's content, so it is supplied for the check.
  std::string text(doc);
  if (text.rfind("<!DOCTYPE", 0) != 0 && text.rfind("<!doctype", 0) != 0)
    text = "<!DOCTYPE html>\n" + text;
  GumboOutput* out = gumbo_parse_with_options(&kGumboDefaultOptions, text.data(), text.size());
  struct Free {
    GumboOutput* o;
    ~Free() { gumbo_destroy_output(&kGumboDefaultOptions, o); }
  } guard{out};
  if (out->errors.length != 0)
    throw Error("html", "gumbo reports " + std::to_string(out->errors.length) + " parse error(s)");
  const GumboNode* head = find_child(out->root, GUMBO_TAG_HEAD);
  const GumboNode* body = find_child(out->root, GUMBO_TAG_BODY);
  if (!head || !body) throw Error("html", "missing <head> or <body>");
  ParsedDoc d;
  const GumboNode* title = find_child(head, GUMBO_TAG_TITLE);
  if (!title) throw Error("html", "missing <title>");
  collect_text(title, d.title);
  const GumboVector& kids = head->v.element.children;
  for (unsigned i = 0; i < kids.length; ++i) {
    auto* k = static_cast<const GumboNode*>(kids.data[i]);
    if (k->type != GUMBO_NODE_ELEMENT || k->v.element.tag != GUMBO_TAG_META) continue;
    const GumboAttribute* name = gumbo_get_attribute(&k->v.element.attributes, "name");
    const GumboAttribute* content = gumbo_get_attribute(&k->v.element.attributes, "content");
    if (name && content) d.meta[name->value] = content->value;
  }
  collect_text(body, d.text);
  d.text = trim(d.text);
  return d;
}

}  // namespace ragform::sure
