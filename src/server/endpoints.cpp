#include "server/endpoints.h"

#include <stdexcept>

#include "server/api.h"
#include "server/openapi.h"

namespace ragform::server {

std::vector<Endpoint> endpoints(const Router& table) {
  std::vector<Endpoint> out;
  for (const Router::Entry& e : table.table()) out.push_back({e.method, e.path, e.spec->access});
  return out;
}

std::vector<Endpoint> served_endpoints(const std::string& kind, const RouteDeclarer& extra) {
  for (auto& [name, table] : declared_tables(default_openapi_limits())) {
    if (name != kind) continue;
    if (extra) extra(*table);
    return endpoints(*table);
  }
  throw std::invalid_argument("no server of kind '" + kind + "' (reader, encoder)");
}

std::vector<Endpoint> api_endpoints(const RouteDeclarer& extra) {
  Router table;
  Api::declare_routes(table);
  if (extra) extra(table);
  return endpoints(table);
}

}  // namespace ragform::server
