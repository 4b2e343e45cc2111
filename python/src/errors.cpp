// Library exceptions -> Python exceptions, with the message the CLI prints after "ragform: "
// (base/error.h, cli/main.cpp): bad input (UsageError, a malformed data row or record) ->
// ValueError; a file that cannot be opened (FileError) -> OSError with its errno, so Python picks
// FileNotFoundError / PermissionError / IsADirectoryError; a capability the reader lacks
// (NotSupported) -> NotImplementedError (a RuntimeError); any other ragform::Error or C++
// exception -> RuntimeError. Nothing escapes to terminate the interpreter. Every message is
// valid UTF-8 (invalid bytes quoted from input become U+FFFD), so none is lost.
#include <new>

#include "base/error.h"
#include "base/excerpt.h"
#include "base/memory_limit.h"
#include "bindings.h"
#include "engine/runtime/steering.h"
#include "eval/jsonl.h"
#include "text/utf8.h"

namespace ragform::py {

namespace {

// A message as Python can hold it: bounded and redacted as the CLI prints it (base/excerpt.h),
// and valid UTF-8 (text/utf8.h's U+FFFD rule). A message quoting a server's bytes ("last read:
// '\xff'") is not UTF-8; PyErr_SetString could not decode it and raised the exception with no
// message at all.
std::string message_of(const std::exception& e) {
  return text::repair_utf8(bounded_message(e.what()));
}

void raise_os_error(const FileError& e) {
  if (e.error_code() == 0) {
    PyErr_SetString(PyExc_OSError, message_of(e).c_str());
    return;
  }
  // OSError(errno, message): Python maps the errno to the matching subclass.
  pyb::tuple args = pyb::make_tuple(e.error_code(), message_of(e));
  PyErr_SetObject(PyExc_OSError, args.ptr());
}

}  // namespace

void bind_errors(pyb::module_& m) {
  pyb::register_exception_translator([](std::exception_ptr p) {
    // Messages as the CLI prints them: bounded, URL credentials redacted (base/excerpt.h).
    auto text = [](const std::exception& e) { return message_of(e); };
    try {
      if (p) std::rethrow_exception(p);
    } catch (const FileError& e) {
      raise_os_error(e);
    } catch (const runtime::SteerError& e) {
      // A steering refusal names the steering object's key, wherever it was found (the dict, or
      // the engine against the model and prompt): Python says the key of Reader.steering's dict.
      const std::string msg = e.spelled([](const std::string& key) {
        return key.empty() ? std::string("steering") : "steering['" + key + "']";
      });
      PyErr_SetString(PyExc_ValueError, text::repair_utf8(bounded_message(msg)).c_str());
    } catch (const UsageError& e) {
      PyErr_SetString(PyExc_ValueError, text(e).c_str());
    } catch (const NotSupported& e) {
      PyErr_SetString(PyExc_NotImplementedError, text(e).c_str());
    } catch (const eval::DataError& e) {
      // A data file that cannot be opened is a file error; any other is malformed input.
      const bool open_failed = e.line() == 0 && e.reason().rfind("cannot open", 0) == 0;
      PyErr_SetString(open_failed ? PyExc_OSError : PyExc_ValueError, text(e).c_str());
    } catch (const eval::RowError& e) {
      PyErr_SetString(PyExc_ValueError, text(e).c_str());
    } catch (const Error& e) {
      PyErr_SetString(PyExc_RuntimeError, text(e).c_str());
    } catch (const std::bad_alloc&) {
      PyErr_SetString(PyExc_MemoryError, out_of_memory_message().c_str());
    }
    // pybind11's own exceptions and any other std::exception fall through to pybind11's default
    // translators (std::exception -> RuntimeError).
  });
  (void)m;
}

}  // namespace ragform::py
