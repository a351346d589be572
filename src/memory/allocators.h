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
  // A free block in its pool (the id finds the block without a second index by address).
  struct Key {
    int64_t size = 0, address = 0;
    int id = -1;
  };
  // A pool's free blocks by size: the sizes present in order, each with its blocks by falling address (the
  // lowest last). Best fit is the smallest size at or past the request, then its lowest address, as the order of
  // (size, address) gives it. A training step asks for few sizes (Llama-2-7B's QLoRA step: 20 rounded ones) while
  // a pool holds hundreds of blocks, so that is a binary search over a short array and a pop, where a std::set
  // of (size, address) paid a node allocation and a rebalancing for every change. A size whose last block leaves
  // stays listed, empty, as the same sizes come back layer after layer; the empty ones are dropped in one pass
  // when they are over half the list (best fit skips them).
  class FreePool {
   public:
    int take_best_fit(int64_t size);  // the id of the best-fitting block, removed from the pool; -1 when none fits
    void insert(const Key& key);
    void erase(const Key& key);

   private:
    struct Entry {
      int64_t address = 0;
      int id = -1;
    };
    void emptied();  // a size's last block left: count it, compact when due
    std::vector<Entry>& blocks(size_t at) { return lists_[static_cast<size_t>(list_of_[at])]; }
    std::vector<int64_t> sizes_;             // rising
    std::vector<int> list_of_;               // per size: its list in lists_ (a new size moves ints, not lists)
    std::vector<std::vector<Entry>> lists_;  // each size's blocks by falling address; a list never moves
    std::vector<int> spare_;                 // lists of sizes no longer listed, empty, for the next new size
    size_t empty_ = 0;                       // sizes listed with no block
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
