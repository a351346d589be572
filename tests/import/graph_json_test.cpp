// Graph JSON: every zoo model round-trips exactly; malformed or inconsistent files are test cases
// as data (tests/import/fixtures/*.json, expected error text in fixtures/expected_errors.tsv).
#include "import/graph_json.h"

#include <dirent.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <fstream>
#include <map>
#include <set>
#include <sstream>

#include "core/error.h"
#include "models/zoo.h"

namespace dnncast::import {
namespace {

const std::string kFixtures = std::string(DNNCAST_SOURCE_DIR) + "/tests/import/fixtures/";

std::string read_text(const std::string& path) {
  std::ifstream file(path);
  std::stringstream text;
  text << file.rdbuf();
  return text.str();
}

// fixture file name -> expected error substring ("" = the file must load).
std::map<std::string, std::string> expected_errors() {
  std::map<std::string, std::string> cases;
  std::istringstream lines(read_text(kFixtures + "expected_errors.tsv"));
  std::string line;
  while (std::getline(lines, line)) {
    if (line.empty() || line[0] == '#') continue;
    size_t tab = line.find('\t');
    EXPECT_NE(tab, std::string::npos) << "fixture line without a tab: " << line;
    if (tab == std::string::npos) continue;
    cases[line.substr(0, tab)] = line.substr(tab + 1);
  }
  return cases;
}

std::set<std::string> fixture_files() {
  std::set<std::string> names;
  DIR* dir = opendir(kFixtures.c_str());
  if (dir == nullptr) return names;
  while (dirent* entry = readdir(dir)) {
    std::string name = entry->d_name;
    if (name.size() > 5 && name.compare(name.size() - 5, 5, ".json") == 0) names.insert(name);
  }
  closedir(dir);
  return names;
}

TEST(GraphJsonFixtures, EveryFixtureHasAnExpectation) {
  std::map<std::string, std::string> cases = expected_errors();
  std::set<std::string> files = fixture_files();
  EXPECT_GE(files.size(), 30u);
  for (const std::string& file : files) EXPECT_EQ(cases.count(file), 1u) << file << " is not in expected_errors.tsv";
  for (const auto& [file, expected] : cases) EXPECT_EQ(files.count(file), 1u) << file << " is listed but missing";
}

TEST(GraphJsonFixtures, EachGivesItsInputError) {
  const std::map<std::string, std::string> cases = expected_errors();
  ASSERT_GE(cases.size(), 30u) << "expected_errors.tsv missing or truncated";
  for (const auto& [file, expected] : cases) {
    SCOPED_TRACE(file);
    std::string path = kFixtures + file;
    if (expected.empty()) {
      EXPECT_NO_THROW(load_graph_file(path));
      continue;
    }
    try {
      load_graph_file(path);
      ADD_FAILURE() << "no error; expected: " << expected;
    } catch (const InputError& error) {
      std::string message = error.what();
      EXPECT_NE(message.find(expected), std::string::npos) << "message: " << message;
      EXPECT_EQ(message.rfind(path, 0), 0u) << "the message should start with the file: " << message;
      EXPECT_EQ(message.find('\n'), std::string::npos) << "one line expected: " << message;
    } catch (const std::exception& error) {
      ADD_FAILURE() << "not an InputError: " << error.what();
    }
  }
}

TEST(GraphJson, EveryZooModelRoundTripsExactly) {
  ASSERT_FALSE(models::zoo().empty());
  for (const models::ZooEntry& entry : models::zoo()) {
    SCOPED_TRACE(entry.name);
    Graph graph = models::build_zoo_model(entry.name, models::ModelSpec{});
    std::string text = write_graph_json(graph);
    Graph back = read_graph_json(text, entry.name + ".json");
    EXPECT_TRUE(write_graph_json(back) == text) << "write -> read -> write changed the text";
    EXPECT_EQ(back.architecture_hash(), graph.architecture_hash());
    EXPECT_EQ(back.name, graph.name);
    EXPECT_EQ(back.family, graph.family);
    ASSERT_EQ(back.size(), graph.size());
    for (int index = 0; index < graph.size(); ++index) {
      const Node& original = graph.node(index);
      const Node& copy = back.node(index);
      EXPECT_EQ(copy.name, original.name);
      EXPECT_EQ(copy.attrs, original.attrs);  // types included: 1e-05 stays a double, 1 an integer
      EXPECT_EQ(copy.inputs, original.inputs);
      EXPECT_EQ(copy.shape, original.shape);
      EXPECT_EQ(copy.dtype, original.dtype);
    }
  }
}

// Nodes may come in any order; the reader sorts them topologically (ties in file order), so the
// same nodes come back with the same connections and shapes. (The order itself may differ, and
// with it the architecture hash, which is defined over the node order.)
TEST(GraphJson, NodesInAnyOrderAreSorted) {
  Graph graph = models::build_zoo_model("resnet18", models::ModelSpec{});
  nlohmann::json document = graph_to_json(graph);
  std::reverse(document["nodes"].begin(), document["nodes"].end());
  Graph back = graph_from_json(document, "reversed.json");
  ASSERT_EQ(back.size(), graph.size());
  for (int index = 0; index < back.size(); ++index) {
    const Node& node = back.node(index);
    for (int input : node.inputs) EXPECT_LT(input, index);
    int original = graph.find(node.name);
    ASSERT_GE(original, 0);
    EXPECT_EQ(node.shape, graph.node(original).shape);
    EXPECT_EQ(node.attrs, graph.node(original).attrs);
    std::vector<std::string> inputs, original_inputs;
    for (int input : node.inputs) inputs.push_back(back.node(input).name);
    for (int input : graph.node(original).inputs) original_inputs.push_back(graph.node(input).name);
    EXPECT_EQ(inputs, original_inputs);
  }
  // Written back in its sorted order, it reads back as itself.
  std::string sorted = write_graph_json(back);
  EXPECT_TRUE(write_graph_json(read_graph_json(sorted, "sorted.json")) == sorted);
}

// Output shapes and dtypes are optional in a hand-written file: they are inferred.
TEST(GraphJson, DeclaredShapesAreOptional) {
  Graph graph = models::build_zoo_model("resnet18", models::ModelSpec{});
  nlohmann::json document = graph_to_json(graph);
  for (nlohmann::json& node : document["nodes"]) {
    node.erase("shape");
    node.erase("dtype");
  }
  Graph back = graph_from_json(document, "bare.json");
  EXPECT_TRUE(write_graph_json(back) == write_graph_json(graph));
}

TEST(GraphJson, MissingFileNamesThePath) {
  try {
    load_graph_file("/nonexistent/graph.json");
    FAIL() << "no error";
  } catch (const InputError& error) {
    EXPECT_NE(std::string(error.what()).find("/nonexistent/graph.json"), std::string::npos);
  }
}

}  // namespace
}  // namespace dnncast::import
