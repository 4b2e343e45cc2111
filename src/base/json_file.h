// A whole JSON document read from a file (a calibration profile, word vectors, an index's
// metadata), with the two failures a user can act on named the same way everywhere: the file
// cannot be read (FileError "<path>: <strerror>", so the Python module raises FileNotFoundError /
// PermissionError) and the text is not JSON (Error "<path>: <what> is not valid JSON: parse error
// at line L, column C: ..."). What the document must hold is the caller's to check.
#pragma once
#include <string>

#include <nlohmann/json.hpp>

namespace ragform {

// `what` names the document in the message ("profile", "word vectors", "dense index metadata").
nlohmann::json read_json_file(const std::string& path, const std::string& what);

}  // namespace ragform
