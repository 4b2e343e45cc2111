// SHA-256 (FIPS 180-2 / FIPS 180-4 section 6.2), streaming, for the run store's model-file hash:
// a run is identified by its config and the exact bytes of the model it read, so resuming against
// a different file of the same name starts a new run instead of mixing results.
#pragma once
#include <array>
#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <string>
#include <string_view>

namespace ragform::store {

class Sha256 {
 public:
  using Digest = std::array<std::uint8_t, 32>;
  Sha256() { reset(); }
  void reset();
  // Feeds `n` more bytes of the message; may be called any number of times.
  void update(const void* data, std::size_t n);
  void update(std::string_view s) { update(s.data(), s.size()); }
  // Pads the message (FIPS 180-2 section 5.1.1), returns the digest and resets the hasher.
  Digest finish();

 private:
  void block(const std::uint8_t* p);  // one 64-byte block (section 6.2.2)
  std::array<std::uint32_t, 8> h_{};  // H0..H7
  std::array<std::uint8_t, 64> buf_{};
  std::size_t buf_len_ = 0;
  std::uint64_t total_ = 0;  // message length in bytes
};

// Lower-case hex of a digest (64 characters).
std::string to_hex(const Sha256::Digest& d);
// SHA-256 of a byte string, as lower-case hex.
std::string sha256_hex(std::string_view bytes);
// SHA-256 of a file's bytes, read in 1 MiB chunks (never the whole file in memory), as hex.
// Throws ragform::Error naming the file when it cannot be opened or read.
std::string sha256_file(const std::filesystem::path& path);

}  // namespace ragform::store
