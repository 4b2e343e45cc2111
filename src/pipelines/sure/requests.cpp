#include "pipelines/sure/requests.h"

#include "base/error.h"

namespace ragform::sure {

PerturbSetup perturb_options(PerturbRequest req) {
  check_options(req);
  PerturbSetup s;
  for (const std::string& k : req.kinds) s.kinds += (s.kinds.empty() ? "" : ",") + k;
  (void)select_kinds(s.kinds);  // an unknown kind fails before any input is read
  PerturbOptions& po = s.options;
  po.max_docs = int(req.docs);
  po.rules.seed = uint64_t(req.seed);
  po.rules.knowledge_cutoff = req.cutoff;
  try {
    parse_date(req.cutoff);  // fail early on a bad date
  } catch (const Error& e) {
    throw OptionError("cutoff", "expected a date YYYY-MM-DD, got '" + req.cutoff + "'");
  }
  po.llm.max_tokens = int(req.max_tokens);
  po.llm.batch = size_t(req.batch);
  return s;
}

FilterOptions filter_options(FilterRequest req) {
  check_options(req);
  FilterOptions fo;
  fo.nli = parse_nli_scope(req.nli);
  fo.batch = size_t(req.batch);
  return fo;
}

}  // namespace ragform::sure
