// The endpoints of `ragform serve` as the checks that must reach every one of them iterate them:
// the hardening test (tests/server/serve_hardening_fixture_test.cpp: each behind the one API key
// check) and the request fuzzer (fuzz/fuzz_server_api.cpp: each a target). Both lists are read
// from the route tables (router.h), never kept by hand, so an endpoint added to a table (a
// RouteSpec and its handler) is checked by both with no edit to either; tests/server/
// router_test.cpp adds a dummy route through `extra` and sees both lists hold it.
#pragma once
#include <functional>
#include <string>
#include <vector>

#include "server/router.h"

namespace ragform::server {

// One row per method and path of a table (an alias is a row of its own).
struct Endpoint {
  std::string method, path;
  Access access = Access::Key;
  bool operator==(const Endpoint&) const = default;
};

// Declares more routes on a table (a test's dummy route); empty = none.
using RouteDeclarer = std::function<void(Router&)>;

// Every endpoint of `table`, in the order added.
std::vector<Endpoint> endpoints(const Router& table);

// Every endpoint a server of `kind` ("reader" or "encoder") answers when started with --index, as
// `serve --openapi` declares it (openapi.h declared_tables), with `extra` declared after them.
// Throws std::invalid_argument for another kind.
std::vector<Endpoint> served_endpoints(const std::string& kind, const RouteDeclarer& extra = {});

// Every endpoint Api::handle answers (the decoder API's own table, api.h), with `extra`.
std::vector<Endpoint> api_endpoints(const RouteDeclarer& extra = {});

}  // namespace ragform::server
