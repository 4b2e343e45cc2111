// gguf::StreamWriter: the file it streams is the file gguf::Writer writes in one piece, whatever
// the order of the pieces; nothing is left behind without commit(); writes stay inside tensors.
#include "engine/gguf/stream_writer.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <numeric>

#include "base/error.h"
#include "support/test_support.h"

namespace ragform::gguf {
namespace {

namespace fs = std::filesystem;

Writer metadata() {
  Writer w;
  w.set("general.architecture", Value::str("llama"));
  w.set("general.alignment", Value::u32(64));
  w.set("tokenizer.ggml.tokens", Value::str_array({"a", "b", "c"}));
  return w;
}

TEST(StreamWriter, SameBytesAsWriterInAnyOrder) {
  const fs::path dir = testing::temp_dir("stream_writer");
  // Sizes that are not multiples of the alignment, so the padding between tensors matters.
  std::vector<float> a(100), b(7 * 32);
  std::iota(a.begin(), a.end(), 1.0f);
  std::iota(b.begin(), b.end(), -50.0f);
  std::vector<uint8_t> c(3 * 34, 0x5A);  // three Q8_0 blocks
  Writer whole = metadata();
  whole.add_tensor("a", {100}, TensorType::F32, a.data(), a.size() * 4);
  whole.add_tensor("b", {32, 7}, TensorType::F32, b.data(), b.size() * 4);
  whole.add_tensor("c", {96}, TensorType::Q8_0, c.data(), c.size());
  whole.write((dir / "whole.gguf").string());

  const std::string path = (dir / "streamed.gguf").string();
  {
    StreamWriter s(path, metadata(),
                   {{"a", {100}, TensorType::F32},
                    {"b", {32, 7}, TensorType::F32},
                    {"c", {96}, TensorType::Q8_0}},
                   "test");
    EXPECT_TRUE(fs::exists(s.temp_path()));
    EXPECT_FALSE(fs::exists(path));
    EXPECT_EQ(s.tensor_bytes(1), b.size() * 4);
    // Back to front, the middle tensor in two pieces.
    s.write(2, 0, c.data(), c.size());
    s.write(1, 4 * 32 * 4, b.data() + 4 * 32, 3 * 32 * 4);
    s.write(1, 0, b.data(), 4 * 32 * 4);
    s.write(0, 0, a.data(), a.size() * 4);
    EXPECT_THROW(s.write(0, 4, a.data(), a.size() * 4), Error);  // past the tensor's end
    EXPECT_THROW(s.write(3, 0, a.data(), 4), Error);             // no such tensor
    EXPECT_EQ(s.file_bytes(), fs::file_size(dir / "whole.gguf"));
    s.commit();
    EXPECT_FALSE(fs::exists(s.temp_path()));
  }
  EXPECT_EQ(testing::read_file(path), testing::read_file(dir / "whole.gguf"));
  EXPECT_EQ(StreamWriter::size_of(metadata(), {{"a", {100}, TensorType::F32},
                                               {"b", {32, 7}, TensorType::F32},
                                               {"c", {96}, TensorType::Q8_0}}),
            fs::file_size(path));
}

TEST(StreamWriter, NothingLeftWithoutCommit) {
  const fs::path dir = testing::temp_dir("stream_writer_abandon");
  const std::string path = (dir / "out.gguf").string();
  testing::write_file(path, "previous contents");
  {
    StreamWriter s(path, metadata(), {{"a", {32}, TensorType::F32}}, "test");
    std::vector<float> a(32, 1.0f);
    s.write(0, 0, a.data(), 64);
  }  // an exception on the way: no commit
  EXPECT_FALSE(fs::exists(path + ".tmp"));
  EXPECT_EQ(testing::read_file(path), "previous contents");
  EXPECT_THROW(StreamWriter((dir / "none" / "x.gguf").string(), metadata(), {}, "test"), FileError);
}

}  // namespace
}  // namespace ragform::gguf
