// Allocator models: replay a Program's allocations and releases and report what the allocator
// holds. Internal to src/memory.
#pragma once

#include <cstddef>
#include <cstdint>
#include <utility>
#include <vector>

namespace dnncast::memory {

// PyTorch 1.13's CUDA caching allocator (c10/cuda/CUDACachingAllocator.cpp), one device, one
// stream, no memory limit: sizes rounded up to 512 bytes; blocks up to 1 MiB come from a small
// pool of 2 MiB segments, larger ones from a large pool of 20 MiB segments (requests under 10 MiB)
// or segments rounded up to 2 MiB; best-fit reuse of cached blocks, splitting (small: remainder
// >= 512 B; large: remainder > 1 MiB) and merging of free neighbours; nothing is returned to the
// driver. allocated = bytes of blocks handed out, reserved = bytes of segments.
class CudaCachingAllocatorModel {
 public:
  static int64_t round_size(int64_t bytes);
  static int64_t segment_size(int64_t rounded_bytes);

  // `buffer` is the caller's handle (Program buffer ids: dense, from 0).
  void malloc(int buffer, int64_t bytes);
  void free(int buffer);

  int64_t allocated_bytes() const { return allocated_; }
  int64_t reserved_bytes() const { return reserved_; }
  int64_t segments() const { return segments_; }

 private:
  struct Block {
    int64_t address = 0, size = 0;
    int prev = -1, next = -1;  // neighbours in the same segment
    bool small = false, allocated = false;
  };
  // A free block in its pool: best fit is the first at or past (size, 0); the id finds the block without a second
  // index by address.
  struct Key {
    int64_t size = 0, address = 0;
    int id = -1;
    bool operator<(const Key& other) const { return size != other.size ? size < other.size : address < other.address; }
  };
  // A pool's free blocks in Key order, as a short list of sorted runs of at most kMaxRun keys: a pool holds a few
  // hundred blocks (Llama-2-7B's training step: under 450), where a binary search and a move of a few contiguous
  // keys beat a std::set's node allocation and rebalancing (the allocator model a quarter faster), and the runs
  // bound the move.
  class FreePool {
   public:
    int take_best_fit(int64_t size);  // the id of the best-fitting block, removed from the pool; -1 when none fits
    void insert(const Key& key);
    void erase(const Key& key);

   private:
    static constexpr size_t kMaxRun = 64;
    size_t run_at_or_past(const Key& key) const;  // the first run whose last key is not below `key`
    void erase_at(size_t run, std::vector<Key>::iterator position);
    std::vector<std::vector<Key>> runs_;
  };
  FreePool& pool(bool small) { return small ? small_free_ : large_free_; }
  int new_block(const Block& block);

  std::vector<Block> blocks_;
  std::vector<int> free_block_ids_;
  std::vector<int> block_of_buffer_;
  FreePool small_free_, large_free_;
  int64_t next_address_ = 0;
  int64_t allocated_ = 0, reserved_ = 0, segments_ = 0;
};

}  // namespace dnncast::memory
