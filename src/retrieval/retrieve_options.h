// `retrieve`'s options, declared once (base/options.h): the CLI's -k/--top-k and --mode
// (cli/cmd_retrieve.cpp through cli/option_flags.h) and the "k" and "mode" fields of the server's
// /v1/retrieve (server/api_retrieve.cpp through api_json.h read_declared, its API document through
// declared_schema) come from visit(); the initial values are the defaults. The server bounds k
// further by its own reply limit (api_json.h kMaxRetrieveK); parse_mode (retriever.h) checks mode.
#pragma once
#include <cstdint>
#include <string>

#include "base/options.h"

namespace ragform::retrieval {

struct RetrieveRequest {
  int64_t k = 20;
  std::string mode = "bm25";

  template <class V>
  void visit(V&& v) {
    v(OptionDecl{"k", "-k,--top-k", "N", "passages per question"}.count(1, 100000), k);
    v(OptionDecl{"mode", "--mode", "M", "bm25, dense or hybrid"}, mode);
  }
};

}  // namespace ragform::retrieval
