// tests/rotation.h: the slices of one seed partition the cases (each case in exactly one slice),
// the same seed picks the same slice, and a few seeds (commits) visit every slice.
#include "rotation.h"

#include <gtest/gtest.h>

#include <cstdlib>
#include <set>
#include <string>
#include <vector>

namespace dnncast::rotation {
namespace {

TEST(Rotation, SlicesPartitionTheCasesAndSeedsVisitEverySlice) {
  std::vector<int> cases;
  for (int case_idx = 0; case_idx < 23; ++case_idx) cases.push_back(case_idx);
  std::vector<int> seen(cases.size(), 0);
  for (size_t index = 0; index < 5; ++index) {
    Slice slice;
    slice.whole = false;
    slice.count = 5;
    slice.index = index;
    const std::vector<int> picked = pick(slice, cases);
    EXPECT_EQ(picked.size(), slice.size_of(cases.size()));
    for (int case_idx : picked) ++seen[static_cast<size_t>(case_idx)];
  }
  for (int count : seen) EXPECT_EQ(count, 1);

  // Forty made-up commits: each slice of 5 is picked, and a seed always picks the same one.
  std::set<size_t> visited;
  for (int commit = 0; commit < 40; ++commit) {
    const std::string seed = "commit-" + std::to_string(commit);
    ASSERT_EQ(setenv("DNNCAST_ROTATION_SEED", seed.c_str(), 1), 0);
    const Slice first = slice_of("Check", 5), again = slice_of("Check", 5);
    EXPECT_FALSE(first.whole);
    EXPECT_EQ(first.index, again.index);
    visited.insert(first.index);
  }
  EXPECT_EQ(visited.size(), 5u);

  ASSERT_EQ(unsetenv("DNNCAST_ROTATION_SEED"), 0);  // no seed: every case
  const Slice whole = slice_of("Check", 5);
  EXPECT_TRUE(whole.whole);
  EXPECT_EQ(pick(whole, cases).size(), cases.size());
}

TEST(Rotation, HashIsFnv1a) {
  // Published FNV-1a 64 test vectors: the slice of a seed is the same with every compiler.
  EXPECT_EQ(hash_text(""), 0xcbf29ce484222325ull);
  EXPECT_EQ(hash_text("a"), 0xaf63dc4c8601ec8cull);
  EXPECT_EQ(hash_text("foobar"), 0x85944171f73967e8ull);
}

}  // namespace
}  // namespace dnncast::rotation
