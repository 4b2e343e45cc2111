// Issue 40, pass 18: the one rule for keys over HTTP. A key a request's object does not have is
// refused as unknown_field, at the top and in the nested objects a route reads from files' formats
// (a bias curve, a C-NORM or tune profile, a steering object); a key whose value is null is a key
// not given, known or not, at every level; a question object without an id is named as a plain
// string is (q<i>). Records and their ctxs are data: they carry their source's other fields.
#include <fstream>
#include <string>

#include "retrieval/make_corpus.h"
#include "serve_harness.h"

namespace {

using nlohmann::json;
using namespace ragform::testing;

const std::string kPrompt = "Lily had a red ball. Tom had a big dog. The dog's name was";

// The error's code and message of a refusal with `status`.
std::pair<std::string, std::string> refusal(httplib::Client& c, const std::string& path,
                                            const json& body, int status = 400) {
  auto r = c.Post(path, body.dump(), "application/json");
  const std::string msg = expect_api_error(r, status);
  if (!r) return {"<no answer>", msg};
  const json j = json::parse(r->body, nullptr, false);
  const json code =
      j.is_object() && j.contains("error") ? j["error"].value("code", json()) : json();
  return {code.is_string() ? code.get<std::string>() : code.dump(), msg};
}

int status_of(httplib::Client& c, const std::string& path, const json& body, std::string* reply) {
  auto r = c.Post(path, body.dump(), "application/json");
  if (!r) return -1;
  if (reply) *reply = r->body;
  return r->status;
}

json tune_profile() { return sample_tune_profile(); }

json cnorm_profile() {
  return {{"model_sha256", ""},
          {"task", "qa"},
          {"p", 1.0},
          {"seed", 1},
          {"S", 1},
          {"best", "none"},
          {"candidates", {{{"delimiter", "none"}, {"abs_mean", 0.5}, {"abs_std", 0.1}}}}};
}

TEST(ServeNestedKeys, FilesFormatsRefuseKeysTheyDoNotHaveAndNullIsAKeyNotGiven) {
  REQUIRE_SHARED(model, "fixtures/models/stories260K.gguf");
  const auto dir = temp_dir("serve-nested-keys");
  {
    auto corpus = make_corpus(dir, "nq");
    std::ifstream in(corpus);
    std::ofstream out(dir / "small.jsonl");
    std::string line;
    for (int i = 0; i < 30 && std::getline(in, line); ++i) out << line << "\n";
  }
  auto built = run_ragform("index build --corpus " + quoted(dir / "small.jsonl") + " -o " +
                           quoted(dir / "ix"));
  ASSERT_EQ(built.exit_code, 0) << built.err;
  ServeProcess srv({"-m", model.string(), "--ctx", "256", "--index", (dir / "ix").string()});
  httplib::Client c("127.0.0.1", srv.port());
  c.set_read_timeout(60, 0);

  // S2: a bias curve's misspelt "mesure" read the curve as sums and changed the calibrated
  // numbers; now it is refused, as are other keys at its top and in a layer entry.
  const json spans = {{0, 20}, {21, 39}, {40, 58}};
  const json curve = {{"curve", {0.01, 0.02, 0.2}}, {"measure", "mean"}};
  json req = {{"prompt", kPrompt}, {"layers", {-1}}, {"doc_spans", spans}, {"bias", curve}};
  std::string good;
  ASSERT_EQ(status_of(c, "/v1/attention", req, &good), 200) << good;
  for (const json& bad_curve :
       {json{{"curve", {0.01, 0.02, 0.2}}, {"mesure", "mean"}},
        json{{"curve", {0.01, 0.02, 0.2}}, {"bogus", 1}},
        json{{"curve", {0.01, 0.02, 0.2}},
             {"layers", {{{"layer", 4}, {"curve", {0.1, 0.1, 0.1}}, {"junk", 1}}}}}}) {
    json r = req;
    r["bias"] = bad_curve;
    const auto [code, msg] = refusal(c, "/v1/attention", r);
    EXPECT_EQ(code, "unknown_field") << msg;
    EXPECT_NE(msg.find("is not supported"), std::string::npos) << msg;
  }
  // S4: null is absent at every level: the measure, the document spans, an unknown key.
  {
    json r = req;
    r["bias"]["measure"] = nullptr;  // sums, as a curve written before the measure existed
    r["bias"]["note"] = nullptr;
    std::string reply;
    EXPECT_EQ(status_of(c, "/v1/attention", r, &reply), 200) << reply;
    r = {{"prompt", kPrompt}, {"doc_spans", nullptr}, {"bias", nullptr}, {"n_predict", nullptr}};
    EXPECT_EQ(status_of(c, "/v1/attention", r, &reply), 200) << reply;
    EXPECT_FALSE(json::parse(reply)["rows"][0].contains("documents")) << reply;
  }

  // S3: a tune profile's and a C-NORM profile's keys (and a candidate's) are the files' own.
  const json record = {{"id", "r1"},
                       {"question", "who?"},
                       {"answers", {"a"}},
                       {"ctxs", {{{"title", "t"}, {"text", "x y z"}, {"hasanswer", false}}}},
                       {"source", "data carries its own fields"}};
  std::string reply;
  EXPECT_EQ(
      status_of(c, "/v1/rag/present", {{"profile", tune_profile()}, {"record", record}}, &reply),
      200)
      << reply;
  {
    json p = tune_profile();
    p["objectve"] = "em";
    EXPECT_EQ(refusal(c, "/v1/rag/present", {{"profile", p}, {"record", record}}).first,
              "unknown_field");
    p = tune_profile();
    p["presentation"]["ordr"] = "edges";  // pass 19: it was invalid_request (another class)
    EXPECT_EQ(refusal(c, "/v1/rag/present", {{"profile", p}, {"record", record}}).first,
              "unknown_field");
  }
  // "records": null beside "record" is one record (it was "give exactly one of").
  EXPECT_EQ(
      status_of(c, "/v1/rag/present",
                {{"profile", tune_profile()}, {"record", record}, {"records", nullptr}}, &reply),
      200)
      << reply;
  const json docs = {"one document", "another one"};
  EXPECT_EQ(status_of(c, "/v1/rag/normalize", {{"documents", docs}, {"profile", cnorm_profile()}},
                      &reply),
            200)
      << reply;
  {
    json p = cnorm_profile();
    p["bset"] = "none";
    auto [code, msg] = refusal(c, "/v1/rag/normalize", {{"documents", docs}, {"profile", p}});
    EXPECT_EQ(code, "unknown_field") << msg;
    EXPECT_NE(msg.find("'bset' is not supported (a C-NORM profile takes"), std::string::npos)
        << msg;
    p = cnorm_profile();
    p["candidates"][0]["sede"] = 3;
    std::tie(code, msg) = refusal(c, "/v1/rag/normalize", {{"documents", docs}, {"profile", p}});
    EXPECT_EQ(code, "unknown_field") << msg;
  }

  // A steering object's unknown key is unknown_field too (it was invalid_value).
  {
    const json steer = {{"rule", "rescale:2"}, {"spans", {{0, 4}}}, {"head", {1}}};
    auto [code, msg] =
        refusal(c, "/v1/completions", {{"prompt", kPrompt}, {"max_tokens", 1}, {"steer", steer}});
    EXPECT_EQ(code, "unknown_field") << msg;
    json fine = steer;
    fine["head"] = nullptr;
    EXPECT_EQ(status_of(c, "/v1/completions",
                        {{"prompt", kPrompt}, {"max_tokens", 1}, {"steer", fine}}, &reply),
              200)
        << reply;
  }

  // /v1/retrieve: "question": null beside "questions" is the list; a question object without an id
  // is q<i> as a plain string is (it was line:<i+1>); an object's other fields are carried along.
  EXPECT_EQ(status_of(c, "/v1/retrieve",
                      {{"question", nullptr},
                       {"questions", {"lily", {{"question", "park"}, {"tag", 7}}}},
                       {"k", 1}},
                      &reply),
            200)
      << reply;
  const json rows = json::parse(reply)["data"];
  ASSERT_EQ(rows.size(), 2u) << reply;
  EXPECT_EQ(rows[0]["id"], "q0") << rows[0].dump();
  EXPECT_EQ(rows[1]["id"], "q1") << rows[1].dump();
  EXPECT_EQ(rows[1]["tag"], 7) << rows[1].dump();
  // Pass 19: a generated id and a question's own may not meet (two rows "q0"); an id that is no
  // string or integer is refused, not replaced.
  {
    auto [code, msg] =
        refusal(c, "/v1/retrieve", {{"questions", {"lily", {{"question", "park"}, {"id", "q0"}}}}});
    EXPECT_NE(msg.find("questions[1]'s id 'q0' is also questions[0]'s"), std::string::npos) << msg;
    std::tie(code, msg) =
        refusal(c, "/v1/retrieve", {{"questions", {{{"question", "park"}, {"id", 7.5}}}}});
    EXPECT_NE(msg.find("field 'id': expected a string or an integer"), std::string::npos) << msg;
  }
  EXPECT_EQ(srv.stop(), 0) << srv.log();
}

// Pass 19: the roles a chat message may have are the three every template renders as what they
// are (Llama 2's and Mistral's formats wrote "tool", "User" or "developer" as an assistant turn);
// OpenAI's "developer" reads as "system". Attention rows name each layer, query position and head
// once however a request repeats them (-1 and its index alike).
TEST(ServeNestedKeys, ChatRolesAndAttentionSelectionsMeanOneThingEach) {
  REQUIRE_SHARED(model, "fixtures/models/stories260K.gguf");
  ServeProcess srv({"-m", model.string(), "--chat-template", "llama2"});
  httplib::Client c("127.0.0.1", srv.port());
  c.set_read_timeout(60, 0);
  const auto chat = [&](const std::string& role) {
    return json{{"messages",
                 {{{"role", "user"}, {"content", "Hi there"}},
                  {{"role", role}, {"content", "Tell me a story"}}}},
                {"max_tokens", 3},
                {"temperature", 0}};
  };
  for (const char* role : {"User", "tool", "function", "ROLE", ""}) {
    auto [code, msg] = refusal(c, "/v1/chat/completions", chat(role));
    EXPECT_EQ(code, "invalid_value") << role << ": " << msg;
    EXPECT_NE(msg.find("is not one this server renders"), std::string::npos) << msg;
  }
  std::string as_developer, as_system;
  ASSERT_EQ(status_of(c, "/v1/chat/completions", chat("developer"), &as_developer), 200)
      << as_developer;
  ASSERT_EQ(status_of(c, "/v1/chat/completions", chat("system"), &as_system), 200) << as_system;
  EXPECT_EQ(json::parse(as_developer)["choices"], json::parse(as_system)["choices"]);
  EXPECT_EQ(json::parse(as_developer)["usage"], json::parse(as_system)["usage"]);

  std::string once, twice;
  const json one = {
      {"prompt", kPrompt}, {"layers", {4}}, {"query_positions", {-1}}, {"heads", {0}}};
  ASSERT_EQ(status_of(c, "/v1/attention", one, &once), 200) << once;
  const int last = json::parse(once)["rows"][0]["query_position"].get<int>();
  const json again = {
      {"prompt", kPrompt}, {"layers", {4, -1}}, {"query_positions", {-1, last}}, {"heads", {0, 0}}};
  ASSERT_EQ(status_of(c, "/v1/attention", again, &twice), 200) << twice;
  EXPECT_EQ(json::parse(twice)["rows"], json::parse(once)["rows"]);
  // Pass 21: an empty list is not the default (the CLI refuses an empty flag).
  for (const char* key : {"layers", "query_positions", "heads"}) {
    auto [code, msg] = refusal(c, "/v1/attention", {{"prompt", kPrompt}, {key, json::array()}});
    EXPECT_NE(msg.find("must hold at least one integer"), std::string::npos) << key << ": " << msg;
  }
  // Pass 21: a steering object that does not fit one of several prompts names it.
  {
    auto [code, msg] = refusal(c, "/v1/completions",
                               {{"prompt", {kPrompt, "Hi"}},
                                {"max_tokens", 1},
                                {"steer", {{"rule", "rescale:2"}, {"spans", {{0, 10}}}}}});
    EXPECT_EQ(msg.rfind("prompt[1]: steer.spans", 0), 0u) << msg;
  }
  EXPECT_EQ(srv.stop(), 0) << srv.log();
}

// Pass 19: a rerank document object is its text (a title beside it was neither ranked nor
// returned).
TEST(ServeNestedKeys, RerankDocumentObjectsAreTheirText) {
  REQUIRE_SHARED(nli, "fixtures/models/tiny-bert-nli.gguf");
  ServeProcess srv({"-m", nli.string(), "-t", "1"});
  httplib::Client c("127.0.0.1", srv.port());
  std::string reply;
  EXPECT_EQ(status_of(c, "/v1/rerank",
                      {{"query", "a"},
                       {"documents", {{{"text", "x"}}, {{"text", "y"}, {"title", nullptr}}}}},
                      &reply),
            200)
      << reply;
  auto [code, msg] =
      refusal(c, "/v1/rerank",
              {{"query", "a"}, {"documents", {{{"text", "x"}}, {{"text", "y"}, {"title", "t"}}}}});
  EXPECT_EQ(code, "unknown_field") << msg;
  EXPECT_NE(msg.find("documents[1]: 'title' is not supported"), std::string::npos) << msg;
  EXPECT_EQ(srv.stop(), 0) << srv.log();
}

}  // namespace
