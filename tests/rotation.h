// The slow cross-checks in rotation (issue 16): `make test` runs one seeded slice of each, `make
// test-slow` all of it. A check deals its cases (in their listed order) into `slices` slices, case i
// into slice i % slices, and runs the slice that the seed picks; the seed is the commit under test
// (`make test` sets DNNCAST_ROTATION_SEED from `git rev-parse HEAD`), so consecutive commits check
// different slices and every case is checked within a few commits. Without DNNCAST_ROTATION_SEED a
// check runs every case. The seed is printed with the line that replays the same slices.
#pragma once

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

namespace dnncast::rotation {

struct Slice {
  bool whole = true;  // no seed: every case
  std::string seed;
  size_t index = 0, count = 1;  // this slice of `count`
  bool has(size_t case_index) const { return whole || case_index % count == index; }
  // How many of `cases` cases lie in this slice.
  size_t size_of(size_t cases) const { return whole ? cases : cases / count + (index < cases % count ? 1 : 0); }
};

// FNV-1a, 64 bits: the same slice for the same seed on every machine and compiler.
inline uint64_t hash_text(const std::string& text) {
  uint64_t hash = 14695981039346656037ull;
  for (unsigned char c : text) hash = (hash ^ c) * 1099511628211ull;
  return hash;
}

// The slice of check `name` (its cases dealt into `slices`) under DNNCAST_ROTATION_SEED; printed.
// The name enters the hash so that different checks rotate independently.
inline Slice slice_of(const std::string& name, size_t slices) {
  Slice slice;
  const char* seed = std::getenv("DNNCAST_ROTATION_SEED");
  if (seed == nullptr || *seed == '\0' || slices <= 1) {
    std::printf("rotation: %s runs every case (DNNCAST_ROTATION_SEED unset)\n", name.c_str());
    return slice;
  }
  slice.whole = false;
  slice.seed = seed;
  slice.count = slices;
  slice.index = static_cast<size_t>(hash_text(slice.seed + ":" + name) % slices);
  std::printf("rotation seed %s: %s runs slice %zu of %zu; replay with DNNCAST_ROTATION_SEED=%s make test-rotation\n",
              seed, name.c_str(), slice.index + 1, slices, seed);
  std::fflush(stdout);
  return slice;
}

// The cases of `cases` in the slice.
template <typename T>
std::vector<T> pick(const Slice& slice, const std::vector<T>& cases) {
  std::vector<T> picked;
  for (size_t case_idx = 0; case_idx < cases.size(); ++case_idx)
    if (slice.has(case_idx)) picked.push_back(cases[case_idx]);
  return picked;
}

}  // namespace dnncast::rotation
