// Files written through a temporary file and a rename (base/atomic_file.h), issue 40: a fixed
// "<target>.tmp" followed a symlink planted there and overwrote the file it pointed to (`ragform
// quantize`, `report -o`, `export -o`, profiles, bias curves, make-test-model, dense indexes).
// Each writer is run with a symlink planted at the name the old code used: the victim keeps its
// bytes, the symlink is left as it was, the output is right and no temporary file remains.
#include <fcntl.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <string>
#include <thread>
#include <vector>

#include <gtest/gtest.h>

#include "base/atomic_file.h"
#include "base/error.h"
#include "engine/gguf/gguf.h"
#include "engine/gguf/stream_writer.h"
#include "engine/model/quantize_model.h"
#include "engine/model/random_model.h"
#include "pipelines/cnorm/calibrate.h"
#include "pipelines/cnorm/position_bias.h"
#include "report/write_report.h"
#include "retrieval/dense_index.h"
#include "store/run_store.h"
#include "support/test_support.h"

namespace ragform {
namespace {

namespace fs = std::filesystem;
using testing::read_file;
using testing::temp_dir;
using testing::write_file;

const std::string kVictimBytes = "the victim's own bytes\n";

// A victim file outside the output's folder and a symlink to it at `planted`.
struct Plant {
  fs::path victim;
  std::vector<fs::path> links;
  Plant(const fs::path& dir, const std::vector<std::string>& planted) {
    fs::create_directories(dir / "elsewhere");
    victim = dir / "elsewhere" / "victim";
    write_file(victim, kVictimBytes);
    for (const std::string& p : planted) {
      fs::create_symlink(victim, p);
      links.emplace_back(p);
    }
  }
  // The victim untouched, every symlink still a symlink to it.
  void expect_untouched() const {
    EXPECT_EQ(read_file(victim), kVictimBytes);
    for (const fs::path& l : links) {
      EXPECT_TRUE(fs::is_symlink(l)) << l;
      EXPECT_EQ(fs::read_symlink(l), victim) << l;
    }
  }
};

// The names in `dir` holding ".tmp." (AtomicFile's temporary files).
std::vector<std::string> temporaries(const fs::path& dir) {
  std::vector<std::string> out;
  for (const auto& e : fs::directory_iterator(dir))
    if (e.path().filename().string().find(".tmp.") != std::string::npos)
      out.push_back(e.path().filename().string());
  return out;
}

std::string error_of(const std::function<void()>& f) {
  try {
    f();
  } catch (const std::exception& e) {
    return e.what();
  }
  return "(no error)";
}

TEST(AtomicFile, WritesTheTargetAndLeavesNoTemporary) {
  const fs::path dir = temp_dir("atomic-basic");
  const std::string target = (dir / "out.txt").string();
  write_file(target, "old");
  {
    AtomicFile f(target, "test");
    EXPECT_EQ(fs::path(f.temp_path()).parent_path(), dir);
    EXPECT_NE(f.temp_path(), target + ".tmp");  // not a name another user can plant
    f.write("one ");
    f.stream() << "two " << 3;
    f.write(" four");
    EXPECT_EQ(read_file(target), "old");  // nothing shows before commit()
    f.commit();
  }
  EXPECT_EQ(read_file(target), "one two 3 four");
  EXPECT_TRUE(temporaries(dir).empty());

  // Two temporaries of one target have different names.
  AtomicFile a(target, "test"), b(target, "test");
  EXPECT_NE(a.temp_path(), b.temp_path());
}

TEST(AtomicFile, ModeIsAnOrdinaryFilesUnderTheUmask) {
  const fs::path dir = temp_dir("atomic-mode");
  const mode_t old = ::umask(022);
  write_file_atomically((dir / "a").string(), "x", "test");
  ::umask(027);
  write_file_atomically((dir / "b").string(), "x", "test");
  ::umask(old);
  struct stat st {};
  ASSERT_EQ(::stat((dir / "a").c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0644u);
  ASSERT_EQ(::stat((dir / "b").c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0640u);
}

// Issue 40, pass 13: a temporary renamed over a device or FIFO replaced it with a regular file
// (root's `kv generate -o /dev/null` turned /dev/null into one), and a 0600 output came back 0644.
TEST(AtomicFile, ADeviceOrFifoIsWrittenInPlaceAndAFileKeepsItsMode) {
  struct stat st {};
  write_file_atomically("/dev/null", "discarded\n", "test");
  ASSERT_EQ(::stat("/dev/null", &st), 0);
  EXPECT_TRUE(S_ISCHR(st.st_mode)) << "/dev/null is no longer a device";
  const fs::path dir = temp_dir("atomic-in-place");
  const fs::path fifo = dir / "pipe";
  ASSERT_EQ(::mkfifo(fifo.c_str(), 0600), 0);
  std::string got;
  std::thread reader([&] { got = read_file(fifo); });
  write_file_atomically(fifo.string(), "through the pipe", "test");
  reader.join();
  EXPECT_EQ(got, "through the pipe");
  ASSERT_EQ(::lstat(fifo.c_str(), &st), 0);
  EXPECT_TRUE(S_ISFIFO(st.st_mode));
  EXPECT_TRUE(temporaries(dir).empty());
  // A regular file keeps its permission bits.
  for (const mode_t mode : {mode_t(0600), mode_t(0444), mode_t(0640)}) {
    const fs::path f = dir / ("m" + std::to_string(mode));
    write_file(f, "old");
    ASSERT_EQ(::chmod(f.c_str(), mode), 0);
    write_file_atomically(f.string(), "new", "test");
    EXPECT_EQ(read_file(f), "new");
    ASSERT_EQ(::stat(f.c_str(), &st), 0);
    EXPECT_EQ(st.st_mode & 07777, mode);
  }
  // A symlink named as the target is replaced, never written through.
  Plant plant(dir, {(dir / "link").string()});
  write_file_atomically((dir / "link").string(), "mine", "test");
  EXPECT_FALSE(fs::is_symlink(dir / "link"));
  EXPECT_EQ(read_file(dir / "link"), "mine");
  EXPECT_EQ(read_file(plant.victim), kVictimBytes);
  // One of this process's descriptors named through /proc is written as that descriptor (pass
  // 14: `-o /dev/stdout` while stdout was a file renamed a file over the link, and the output went
  // nowhere), appending where it appends; the link stays a link.
  const fs::path out = dir / "stdout.txt";
  write_file(out, "first\n");
  const int fd = ::open(out.c_str(), O_WRONLY | O_APPEND);
  ASSERT_GE(fd, 0);
  fs::create_symlink("/proc/self/fd/" + std::to_string(fd), dir / "my-stdout");
  write_file_atomically((dir / "my-stdout").string(), "second\n", "test");
  write_file_atomically("/dev/fd/" + std::to_string(fd), "third\n", "test");
  // A thread's view of the table is the process's (pass 15: /proc/thread-self/fd/N was "another
  // process's" and written from the file's start).
  write_file_atomically("/proc/thread-self/fd/" + std::to_string(fd), "fourth\n", "test");
  ::close(fd);
  EXPECT_EQ(read_file(out), "first\nsecond\nthird\nfourth\n");
  EXPECT_TRUE(fs::is_symlink(dir / "my-stdout"));
  // setuid, setgid and sticky bits are not carried over (a replaced file of another owner came
  // back setuid root), and a long valid name still gets a temporary (250 bytes plus the suffix
  // was past NAME_MAX).
  write_file(dir / "suid", "x");
  ASSERT_EQ(::chmod((dir / "suid").c_str(), 06755), 0);
  write_file_atomically((dir / "suid").string(), "y", "test");
  ASSERT_EQ(::stat((dir / "suid").c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 07777, 0755u);
  const fs::path long_name = dir / std::string(250, 'n');
  write_file_atomically(long_name.string(), "long", "test");
  EXPECT_EQ(read_file(long_name), "long");
  EXPECT_TRUE(temporaries(dir).empty());
  // A directory is refused by name.
  EXPECT_NE(
      error_of([&] { write_file_atomically(dir.string(), "x", "test"); }).find("is a directory"),
      std::string::npos);
}

TEST(AtomicFile, FailuresLeaveNoTemporaryAndKeepTheTarget) {
  const fs::path dir = temp_dir("atomic-fail");
  const std::string target = (dir / "out.txt").string();
  write_file(target, "old");
  // Destroyed without commit (an exception on the way).
  EXPECT_THROW(
      {
        AtomicFile f(target, "test");
        f.stream() << "half";
        throw Error("test", "failed half way");
      },
      Error);
  EXPECT_EQ(read_file(target), "old");
  EXPECT_TRUE(temporaries(dir).empty());

  // The rename fails (the target became a folder that is not empty while the bytes were
  // written): FileError, no temporary. A folder named at the start is refused by name.
  const std::string e = error_of([&] {
    AtomicFile f((dir / "full").string(), "test");
    f.write("bytes");
    fs::create_directories(dir / "full" / "x");
    f.commit();
  });
  EXPECT_NE(e.find("test: cannot rename "), std::string::npos) << e;
  EXPECT_THROW(write_file_atomically((dir / "full").string(), "bytes", "test"), FileError);
  EXPECT_TRUE(temporaries(dir).empty());
  EXPECT_TRUE(fs::is_directory(dir / "full" / "x"));

  // No such folder: "cannot create", with the errno.
  try {
    AtomicFile f((dir / "no" / "such" / "f").string(), "test");
    ADD_FAILURE() << "created";
  } catch (const FileError& err) {
    EXPECT_NE(std::string(err.what()).find("cannot create"), std::string::npos) << err.what();
    EXPECT_EQ(err.error_code(), ENOENT);
  }
}

TEST(AtomicFile, StreamWriterDoesNotWriteThroughAPlantedSymlink) {
  const fs::path dir = temp_dir("atomic-stream-writer");
  const std::string path = (dir / "m.gguf").string();
  Plant plant(dir, {path + ".tmp"});
  std::vector<float> a(64);
  for (size_t i = 0; i < a.size(); ++i) a[i] = float(i);
  gguf::Writer meta;
  meta.set("general.architecture", gguf::Value::str("llama"));
  gguf::Writer whole = meta;
  whole.add_tensor("a", {64}, gguf::TensorType::F32, a.data(), a.size() * 4);
  {
    gguf::StreamWriter s(path, meta, {{"a", {64}, gguf::TensorType::F32}}, "test");
    s.write(0, 0, a.data(), a.size() * 4);
    s.commit();
  }
  plant.expect_untouched();
  EXPECT_FALSE(fs::is_symlink(path));
  EXPECT_EQ(read_file(path), whole.to_bytes());
  EXPECT_TRUE(temporaries(dir).empty());
  // Without commit: neither the target nor a temporary.
  {
    gguf::StreamWriter s((dir / "n.gguf").string(), meta, {{"a", {64}, gguf::TensorType::F32}},
                         "test");
  }
  EXPECT_FALSE(fs::exists(dir / "n.gguf"));
  EXPECT_TRUE(temporaries(dir).empty());
  plant.expect_untouched();
}

TEST(AtomicFile, QuantizeDoesNotWriteThroughAPlantedSymlink) {
  const fs::path dir = temp_dir("atomic-quantize");
  std::vector<float> v(64 * 2);
  for (size_t i = 0; i < v.size(); ++i) v[i] = float(i % 17) * 0.25f - 2.0f;
  gguf::Writer w;
  w.set("general.architecture", gguf::Value::str("llama"));
  w.set("llama.block_count", gguf::Value::u32(1));
  w.add_tensor("blk.0.attn_q.weight", {64, 2}, gguf::TensorType::F32, v.data(), v.size() * 4);
  w.write((dir / "in.gguf").string());
  model::QuantizeOptions o;
  o.in = (dir / "in.gguf").string();
  o.out = (dir / "qs.gguf").string();
  o.type = "q8_0";
  o.threads = 1;
  Plant plant(dir, {o.out + ".tmp"});
  model::quantize_model(o);
  plant.expect_untouched();
  EXPECT_FALSE(fs::is_symlink(o.out));
  auto f = gguf::File::open(o.out);
  ASSERT_EQ(f->tensors().size(), 1u);
  EXPECT_EQ(f->tensors()[0].type, gguf::TensorType::Q8_0);
  EXPECT_TRUE(temporaries(dir).empty());
}

TEST(AtomicFile, BertTestModelDoesNotWriteThroughAPlantedSymlink) {
  const fs::path dir = temp_dir("atomic-bert");
  model::RandomModelOptions o;
  o.shape = "bge-small";
  o.layers = 1;
  o.threads = 1;
  o.out = (dir / "bert.gguf").string();
  Plant plant(dir, {o.out + ".tmp"});
  const model::RandomModelSummary s = model::write_random_model(o);
  plant.expect_untouched();
  EXPECT_EQ(s.arch, "bert");
  EXPECT_FALSE(fs::is_symlink(o.out));
  EXPECT_EQ(fs::file_size(o.out), s.file_bytes);
  EXPECT_TRUE(temporaries(dir).empty());
}

TEST(AtomicFile, ProfilesAndCurvesDoNotWriteThroughAPlantedSymlink) {
  const fs::path dir = temp_dir("atomic-cnorm");
  const std::string profile = (dir / "p.json").string(), curve = (dir / "c.json").string();
  Plant plant(dir, {profile + ".tmp", curve + ".tmp"});
  cnorm::Profile p;
  cnorm::save_profile(p, profile);
  cnorm::BiasCurve c;
  c.task = "kv";
  c.k = 2;
  c.curve = {0.25, 0.75};
  cnorm::save_bias_curve(c, curve);
  plant.expect_untouched();
  EXPECT_EQ(read_file(profile), cnorm::profile_to_json(p).dump(2) + "\n");
  EXPECT_EQ(read_file(curve), cnorm::bias_curve_json(c).dump(2) + "\n");
  EXPECT_TRUE(temporaries(dir).empty());
}

TEST(AtomicFile, DenseIndexDoesNotWriteThroughPlantedSymlinks) {
  const fs::path dir = temp_dir("atomic-dense");
  Plant plant(dir, {(dir / "dense.faiss.tmp").string(), (dir / "dense.json.tmp").string()});
  retrieval::DenseMeta m;
  m.encoder = "random";
  m.encoder_sha256 = "none";
  m.pooling = "mean";
  m.dims = 4;
  {
    retrieval::DenseIndex ix(dir.string(), m);
    const std::vector<float> x = {1, 0, 0, 0, 0, 1, 0, 0, 0, 0, 1, 0};
    const std::vector<int64_t> ids = {7, 8, 9};
    ix.add(x.data(), ids.data(), 3);
    ix.save();
  }
  plant.expect_untouched();
  retrieval::DenseIndex back(dir.string());
  EXPECT_EQ(back.meta().count, 3);
  const float q[] = {0, 1, 0, 0};
  auto hits = back.search(q, 1, 1);
  ASSERT_EQ(hits[0].size(), 1u);
  EXPECT_EQ(hits[0][0].rowid, 8);
  EXPECT_TRUE(temporaries(dir).empty());
}

TEST(AtomicFile, ReportAndExportDoNotWriteThroughAPlantedSymlink) {
  const fs::path dir = temp_dir("atomic-report");
  const fs::path db = dir / "empty.sqlite";
  { store::RunStore st(db); }
  const std::string html = (dir / "r.html").string(), jsonl = (dir / "x.jsonl").string(),
                    html2 = (dir / "r2.html").string();
  Plant plant(dir, {html + ".tmp", jsonl + ".tmp", html2 + ".tmp"});
  {
    store::RunStore st(db, store::RunStore::Mode::read_only);
    report::write_report(st, db.string(), report::ReportOptions{}, html);
  }
  EXPECT_NE(read_file(html).find("holds no runs"), std::string::npos);
  // The command lines of the reproduction.
  auto r = testing::run_ragform("report " + testing::quoted(db) + " -o " + testing::quoted(html2));
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(read_file(html2).find("holds no runs"), std::string::npos);
  r = testing::run_ragform("export " + testing::quoted(db) + " --table runs -o " +
                           testing::quoted(jsonl));
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_TRUE(fs::is_regular_file(jsonl) && !fs::is_symlink(jsonl));
  plant.expect_untouched();
  EXPECT_TRUE(temporaries(dir).empty());
}

}  // namespace
}  // namespace ragform
