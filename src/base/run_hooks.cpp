#include "base/run_hooks.h"

namespace ragform {

Stage::Stage(const RunHooks& h, const std::string& label, uint64_t total) : h_(h) {
  if (h_.begin) h_.begin(label, total);
}

Stage::~Stage() {
  if (h_.end) h_.end();
}

void Stage::add(uint64_t n) const {
  if (h_.advance) h_.advance(n);
}

}  // namespace ragform
