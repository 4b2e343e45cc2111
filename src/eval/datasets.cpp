// Format names, detection from a record's fields, and the streaming load loop. The per-format
// converters are in loaders_qa.cpp and loaders_structured.cpp.
#include "eval/datasets.h"

#include "eval/loaders_fields.h"

namespace ragform::eval {

using nlohmann::json;

namespace {
struct FormatInfo {
  Format format;
  const char* name;
};
constexpr FormatInfo kFormats[] = {
    {Format::Auto, "auto"},
    {Format::LitmKv, "litm-kv"},
    {Format::LongBenchV2, "longbench-v2"},
    {Format::PoisonedRag, "poisonedrag"},
    {Format::HotpotQa, "hotpotqa"},
    {Format::FlashRag, "flashrag"},
    {Format::LitmQa, "litm-qa"},
    {Format::NqOpen, "nq-open"},
};

std::string field_list(const json& row, size_t max = 8) {
  std::string s;
  size_t n = 0;
  for (auto it = row.begin(); it != row.end(); ++it, ++n) {
    if (n == max) {
      s += ", ...";
      break;
    }
    s += (n ? ", " : "") + it.key();
  }
  return "{" + s + "}";
}
}  // namespace

const char* format_name(Format f) {
  for (auto& i : kFormats)
    if (i.format == f) return i.name;
  return "?";
}

Format parse_format(std::string_view name) {
  std::string all;
  for (auto& i : kFormats) {
    if (name == i.name) return i.format;
    all += std::string(all.empty() ? "" : ", ") + i.name;
  }
  throw UsageError("--format", "unknown format '" + std::string(name) + "' (one of: " + all + ")");
}

const std::vector<Format>& known_formats() {
  static const std::vector<Format> v = [] {
    std::vector<Format> out;
    for (auto& i : kFormats)
      if (i.format != Format::Auto) out.push_back(i.format);
    return out;
  }();
  return v;
}

std::optional<Format> detect_format(const json& row) {
  if (!row.is_object()) return std::nullopt;
  auto has = [&](const char* k) { return row.contains(k); };
  if (has("ordered_kv_records")) return Format::LitmKv;
  if (has("choice_A")) return Format::LongBenchV2;
  if (has("adv_texts") || has("incorrect answer")) return Format::PoisonedRag;
  if (has("supporting_facts")) return Format::HotpotQa;
  if (has("golden_answers")) return Format::FlashRag;
  if (has("ctxs") || has("answers")) return Format::LitmQa;
  if (has("answer") && has("question")) return Format::NqOpen;
  return std::nullopt;
}

QaRecord to_qa_record(const json& row, Format format, const RowOrigin& origin) {
  if (!row.is_object())
    throw RowError(std::string("expected a JSON object, got ") + row.type_name());
  const std::string id = fields::record_id(row, format, origin);
  QaRecord r;
  switch (format) {
    case Format::LitmQa:
      r = loaders::litm_qa(row, id);
      break;
    case Format::NqOpen:
      r = loaders::nq_open(row, id);
      break;
    case Format::HotpotQa:
      r = loaders::hotpotqa(row, id);
      break;
    case Format::LitmKv:
      r = loaders::litm_kv(row, id);
      break;
    case Format::PoisonedRag:
      r = loaders::poisonedrag(row, id);
      break;
    case Format::FlashRag:
      r = loaders::flashrag(row, id);
      break;
    case Format::LongBenchV2:
      r = loaders::longbench_v2(row, id);
      break;
    case Format::Auto:
      throw Error("to_qa_record", "a concrete format is required, not auto");
  }
  r.source_format = format_name(format);
  r.source_line = origin.line;
  return r;
}

LoadInfo for_each_qa_record(const std::string& path, const LoadOptions& opts,
                            const std::function<void(QaRecord&, const JsonRow&)>& fn) {
  JsonRecordReader reader(path, opts.read);
  LoadInfo info;
  info.format = opts.format;
  info.layout = reader.layout();
  info.gzip = reader.gzip();
  JsonRow row;
  size_t delivered = 0;
  while ((opts.limit == 0 || delivered < opts.limit) && reader.next(row)) {
    try {
      if (info.format == Format::Auto) {
        auto f = detect_format(row.value);
        if (!f) {
          std::string names;
          for (Format k : known_formats())
            names += std::string(names.empty() ? "" : ", ") + format_name(k);
          throw RowError("cannot detect the data format: fields " + field_list(row.value) +
                         " match none of " + names + " (see --format)");
        }
        info.format = *f;
      }
      QaRecord rec = to_qa_record(row.value, info.format, RowOrigin{row.line, row.key});
      fn(rec, row);
      ++delivered;
    } catch (const RowError& e) {
      reader.reject(row, e.what());
    }
  }
  info.layout = reader.layout();
  info.stats = reader.stats();
  return info;
}

LoadResult load_qa_file(const std::string& path, const LoadOptions& opts) {
  LoadResult out;
  out.info = for_each_qa_record(
      path, opts, [&](QaRecord& r, const JsonRow&) { out.records.push_back(std::move(r)); });
  return out;
}

}  // namespace ragform::eval
