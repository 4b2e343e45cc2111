#include "base/threads.h"

#include <algorithm>
#include <thread>

namespace ragform {

int max_threads() { return 4 * int(std::max(1u, std::thread::hardware_concurrency())); }

}  // namespace ragform
