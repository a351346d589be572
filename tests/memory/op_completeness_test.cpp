// One home per op: every op of the registry has an executor implementation (profile), a memory
// recipe or an explicit "approximate" mark (memory), and a feature kind (features). Adding an op
// without one of them fails here, naming the op and what it lacks.
#include <gtest/gtest.h>

#include <algorithm>
#include <set>
#include <string>
#include <vector>

#include "features/featurizer.h"
#include "graph/op_registry.h"
#include "memory/training_trace.h"
#ifdef DNNCAST_HAVE_TORCH
#include "profile/measure.h"
#endif

namespace dnncast {
namespace {

std::string joined(const std::vector<std::string>& lines) {
  std::string text;
  for (const std::string& line : lines) text += "\n  " + line;
  return text;
}

TEST(OpCompleteness, EveryRegisteredOpHasARecipeAndAFeatureKind) {
  std::vector<std::string> missing;
  for (const std::string& op : OpRegistry::instance().names()) {
    if (memory::recipe_kind(op) == memory::RecipeKind::None)
      missing.push_back("op '" + op +
                        "': its OpDef::memory_recipe names no recipe of memory/training_trace.cpp's "
                        "Trace::recipes() (declare one, \"generic\" for an approximate one, or add a recipe)");
    if (!features::has_kind_entry(op))
      missing.push_back("op '" + op +
                        "': its feature kind (OpDef::feature_kind, else its name) is not a kind of "
                        "features/featurizer.cpp's kind_specs() (declare an existing kind, \"Other\" included)");
  }
  EXPECT_TRUE(missing.empty()) << missing.size() << " gap(s):" << joined(missing);
}

TEST(OpCompleteness, ApproximateMemoryRecipesAreTheListedOnes) {
  // docs/MEMORY.md names these as not allocator-exact; a new approximate op is listed there too.
  std::vector<std::string> approximate;
  for (const std::string& op : OpRegistry::instance().names())
    if (memory::recipe_kind(op) == memory::RecipeKind::Approximate) approximate.push_back(op);
  EXPECT_EQ(approximate, (std::vector<std::string>{"ConvTranspose2d", "MatMul"}));
  for (const char* exact : {"RMSNorm", "RotaryEmbedding", "RepeatInterleave", "Embedding"})
    EXPECT_EQ(memory::recipe_kind(exact), memory::RecipeKind::Exact) << exact;
  EXPECT_EQ(memory::recipe_kind("Conv2d"), memory::RecipeKind::Exact);
  EXPECT_EQ(memory::recipe_kind("NoSuchOp"), memory::RecipeKind::None);
}

#ifdef DNNCAST_HAVE_TORCH
TEST(OpCompleteness, EveryRegisteredOpHasAnExecutorImplementation) {
  std::vector<std::string> supported = profile::supported_ops();
  std::set<std::string> implemented(supported.begin(), supported.end());
  std::vector<std::string> missing;
  for (const std::string& op : OpRegistry::instance().names())
    if (!implemented.count(op))
      missing.push_back("op '" + op + "': no executor implementation (profile/executor.cpp, make_impls())");
  for (const std::string& op : supported)
    if (!OpRegistry::instance().has(op))
      missing.push_back("executor implements '" + op + "', which the op registry does not declare");
  EXPECT_TRUE(missing.empty()) << missing.size() << " gap(s):" << joined(missing);
}
#endif

}  // namespace
}  // namespace dnncast
