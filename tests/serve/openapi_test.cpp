// docs/openapi.yaml matches the server: its paths and methods are the route table's (serve/serve_api.h), and
// each answers 200 over real HTTP to its documented example. The YAML is kept simple enough for the small
// reader below: under "paths:", a path at two spaces of indent, its method at four, and the JSON body's
// example on one line ("example: {...}", a flow mapping, which is JSON).
#include <gtest/gtest.h>

#include <map>
#include <nlohmann/json.hpp>
#include <set>
#include <sstream>
#include <string>

#include "cli_run.h"
#include "serve/serve_api.h"
#include "serve_server.h"

namespace dnncast::serve_test {
namespace {

struct DocumentedRoute {
  std::string method, path;  // "POST", "/v1/predict"
  std::string example;       // the JSON body's example, "" for none
};

std::string upper(std::string text) {
  for (char& c : text) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
  return text;
}

size_t indent_of(const std::string& line) { return line.find_first_not_of(' '); }

std::vector<DocumentedRoute> read_openapi(const std::string& text) {
  std::vector<DocumentedRoute> routes;
  std::istringstream lines(text);
  std::string line, path;
  bool in_paths = false;
  while (std::getline(lines, line)) {
    if (line.empty() || indent_of(line) == std::string::npos) continue;
    const size_t indent = indent_of(line);
    if (indent == 0) {
      in_paths = line == "paths:";
      continue;
    }
    if (!in_paths) continue;
    const std::string trimmed = line.substr(indent);
    if (indent == 2 && trimmed.back() == ':') {
      path = trimmed.substr(0, trimmed.size() - 1);
    } else if (indent == 4 && trimmed.back() == ':' && trimmed.find(' ') == std::string::npos) {
      routes.push_back({upper(trimmed.substr(0, trimmed.size() - 1)), path, ""});
    } else if (trimmed.rfind("example: {", 0) == 0 && !routes.empty() && routes.back().example.empty()) {
      routes.back().example = trimmed.substr(std::string("example: ").size());
    }
  }
  return routes;
}

TEST(OpenApi, PathsAreTheRouteTable) {
  const std::vector<DocumentedRoute> documented =
      read_openapi(cli_test::read_text(std::string(DNNCAST_SOURCE_DIR) + "/docs/openapi.yaml"));
  std::set<std::string> in_docs, in_server;
  for (const DocumentedRoute& route : documented) in_docs.insert(route.method + " " + route.path);
  for (const serve::Route& route : serve::routes()) in_server.insert(std::string(route.method) + " " + route.path);
  EXPECT_EQ(in_docs, in_server);
  EXPECT_EQ(documented.size(), in_docs.size()) << "a path and method listed twice";
}

TEST(OpenApi, EveryDocumentedRouteAnswersItsExample) {
  const std::vector<DocumentedRoute> documented =
      read_openapi(cli_test::read_text(std::string(DNNCAST_SOURCE_DIR) + "/docs/openapi.yaml"));
  ASSERT_FALSE(documented.empty());
  Server server;
  ASSERT_TRUE(server.ok());
  httplib::Client client = server.client();
  std::set<std::string> called;
  for (const DocumentedRoute& route : documented) {
    if (route.method != "GET") {
      ASSERT_EQ(route.method, "POST") << route.path;
      ASSERT_FALSE(route.example.empty()) << route.path << ": a POST route documents an example body";
      ASSERT_FALSE(nlohmann::json::parse(route.example, nullptr, false).is_discarded()) << route.example;
    }
    httplib::Result result = route.method == "GET" ? client.Get(route.path.c_str())
                                                   : client.Post(route.path.c_str(), route.example, "application/json");
    ASSERT_TRUE(result) << route.path;
    EXPECT_EQ(result->status, 200) << route.method << " " << route.path << "\n" << result->body;
    called.insert(route.method + " " + route.path);
  }
  // Every route of the server was called (the other test checks that the lists agree).
  for (const serve::Route& route : serve::routes())
    EXPECT_EQ(called.count(std::string(route.method) + " " + route.path), 1u) << route.path;
  EXPECT_EQ(server.stop(), 0);
}

}  // namespace
}  // namespace dnncast::serve_test
