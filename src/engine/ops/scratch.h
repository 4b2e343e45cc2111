// Internal to ops/: per-thread scratch for the matrix kernels. A kernel keeps a thread_local byte
// vector and takes a 64-byte-aligned view of it; the vector only grows, so once warm no call
// allocates (the engine promises no allocation per token).
#pragma once
#include <cstddef>
#include <cstdint>
#include <vector>

namespace ragform::ops {

// The first 64-byte-aligned address of `buf`, grown to hold n objects of T from there.
template <typename T = uint8_t>
T* aligned_scratch(std::vector<uint8_t>& buf, size_t n) {
  const size_t bytes = n * sizeof(T);
  if (buf.size() < bytes + 64) buf.resize(bytes + 64);
  const auto addr = reinterpret_cast<uintptr_t>(buf.data());
  return reinterpret_cast<T*>(buf.data() + (64 - addr % 64) % 64);
}

}  // namespace ragform::ops
