// Metadata arrays: held in about their size in the file (one contiguous buffer, not one Value per
// element), every element type read back as written, and declared counts checked before any
// allocation.
#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <limits>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "base/error.h"
#include "engine/gguf/gguf.h"
#include "support/gguf_image.h"
#include "support/test_support.h"

namespace ragform::gguf {
namespace {

using ragform::testing::GgufBytes;
using ragform::testing::parse_gguf;

// A field of /proc/self/status in bytes (VmRSS, VmHWM), or -1.
long long status_bytes(const std::string& field) {
  std::ifstream in("/proc/self/status");
  std::string line;
  while (std::getline(in, line))
    if (line.rfind(field + ":", 0) == 0) return std::stoll(line.substr(field.size() + 1)) * 1024;
  return -1;
}

// Resets the peak resident size (VmHWM) to the current one; false when the kernel refuses.
bool reset_peak_rss() {
  std::ofstream f("/proc/self/clear_refs");
  f << "5";
  f.flush();
  return bool(f);
}

template <typename T>
std::string array_entry(const std::string& key, ValueType elem, const std::vector<T>& xs) {
  GgufBytes g;
  g.key(key, uint32_t(ValueType::ARRAY)).pod<uint32_t>(uint32_t(elem)).pod<uint64_t>(xs.size());
  for (T x : xs) g.pod(x);
  return g.b;
}

TEST(GgufArray, MemoryOfAnArrayIsAboutItsBytesInTheFile) {
  constexpr size_t kN = 8'000'000;
  const std::string path = (ragform::testing::temp_dir("gguf-array") / "big.gguf").string();
  {
    GgufBytes g = GgufBytes::header(0, 1);
    g.key("big.u8", uint32_t(ValueType::ARRAY)).pod<uint32_t>(0).pod<uint64_t>(kN);
    std::string body(kN, '\0');
    for (size_t i = 0; i < kN; ++i) body[i] = char(uint8_t(i % 251));
    g.b += body;
    std::ofstream(path, std::ios::binary).write(g.b.data(), std::streamsize(g.b.size()));
  }
  const long long before = status_bytes("VmRSS");
  ASSERT_GT(before, 0) << "no /proc/self/status";
  const bool peak = reset_peak_rss();
  {
    auto f = File::open(path);
    const Array& a = f->get("big.u8").as_array();
    ASSERT_EQ(a.size(), kN);
    EXPECT_EQ(a.elem_type, ValueType::U8);
    EXPECT_EQ(a.bytes().size(), kN);
    for (size_t i = 0; i < kN; i += 9973) ASSERT_EQ(a.int_at(i), int64_t(i % 251)) << i;
    EXPECT_EQ(a.at(kN - 1).as_int(), int64_t((kN - 1) % 251));
    const long long after = peak ? status_bytes("VmHWM") : status_bytes("VmRSS");
    const long long growth = after - before;
    // The file is mapped (up to kN resident) and the array holds its kN bytes: about 2x. One
    // Value per element was 48 bytes each (384 MB).
    EXPECT_LT(growth, 3LL * kN) << "resident growth " << growth / 1000000 << " MB for a "
                                << kN / 1000000 << " MB array (peak measured: " << peak << ")";
    std::printf("[ info ] resident growth %.1f MB for an %.1f MB u8 array (%s)\n", growth / 1e6,
                kN / 1e6, peak ? "peak" : "current");
  }
  std::filesystem::remove(path);
}

TEST(GgufArray, EveryElementTypeReadsBackAsWritten) {
  const std::vector<uint8_t> u8s = {0, 1, 200, 255};
  const std::vector<int8_t> i8s = {-128, -1, 0, 127};
  const std::vector<uint16_t> u16s = {0, 65535, 300};
  const std::vector<int16_t> i16s = {-32768, 32767, -300};
  const std::vector<uint32_t> u32s = {0, 4000000000u, 7};
  const std::vector<int32_t> i32s = {std::numeric_limits<int32_t>::min(), -7, 2147483647};
  const std::vector<float> f32s = {0.25f, -1e30f, 3.5f};
  const std::vector<uint8_t> bools = {1, 0, 1};
  const std::vector<uint64_t> u64s = {0, 1ull << 60, std::numeric_limits<uint64_t>::max()};
  const std::vector<int64_t> i64s = {std::numeric_limits<int64_t>::min(), -(1ll << 50), 42};
  const std::vector<double> f64s = {1e-300, -2.5, 1e300};
  const std::vector<std::string> strs = {"", "héllo", std::string(300, 'x'),
                                         std::string("a\0b", 3)};

  GgufBytes g = GgufBytes::header(0, 14);
  g.b += array_entry("a.u8", ValueType::U8, u8s);
  g.b += array_entry("a.i8", ValueType::I8, i8s);
  g.b += array_entry("a.u16", ValueType::U16, u16s);
  g.b += array_entry("a.i16", ValueType::I16, i16s);
  g.b += array_entry("a.u32", ValueType::U32, u32s);
  g.b += array_entry("a.i32", ValueType::I32, i32s);
  g.b += array_entry("a.f32", ValueType::F32, f32s);
  g.b += array_entry("a.bool", ValueType::BOOL, bools);
  g.b += array_entry("a.u64", ValueType::U64, u64s);
  g.b += array_entry("a.i64", ValueType::I64, i64s);
  g.b += array_entry("a.f64", ValueType::F64, f64s);
  g.key("a.str", uint32_t(ValueType::ARRAY)).pod<uint32_t>(8).pod<uint64_t>(strs.size());
  for (const auto& s : strs) g.str(s);
  g.b += array_entry("a.empty", ValueType::F32, std::vector<float>{});
  // [[1, 2], [], [3]] of u16, then [["x"], []] of strings.
  g.key("a.nested", uint32_t(ValueType::ARRAY)).pod<uint32_t>(9).pod<uint64_t>(4);
  g.pod<uint32_t>(2).pod<uint64_t>(2).pod<uint16_t>(1).pod<uint16_t>(2);
  g.pod<uint32_t>(2).pod<uint64_t>(0);
  g.pod<uint32_t>(2).pod<uint64_t>(1).pod<uint16_t>(3);
  g.pod<uint32_t>(8).pod<uint64_t>(1).str("x");
  g.b.resize((g.b.size() + 31) / 32 * 32, '\0');  // the writer pads to the alignment
  const std::string bytes = g.b;
  auto f = parse_gguf(bytes);

  auto ints = [&](const std::string& key, auto& want) {
    const Array& a = f->get(key).as_array();
    ASSERT_EQ(a.size(), want.size()) << key;
    for (size_t i = 0; i < want.size(); ++i) {
      EXPECT_EQ(a.int_at(i), int64_t(want[i])) << key << "[" << i << "]";
      EXPECT_EQ(a.at(i).as_int(), int64_t(want[i])) << key << "[" << i << "]";
      EXPECT_EQ(a.at(i).type, a.elem_type) << key;
      EXPECT_EQ(a.float_at(i), double(want[i])) << key << "[" << i << "]";
      EXPECT_EQ(a.bool_at(i), want[i] != 0) << key << "[" << i << "]";
    }
  };
  ints("a.u8", u8s);
  ints("a.i8", i8s);
  ints("a.u16", u16s);
  ints("a.i16", i16s);
  ints("a.u32", u32s);
  ints("a.i32", i32s);
  ints("a.i64", i64s);
  {
    const Array& a = f->get("a.u64").as_array();
    ASSERT_EQ(a.size(), 3u);
    EXPECT_EQ(a.int_at(1), int64_t(1ull << 60));
    EXPECT_EQ(std::get<uint64_t>(a.at(2).v), std::numeric_limits<uint64_t>::max());
    EXPECT_THROW(a.int_at(2), Error);  // above INT64_MAX, as Value::as_int
    EXPECT_EQ(a.at(2).to_display(), "18446744073709551615");
  }
  {
    const Array& a = f->get("a.f32").as_array();
    ASSERT_EQ(a.size(), f32s.size());
    for (size_t i = 0; i < f32s.size(); ++i) {
      EXPECT_EQ(a.float_at(i), double(f32s[i]));
      EXPECT_EQ(a.at(i).as_float(), double(f32s[i]));
    }
    EXPECT_THROW(a.int_at(0), Error);
    EXPECT_THROW(a.string_at(0), Error);
  }
  {
    const Array& a = f->get("a.f64").as_array();
    ASSERT_EQ(a.size(), f64s.size());
    for (size_t i = 0; i < f64s.size(); ++i) EXPECT_EQ(a.float_at(i), f64s[i]);
  }
  {
    const Array& a = f->get("a.bool").as_array();
    ASSERT_EQ(a.size(), bools.size());
    for (size_t i = 0; i < bools.size(); ++i) {
      EXPECT_EQ(a.bool_at(i), bools[i] != 0);
      EXPECT_EQ(a.at(i).as_bool(), bools[i] != 0);
      EXPECT_EQ(a.at(i).type, ValueType::BOOL);
    }
    EXPECT_THROW(a.float_at(0), Error);  // as Value::as_float of a bool
  }
  {
    const Array& a = f->get("a.str").as_array();
    ASSERT_EQ(a.size(), strs.size());
    for (size_t i = 0; i < strs.size(); ++i) {
      EXPECT_EQ(a.string_at(i), strs[i]);
      EXPECT_EQ(a.at(i).as_string(), strs[i]);
    }
    const auto views = f->get_strings("a.str");
    ASSERT_EQ(views.size(), strs.size());
    for (size_t i = 0; i < strs.size(); ++i) EXPECT_EQ(views[i], strs[i]);
    EXPECT_THROW(a.int_at(0), Error);
    EXPECT_THROW(a.string_at(strs.size()), Error);  // out of range
  }
  EXPECT_TRUE(f->get("a.empty").as_array().empty());
  EXPECT_EQ(f->get("a.empty").to_display(), "[f32 x 0] ");
  {
    const Array& a = f->get("a.nested").as_array();
    ASSERT_EQ(a.size(), 4u);
    const Array first = a.array_at(0);
    EXPECT_EQ(first.elem_type, ValueType::U16);
    ASSERT_EQ(first.size(), 2u);
    EXPECT_EQ(first.int_at(1), 2);
    EXPECT_TRUE(a.array_at(1).empty());
    EXPECT_EQ(a.at(2).as_array().int_at(0), 3);
    EXPECT_EQ(a.array_at(3).string_at(0), "x");
  }
  EXPECT_EQ(f->get("a.u8").to_display(), "[u8 x 4] 0, 1, 200, 255");
  EXPECT_EQ(f->get("a.str").to_display(2), "[string x 4] \"\", \"héllo\", ...");
  EXPECT_THROW(f->get_strings("a.u8"), Error);
  // Written back byte for byte.
  EXPECT_EQ(Writer::copy_of(*f).to_bytes(), bytes);

  // Arrays built from Values encode the same bytes as the file holds.
  Writer w;
  auto values = [&](ValueType t, const Array& a) {
    std::vector<Value> out;
    for (size_t i = 0; i < a.size(); ++i) out.push_back(a.at(i));
    return Value::array(t, out);
  };
  for (const auto& [k, v] : f->metadata()) w.set(k, values(v.as_array().elem_type, v.as_array()));
  EXPECT_EQ(w.to_bytes(), bytes);
  Writer ws;
  ws.set("a.str", Value::str_array(strs));
  auto g2 = ws.to_bytes();
  auto f2 = parse_gguf(g2);
  EXPECT_EQ(f2->get("a.str").as_array().bytes(), f->get("a.str").as_array().bytes());
  // An element of another type than the array's is refused, not written wrongly.
  EXPECT_THROW(Value::array(ValueType::F32, {Value::i32(1)}), Error);
}

TEST(GgufArray, DeclaredCountsAreCheckedBeforeAllocating) {
  auto err = [](const std::string& b) -> std::string {
    try {
      parse_gguf(b);
    } catch (const Error& e) {
      return e.what();
    }
    return "";
  };
  for (uint32_t t : {0u, 4u, 8u, 9u, 12u}) {
    GgufBytes g = GgufBytes::header(0, 1);
    g.key("a", 9).pod<uint32_t>(t).pod<uint64_t>(uint64_t(1) << 40);
    EXPECT_NE(err(g.b).find("array claims 1099511627776 elements"), std::string::npos)
        << t << ": " << err(g.b);
  }
  {  // A count that fits the bytes left, but a string in it runs past the end.
    GgufBytes g = GgufBytes::header(0, 1);
    g.key("a", 9).pod<uint32_t>(8).pod<uint64_t>(2).str("ok").pod<uint64_t>(1000).b += "short";
    EXPECT_NE(err(g.b).find("needs 1000 bytes"), std::string::npos) << err(g.b);
  }
  {  // A bool that is neither 0 nor 1, inside an array.
    GgufBytes g = GgufBytes::header(0, 1);
    g.key("a", 9).pod<uint32_t>(7).pod<uint64_t>(3).pod<uint8_t>(1).pod<uint8_t>(0).pod<uint8_t>(2);
    EXPECT_NE(err(g.b).find("bool value 2"), std::string::npos) << err(g.b);
  }
  {  // Nested arrays: an inner count too large, and nesting beyond the limit.
    GgufBytes g = GgufBytes::header(0, 1);
    g.key("a", 9).pod<uint32_t>(9).pod<uint64_t>(1).pod<uint32_t>(6).pod<uint64_t>(1000);
    EXPECT_NE(err(g.b).find("array claims 1000 elements"), std::string::npos) << err(g.b);
    GgufBytes d = GgufBytes::header(0, 1);
    d.key("a", 9);
    for (int i = 0; i < 12; ++i) d.pod<uint32_t>(9).pod<uint64_t>(1);
    d.pod<uint32_t>(0).pod<uint64_t>(0);
    EXPECT_NE(err(d.b).find("nested deeper"), std::string::npos) << err(d.b);
  }
}

}  // namespace
}  // namespace ragform::gguf
