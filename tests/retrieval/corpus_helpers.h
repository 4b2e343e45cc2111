// What the corpus and index-build tests share: the message a call fails with, and every passage
// a corpus file holds as the CorpusReader reads it.
#pragma once
#include <exception>
#include <filesystem>
#include <functional>
#include <string>
#include <vector>

#include "retrieval/corpus.h"

namespace ragform::testing {

// The what() of the exception f throws, "(no error)" when it throws none.
inline std::string error_of(const std::function<void()>& f) {
  try {
    f();
  } catch (const std::exception& e) {
    return e.what();
  }
  return "(no error)";
}

inline std::vector<retrieval::Passage> read_all(const std::filesystem::path& p) {
  retrieval::CorpusReader r(p.string());
  std::vector<retrieval::Passage> out;
  retrieval::Passage x;
  while (r.next(x)) out.push_back(x);
  return out;
}

}  // namespace ragform::testing
