// Private to the loaders (datasets.cpp, loaders_*.cpp): typed access to the fields of a JSON
// record. Every accessor throws RowError with the field's path and what was wrong ("missing field
// 'question'", "field 'answers[1]': expected string, got number"), so the reader can prefix file
// and line.
#pragma once
#include <climits>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "base/json_file.h"
#include "eval/datasets.h"
#include "eval/jsonl.h"

namespace ragform::eval::fields {

using nlohmann::json;

inline std::string at(const std::string& parent, const std::string& name) {
  return parent.empty() ? name : parent + "." + name;
}
inline std::string at(const std::string& parent, size_t i) {
  return parent + "[" + std::to_string(i) + "]";
}

[[noreturn]] inline void wrong_type(const std::string& path, const char* expected, const json& v) {
  throw RowError("field '" + path + "': expected " + expected + ", got " + v.type_name());
}

// obj[name], which must exist (null counts as present; the typed accessors reject it).
inline const json& need(const json& obj, const std::string& name, const std::string& parent = "") {
  auto it = obj.find(name);
  if (it == obj.end()) throw RowError("missing field '" + at(parent, name) + "'");
  return *it;
}
// obj[name] or nullptr when absent or null.
inline const json* find(const json& obj, const std::string& name) {
  auto it = obj.find(name);
  return it == obj.end() || it->is_null() ? nullptr : &*it;
}

inline std::string as_string(const json& v, const std::string& path) {
  if (!v.is_string()) wrong_type(path, "string", v);
  return v.get<std::string>();
}
inline std::string need_string(const json& obj, const std::string& name,
                               const std::string& parent = "") {
  return as_string(need(obj, name, parent), at(parent, name));
}
// Absent or null -> fallback; any other non-string is an error.
inline std::string opt_string(const json& obj, const std::string& name,
                              const std::string& parent = "", const std::string& fallback = "") {
  const json* v = find(obj, name);
  return v ? as_string(*v, at(parent, name)) : fallback;
}
// An identifier: string, or an integer printed in decimal. Absent or null -> nullopt.
inline std::optional<std::string> opt_id(const json& obj, const std::string& name,
                                         const std::string& parent = "") {
  const json* v = find(obj, name);
  if (!v) return std::nullopt;
  if (v->is_string()) return v->get<std::string>();
  if (v->is_number_integer()) return v->dump();
  wrong_type(at(parent, name), "string or integer", *v);
}

inline std::vector<std::string> as_string_list(const json& v, const std::string& path) {
  if (!v.is_array()) wrong_type(path, "array of strings", v);
  std::vector<std::string> out;
  out.reserve(v.size());
  for (size_t i = 0; i < v.size(); ++i) out.push_back(as_string(v[i], at(path, i)));
  return out;
}
inline std::vector<std::string> need_string_list(const json& obj, const std::string& name,
                                                 const std::string& parent = "") {
  return as_string_list(need(obj, name, parent), at(parent, name));
}

// A gold-answer list: an answer that is blank (empty or only whitespace) is a RowError, since it
// normalises to "" and the substring metric (text/metrics.h) would grade every output correct.
inline void check_answer(const std::string& a, const std::string& path) {
  if (a.find_first_not_of(" \t\n\r\f\v") == std::string::npos)
    throw RowError("field '" + path + "': a blank answer would grade every output correct");
}
inline std::vector<std::string> need_answer_list(const json& obj, const std::string& name) {
  std::vector<std::string> out = need_string_list(obj, name);
  for (size_t i = 0; i < out.size(); ++i) check_answer(out[i], at(name, i));
  return out;
}
inline std::string need_answer(const json& obj, const std::string& name) {
  std::string a = need_string(obj, name);
  check_answer(a, name);
  return a;
}

inline const json& need_array(const json& obj, const std::string& name,
                              const std::string& parent = "") {
  const json& v = need(obj, name, parent);
  if (!v.is_array()) wrong_type(at(parent, name), "array", v);
  return v;
}
inline const json& need_object(const json& obj, const std::string& name,
                               const std::string& parent = "") {
  const json& v = need(obj, name, parent);
  if (!v.is_object()) wrong_type(at(parent, name), "object", v);
  return v;
}

inline std::optional<bool> opt_bool(const json& obj, const std::string& name,
                                    const std::string& parent = "") {
  const json* v = find(obj, name);
  if (!v) return std::nullopt;
  if (!v->is_boolean()) wrong_type(at(parent, name), "boolean", *v);
  return v->get<bool>();
}

inline long long as_int(const json& v, const std::string& path) {
  if (!v.is_number_integer()) wrong_type(path, "integer", v);
  return v.get<long long>();
}
// An integer that fits an int (a larger one is an error, never truncated).
inline int as_int32(const json& v, const std::string& path) {
  if (!v.is_number_integer()) wrong_type(path, "integer", v);
  const bool fits = v.is_number_unsigned()
                        ? v.get<unsigned long long>() <= (unsigned long long)INT_MAX
                        : v.get<long long>() >= INT_MIN && v.get<long long>() <= INT_MAX;
  if (!fits)
    throw RowError("field '" + path + "': " + json_excerpt(v) + " is out of range for an int");
  return int(v.get<long long>());
}

// A number, or a string holding one (DPR-style retrievers write scores as strings).
inline std::optional<double> opt_number(const json& obj, const std::string& name,
                                        const std::string& parent = "") {
  const json* v = find(obj, name);
  if (!v) return std::nullopt;
  if (v->is_number()) return v->get<double>();
  if (v->is_string()) {
    const std::string& s = v->get_ref<const std::string&>();
    try {
      size_t used = 0;
      double d = std::stod(s, &used);
      if (used == s.size()) return d;
    } catch (const std::exception&) {
    }
    throw RowError("field '" + at(parent, name) + "': expected a number, got string \"" + s + "\"");
  }
  wrong_type(at(parent, name), "number", *v);
}

// The record's id: `id` (or `_id`), else the JSON-object key, else "<format>:<line>".
inline std::string record_id(const json& row, Format f, const RowOrigin& origin) {
  if (auto id = opt_id(row, "id")) return *id;
  if (auto id = opt_id(row, "_id")) return *id;
  if (!origin.key.empty()) return origin.key;
  return std::string(format_name(f)) + ":" + std::to_string(origin.line);
}

}  // namespace ragform::eval::fields

namespace ragform::eval::loaders {
// One converter per format (loaders_qa.cpp, loaders_structured.cpp). `id` is fields::record_id.
QaRecord litm_qa(const nlohmann::json& row, const std::string& id);
QaRecord nq_open(const nlohmann::json& row, const std::string& id);
QaRecord flashrag(const nlohmann::json& row, const std::string& id);
QaRecord poisonedrag(const nlohmann::json& row, const std::string& id);
QaRecord hotpotqa(const nlohmann::json& row, const std::string& id);
QaRecord litm_kv(const nlohmann::json& row, const std::string& id);
QaRecord longbench_v2(const nlohmann::json& row, const std::string& id);
}  // namespace ragform::eval::loaders
