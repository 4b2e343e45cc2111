// Python's spelling of a verb's declared options (base/options.h): keyword arguments assigned to
// the fields of the verb's argument struct with the declared kinds and ranges, and the declaration
// as data (ragform._ragform.options(verb)), from which each python/ragform wrapper builds its
// signature: no wrapper holds a default of its own. A value of the wrong type is a TypeError, one
// out of range an OptionError (ValueError "<key>: value out of range: ..."), both naming the key.
#pragma once
#include <pybind11/pybind11.h>

#include <cmath>
#include <limits>
#include <optional>
#include <string>
#include <type_traits>
#include <vector>

#include "base/excerpt.h"
#include "base/options.h"
#include "bindings.h"

namespace ragform::py {

namespace detail {

// A wrong value as a TypeError shows it: a container by its type and size (the repr of a list of
// 160,000 records took 4 s and 460 MB to build a 100 MB message), anything else by its repr cut
// to an excerpt.
inline std::string shown_value(const pyb::handle& obj) {
  if (pyb::isinstance<pyb::list>(obj) || pyb::isinstance<pyb::tuple>(obj) ||
      pyb::isinstance<pyb::dict>(obj) || pyb::isinstance<pyb::set>(obj))
    return "a " + pyb::str(pyb::type::of(obj).attr("__name__")).cast<std::string>() + " of " +
           std::to_string(pyb::len(obj)) + " items";
  return excerpt(pyb::repr(obj).cast<std::string>());
}

// An integer's value as a Python int (is_integer(obj): numpy's become Python's).
inline pyb::int_ index_of(const pyb::handle& obj) {
  auto i = pyb::reinterpret_steal<pyb::int_>(PyNumber_Index(obj.ptr()));
  if (!i) throw pyb::error_already_set();
  return i;
}

// An integer (is_integer) as a double, +-infinity beyond a double's range (PyLong_AsDouble's
// OverflowError, which named no argument: pass 9), so range checks refuse it in words.
inline double int_as_double(const pyb::handle& obj) {
  const pyb::int_ i = index_of(obj);
  const double v = PyLong_AsDouble(i.ptr());
  if (v == -1.0 && PyErr_Occurred()) {
    PyErr_Clear();
    return PyObject_RichCompareBool(i.ptr(), pyb::int_(0).ptr(), Py_LT) == 1 ? -INFINITY : INFINITY;
  }
  return v;
}

// The value of `obj` for the option `d` as a field of type T (not optional).
template <class T>
T keyword_value(const OptionDecl& d, const pyb::handle& obj) {
  auto wrong = [&](const char* want) {
    throw pyb::type_error(d.key + ": expected " + want + ", got " + shown_value(obj));
  };
  if constexpr (std::is_same_v<T, bool>) {
    if (!pyb::isinstance<pyb::bool_>(obj)) wrong("True or False");
    return obj.cast<bool>();
  } else if constexpr (std::is_same_v<T, std::string>) {
    pyb::object v = pyb::reinterpret_borrow<pyb::object>(obj);
    if (pyb::hasattr(v, "__fspath__")) v = pyb::module_::import("os").attr("fspath")(v);
    if (!pyb::isinstance<pyb::str>(v)) wrong("a str");
    return v.cast<std::string>();
  } else if constexpr (std::is_same_v<T, std::vector<std::string>>) {
    if (pyb::isinstance<pyb::str>(obj)) {
      const std::string text = obj.cast<std::string>();
      if (d.repeat) return {text};  // one value, as one use of the CLI's flag
      if (d.split) return d.split(d.key, text);
      std::vector<std::string> out;
      size_t from = 0;
      for (size_t at; (at = text.find(',', from)) != std::string::npos; from = at + 1)
        out.push_back(text.substr(from, at - from));
      out.push_back(text.substr(from));
      return out;
    }
    // A list is never split: {"delims": [",", "a,b"]} is two values.
    if (!pyb::isinstance<pyb::list>(obj) && !pyb::isinstance<pyb::tuple>(obj))
      wrong(d.repeat ? "a str or a list of strs" : "a list of values or a comma-separated str");
    // Each value a str, or for a list of the CLI's values (heads=[0, 1], p=[0.5]) a number as its
    // text; anything else is refused, not written as its repr (stop=[b"girl"] stopped at the text
    // "b'girl'", that is never: pass 7).
    std::vector<std::string> out;
    for (const pyb::handle& x : obj) {
      const bool number =
          !d.repeat && (is_integer(x) || (PyFloat_Check(x.ptr()) && !is_any_bool(x)));
      if (!pyb::isinstance<pyb::str>(x) && !number)
        throw pyb::type_error(d.key + "[" + std::to_string(out.size()) + "]: expected a str" +
                              (d.repeat ? "" : " or a number") + ", got " +
                              pyb::str(pyb::type::of(x).attr("__name__")).cast<std::string>());
      out.push_back(is_integer(x) ? pyb::str(pyb::object(index_of(x))).cast<std::string>()
                                  : pyb::str(x).cast<std::string>());
    }
    return out;
  } else if constexpr (std::is_floating_point_v<T>) {
    if (!is_integer(obj) && (is_any_bool(obj) || !is_real(obj))) wrong("a number");
    // An int beyond a double (2**1024) is out of every range, not Python's OverflowError.
    const double v = is_integer(obj) ? int_as_double(obj) : PyFloat_AsDouble(obj.ptr());
    check_option_range(d, v);  // NaN and infinities are out of every range
    if (!std::isfinite(v)) throw OptionError(d.key, "expected a finite number");
    return T(v);
  } else {
    static_assert(std::is_integral_v<T>, "a declared option's field must be a number");
    if (!is_integer(obj)) wrong("an integer");
    // Any Python int (or numpy's, as its int): one past the int64 range is still a number, and
    // out of range.
    const pyb::int_ i = index_of(obj);
    const std::string text = pyb::str(pyb::object(i)).cast<std::string>();
    check_option_range(d, int_as_double(i), text);
    // A declared upper end at int64's largest value is that value exactly: as a double it is
    // 2**63, which let 2**63 through where the CLI and the server stop at 2**63 - 1 (pass 12).
    if (d.has_range() && d.hi >= 0x1p63) {
      int overflow = 0;
      PyLong_AsLongLongAndOverflow(i.ptr(), &overflow);
      PyErr_Clear();
      if (overflow > 0)
        throw OptionError(d.key, "value too large: " + text +
                                     " (largest accepted: " + option_number_text(d.hi) + ")");
    }
    // Then exactly T's range, the value named (a double's cut at 9.2e18 refused 2**63 - 1 as
    // "value out of range": pass 9).
    const auto out_of_range = [&] {
      PyErr_Clear();
      return OptionError(d.key, text + " is out of range (" +
                                    std::to_string(std::numeric_limits<T>::min()) + ".." +
                                    std::to_string(std::numeric_limits<T>::max()) + ")");
    };
    if constexpr (std::is_unsigned_v<T>) {
      const unsigned long long u = PyLong_AsUnsignedLongLong(i.ptr());
      if (PyErr_Occurred() || u > std::numeric_limits<T>::max()) throw out_of_range();
      return T(u);
    } else {
      int overflow = 0;
      const long long v = PyLong_AsLongLongAndOverflow(i.ptr(), &overflow);
      if (overflow != 0 || PyErr_Occurred() || v < std::numeric_limits<T>::min() ||
          v > std::numeric_limits<T>::max())
        throw out_of_range();
      return T(v);
    }
  }
}

}  // namespace detail

// Assigns every keyword of `kw` to its declared field of `s`; None leaves the default. A keyword
// that is not declared is a TypeError naming it (`verb`: the function's name, for the message).
template <class S>
void bind_keywords(S& s, const pyb::dict& kw, const std::string& verb) {
  std::vector<std::string> known;
  s.visit([&](const OptionDecl& decl, auto& field) {
    // Python's spelling of the key, in the keyword and in its errors ("lam: ..." for "lambda").
    OptionDecl d = decl;
    d.key = decl.python_key();
    known.push_back(d.key);
    if (!kw.contains(d.key.c_str())) return;
    const pyb::handle v = kw[d.key.c_str()];
    if (v.is_none()) return;
    using F = std::remove_cvref_t<decltype(field)>;
    if constexpr (requires { field.has_value(); })
      field = detail::keyword_value<typename F::value_type>(d, v);
    else
      field = detail::keyword_value<F>(d, v);
  });
  for (const auto& [k, v] : kw) {
    const std::string key = pyb::str(k).cast<std::string>();
    if (std::find(known.begin(), known.end(), key) == known.end())
      throw pyb::type_error(verb + "() got an unexpected keyword argument '" + key + "'");
  }
}

// The library's OptionError about a field of S with the key as Python spells it (the declared
// `.py(...)` spelling: "lam: ..." where the library says "lambda: ...").
template <class S>
OptionError python_spelled(const OptionError& e) {
  S s;
  std::string key = e.key();
  s.visit([&](const OptionDecl& d, const auto&) {
    if (d.key == e.key()) key = d.python_key();
  });
  return OptionError(key, e.why());
}

// The declaration as a list of dicts {key, keyword, flag, kind, default, min, max, required,
// positional, help, unset, env} (keyword: Python's spelling of key): default is the field's initial
// value as Python spells it (None for an unset optional, an empty str unless the declaration makes
// "" a value, or an empty list); env the CLI's variable for it (None when none).
pyb::list options_list(const std::vector<OptionInfo>& infos);

}  // namespace ragform::py
