#include "cli/shard.h"

namespace ragform::cli {

ShardFlag::ShardFlag(Args& a)
    : text(a.opt<std::string>("--shard", "I/N",
                              "process only shard I of N (instances split by id hash)", "0/1")) {}

}  // namespace ragform::cli
