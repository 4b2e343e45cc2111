// ServerPool with fake endpoints: the least-outstanding choice, the per-server bound, failover on
// no answer / 5xx / 408 / 429 (and none on another 4xx), a down server skipped and then tried
// again, every server down, and the model and weights checks of a fleet (hashes, probe).
#include "reader/server_pool.h"

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <functional>
#include <mutex>
#include <thread>
#include <vector>

#include <gtest/gtest.h>

namespace ragform::reader {
namespace {

using namespace std::chrono_literals;

HttpAnswer answer(int status, std::string body = "{}") {
  HttpAnswer a;
  a.status = status;
  a.body = std::move(body);
  if (status == 0)
    a.error = "no answer (Connection)";
  else if (!a.ok())
    a.error = "HTTP " + std::to_string(status);
  return a;
}

const char* kModels = R"({"data": [{"id": "m", "owned_by": "ragform"}]})";

// A server: answers POSTs with `reply` (default 200 with its name) and GET /models with `models`;
// counts both. With `hold`, every POST waits until release() is called.
class Fake : public Endpoint {
 public:
  explicit Fake(std::string name) : name_(std::move(name)) {}
  std::string name() const override { return name_; }
  HttpAnswer post(const std::string&, const std::string&) const override {
    std::unique_lock<std::mutex> lock(mu_);
    ++posts_;
    ++in_flight_;
    cv_.notify_all();
    cv_.wait(lock, [&] { return !hold_ || released_ > 0; });
    if (hold_) --released_;
    --in_flight_;
    return reply_ ? reply_() : answer(200, name_);
  }
  HttpAnswer get(const std::string&) const override {
    std::lock_guard<std::mutex> lock(mu_);
    ++gets_;
    return models_;
  }
  void set_reply(std::function<HttpAnswer()> r) {
    std::lock_guard<std::mutex> lock(mu_);
    reply_ = std::move(r);
  }
  void set_models(HttpAnswer a) {
    std::lock_guard<std::mutex> lock(mu_);
    models_ = std::move(a);
  }
  void hold() { hold_ = true; }
  void release(int n = 1) {
    std::lock_guard<std::mutex> lock(mu_);
    released_ += n;
    cv_.notify_all();
  }
  // Waits until `n` POSTs are held here; false after 5 s.
  bool wait_in_flight(int n) const {
    std::unique_lock<std::mutex> lock(mu_);
    return cv_.wait_for(lock, 5s, [&] { return in_flight_ >= n; });
  }
  // Waits until `n` POSTs arrived here in all; false after 5 s.
  bool wait_posts(int n) const {
    std::unique_lock<std::mutex> lock(mu_);
    return cv_.wait_for(lock, 5s, [&] { return posts_ >= n; });
  }
  int in_flight() const {
    std::lock_guard<std::mutex> lock(mu_);
    return in_flight_;
  }
  int posts() const {
    std::lock_guard<std::mutex> lock(mu_);
    return posts_;
  }
  int gets() const {
    std::lock_guard<std::mutex> lock(mu_);
    return gets_;
  }

 private:
  std::string name_;
  mutable std::mutex mu_;
  mutable std::condition_variable cv_;
  std::function<HttpAnswer()> reply_;
  HttpAnswer models_ = answer(200, kModels);
  std::atomic<bool> hold_{false};
  mutable int released_ = 0, in_flight_ = 0, posts_ = 0, gets_ = 0;
};

// A pool over `n` fakes (named A, B, C, ...) whose notes are collected.
struct Fleet {
  explicit Fleet(int n, PoolOptions opt = {}) {
    std::vector<std::unique_ptr<Endpoint>> eps;
    for (int i = 0; i < n; ++i) {
      auto f = std::make_unique<Fake>(std::string(1, char('A' + i)));
      fakes.push_back(f.get());
      eps.push_back(std::move(f));
    }
    opt.note = [this](const std::string& s) {
      std::lock_guard<std::mutex> lock(mu);
      notes.push_back(s);
    };
    if (opt.backoff_s == PoolOptions{}.backoff_s) opt.backoff_s = 0.001;
    pool = std::make_unique<ServerPool>(std::move(eps), opt);
  }
  std::vector<std::string> all_notes() {
    std::lock_guard<std::mutex> lock(mu);
    return notes;
  }
  std::vector<Fake*> fakes;
  std::unique_ptr<ServerPool> pool;
  std::mutex mu;
  std::vector<std::string> notes;
};

bool has_note(const std::vector<std::string>& notes, const std::string& part) {
  for (const auto& n : notes)
    if (n.find(part) != std::string::npos) return true;
  return false;
}

TEST(SplitUrlList, CommasAndSpaces) {
  EXPECT_EQ(split_url_list("http://a/v1"), std::vector<std::string>{"http://a/v1"});
  EXPECT_EQ(split_url_list(" http://a , http://b,,http://c "),
            (std::vector<std::string>{"http://a", "http://b", "http://c"}));
  EXPECT_TRUE(split_url_list(" , ").empty());
}

TEST(ServedModels, SortedIdsWithOwners) {
  EXPECT_EQ(served_models(R"({"data": [{"id": "b"}, {"id": "a", "owned_by": "x"}]})"),
            (std::vector<std::string>{"a (x)", "b"}));
  EXPECT_TRUE(served_models("not json").empty());
  EXPECT_TRUE(served_models(R"({"object": "list"})").empty());
  // A server's fields of another type are left out, not nlohmann's type_error.302 (issue 40,
  // third pass): an owned_by that is a number, an id that is not a string.
  EXPECT_EQ(
      served_models(
          R"({"data": [{"id": "a", "owned_by": 5}, {"id": 7}, {"id": "b", "owned_by": null}]})"),
      (std::vector<std::string>{"a", "b"}));
}

// Each request goes to the server with the fewest in flight (ties: the first given); a request
// finding every server at its bound waits, then takes the slot that frees.
TEST(ServerPool, LeastOutstandingAndThePerServerBound) {
  PoolOptions o;
  o.per_server = 2;
  Fleet f(3, o);
  for (Fake* x : f.fakes) x->hold();
  std::vector<std::thread> reqs;
  std::vector<std::string> got(7);
  auto start = [&](int i) { reqs.emplace_back([&, i] { got[i] = f.pool->post("/c", "{}"); }); };
  // One at a time, so each choice sees the ones before it: A, B, C, then A, B, C again.
  const int expect[6] = {0, 1, 2, 0, 1, 2};
  for (int i = 0; i < 6; ++i) {
    start(i);
    ASSERT_TRUE(f.fakes[expect[i]]->wait_in_flight(i / 3 + 1)) << "request " << i;
  }
  for (Fake* x : f.fakes) EXPECT_EQ(x->in_flight(), 2);
  // Every server holds 2 = per_server: the 7th waits instead of overloading one.
  start(6);
  std::this_thread::sleep_for(200ms);
  for (Fake* x : f.fakes) EXPECT_EQ(x->posts(), 2);
  f.fakes[1]->release();  // B frees a slot: the 7th goes there
  ASSERT_TRUE(f.fakes[1]->wait_posts(3));
  EXPECT_EQ(f.fakes[0]->posts() + f.fakes[2]->posts(), 4);
  for (Fake* x : f.fakes) x->release(3);
  for (auto& t : reqs) t.join();
  EXPECT_EQ(f.pool->answered(), (std::vector<int64_t>{2, 3, 2}));
  EXPECT_TRUE(f.all_notes().empty());
}

// No answer and 5xx: the request is answered by another server at once; the failed server is
// down (one note), skipped by the next requests, tried again after recheck_s, and back (one note).
TEST(ServerPool, FailoverSkipsADownServerAndTakesItBack) {
  for (int status : {0, 503}) {
    PoolOptions o;
    o.recheck_s = 0.3;
    Fleet f(2, o);
    Fake& a = *f.fakes[0];
    a.set_reply([status] { return answer(status); });
    EXPECT_EQ(f.pool->post("/c", "{}"), "B") << status;
    EXPECT_EQ(a.posts(), 1);
    for (int i = 0; i < 5; ++i) EXPECT_EQ(f.pool->post("/c", "{}"), "B");
    EXPECT_EQ(a.posts(), 1) << "a down server is skipped while another answers";
    auto notes = f.all_notes();
    ASSERT_EQ(notes.size(), 1u);
    EXPECT_NE(notes[0].find("server A is down"), std::string::npos) << notes[0];
    a.set_reply(nullptr);  // A is back
    std::this_thread::sleep_for(400ms);
    EXPECT_EQ(f.pool->post("/c", "{}"), "A");
    EXPECT_TRUE(has_note(f.all_notes(), "server A answers again"));
    EXPECT_EQ(f.pool->answered(), (std::vector<int64_t>{1, 6}));
  }
}

// 408 and 429 go to another server but do not mark the server down (it is alive, only busy).
TEST(ServerPool, TimeoutAndRateLimitGoElsewhere) {
  for (int status : {408, 429}) {
    Fleet f(2);
    f.fakes[0]->set_reply([status] { return answer(status); });
    EXPECT_EQ(f.pool->post("/c", "{}"), "B");
    EXPECT_EQ(f.pool->post("/c", "{}"), "B");
    EXPECT_EQ(f.fakes[0]->posts(), 2) << "not down: still tried first";
    EXPECT_TRUE(f.all_notes().empty());
  }
}

// Another 4xx is the request's fault: it fails at once, no other server sees it.
TEST(ServerPool, AClientErrorIsNotTriedElsewhere) {
  Fleet f(3);
  f.fakes[0]->set_reply([] { return answer(400); });
  try {
    f.pool->post("/c", "{}");
    FAIL() << "no throw";
  } catch (const RequestFailed& e) {
    EXPECT_EQ(e.status(), 400);
    EXPECT_EQ(e.attempts(), 1);
  }
  EXPECT_EQ(f.fakes[1]->posts() + f.fakes[2]->posts(), 0);
}

// Every server down: rounds of one attempt per server, `retries` further rounds, then the
// request fails as with one server (status 0, the attempts counted).
TEST(ServerPool, AllDownFailsAfterTheRounds) {
  PoolOptions o;
  o.retries = 2;
  Fleet f(3, o);
  for (Fake* x : f.fakes) x->set_reply([] { return answer(0); });
  try {
    f.pool->post("/c", "{}");
    FAIL() << "no throw";
  } catch (const RequestFailed& e) {
    EXPECT_EQ(e.status(), 0);
    EXPECT_EQ(e.attempts(), 9);
    EXPECT_NE(std::string(e.what()).find("after 9 attempts on 3 servers"), std::string::npos)
        << e.what();
  }
  for (Fake* x : f.fakes) EXPECT_EQ(x->posts(), 3);
  // One server: HttpJsonClient::post's rule, retries + 1 attempts.
  Fleet one(1, o);
  one.fakes[0]->set_reply([] { return answer(502); });
  EXPECT_THROW(one.pool->post("/c", "{}"), RequestFailed);
  EXPECT_EQ(one.fakes[0]->posts(), 3);
  EXPECT_EQ(one.fakes[0]->gets(), 0) << "one server is never asked for its model";
  EXPECT_TRUE(one.all_notes().empty()) << "one server has nobody to hand over to";
}

// The model check: a mixed fleet is refused when it opens; a server down then and reached later
// with another model is left out (one note) while the others answer.
TEST(ServerPool, SameModelCheck) {
  {
    Fleet f(3);
    f.fakes[2]->set_models(answer(200, R"({"data": [{"id": "other", "owned_by": "ragform"}]})"));
    try {
      f.pool->check_all();
      FAIL() << "no throw";
    } catch (const Error& e) {
      const std::string w = e.what();
      EXPECT_NE(w.find("server C serves [other (ragform)], but A serves [m (ragform)]"),
                std::string::npos)
          << w;
    }
  }
  {
    PoolOptions o;
    o.recheck_s = 0.05;
    Fleet f(2, o);
    f.fakes[1]->set_models(answer(0));
    f.fakes[1]->set_reply([] { return answer(0); });
    f.pool->check_all();  // B down at the start: a note, no error
    EXPECT_TRUE(has_note(f.all_notes(), "server B is down")) << f.all_notes().size();
    f.fakes[1]->set_models(answer(200, R"({"data": [{"id": "other"}]})"));
    f.fakes[1]->set_reply(nullptr);
    std::this_thread::sleep_for(100ms);  // B's recheck is due
    f.fakes[0]->hold();                  // A busy: the next request goes to B
    std::thread t([&] { EXPECT_EQ(f.pool->post("/c", "{}"), "A"); });
    ASSERT_TRUE(f.fakes[0]->wait_in_flight(1));
    std::string second;
    std::thread t2([&] { second = f.pool->post("/c", "{}"); });
    std::this_thread::sleep_for(200ms);
    f.fakes[0]->release(2);
    t.join();
    t2.join();
    EXPECT_EQ(second, "A");
    EXPECT_EQ(f.fakes[1]->posts(), 0) << "a server with another model takes no request";
    EXPECT_TRUE(has_note(f.all_notes(),
                         "server B serves [other], but A serves [m (ragform)]; it "
                         "is left out"));
  }
  {
    Fleet f(2);  // a key the server refuses is the request's error, not a mismatch
    f.fakes[1]->set_models(answer(401));
    EXPECT_THROW(f.pool->check_all(), RequestFailed);
  }
}

// The weights check of a fleet whose servers list the same model: the hashes their /models
// report, else the probe's answers. A mix is refused naming both servers and which way they
// differ; the probe is sent once per server, never when both report a hash.
TEST(ServerPool, SameWeightsCheck) {
  auto models_with = [](const std::string& sha) {
    return answer(
        200, R"({"data": [{"id": "m", "owned_by": "ragform", "ragform": {"model_sha256": ")" + sha +
                 R"("}}]})");
  };
  const std::string h1(64, 'a'), h2(64, 'b');
  PoolOptions probing;
  probing.probe_endpoint = "/completions";
  probing.probe_body = R"({"prompt": "probe"})";
  {
    Fleet f(3, probing);
    f.fakes[0]->set_models(models_with(h1));
    f.fakes[1]->set_models(models_with(h1));
    f.fakes[2]->set_models(models_with(h2));
    try {
      f.pool->check_all();
      FAIL() << "no throw";
    } catch (const Error& e) {
      const std::string w = e.what();
      EXPECT_NE(w.find("server C serves the same model id with other weights: its /models reports "
                       "model sha256 bbbbbbbbbbbbbbbb..., A's aaaaaaaaaaaaaaaa... (the hashes "
                       "differ): every --base-url must serve the same model"),
                std::string::npos)
          << w;
    }
    for (Fake* x : f.fakes) EXPECT_EQ(x->posts(), 0) << "hashes compared: no probe";
  }
  {
    Fleet f(3, probing);  // no hashes: the probe; C answers it otherwise
    f.fakes[0]->set_reply([] { return answer(200, "same"); });
    f.fakes[1]->set_reply([] { return answer(200, "same"); });
    f.fakes[2]->set_reply([] { return answer(200, "other"); });
    try {
      f.pool->check_all();
      FAIL() << "no throw";
    } catch (const Error& e) {
      const std::string w = e.what();
      EXPECT_NE(w.find("server C serves the same model id with other weights or settings: its "
                       "greedy answer to the weights probe is \"other\", A's \"same\" (the probe "
                       "answers differ; neither server reports a model sha256 in /models)"),
                std::string::npos)
          << w;
    }
    EXPECT_EQ(f.fakes[0]->posts(), 1) << "the reference's probe asked once";
    EXPECT_EQ(f.fakes[1]->posts(), 1);
    EXPECT_EQ(f.fakes[2]->posts(), 1);
  }
  {
    Fleet f(2, probing);  // one hash, one without: the probe decides; equal answers serve
    f.fakes[0]->set_models(models_with(h1));
    for (Fake* x : f.fakes) x->set_reply([] { return answer(200, "same"); });
    f.pool->check_all();
    EXPECT_EQ(f.fakes[0]->posts(), 1);
    EXPECT_EQ(f.fakes[1]->posts(), 1);
    f.pool->post("/c", "{}");
    f.pool->post("/c", "{}");
    EXPECT_EQ(f.fakes[0]->posts() + f.fakes[1]->posts(), 4) << "no further probe";
  }
  {
    // Down when the fleet opens, reached later with other weights: left out with a note.
    PoolOptions o = probing;
    o.recheck_s = 0.05;
    Fleet f(2, o);
    f.fakes[0]->set_models(models_with(h1));
    f.fakes[1]->set_models(answer(0));
    f.fakes[1]->set_reply([] { return answer(0); });
    f.pool->check_all();
    f.fakes[1]->set_models(models_with(h2));
    f.fakes[1]->set_reply(nullptr);
    std::this_thread::sleep_for(100ms);  // B's recheck is due
    f.fakes[0]->hold();                  // A busy: the next request goes to B
    std::thread t([&] { EXPECT_EQ(f.pool->post("/c", "{}"), "A"); });
    ASSERT_TRUE(f.fakes[0]->wait_in_flight(1));
    std::string second;
    std::thread t2([&] { second = f.pool->post("/c", "{}"); });
    std::this_thread::sleep_for(200ms);
    f.fakes[0]->release(2);
    t.join();
    t2.join();
    EXPECT_EQ(second, "A");
    EXPECT_EQ(f.fakes[1]->posts(), 0) << "a server with other weights takes no request";
    EXPECT_TRUE(has_note(f.all_notes(),
                         "server B serves the same model id with other weights: its /models "
                         "reports model sha256 bbbbbbbbbbbbbbbb..., A's aaaaaaaaaaaaaaaa... (the "
                         "hashes differ); it is left out"));
  }
}

TEST(ReportedSha256, OneModelOrSeveral) {
  EXPECT_EQ(reported_sha256(R"({"data": [{"id": "m"}]})"), "");
  EXPECT_EQ(reported_sha256(R"({"data": [{"id": "m", "ragform": {"model_sha256": "ab"}}]})"), "ab");
  EXPECT_EQ(reported_sha256(R"({"data": [{"id": "b", "ragform": {"model_sha256": "2"}},
                                         {"id": "a", "ragform": {"model_sha256": "1"}}]})"),
            "a=1, b=2");
  EXPECT_EQ(reported_sha256("not json"), "");
  EXPECT_EQ(reported_sha256(R"({"data": [{"id": 7, "ragform": {"model_sha256": "ab"}},
                                          {"id": "m", "ragform": {"model_sha256": "cd"}}]})"),
            "=ab, m=cd");
}

}  // namespace
}  // namespace ragform::reader
