// No output written whole replaces a run store the command has open, nor its input (issue 40,
// pass 11: `report S -o S`, `export S -o S` and `tune --store S -o S` turned the store into HTML,
// JSONL or a profile, every measurement gone, exit 0; `cnorm apply --input X -o X` emptied X).
#include <unistd.h>

#include <filesystem>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "base/atomic_file.h"
#include "base/error.h"
#include "base/file_identity.h"
#include "store/run_store.h"
#include "support/test_support.h"

namespace ragform {
namespace {

namespace fs = std::filesystem;
using testing::quoted;
using testing::run_ragform;

TEST(StoreOutputs, SameFileSeesThroughLinksAndPaths) {
  const fs::path d = testing::temp_dir("same_file");
  testing::write_file(d / "a", "x");
  fs::create_symlink(d / "a", d / "link");
  fs::create_hard_link(d / "a", d / "hard");
  EXPECT_TRUE(same_file((d / "a").string(), (d / "link").string()));
  EXPECT_TRUE(same_file((d / "a").string(), (d / "hard").string()));
  EXPECT_TRUE(same_file((d / "a").string(), (d / "." / "a").string()));
  EXPECT_FALSE(same_file((d / "a").string(), (d / "b").string()));
  // Neither exists yet: the same path is the same file, and a dangling symlink is where it leads
  // (pass 12: tune's -o as a link to a --store not yet created ran the whole search first).
  EXPECT_TRUE(same_file((d / "new").string(), (d / "sub" / ".." / "new").string()));
  fs::create_symlink("future.sqlite", d / "ln.sqlite");
  EXPECT_TRUE(same_file((d / "future.sqlite").string(), (d / "ln.sqlite").string()));
  EXPECT_FALSE(same_file((d / "other.sqlite").string(), (d / "ln.sqlite").string()));
  EXPECT_FALSE(same_file((d / "new").string(), (d / "new2").string()));
}

TEST(StoreOutputs, AnOpenStoreIsNeverReplacedWhole) {
  const fs::path d = testing::temp_dir("open_store");
  const std::string path = (d / "runs.sqlite").string();
  {
    store::RunStore st(path, store::RunStore::Mode::create);
    EXPECT_THROW(AtomicFile(path, "report"), UsageError);
    EXPECT_THROW(write_file_atomically((d / "." / "runs.sqlite").string(), "x", "export"),
                 UsageError);
    fs::create_symlink(path, d / "alias");
    EXPECT_THROW(write_file_atomically((d / "alias").string(), "x", "export"), UsageError);
    // SQLite's files beside it (pass 15: a profile written as STORE-wal vanished with the log).
    for (const char* suffix : {"-wal", "-shm", "-journal"})
      EXPECT_THROW(write_file_atomically(path + suffix, "x", "export"), UsageError) << suffix;
    {
      // Open twice, closed once: still open.
      store::RunStore again(path, store::RunStore::Mode::read_only);
    }
    EXPECT_THROW(write_file_atomically(path, "x", "export"), UsageError);
    write_file_atomically((d / "other.html").string(), "x", "report");  // any other file
  }
  // Closed: the file is the caller's to replace.
  write_file_atomically(path, "x", "report");
  EXPECT_EQ(testing::read_file(path), "x");
}

// Through the CLI: refused with exit 2 naming the file, the store left as it was.
TEST(StoreOutputs, TheCliRefusesAnOutputThatIsItsStoreOrInput) {
  const fs::path d = testing::temp_dir("store_outputs_cli");
  const fs::path db = d / "runs.sqlite";
  { store::RunStore st(db, store::RunStore::Mode::create); }
  const std::string before = testing::read_file(db);
  for (const std::string& args : {"report " + quoted(db) + " -o " + quoted(db),
                                  "export " + quoted(db) + " -o " + quoted(db)}) {
    const auto r = run_ragform(args);
    EXPECT_EQ(r.exit_code, 2) << args << ": " << r.err;
    EXPECT_NE(r.err.find("is the run store this command uses"), std::string::npos) << r.err;
    EXPECT_EQ(testing::read_file(db), before) << args;
  }
  // tune: refused before any search, whether the store exists yet or not.
  for (const fs::path& store : {db, d / "new.sqlite"}) {
    const auto r =
        run_ragform("tune -m " + quoted(d / "no-model.gguf") +
                    " --task needle --budget 10 --store " + quoted(store) + " -o " + quoted(store));
    EXPECT_EQ(r.exit_code, 2) << r.err;
    EXPECT_NE(r.err.find("is the run store itself"), std::string::npos) << r.err;
  }
  EXPECT_FALSE(fs::exists(d / "new.sqlite"));
  EXPECT_EQ(testing::read_file(db), before);
  // cnorm apply: the output would be truncated before its input is read.
  testing::write_file(d / "profile.json", "{}");
  testing::write_file(d / "docs.jsonl", "{\"text\": \"a\"}\n");
  const auto r = run_ragform("cnorm apply --profile " + quoted(d / "profile.json") + " --input " +
                             quoted(d / "docs.jsonl") + " -o " + quoted(d / "." / "docs.jsonl"));
  EXPECT_NE(r.exit_code, 0);
  EXPECT_EQ(testing::read_file(d / "docs.jsonl"), "{\"text\": \"a\"}\n") << r.err;
}

// Pass 12, L1 and L8: the outputs written with fopen went around both checks. `sure export
// --store a --sft a` and `sure sig ... -o LINK` (a symlink to a store) emptied the store; `sure
// filter --rejected` its --input; each exited 0.
TEST(StoreOutputs, EveryOutputFlagRefusesTheFilesItsVerbReads) {
  const fs::path d = testing::temp_dir("store_outputs_all");
  const fs::path db = d / "runs.sqlite";
  { store::RunStore st(db, store::RunStore::Mode::create); }
  fs::create_symlink(db, d / "link.sqlite");
  testing::write_file(d / "pairs.jsonl", "{}\n");
  testing::write_file(d / "model.gguf", "not a model");
  const std::string store_bytes = testing::read_file(db);
  struct Case {
    std::string args, says;
  };
  const std::vector<Case> cases = {
      {"sure export --store " + quoted(db) + " --sft " + quoted(db), "is the --store file itself"},
      {"sure export --store " + quoted(db) + " --dpo " + quoted(d / "link.sqlite"),
       "is the --store file itself"},
      {"sure sig --stores " + quoted(db) + " --pairs " + quoted(d / "pairs.jsonl") + " -o " +
           quoted(d / "link.sqlite"),
       "is the --stores file itself"},
      {"sure sig --stores " + quoted(db) + " --pairs " + quoted(d / "pairs.jsonl") + " -o " +
           quoted(d / "pairs.jsonl"),
       "is the --pairs file itself"},
      {"sure filter --input " + quoted(d / "pairs.jsonl") + " --nli none --rejected " +
           quoted(d / "." / "pairs.jsonl"),
       "is the --input file itself"},
      {"sure filter --input " + quoted(d / "pairs.jsonl") + " --nli none --counts " +
           quoted(d / "pairs.jsonl"),
       "is the --input file itself"},
      {"logits -m " + quoted(d / "model.gguf") + " -p x -o " + quoted(d / "model.gguf"),
       "is the -m file itself"},
      // Pass 13: these replaced the model, the space file or the vocabulary's model.
      {"make-test-model --shape tiny --type f32 --vocab-from " + quoted(d / "model.gguf") + " -o " +
           quoted(d / "model.gguf"),
       "is the --vocab-from file itself"},
      {"tune -m " + quoted(d / "model.gguf") + " --task needle --budget 10 --store " +
           quoted(d / "t.sqlite") + " -o " + quoted(d / "model.gguf"),
       "is the model file itself"},
      {"tune -m " + quoted(d / "model.gguf") + " --task needle --budget 10 --store " +
           quoted(d / "t.sqlite") + " --space " + quoted(d / "pairs.jsonl") + " -o " +
           quoted(d / "pairs.jsonl"),
       "is the space file itself"},
      {"cnorm calibrate -m " + quoted(d / "model.gguf") + " --task needle -o " +
           quoted(d / "model.gguf"),
       "is the -m file itself"},
      {"reproduce cnorm -m " + quoted(d / "model.gguf") + " --store " + quoted(db) + " -o " +
           quoted(db),
       "is the --store file itself"},
      // Pass 14: position-bias's measurement -o and --score -o replaced the model, cnorm
      // calibrate's -o the template.
      {"position-bias -m " + quoted(d / "model.gguf") + " --task needle -o " +
           quoted(d / "model.gguf"),
       "is the -m file itself"},
      {"position-bias -m " + quoted(d / "model.gguf") + " --score " + quoted(d / "pairs.jsonl") +
           " --bias b.json -o " + quoted(d / "model.gguf"),
       "is the -m file itself"},
      {"cnorm calibrate -m " + quoted(db) + " --task needle --template " +
           quoted(d / "pairs.jsonl") + " -o " + quoted(d / "pairs.jsonl"),
       "is the --template file itself"},
  };
  for (const Case& c : cases) {
    const auto r = run_ragform(c.args);
    EXPECT_EQ(r.exit_code, 2) << c.args << ": " << r.err;
    EXPECT_NE(r.err.find(c.says), std::string::npos) << c.args << ": " << r.err;
  }
  EXPECT_EQ(testing::read_file(db), store_bytes);
  EXPECT_EQ(testing::read_file(d / "pairs.jsonl"), "{}\n");
  EXPECT_EQ(testing::read_file(d / "model.gguf"), "not a model");
}

}  // namespace
}  // namespace ragform
