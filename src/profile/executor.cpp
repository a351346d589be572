// The libtorch executor (filled in by the profiler work).
namespace dnncast {}
