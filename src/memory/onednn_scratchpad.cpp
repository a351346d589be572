#include "memory/onednn_scratchpad.h"

#include <dlfcn.h>

#include <map>
#include <mutex>
#include <tuple>

#include "hardware/isa.h"

#if __has_include(<oneapi/dnnl/dnnl.h>)
#include <oneapi/dnnl/dnnl.h>
#define DNNCAST_HAVE_DNNL_HEADERS 1
#endif

namespace dnncast::memory {

namespace {

#ifdef DNNCAST_HAVE_DNNL_HEADERS
// The C API functions used, looked up in the library opened at run time.
struct Dnnl {
  void* handle = nullptr;
  std::string status;
  decltype(&dnnl_engine_create) engine_create = nullptr;
  decltype(&dnnl_memory_desc_init_by_strides) md_init = nullptr;
  decltype(&dnnl_matmul_desc_init) matmul_init = nullptr;
  decltype(&dnnl_primitive_attr_create) attr_create = nullptr;
  decltype(&dnnl_primitive_attr_destroy) attr_destroy = nullptr;
  decltype(&dnnl_primitive_attr_set_scratchpad_mode) attr_scratchpad = nullptr;
  decltype(&dnnl_primitive_desc_create) pd_create = nullptr;
  decltype(&dnnl_primitive_desc_destroy) pd_destroy = nullptr;
  decltype(&dnnl_primitive_desc_query_md) pd_query_md = nullptr;
  decltype(&dnnl_memory_desc_get_size) md_size = nullptr;
  decltype(&dnnl_version) version = nullptr;
  void (*omp_set_num_threads)(int) = nullptr;
  int (*omp_get_max_threads)() = nullptr;
  dnnl_engine_t engine = nullptr;
};

template <typename F>
bool find(void* handle, const char* name, F& function) {
  function = reinterpret_cast<F>(dlsym(handle, name));
  return function != nullptr;
}

Dnnl open_dnnl() {
  Dnnl d;
  d.handle = dlopen("libdnnl.so.2", RTLD_NOW | RTLD_LOCAL);
  if (d.handle == nullptr) {
    const char* why = dlerror();
    d.status = std::string("libdnnl.so.2 not found (") + (why != nullptr ? why : "dlopen failed") + ")";
    return d;
  }
  bool ok = find(d.handle, "dnnl_engine_create", d.engine_create) &&
            find(d.handle, "dnnl_memory_desc_init_by_strides", d.md_init) &&
            find(d.handle, "dnnl_matmul_desc_init", d.matmul_init) &&
            find(d.handle, "dnnl_primitive_attr_create", d.attr_create) &&
            find(d.handle, "dnnl_primitive_attr_destroy", d.attr_destroy) &&
            find(d.handle, "dnnl_primitive_attr_set_scratchpad_mode", d.attr_scratchpad) &&
            find(d.handle, "dnnl_primitive_desc_create", d.pd_create) &&
            find(d.handle, "dnnl_primitive_desc_destroy", d.pd_destroy) &&
            find(d.handle, "dnnl_primitive_desc_query_md", d.pd_query_md) &&
            find(d.handle, "dnnl_memory_desc_get_size", d.md_size) && find(d.handle, "dnnl_version", d.version);
  // oneDNN's OpenMP runtime sizes its per-thread buffers by omp_get_max_threads() of the calling thread.
  if (void* gomp = dlopen("libgomp.so.1", RTLD_NOW | RTLD_NOLOAD | RTLD_LOCAL)) {
    if (!find(gomp, "omp_set_num_threads", d.omp_set_num_threads) ||
        !find(gomp, "omp_get_max_threads", d.omp_get_max_threads))
      d.omp_set_num_threads = nullptr;
  }
  if (!ok || d.engine_create(&d.engine, dnnl_cpu, 0) != dnnl_success) {
    d.status = "libdnnl.so.2 lacks the oneDNN 2.x C API or made no CPU engine";
    d.engine = nullptr;
    return d;
  }
  const dnnl_version_t* v = d.version();
  d.status = "oneDNN " + std::to_string(v->major) + "." + std::to_string(v->minor) + "." + std::to_string(v->patch) +
             " (libdnnl.so.2)";
  return d;
}

Dnnl& dnnl() {
  static Dnnl d = open_dnnl();
  return d;
}

std::optional<int64_t> query(const Bf16Matmul& p) {
  Dnnl& d = dnnl();
  if (d.engine == nullptr) return std::nullopt;
  // The calling thread's OpenMP thread count, set for the query and restored (a process that also trains keeps its
  // own).
  struct Threads {
    Dnnl& d;
    int before = 0;
    Threads(Dnnl& dnnl, int64_t threads) : d(dnnl) {
      if (d.omp_set_num_threads == nullptr) return;
      before = d.omp_get_max_threads();
      d.omp_set_num_threads(static_cast<int>(threads));
    }
    ~Threads() {
      if (d.omp_set_num_threads != nullptr) d.omp_set_num_threads(before);
    }
  } threads(d, p.threads);
  const bool batched = p.batch > 1;
  const int ndims = batched ? 3 : 2;
  auto desc = [&](int64_t rows, int64_t cols, bool transposed, dnnl_memory_desc_t* md) {
    dnnl_dims_t dims{}, strides{};
    int at = 0;
    if (batched) {
      dims[at] = p.batch;
      strides[at++] = rows * cols;
    }
    dims[at] = rows;
    dims[at + 1] = cols;
    strides[at] = transposed ? 1 : cols;
    strides[at + 1] = transposed ? rows : 1;
    return d.md_init(md, ndims, dims, dnnl_bf16, strides) == dnnl_success;
  };
  dnnl_memory_desc_t a, b, c;
  if (!desc(p.m, p.k, p.a_transposed, &a) || !desc(p.k, p.n, p.b_transposed, &b) || !desc(p.m, p.n, false, &c))
    return std::nullopt;
  dnnl_matmul_desc_t op;
  if (d.matmul_init(&op, &a, &b, nullptr, &c) != dnnl_success) return std::nullopt;
  dnnl_primitive_attr_t attr = nullptr;
  if (d.attr_create(&attr) != dnnl_success) return std::nullopt;
  d.attr_scratchpad(attr, dnnl_scratchpad_mode_user);  // what ideep asks for: the scratchpad from the caller
  dnnl_primitive_desc_t pd = nullptr;
  const dnnl_status_t made = d.pd_create(&pd, &op, attr, d.engine, nullptr);
  d.attr_destroy(attr);
  if (made != dnnl_success) return std::nullopt;
  const dnnl_memory_desc_t* scratch = d.pd_query_md(pd, dnnl_query_scratchpad_md, 0);
  const auto bytes = static_cast<int64_t>(scratch != nullptr ? d.md_size(scratch) : 0);
  d.pd_destroy(pd);
  return bytes;
}
#endif

}  // namespace

bool aten_uses_onednn_for_bf16() {
  static const bool uses = [] {
    const hardware::CpuFeatures f = hardware::detect_cpu_features();
    return f.avx512bw && f.avx512vl && f.avx512dq;
  }();
  return uses;
}

std::optional<int64_t> onednn_bf16_scratchpad(const Bf16Matmul& product) {
  // ATen's threshold (checksize / mkldnn_bf16_gemm): at most 16^3 multiply-adds stay in ATen's own kernel.
  if (product.batch * product.m * product.n * product.k <= 16 * 16 * 16) return 0;
#ifdef DNNCAST_HAVE_DNNL_HEADERS
  using Key = std::tuple<int64_t, int64_t, int64_t, int64_t, bool, bool, int64_t>;
  static std::mutex mutex;
  static std::map<Key, std::optional<int64_t>> cache;
  const Key key{product.batch,        product.m,      product.n, product.k, product.a_transposed,
                product.b_transposed, product.threads};
  std::lock_guard<std::mutex> lock(mutex);
  auto found = cache.find(key);
  if (found == cache.end()) {
    if (cache.size() >= 65536) cache.clear();  // bounded (a server simulates without end)
    found = cache.emplace(key, query(product)).first;
  }
  return found->second;
#else
  return std::nullopt;
#endif
}

std::string onednn_library_status() {
#ifdef DNNCAST_HAVE_DNNL_HEADERS
  return dnnl().status;
#else
  return "built without oneDNN's headers (libdnnl-dev)";
#endif
}

std::string onednn_scratchpad_note(hardware::CpuIsa simulated) {
  if (!aten_uses_onednn_for_bf16())
    return "bf16 products: this CPU lacks AVX-512 BW/VL/DQ, so ATen multiplies bf16 without oneDNN: no oneDNN "
           "scratchpad is counted";
  if (simulated != hardware::host_dispatch().onednn)
    return std::string("bf16 products: oneDNN's scratchpads are not counted (the simulated ISA ") +
           hardware::isa_name(simulated) + " is not this host's dispatch, " +
           hardware::isa_name(hardware::host_dispatch().onednn) + ", whose oneDNN alone can be asked)";
  const std::string status = onednn_library_status();
  if (status.rfind("oneDNN ", 0) == 0) return "bf16 products: oneDNN's scratchpads as " + status + " sizes them here";
  return "bf16 products: oneDNN's scratchpads are not counted (" + status + ")";
}

}  // namespace dnncast::memory
