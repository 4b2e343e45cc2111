#include "tune/space.h"

#include <yaml-cpp/yaml.h>

#include <cmath>
#include <cstdio>
#include <fstream>
#include <optional>
#include <set>
#include <sstream>

#include "base/error.h"
#include "base/excerpt.h"
#include "base/json_file.h"
#include "base/json_number.h"
#include "base/mapped_file.h"
#include "base/number_text.h"
#include "base/options.h"
#include "base/yaml_text.h"
#include "pipelines/cnorm/cnorm.h"

namespace ragform::tune {

namespace {

std::vector<std::string> split_list(const std::string& list) {
  std::vector<std::string> out;
  std::string cur;
  for (char c : list) {
    if (c == ',') {
      out.push_back(cur);
      cur.clear();
    } else {
      cur += c;
    }
  }
  out.push_back(cur);
  return out;
}

std::string number(double v) {
  char b[32];
  std::snprintf(b, sizeof b, "%g", v);
  return b;
}

double parse_p(const std::string& s, const std::string& where) {
  const std::optional<double> v = parse_decimal(s);  // base/number_text.h's grammar
  if (!v) throw UsageError(where, "'" + s + "' is not a number");
  cnorm::validate_p(*v, where);
  return *v;
}

size_t parse_k(const std::string& s, const std::string& where) {
  if (s == "all") return 0;
  if (s.empty() || s.find_first_not_of("0123456789") != std::string::npos || s.size() > 6)
    throw UsageError(where, "'" + s + "' is not a document count (a number, or all)");
  return size_t(std::stoul(s));
}

// A JSON array's values as strings (numbers as written), each one value: never split at commas.
std::vector<std::string> json_values(const nlohmann::json& v, const std::string& where) {
  if (!v.is_array() || v.empty()) throw UsageError(where, "must be a non-empty array");
  std::vector<std::string> out;
  for (const auto& x : v) {
    if (x.is_string())
      out.push_back(x.get<std::string>());
    else if (x.is_number_integer())
      out.push_back(std::to_string(x.get<int64_t>()));
    else if (x.is_number())
      out.push_back(number(x.get<double>()));
    else
      throw UsageError(where, "values must be strings or numbers, got " + json_excerpt(x));
  }
  return out;
}

nlohmann::json yaml_to_json(const YAML::Node& n) {
  if (n.IsMap()) {
    nlohmann::json o = nlohmann::json::object();
    for (const auto& kv : n) o[kv.first.as<std::string>()] = yaml_to_json(kv.second);
    return o;
  }
  if (n.IsSequence()) {
    nlohmann::json a = nlohmann::json::array();
    for (const auto& x : n) a.push_back(yaml_to_json(x));
    return a;
  }
  if (n.IsScalar()) return n.as<std::string>();  // numbers are parsed by the dimension
  return nullptr;
}

}  // namespace

SpotlightValue parse_spotlight_value(const std::string& s) {
  if (s == "off") return {};
  std::string k = s;
  SpotlightValue v;
  const std::string suffix = "+tokens";
  if (k.size() > suffix.size() && k.compare(k.size() - suffix.size(), suffix.size(), suffix) == 0) {
    v.tokens = true;
    k.resize(k.size() - suffix.size());
  }
  if (k.empty() || k.find_first_not_of("0123456789") != std::string::npos || k.size() > 4 ||
      std::stoi(k) == 0)
    throw OptionError("spotlight",
                      "'" + excerpt(s) + "' is not off, K or K+tokens (K from 1 to 9999)");
  v.K = std::stoi(k);
  return v;
}

std::string spotlight_value_name(const SpotlightValue& v) {
  if (!v.K) return "off";
  return std::to_string(v.K) + (v.tokens ? "+tokens" : "");
}

Space default_space(Task t) {
  Space s;
  s.delimiters = {"original", "none", "-", "_", ":"};
  s.ps = {0.5, 1.0};
  s.formats = {"plain"};
  s.orders = {Order::Retrieved};
  s.ks = {0};
  s.spotlight = {{}};
  switch (t) {
    case Task::Qa:
      s.formats = format_names();
      s.orders = {Order::Retrieved, Order::Reversed, Order::Edges};
      s.ks = {0, 5, 3};
      s.spotlight = {{}, {6, false}, {6, true}};
      break;
    case Task::Needle:
      s.formats = {"plain", "json", "yaml", "html"};
      s.orders = {Order::Retrieved, Order::Reversed, Order::Edges};
      s.ks = {0, 3};
      break;
    case Task::Kv:
      s.ps = {1.0};  // C-NORM's kv rule rewrites every UUID dash whatever p > 0 is
      break;
  }
  return s;
}

std::vector<std::string> searched_dimensions(const Space& s) {
  std::vector<std::string> out;
  if (s.delimiters.size() > 1) out.push_back("delimiter");
  if (s.ps.size() > 1) out.push_back("p");
  if (s.formats.size() > 1) out.push_back("format");
  if (s.orders.size() > 1) out.push_back("order");
  if (s.ks.size() > 1) out.push_back("k");
  if (s.spotlight.size() > 1) out.push_back("spotlight");
  return out;
}

std::vector<Presentation> candidates(const Space& s, Task t) {
  if (s.delimiters.empty() || s.ps.empty() || s.formats.empty() || s.orders.empty() ||
      s.ks.empty() || s.spotlight.empty())
    throw UsageError("tune", "every dimension of the space needs at least one value");
  // Counted before any is built: a space of 200,000 k values must fail now, not after a minute.
  size_t spot = 0;
  for (const SpotlightValue& sv : s.spotlight) spot += sv.K ? 1 : 0;
  const double count =
      double(s.ks.size()) * double(s.orders.size()) *
      (double(spot) + double(s.spotlight.size() - spot) * double(s.formats.size()) *
                          double(s.ps.size()) * double(s.delimiters.size()));
  if (count > double(kMaxCandidates))
    throw UsageError("tune", "the space spans up to " + std::to_string(uint64_t(count)) +
                                 " candidates, more than the " + std::to_string(kMaxCandidates) +
                                 " a search takes: give fewer values per dimension");
  std::vector<Presentation> out;
  for (size_t k : s.ks)
    for (Order o : s.orders)
      for (const SpotlightValue& sv : s.spotlight) {
        Presentation base;
        base.k = k;
        base.order = o;
        base.format_seed = s.format_seed;
        if (sv.K) {
          base.spotlight = sv.K;
          base.spotlight_tokens = sv.tokens;
          validate(base, t, "--spotlight");
          out.push_back(base);
          continue;
        }
        for (const std::string& f : s.formats)
          for (size_t pi = 0; pi < s.ps.size(); ++pi)
            for (const std::string& d : s.delimiters) {
              Presentation c = base;
              c.format = f;
              c.delimiter = cnorm::parse_delimiter(d).name;
              c.p = c.delimiter == "original" ? 0.0 : s.ps[pi];
              if (c.delimiter == "original" && pi > 0) continue;
              validate(c, t, "space");
              out.push_back(c);
            }
      }
  return out;
}

nlohmann::ordered_json space_to_json(const Space& s) {
  nlohmann::ordered_json j;
  j["delimiter"] = s.delimiters;
  j["p"] = s.ps;
  j["format"] = s.formats;
  j["order"] = nlohmann::json::array();
  for (Order o : s.orders) j["order"].push_back(order_name(o));
  j["k"] = s.ks;
  j["spotlight"] = nlohmann::json::array();
  for (const auto& v : s.spotlight) j["spotlight"].push_back(spotlight_value_name(v));
  j["format_seed"] = s.format_seed;
  return j;
}

std::vector<std::string> dimension_values(const std::string& dimension, const std::string& list) {
  if (dimension != "delimiter") return split_list(list);
  std::vector<std::string> out;
  for (const auto& d : cnorm::parse_delimiter_list(list))
    out.push_back(d.text.empty() ? d.name : d.text);
  return out;
}

void set_dimension(Space& s, const std::string& dimension, const std::string& list) {
  set_dimension(s, dimension, dimension_values(dimension, list));
}

void set_dimension(Space& s, const std::string& dimension, const std::vector<std::string>& vals) {
  const std::string where = "space: " + dimension;
  if (dimension == "delimiter") {
    s.delimiters.clear();
    std::set<std::string> seen;
    for (const auto& v : vals) {
      const cnorm::Delimiter d = cnorm::parse_delimiter(v);
      if (!seen.insert(d.name).second)
        throw UsageError(where, "delimiter '" + d.name + "' given twice");
      s.delimiters.push_back(d.name);
    }
  } else if (dimension == "p") {
    s.ps.clear();
    for (const auto& v : vals) s.ps.push_back(parse_p(v, where));
  } else if (dimension == "format") {
    s.formats.clear();
    for (const auto& v : vals) {
      if (std::find(format_names().begin(), format_names().end(), v) == format_names().end())
        throw UsageError(where, "unknown format '" + v + "' (plain, json, markdown, yaml, html)");
      s.formats.push_back(v);
    }
  } else if (dimension == "order") {
    s.orders.clear();
    for (const auto& v : vals) s.orders.push_back(parse_order(v));
  } else if (dimension == "k") {
    s.ks.clear();
    for (const auto& v : vals) s.ks.push_back(parse_k(v, where));
  } else if (dimension == "spotlight") {
    s.spotlight.clear();
    for (const auto& v : vals) s.spotlight.push_back(parse_spotlight_value(v));
  } else {
    throw UsageError("space", "unknown dimension '" + printable(excerpt(dimension)) +
                                  "' (delimiter, p, format, order, k, spotlight)");
  }
  // A value given twice is refused in every dimension, as a delimiter is (pass 20: repeated p,
  // format, order and k values were searched as aliases and counted against the candidate cap).
  const auto once = [&](const std::vector<std::string>& names) {
    std::set<std::string> seen;
    for (const std::string& n : names)
      if (!seen.insert(n).second)
        throw UsageError(where, "'" + printable(excerpt(n)) + "' given twice");
  };
  std::vector<std::string> names;
  if (dimension == "p")
    for (double p : s.ps) {
      char buf[32];
      std::snprintf(buf, sizeof buf, "%.17g", p);
      names.push_back(buf);
    }
  else if (dimension == "format")
    names = s.formats;
  else if (dimension == "order")
    for (Order o : s.orders) names.push_back(order_name(o));
  else if (dimension == "k")
    for (auto k : s.ks) names.push_back(k == 0 ? "all" : std::to_string(k));
  else if (dimension == "spotlight")
    for (const auto& v : s.spotlight) names.push_back(spotlight_value_name(v));
  once(names);
}

Space space_from_json(const nlohmann::json& j, Space base, const std::string& where) {
  if (!j.is_object()) throw UsageError(where, "a space is an object of value lists");
  for (const auto& [key, value] : j.items()) {
    // A key whose value is null (YAML's `k:`) is a key not given: the dimension keeps its default
    // (base/json_keys.h; pass 19: "k: must be a non-empty array").
    if (value.is_null()) continue;
    if (key == "format_seed") {
      long long x = 0;  // 2.0 as 2 (base/json_number.h)
      if (!json_whole_number(value, x) || x < 0)
        throw UsageError(where, "format_seed: must be a non-negative integer");
      base.format_seed = uint64_t(x);
      continue;
    }
    static const std::set<std::string> kDimensions = {"delimiter", "p", "format",
                                                      "order",     "k", "spotlight"};
    if (!kDimensions.count(key))  // said once (pass 19: "sp.json: K: space: unknown dimension")
      throw UsageError(where, "unknown dimension '" + printable(excerpt(key)) +
                                  "' (delimiter, p, format, order, k, spotlight, format_seed)");
    try {
      set_dimension(base, key, json_values(value, where + ": " + key));
    } catch (const OptionError& e) {  // its key is the dimension's: said once
      throw UsageError(where + ": " + key + ": " + e.why());
    } catch (const UsageError& e) {
      // set_dimension's own "space: <dimension>: " is the file's "<file>: <dimension>: " here
      // (pass 20: "spx.json: p: space: p: '0x1p-1' is not a number").
      std::string msg = e.what();
      const std::string own = "space: " + key + ": ";
      if (msg.rfind(own, 0) == 0) msg = msg.substr(own.size());
      throw UsageError(msg.rfind(where, 0) == 0 ? msg : where + ": " + key + ": " + msg);
    }
  }
  return base;
}

Space load_space_file(const std::string& path, Space base) {
  const bool json = path.size() >= 5 && path.compare(path.size() - 5, 5, ".json") == 0;
  if (json) {
    // A key twice in one object is refused there too.
    return space_from_json(read_settings_json_file(path, "space"), std::move(base), path);
  }
  // Bounded as every text file (64 MiB): a space of that size is already far past kMaxCandidates.
  const std::string text = read_file_bytes(path, kMaxTextFileBytes, "space file");
  nlohmann::json j;
  try {
    // The conversion inside the try too: whatever yaml-cpp refuses there (a conversion it
    // cannot make) is a bad space file with its line, not an internal error (exit 1).
    j = yaml_to_json(load_yaml_text(text));
  } catch (const YAML::Exception& e) {
    throw UsageError(e.mark.is_null() ? path : path + ":" + std::to_string(e.mark.line + 1),
                     "not a YAML space: " + e.msg);
  }
  return space_from_json(j, std::move(base), path);
}

std::string describe_space(const Space& s, Task t) {
  nlohmann::ordered_json j = space_to_json(s);
  std::string out;
  for (const auto& [k, v] : j.items()) {
    if (k == "format_seed") continue;
    std::string vals;
    for (const auto& x : v) {
      if (!vals.empty()) vals += ", ";
      if (x.is_string())
        vals += x.get<std::string>();
      else if (k == "k" && x.get<int64_t>() == 0)
        vals += "all";
      else
        vals += x.is_number_integer() ? std::to_string(x.get<int64_t>()) : number(x.get<double>());
    }
    out += "      " + k + ": " + vals + "\n";
  }
  out += "      = " + std::to_string(candidates(s, t).size()) + " candidates";
  return out;
}

}  // namespace ragform::tune
