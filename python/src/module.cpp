// The _ragform extension module: the C++ half of the `ragform` Python package (python/ragform/
// holds the pure-Python half and re-exports these names). One binder per area.
#include "bindings.h"

#include <memory>
#include <utility>

#include "base/json_file.h"
#include "ragform_version.h"

namespace ragform::py {

void bind_tune(pyb::module_& m);  // tune.cpp: ragform.present
void bind_bias(pyb::module_& m);  // bias.cpp: ragform.bias
void bind_tune_search(pyb::module_& m);
void bind_options(pyb::module_& m);  // options.cpp: ragform._ragform.options

nlohmann::json to_json(const pyb::handle& obj, const std::string& what) {
  // Leaked on purpose: a static pybind11::object would be released after the interpreter ends.
  static const pyb::handle dumps =
      pyb::object(pyb::module_::import("json").attr("dumps")).release();
  // numpy's scalars and arrays as Python's numbers and lists (a record holding np.int64 was
  // "Object of type int64 is not JSON serializable"); anything else not JSON is named.
  static const pyb::handle numbers =
      pyb::cpp_function([](const pyb::handle& o) -> pyb::object {
        const std::string type = Py_TYPE(o.ptr())->tp_name;
        if (type.rfind("numpy.", 0) == 0 && pyb::hasattr(o, "tolist")) return o.attr("tolist")();
        throw pyb::type_error("a value of type " + type +
                              " is not JSON (a str, number, bool, "
                              "None, list or dict)");
      }).release();
  std::string s;
  try {
    s = pyb::str(dumps(obj, pyb::arg("allow_nan") = false, pyb::arg("default") = numbers));
  } catch (pyb::error_already_set& e) {
    // json's own words ("Out of range float values are not JSON compliant"), naming the argument.
    if (what.empty() || !(e.matches(PyExc_TypeError) || e.matches(PyExc_ValueError))) throw;
    const bool type_error = e.matches(PyExc_TypeError);
    const std::string msg = what + ": " + pyb::str(e.value()).cast<std::string>();
    if (type_error) throw pyb::type_error(msg);
    throw pyb::value_error(msg);
  }
  return parse_json_text(s);  // bounded depth, like every input
}

pyb::object from_json(const nlohmann::json& j) {
  static const pyb::handle loads =
      pyb::object(pyb::module_::import("json").attr("loads")).release();
  return loads(j.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace));
}

pyb::object from_json(const nlohmann::ordered_json& j) {
  static const pyb::handle loads =
      pyb::object(pyb::module_::import("json").attr("loads")).release();
  return loads(j.dump(-1, ' ', false, nlohmann::ordered_json::error_handler_t::replace));
}

void LoopHook::step_of(size_t done, size_t total) const {
  pyb::gil_scoped_acquire gil;
  if (PyErr_CheckSignals() != 0) throw pyb::error_already_set();
  if (progress_ && !progress_.is_none()) progress_(done, total);
}

RunHooks loop_hooks(const LoopHook& hook) {
  RunHooks h;
  auto state = std::make_shared<std::pair<size_t, size_t>>(0, 0);  // done, total
  h.begin = [state, &hook](const std::string&, uint64_t total) {
    *state = {0, size_t(total)};
    hook.step_of(0, state->second);
  };
  h.advance = [state, &hook](uint64_t n) {
    state->first += size_t(n);
    hook.step_of(state->first, state->second);
  };
  return h;
}

}  // namespace ragform::py

PYBIND11_MODULE(_ragform, m) {
  m.doc() = "ragform's engine, readers, pipelines and run store (C++); use the ragform package.";
  m.attr("__version__") = RAGFORM_VERSION;
  m.attr("git") = RAGFORM_GIT;
  ragform::py::bind_errors(m);
  ragform::py::bind_engine(m);
  ragform::py::bind_pipelines(m);
  ragform::py::bind_pipelines_cnorm(m);
  ragform::py::bind_pipelines_sure(m);
  ragform::py::bind_store(m);
  ragform::py::bind_tune(m);
  ragform::py::bind_py_reader(m);
  ragform::py::bind_bias(m);
  ragform::py::bind_tune_search(m);
  ragform::py::bind_options(m);
}
