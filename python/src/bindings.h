// Shared helpers of the _ragform extension module (docs/python.md): the per-area binders, JSON
// <-> Python conversion, numpy arrays that own the engine's buffers, and the Ctrl-C check of long
// loops. The bindings wrap the library's own functions; they compute nothing themselves.
#pragma once
#include <pybind11/numpy.h>
#include <pybind11/pybind11.h>

#include <cstring>
#include <functional>
#include <limits>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "base/error.h"
#include "base/run_hooks.h"

namespace ragform::reader {
class Reader;
}

namespace ragform::py {

namespace pyb = pybind11;

void bind_errors(pyb::module_& m);
void bind_engine(pyb::module_& m);
void bind_pipelines(pyb::module_& m);
void bind_pipelines_cnorm(pyb::module_& m);
void bind_pipelines_sure(pyb::module_& m);
void bind_store(pyb::module_& m);
void bind_py_reader(pyb::module_& m);

// The reader a pipeline function was given (`model=` / `reader=`): a ragform.Model or
// OpenAIReader as it is, any other object with generate(prompts, params) through the Python
// reader protocol (py_reader.cpp); anything else is a UsageError naming `arg`. With the GIL held.
std::shared_ptr<reader::Reader> reader_arg(const pyb::handle& obj, const char* arg);

// Before a verb starts: a Python reader (py_reader.cpp) must have every method of `methods` the
// verb calls beside generate, or NotSupported names them all at once ("cnorm.calibrate needs
// tokenize and attention from the reader MyReader; it has neither"). Other readers pass. With the
// GIL held.
void require_methods(const reader::Reader& r, const std::vector<std::string>& methods,
                     const std::string& verb);

// Python objects (dicts, lists, str, numbers, bool, None) <-> JSON, through Python's json module so
// that both sides agree on every corner (non-string keys, NaN: rejected by allow_nan=False);
// numpy's scalars and arrays become numbers and lists. `what` names the argument in the TypeError
// or ValueError of a value that is not JSON.
nlohmann::json to_json(const pyb::handle& obj, const std::string& what = "");
pyb::object from_json(const nlohmann::json& j);
pyb::object from_json(const nlohmann::ordered_json& j);

// A numpy array over `v`'s storage without a copy: the vector moves into a capsule that the array
// holds as its base object, so the buffer lives exactly as long as the array.
template <typename T>
pyb::array_t<T> to_numpy(std::vector<T>&& v, std::vector<pyb::ssize_t> shape) {
  auto* owned = new std::vector<T>(std::move(v));
  pyb::capsule base(owned, [](void* p) { delete static_cast<std::vector<T>*>(p); });
  return pyb::array_t<T>(std::move(shape), owned->data(), base);
}

// Runs a library parser on a user's argument. Some parsers below the front ends throw the plain
// ragform::Error that the CLI reports with exit code 1 (model::parse_pooling, sure::parse_date);
// from Python the argument is bad input, so the error becomes a UsageError (ValueError) with the
// same message. File errors and usage errors pass through unchanged.
template <typename F>
auto parse_arg(F&& f) -> decltype(f()) {
  try {
    return f();
  } catch (const UsageError&) {
    throw;
  } catch (const FileError&) {
    throw;
  } catch (const Error& e) {
    throw UsageError(e.what());
  }
}

// Called between the items of a long loop that runs with the GIL released: takes the GIL, calls
// `progress(done, total)` when a callable was given, and throws pybind11::error_already_set when a
// signal handler raised (Ctrl-C: KeyboardInterrupt), so the loop stops between two items, never
// inside a store write. Holds the callable borrowed (no reference counting without the GIL): the
// caller's argument keeps it alive.
class LoopHook {
 public:
  LoopHook(pyb::handle progress, size_t total) : progress_(progress), total_(total) {}
  void step(size_t done) const { step_of(done, total_); }
  void step_of(size_t done, size_t total) const;

 private:
  pyb::handle progress_;
  size_t total_;
};

// Notes-free run hooks over `hook`: Ctrl-C and the progress callback whenever a stage begins or
// advances (between two batches of a pipeline, two passes of tune), for every Python verb that
// runs a pipeline with the GIL released. `hook` must outlive the hooks.
RunHooks loop_hooks(const LoopHook& hook);

// A bool, Python's or numpy's (np.bool_ has __index__: it would pass as the integer 0 or 1).
inline bool is_any_bool(const pyb::handle& obj) {
  if (PyBool_Check(obj.ptr())) return true;
  const char* t = Py_TYPE(obj.ptr())->tp_name;
  return std::strcmp(t, "numpy.bool_") == 0 || std::strcmp(t, "numpy.bool") == 0;
}

// An integer as Python has it: an int or anything with __index__ (numpy's integers), not a bool
// (np.int64(2) was refused as "expected an integer, got 2", True taken as 1: pass 7).
// A numpy array is not one (every ndarray has __index__, which fails unless it is a 0-d integer
// array, with numpy's own message naming no argument: pass 9).
inline bool is_integer(const pyb::handle& obj) {
  return !is_any_bool(obj) && PyIndex_Check(obj.ptr()) && !PyFloat_Check(obj.ptr()) &&
         std::strcmp(Py_TYPE(obj.ptr())->tp_name, "numpy.ndarray") != 0;
}

// A float as Python has it: a float or numpy's floating scalars (np.float32(0.5) was refused as
// "expected a number, got 0.5": pass 9; np.float64 is a float subclass).
inline bool is_real(const pyb::handle& obj) {
  if (PyFloat_Check(obj.ptr())) return true;
  const char* t = Py_TYPE(obj.ptr())->tp_name;
  return std::strcmp(t, "numpy.float16") == 0 || std::strcmp(t, "numpy.float32") == 0 ||
         std::strcmp(t, "numpy.longdouble") == 0;
}

// An integer argument of a bound function (Model.hidden's layer, token_piece's id): is_integer and
// within T's range; pybind11's own int caster takes True as 1. A value refused here is pybind11's
// "incompatible function arguments", which ragform._text.checked names ("layer: expected an
// integer, got bool").
template <class T>
struct Int {
  T value;
  operator T() const { return value; }
};

}  // namespace ragform::py

namespace pybind11::detail {
template <class T>
struct type_caster<ragform::py::Int<T>> {
  PYBIND11_TYPE_CASTER(ragform::py::Int<T>, const_name("int"));
  bool load(handle src, bool) {
    if (!src || !ragform::py::is_integer(src)) return false;
    object i = reinterpret_steal<object>(PyNumber_Index(src.ptr()));
    if (!i) {
      PyErr_Clear();
      return false;
    }
    int overflow = 0;
    const long long v = PyLong_AsLongLongAndOverflow(i.ptr(), &overflow);
    if (overflow != 0 || v < (long long)std::numeric_limits<T>::min() ||
        v > (long long)std::numeric_limits<T>::max())
      return false;
    value.value = T(v);
    return true;
  }
  static handle cast(ragform::py::Int<T> src, return_value_policy, handle) {
    return PyLong_FromLongLong((long long)src.value);
  }
};
}  // namespace pybind11::detail
