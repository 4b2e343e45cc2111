// libFuzzer target for SURE's document validators (sure/formats.h, sure/format_parsers.h): the
// strict YAML, HTML and Markdown subset parsers, yaml-cpp and gumbo behind them, and
// validate_format, which sees the documents an LLM wrote for a format perturbation. Any byte
// string either parses or is refused with ragform::Error. The input is also cut into a title and a
// text that go through every serialiser: what a serialiser writes, its validator must read back.
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "base/error.h"
#include "pipelines/sure/format_parsers.h"
#include "pipelines/sure/formats.h"
#include "text/utf8.h"

namespace {

using namespace ragform;
using sure::DocFormat;

template <typename F>
void refused_or_parsed(F&& parse) {
  try {
    volatile size_t sink = parse().text.size();
    (void)sink;
  } catch (const Error&) {
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view doc(reinterpret_cast<const char*>(data), size);
  refused_or_parsed([&] { return sure::parse_yaml_subset(doc); });
  refused_or_parsed([&] { return sure::parse_html_subset(doc); });
  refused_or_parsed([&] { return sure::parse_markdown_subset(doc); });
  refused_or_parsed([&] { return sure::parse_yaml_real(doc); });
  refused_or_parsed([&] { return sure::parse_html_real(doc); });
  for (DocFormat f : {DocFormat::Json, DocFormat::Html, DocFormat::Yaml, DocFormat::Markdown})
    refused_or_parsed([&] { return sure::validate_format(f, doc); });
  return 0;
}
