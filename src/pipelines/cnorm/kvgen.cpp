#include "pipelines/cnorm/kvgen.h"

#include <set>

#include "base/error.h"
#include "base/options.h"
#include "pipelines/cnorm/format.h"

namespace ragform::cnorm {

KvFormat parse_kv_format(const std::string& name) {
  if (name == "uuid") return KvFormat::Uuid;
  if (name == "plain") return KvFormat::Plain;
  if (name == "modified") return KvFormat::Modified;
  throw UsageError("--format", "expected uuid, plain or modified, got '" + name + "'");
}

const char* kv_format_name(KvFormat f) {
  switch (f) {
    case KvFormat::Uuid:
      return "uuid";
    case KvFormat::Plain:
      return "plain";
    case KvFormat::Modified:
      return "modified";
  }
  return "?";
}

void apply_density(KvSpec& s, const std::string& density) {
  if (density == "low") {
    s.pairs = 40;
    s.groups = 1;
  } else if (density == "high") {
    s.pairs = 10;
    s.groups = 4;
  } else {
    throw UsageError("--density", "expected low or high, got '" + density + "'");
  }
  s.density_name = density;
}

std::string random_uuid_id(uint64_t& state, size_t groups) {
  static const char* hex = "0123456789abcdef";
  std::string out;
  for (size_t g = 0; g < groups; ++g) {
    if (g) out += '-';
    std::string d;
    for (int w = 0; w < 2; ++w) {  // 2 x 64 bits = 32 hex digits
      state += 0x9E3779B97F4A7C15ull;
      uint64_t x = splitmix64_mix(state);
      for (int i = 0; i < 16; ++i) d += hex[(x >> (4 * (15 - i))) & 0xF];
    }
    d[12] = '4';  // version 4
    int nib = d[16] <= '9' ? d[16] - '0' : d[16] - 'a' + 10;
    d[16] = "89ab"[nib & 3];  // variant 10xx
    out += d.substr(0, 8) + "-" + d.substr(8, 4) + "-" + d.substr(12, 4) + "-" + d.substr(16, 4) +
           "-" + d.substr(20, 12);
  }
  return out;
}

std::string to_kv_format(const std::string& uuid_id, KvFormat f, const std::string& delimiter) {
  switch (f) {
    case KvFormat::Uuid:
      return uuid_id;
    case KvFormat::Plain:
      return format_uuid(uuid_id, "");
    case KvFormat::Modified:
      return format_uuid(uuid_id, delimiter);
  }
  return uuid_id;
}

std::vector<nlohmann::json> generate_kv(const KvSpec& spec) {
  if (spec.pairs < 1) throw UsageError("kv generate", "at least one pair is needed");
  if (spec.groups < 1) throw UsageError("kv generate", "identifiers need at least one group");
  if (spec.format == KvFormat::Modified) {
    if (spec.delimiter.empty())
      throw UsageError("--delimiter", "modified UUIDs need a non-empty delimiter");
    // At most kMaxDelimiterBytes, valid UTF-8, no whitespace; refused naming the flag the user
    // gave (parse_delimiter's OptionError names --delims, cnorm's list of them).
    try {
      parse_delimiter(spec.delimiter);
    } catch (const OptionError& e) {
      throw UsageError("--delimiter", e.why());
    }
  }
  std::vector<nlohmann::json> rows;
  for (size_t s = 0; s < spec.samples; ++s) {
    // The sample's stream depends on (seed, sample) only, not on the format: the three formats
    // of one seed hold the same digits.
    uint64_t state = splitmix64_mix(spec.seed ^ splitmix64_mix(s + 1));
    std::vector<std::pair<std::string, std::string>> pairs;
    std::set<std::string> seen;
    while (pairs.size() < spec.pairs) {
      std::string k = random_uuid_id(state, spec.groups), v = random_uuid_id(state, spec.groups);
      if (!seen.insert(to_kv_format(k, spec.format, spec.delimiter)).second) continue;
      pairs.emplace_back(to_kv_format(k, spec.format, spec.delimiter),
                         to_kv_format(v, spec.format, spec.delimiter));
    }
    // pairs[0] is the gold pair; the others keep their order around it.
    std::vector<size_t> positions;
    if (spec.all_positions) {
      for (size_t j = 0; j < spec.pairs; ++j) positions.push_back(j);
    } else {
      positions.push_back(size_t(splitmix64_mix(state) % spec.pairs));
    }
    for (size_t j : positions) {
      nlohmann::json recs = nlohmann::json::array();
      for (size_t i = 1; i < spec.pairs; ++i) {
        if (recs.size() == j) recs.push_back({pairs[0].first, pairs[0].second});
        recs.push_back({pairs[i].first, pairs[i].second});
      }
      if (recs.size() == j) recs.push_back({pairs[0].first, pairs[0].second});
      std::string id = "kv-" + spec.density_name + "-" + kv_format_name(spec.format) + "-" +
                       std::to_string(s) + "-g" + std::to_string(j);
      rows.push_back({{"id", id},
                      {"ordered_kv_records", recs},
                      {"key", pairs[0].first},
                      {"value", pairs[0].second},
                      {"gold_index", j},
                      {"format", kv_format_name(spec.format)},
                      {"density", spec.density_name}});
    }
  }
  return rows;
}

}  // namespace ragform::cnorm
