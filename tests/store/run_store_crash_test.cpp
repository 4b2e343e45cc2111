// The crash test of DESIGN.md "Data formats": a child process writes rows in a loop, the parent
// kills it with SIGKILL mid-run, another child resumes (and is killed too), and a last resume in
// this process finishes. Then every (instance, variant) must be present exactly once with its
// exact content, every row the writer had acknowledged must have survived, and at most the row in
// flight may have been lost at each kill.
#include <signal.h>
#include <sqlite3.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstdio>
#include <thread>

#include <gtest/gtest.h>

#include "store/run_store.h"
#include "support/test_support.h"

namespace ragform::store {
namespace {

namespace fs = std::filesystem;
using Durability = RunStore::Durability;

struct Plan {
  int instances;
  std::vector<std::string> variants;
  Durability durability;
  int pause_us;  // the writer's "model call" between rows, so that the parent can keep up
  int total() const { return instances * int(variants.size()); }
};

RunConfig crash_config() {
  RunConfig c;
  c.pipeline = "crash-test";
  c.config = {{"dataset", "synthetic"}, {"k", 3}};
  c.model_sha256 = std::string(64, 'a');
  c.reader = "native";
  c.chat_mode = "raw";
  c.seed = 1234;
  return c;
}

// The row the writer stores for (i, v): its content is a function of (i, v) only, with text
// lengths that vary from a few bytes to several kB so that rows span SQLite pages differently.
Result expected_row(std::int64_t run, int i, const std::string& v) {
  Result r;
  r.run = run;
  r.instance = "inst-" + std::to_string(i);
  r.variant = v;
  std::string body;
  for (int k = 0; k < (i * 37) % 97; ++k) body += "passage " + std::to_string(i * 1000 + k) + ". ";
  r.prompt = "Q" + std::to_string(i) + " [" + v + "]\n" + body;
  r.prompt_tokens = std::int64_t(r.prompt.size() / 4);
  r.output = "answer " + std::to_string(i * 7919 % 10007) + " for " + v;
  if (i % 11 == 5) {
    r.status = Status::unmeasured;
    r.error = "HTTP 503 on " + r.instance;
    r.output.clear();
  } else {
    r.correct = i % 3 == 0;
    r.scores = {{"em", i % 3 == 0 ? 1.0 : 0.0}, {"f1", 1.0 / (1 + i)}};
  }
  r.timings_ms = {{"total", 0.5 * i}};
  r.extra = {{"i", i}, {"v", v}};
  return r;
}

// Writes every row of `plan` that is not done (unmeasured rows are retried, and fail again with
// the same error); calls `ack(true)` after a new row is committed, `ack(false)` after an
// unmeasured row was rewritten. After `stop_after` new rows the writer waits to be killed: on an
// overloaded machine the parent may be descheduled for long, and the writer must not finish
// before the kill. Returns the number of new rows.
int write_missing(const fs::path& path, const Plan& plan, const std::function<void(bool)>& ack,
                  int stop_after = -1) {
  RunStore st(path, RunStore::Mode::create, plan.durability);
  std::int64_t run = st.begin_run(crash_config());
  std::set<Key> done = st.done_keys(run), present;
  st.for_each_result(run, [&](const Result& r) { present.insert({r.instance, r.variant}); });
  int added = 0;
  for (int i = 0; i < plan.instances; ++i)
    for (const auto& v : plan.variants) {
      Key key{"inst-" + std::to_string(i), v};
      if (done.count(key)) continue;
      st.put(expected_row(run, i, v));
      bool is_new = !present.count(key);
      added += is_new;
      ack(is_new);
      if (added == stop_after)
        for (;;) pause();
      if (plan.pause_us > 0) std::this_thread::sleep_for(std::chrono::microseconds(plan.pause_us));
    }
  return added;
}

Counts counts_of(const fs::path& path) {
  RunStore st(path, RunStore::Mode::read_only);
  Counts c;
  for (const RunInfo& r : st.runs()) {
    Counts k = st.counts(r.id);
    c.rows += k.rows;
    c.unmeasured += k.unmeasured;
  }
  return c;
}

// How many rows past its kill target a writer may get before it waits for the kill.
constexpr int kSlackRows = 100;

// Forks a writer, waits for `target` acknowledged rows, sleeps `delay_us`, SIGKILLs it.
// Returns the number of rows the writer acknowledged before it died.
std::int64_t kill_writer_after(const fs::path& path, const Plan& plan, int target, int delay_us) {
  int fds[2];
  EXPECT_EQ(pipe(fds), 0);
  pid_t pid = fork();
  if (pid == 0) {
    close(fds[0]);
    try {
      write_missing(
          path, plan,
          [&](bool is_new) {
            if (write(fds[1], is_new ? "+" : "=", 1) != 1) _exit(4);
          },
          target + kSlackRows);
    } catch (const std::exception& e) {
      std::fprintf(stderr, "crash-test writer: %s\n", e.what());
      _exit(3);
    }
    _exit(0);
  }
  close(fds[1]);
  std::int64_t acked = 0;  // new rows acknowledged
  auto count = [&](const char* buf, ssize_t n) {
    for (ssize_t k = 0; k < n; ++k) acked += buf[k] == '+';
  };
  char buf[256];
  while (acked < target) {
    ssize_t n = read(fds[0], buf, std::min<size_t>(sizeof buf, size_t(target - acked)));
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;  // the writer exited early: reported by the status check below
    count(buf, n);
  }
  if (delay_us > 0) std::this_thread::sleep_for(std::chrono::microseconds(delay_us));
  kill(pid, SIGKILL);
  int status = 0;
  waitpid(pid, &status, 0);
  for (ssize_t n; (n = read(fds[0], buf, sizeof buf)) > 0;) count(buf, n);  // sent before death
  close(fds[0]);
  EXPECT_TRUE(WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL)
      << "the writer was not killed mid-run (exit status " << status << ")";
  return acked;
}

void verify_complete(const fs::path& path, const Plan& plan) {
  // SQLite's own consistency check of the file.
  sqlite3* db = nullptr;
  ASSERT_EQ(sqlite3_open_v2(path.c_str(), &db, SQLITE_OPEN_READONLY, nullptr), SQLITE_OK);
  sqlite3_stmt* s = nullptr;
  ASSERT_EQ(sqlite3_prepare_v2(db, "PRAGMA integrity_check", -1, &s, nullptr), SQLITE_OK);
  ASSERT_EQ(sqlite3_step(s), SQLITE_ROW);
  EXPECT_STREQ(reinterpret_cast<const char*>(sqlite3_column_text(s, 0)), "ok");
  sqlite3_finalize(s);
  sqlite3_close(db);

  RunStore st(path, RunStore::Mode::read_only);
  ASSERT_EQ(st.runs().size(), 1u) << "a resume created a second run";
  std::int64_t run = st.runs()[0].id;
  std::map<Key, int> seen;
  int intact = 0;
  for (const Result& r : st.results(run)) {
    ++seen[{r.instance, r.variant}];
    int i = std::stoi(r.instance.substr(5));
    if (r == expected_row(run, i, r.variant)) ++intact;
  }
  EXPECT_EQ(int(seen.size()), plan.total()) << "rows lost";
  for (auto& [k, n] : seen) EXPECT_EQ(n, 1) << "duplicated: " << k.first << "/" << k.second;
  for (int i = 0; i < plan.instances; ++i)
    for (const auto& v : plan.variants)
      EXPECT_TRUE(seen.count({"inst-" + std::to_string(i), v})) << "missing inst-" << i << "/" << v;
  EXPECT_EQ(intact, plan.total()) << "rows with altered content";
  Counts c = st.counts(run);
  EXPECT_EQ(c.rows, plan.total());
}

// Kill rounds (ack target, delay after it), then the in-process resume, then the checks.
void crash_and_resume(const Plan& plan, const std::vector<std::pair<int, int>>& kills) {
  fs::path path = testing::temp_dir("crash") / "run.sqlite";
  std::int64_t before = 0;
  for (auto [target, delay_us] : kills) {
    // `target` counts all rows of the run; this writer starts at `before`.
    std::int64_t acked = kill_writer_after(path, plan, int(target - before), delay_us);
    std::int64_t after = counts_of(path).rows;
    // Every acknowledged row survived; at most the row in flight was committed without its ack.
    EXPECT_GE(after, before + acked)
        << "acknowledged rows were lost (kill after " << target << " rows + " << delay_us << " us)";
    EXPECT_LE(after, before + acked + 1);
    EXPECT_LT(after, plan.total()) << "the writer finished before the kill";
    before = after;
  }
  ASSERT_GT(before, 0);
  // The final resume writes exactly the rows that are missing; put() would throw on a done row.
  // The final resume adds exactly the missing rows and rewrites only the unmeasured ones (put()
  // would throw on a finished row).
  const std::int64_t unmeasured_before = counts_of(path).unmeasured;
  int retried = 0;
  int added = write_missing(path, plan, [&](bool is_new) { retried += !is_new; });
  EXPECT_EQ(added, plan.total() - before);
  EXPECT_EQ(retried, unmeasured_before);
  verify_complete(path, plan);
}

TEST(RunStoreCrash, SigkillDuringFastWritesLosesNothing) {
  // 2000 instances, fsync-free commits (tens of microseconds each) with a short pause between
  // rows: the kills land at arbitrary points inside and between put() calls, at four delays.
  Plan plan{2000, {"gold-first"}, Durability::normal, 30};
  crash_and_resume(plan, {{137, 0}, {420, 150}, {811, 1000}, {1290, 3000}});
}

TEST(RunStoreCrash, SigkillDuringDurableWritesLosesNothing) {
  // The default durability (an fdatasync per commit): kills land inside the fsync as well.
  Plan plan{150, {"gold-first", "gold-last"}, Durability::full, 100};
  crash_and_resume(plan, {{20, 0}, {60, 2000}, {110, 5000}});
}

}  // namespace
}  // namespace ragform::store
