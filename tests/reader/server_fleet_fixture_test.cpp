// One study across three `ragform serve` servers of stories260K (--base-url with several URLs):
// one server down from the start, one stopped mid-run. Nothing is lost, nothing is measured twice,
// and the rows (the same greedy answers) and the run identity are those of a run against one
// server. A fleet whose servers serve different models, or one model id with other weights, is
// refused before any request.
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <memory>
#include <numeric>
#include <string>
#include <thread>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "reader/openai_reader.h"
#include "server/serve_harness.h"
#include "store/run_store.h"
#include "store/sha256.h"
#include "support/test_support.h"

namespace ragform::testing {
namespace {

namespace fs = std::filesystem;
using reader::OpenAIOptions;
using reader::OpenAIReader;

std::string v1(const ServeProcess& s) { return s.url() + "/v1"; }

// A loopback port with nothing listening: bound by the kernel's choice, then closed.
std::string down_url() {
  int fd = socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  EXPECT_EQ(bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof a), 0);
  socklen_t n = sizeof a;
  getsockname(fd, reinterpret_cast<sockaddr*>(&a), &n);
  close(fd);
  return "http://127.0.0.1:" + std::to_string(ntohs(a.sin_port)) + "/v1";
}

std::vector<std::string> prompts(int n) {
  const char* names[] = {"Lily", "Tom", "Sue", "Max", "Ben", "Amy", "Sam", "Mia"};
  const char* starts[] = {"Once upon a time, ", "One day, ", "In the park, "};
  std::vector<std::string> out;
  for (int i = 0; i < n; ++i) out.push_back(std::string(starts[i % 3]) + names[i % 8] + " saw a");
  return out;
}

// The reader's requests are spread over the live servers; the one stopped while the batch runs
// hands its remaining requests to the other; each prompt is answered exactly once, with the
// greedy text one server gives.
TEST(ServerFleet, OneDownOneStoppedMidRunSameAnswersAsOneServer) {
  REQUIRE_SHARED(model, "fixtures/models/stories260K.gguf");
  // Paced (5 ms a forward pass), so that c is stopped with requests left for b. `one_srv` answers
  // alone, for reference: the fleet's servers start cold (a server answers a prompt it has seen
  // faster, which could let b finish everything before c stops).
  const std::vector<std::string> base = {"-m", model.string(), "--ctx", "256", "--batch",
                                         "2",  "--pace-ms",    "5"};
  ServeProcess a(base), b(base), c(base), one_srv(base);
  a.stop();  // down from the start: its port refuses
  const std::vector<std::string> ps = prompts(24);
  reader::GenerateParams gp;
  gp.max_tokens = 24;

  OpenAIOptions one;
  one.base_url = v1(one_srv);
  one.model = "stories260K";
  one.concurrency = 2;
  one.timeout_s = 10;
  one.backoff_s = 0.05;
  const auto want = OpenAIReader(one).generate_batch(ps, gp);

  OpenAIOptions fleet = one;
  fleet.base_url = v1(a) + "," + v1(b) + "," + v1(c);
  ::testing::internal::CaptureStderr();
  OpenAIReader r(fleet);
  EXPECT_EQ(r.servers(), (std::vector<std::string>{v1(a), v1(b), v1(c)}));
  std::vector<reader::Generation> got;
  std::thread run([&] { got = r.generate_batch(ps, gp); });
  // Stop c once it has answered a few: the batch is then mid-run.
  const auto t0 = std::chrono::steady_clock::now();
  while (r.answered()[2] < 2 && std::chrono::steady_clock::now() - t0 < std::chrono::seconds(20))
    std::this_thread::sleep_for(std::chrono::milliseconds(2));
  const auto at_stop = r.answered();
  c.stop();
  run.join();
  const std::string notes = ::testing::internal::GetCapturedStderr();
  ASSERT_GE(at_stop[2], 2) << "c never answered";
  ASSERT_LT(at_stop[0] + at_stop[1] + at_stop[2], int64_t(ps.size())) << "stopped after the end";

  ASSERT_EQ(got.size(), want.size());
  for (size_t i = 0; i < ps.size(); ++i) {
    EXPECT_EQ(got[i].text, want[i].text) << ps[i];
    EXPECT_EQ(got[i].finish_reason, want[i].finish_reason) << ps[i];
  }
  // One line each: a down from the start, c when it stopped.
  EXPECT_NE(notes.find("ragform: note: server " + v1(a) + " is down (no answer from"),
            std::string::npos)
      << notes;
  EXPECT_NE(notes.find("ragform: note: server " + v1(c) + " is down (no answer from"),
            std::string::npos)
      << notes;
  EXPECT_EQ(notes.find("answers again"), std::string::npos) << notes;
  const auto n = r.answered();
  EXPECT_EQ(n[0], 0) << "the down server answered";
  EXPECT_GE(n[2], at_stop[2]);
  EXPECT_LT(n[2], int64_t(ps.size()));
  EXPECT_EQ(std::accumulate(n.begin(), n.end(), int64_t(0)), int64_t(ps.size()))
      << "each prompt answered exactly once";
}

// The rows of three sharded NQ questions' SURE pairs, without the timings.
std::vector<std::string> rows(const fs::path& store) {
  store::RunStore st(store, store::RunStore::Mode::read_only);
  std::vector<std::string> out;
  for (const auto& r : st.results(std::nullopt))
    out.push_back(r.instance + "|" + r.variant + "|" + store::to_string(r.status) + "|" + r.prompt +
                  "|" + r.output + "|" + (r.correct ? std::to_string(*r.correct) : "-"));
  std::sort(out.begin(), out.end());
  return out;
}

fs::path pairs_file(const fs::path& dir) {
  const fs::path nq = shared_path("data/lost-in-the-middle/nq-open-oracle.jsonl.gz");
  EXPECT_TRUE(fs::exists(nq)) << "missing shared file: " << nq;
  std::string cmd = "zcat " + quoted(nq) + " | head -3 > " + quoted(dir / "qa.jsonl");
  EXPECT_EQ(std::system(cmd.c_str()), 0);
  auto r = run_ragform("sure perturb --input " + quoted(dir / "qa.jsonl") +
                       " --kinds format/json,metadata/datasource-wiki");
  EXPECT_EQ(r.exit_code, 0) << r.err;
  write_file(dir / "pairs.jsonl", r.out);
  return dir / "pairs.jsonl";
}

// `sure eval` against one server and against a fleet (a down server, --base-url repeated and a
// comma list) stores the same rows under the same run identity, so one store holds the study;
// the down server is one note on stderr. A fleet with another model is refused.
TEST(ServerFleet, SureEvalOverAFleetIsTheRunOfOneServer) {
  REQUIRE_SHARED(model, "fixtures/models/stories260K.gguf");
  const std::vector<std::string> base = {"-m", model.string(), "--ctx", "1024"};
  ServeProcess b(base), c(base);
  auto dir = temp_dir("server-fleet-sure");
  const fs::path pairs = pairs_file(dir);
  const std::string eval =
      "sure eval --input " + quoted(pairs) + " --reader openai -m stories260K --retries 1 --store ";
  auto r1 = run_ragform(eval + quoted(dir / "one.sqlite") + " --base-url " + v1(b));
  ASSERT_EQ(r1.exit_code, 0) << r1.err;
  const std::string down = down_url();
  auto r3 = run_ragform(eval + quoted(dir / "fleet.sqlite") + " --base-url " + down +
                        " --base-url " + v1(b) + "," + v1(c));
  ASSERT_EQ(r3.exit_code, 0) << r3.err;
  EXPECT_NE(r3.err.find("note: server " + down + " is down"), std::string::npos) << r3.err;
  EXPECT_NE(r3.err.find(" 0 unmeasured"), std::string::npos) << r3.err;

  const auto want = rows(dir / "one.sqlite");
  EXPECT_FALSE(want.empty());
  EXPECT_EQ(rows(dir / "fleet.sqlite"), want);
  store::RunStore s1(dir / "one.sqlite", store::RunStore::Mode::read_only);
  store::RunStore s3(dir / "fleet.sqlite", store::RunStore::Mode::read_only);
  ASSERT_EQ(s1.runs().size(), 1u);
  ASSERT_EQ(s3.runs().size(), 1u);
  EXPECT_EQ(s3.runs()[0].config_key, s1.runs()[0].config_key) << s3.runs()[0].reader;
  EXPECT_EQ(s3.runs()[0].reader, "openai:stories260K");
  // The servers are the run's provenance, beside it: who answered how many of its requests.
  const auto sv = s3.run_meta(s3.runs()[0].id, "servers");
  ASSERT_TRUE(sv.has_value());
  ASSERT_EQ(sv->size(), 3u) << sv->dump();
  EXPECT_EQ((*sv)[0]["url"], down);
  EXPECT_EQ((*sv)[0]["answered"], 0);
  EXPECT_EQ((*sv)[1]["url"], v1(b));
  EXPECT_EQ((*sv)[2]["url"], v1(c));
  EXPECT_GE((*sv)[1]["answered"].get<int64_t>() + (*sv)[2]["answered"].get<int64_t>(),
            int64_t(want.size()))
      << sv->dump();
  const auto sv1 = s1.run_meta(s1.runs()[0].id, "servers");
  ASSERT_TRUE(sv1.has_value());
  EXPECT_EQ(sv1->size(), 1u);

  // Every server down: each one note, every row unmeasured, and the run exits 1 as with one
  // server (nothing measured).
  const std::string down2 = down_url();
  auto r0 = run_ragform(eval + quoted(dir / "down.sqlite") + " --base-url " + down + "," + down2);
  EXPECT_EQ(r0.exit_code, 1) << r0.err;
  EXPECT_NE(r0.err.find("note: server " + down + " is down"), std::string::npos) << r0.err;
  EXPECT_NE(r0.err.find("note: server " + down2 + " is down (no answer from " + down2 +
                        "/models (Connection)); no server answers"),
            std::string::npos)
      << r0.err;
  EXPECT_NE(r0.err.find("ragform: sure eval: "), std::string::npos) << r0.err;
  EXPECT_NE(r0.err.find("after 4 attempts on 2 servers"), std::string::npos) << r0.err;

  // Another model id on one server: refused before anything is measured.
  std::vector<std::string> other = base;
  other.insert(other.end(), {"--alias", "other"});
  ServeProcess d(other);
  auto rx = run_ragform(eval + quoted(dir / "mixed.sqlite") + " --base-url " + v1(b) + "," + v1(d));
  EXPECT_EQ(rx.exit_code, 1) << rx.err;
  EXPECT_NE(rx.err.find("ragform: openai reader: server " + v1(d) +
                        " serves [other (ragform)], but " + v1(b) +
                        " serves [stories260K (ragform)]: every --base-url must serve the same "
                        "model"),
            std::string::npos)
      << rx.err;
  EXPECT_FALSE(fs::exists(dir / "mixed.sqlite") && !rows(dir / "mixed.sqlite").empty());
}

// An Endpoint that hides the model hash of a `ragform serve` /models answer: the server then looks
// like llama-server or vLLM, which report none, and the pool falls back to the weights probe.
class WithoutHash : public reader::Endpoint {
 public:
  explicit WithoutHash(const std::string& url) : http_(url, "test", "", 10) {}
  std::string name() const override { return http_.name(); }
  reader::HttpAnswer post(const std::string& e, const std::string& b) const override {
    return http_.post(e, b);
  }
  reader::HttpAnswer get(const std::string& e) const override {
    reader::HttpAnswer a = http_.get(e);
    nlohmann::json j = nlohmann::json::parse(a.body, nullptr, false);
    if (a.ok() && j.is_object() && j.contains("data"))
      for (auto& m : j["data"]) m.erase("ragform");
    a.body = j.dump();
    return a;
  }

 private:
  reader::HttpEndpoint http_;
};

// Servers of one model id with other weights (a copy of stories260K with one bit changed, served
// under its name; a random model of the same id) are one fleet only in name: `ragform serve`
// reports its file's sha256 in /v1/models and the reader refuses the mix, naming the servers
// and the hashes; servers that report no hash are compared by a probe's greedy answer.
TEST(ServerFleet, SameIdOtherWeightsIsRefused) {
  REQUIRE_SHARED(model, "fixtures/models/stories260K.gguf");
  auto dir = temp_dir("server-fleet-weights");
  std::string bytes = read_file(model);
  ASSERT_GT(bytes.size(), 64u);
  bytes[bytes.size() - 4] ^= 1;  // the last weight's lowest bit
  write_file(dir / "flipped.gguf", bytes);
  auto mk = run_ragform("make-test-model --shape tiny --type f32 --vocab-from " + quoted(model) +
                        " -o " + quoted(dir / "random.gguf"));
  ASSERT_EQ(mk.exit_code, 0) << mk.err;
  const std::vector<std::string> base = {"--ctx", "256", "--alias", "stories260K"};
  auto serve = [&](const fs::path& file) {
    std::vector<std::string> args = {"-m", file.string()};
    args.insert(args.end(), base.begin(), base.end());
    return std::make_unique<ServeProcess>(args);
  };
  auto b = serve(model), b2 = serve(model), e = serve(dir / "flipped.gguf"),
       r = serve(dir / "random.gguf");

  // /v1/models names the file's hash, computed once at start-up.
  const std::string sha_b = store::sha256_file(model),
                    sha_e = store::sha256_file(dir / "flipped.gguf");
  ASSERT_NE(sha_b, sha_e);
  httplib::Client cb("127.0.0.1", b->port()), ce("127.0.0.1", e->port());
  auto mb = cb.Get("/v1/models"), me = ce.Get("/v1/models");
  ASSERT_TRUE(mb && me);
  const auto jb = nlohmann::json::parse(mb->body), je = nlohmann::json::parse(me->body);
  EXPECT_EQ(jb["data"][0]["ragform"]["model_sha256"], sha_b) << mb->body;
  EXPECT_EQ(je["data"][0]["ragform"]["model_sha256"], sha_e) << me->body;
  EXPECT_EQ(je["data"][0]["id"], "stories260K");

  OpenAIOptions o;
  o.model = "stories260K";
  o.timeout_s = 10;
  o.base_url = v1(*b) + "," + v1(*b2);
  EXPECT_NO_THROW(OpenAIReader{o}) << "the same file on two servers is one fleet";
  o.base_url = v1(*b) + "," + v1(*b2) + "," + v1(*e);
  try {
    OpenAIReader rd(o);
    ADD_FAILURE() << "a mix of weights was accepted";
  } catch (const Error& x) {
    const std::string w = x.what();
    EXPECT_NE(w.find("openai reader: server " + v1(*e) +
                     " serves the same model id with other weights: its /models reports model "
                     "sha256 " +
                     sha_e.substr(0, 16) + "..., " + v1(*b) + "'s " + sha_b.substr(0, 16) +
                     "... (the hashes differ): every --base-url must serve the same model"),
              std::string::npos)
        << w;
  }

  // Without hashes (as llama-server and vLLM answer): the reader's probe request, greedy.
  auto pool = [&](const std::vector<std::string>& urls) {
    std::vector<std::unique_ptr<reader::Endpoint>> eps;
    for (const auto& u : urls) eps.push_back(std::make_unique<WithoutHash>(u));
    reader::PoolOptions po;
    reader::set_weights_probe(o, po);
    return std::make_unique<reader::ServerPool>(std::move(eps), po);
  };
  EXPECT_NO_THROW(pool({v1(*b), v1(*b2)})->check_all()) << "the same greedy answers";
  try {
    pool({v1(*b), v1(*r)})->check_all();
    ADD_FAILURE() << "a mix of weights was accepted";
  } catch (const Error& x) {
    const std::string w = x.what();
    EXPECT_NE(w.find("openai reader: server " + v1(*r) +
                     " serves the same model id with other weights or settings: its greedy "
                     "answer to the weights probe is \""),
              std::string::npos)
        << w;
    EXPECT_NE(w.find("(the probe answers differ; neither server reports a model sha256 in "
                     "/models): every --base-url must serve the same model"),
              std::string::npos)
        << w;
  }
}

}  // namespace
}  // namespace ragform::testing
