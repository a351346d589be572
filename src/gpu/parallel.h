// One training iteration over several GPUs (issue 48, docs/GPU.md "Several GPUs"): the plan's share of the graph
// timed on one GPU by the one-GPU model (gpu_forecast.h), and its collectives by the measured-collective model
// (collectives.h).
//
//   stage time   per micro-batch: its forward and backward kernels plus its tensor-parallel all-reduces (blocking:
//                Megatron waits for them)
//   pipeline     1F1B: every stage once for the first micro-batch (the fill and the drain), then the slowest stage
//                once per further micro-batch; activations and their gradients sent between stages
//   gradients    all-reduced over the data-parallel GPUs in DistributedDataParallel's buckets (25 MiB, the first
//                1 MiB), each launched when its gradients are ready during the last micro-batch's backward, one at a
//                time: what outlasts the backward pass is exposed
//   optimizer    each GPU steps its own share of the parameters
#pragma once

#include "gpu/gpu_forecast.h"
#include "gpu/parallel_plan.h"
#include "memory/sharding.h"
#include "memory/simulator.h"

namespace dnncast::gpu {

// Where each node of `micro` falls under `plan`: its tensor-parallel part and its pipeline stage (parallel_plan.h),
// found once for a forecast's timing and memory alike. Throws InputError for a plan the graph cannot take.
struct PlanLayout {
  std::vector<NodePart> parts;
  std::vector<int> stages;
};
PlanLayout plan_layout(const Graph& micro, const ParallelPlan& plan);

// `micro`: the graph at one micro-batch of one data-parallel replica. Throws InputError for a plan the graph cannot
// take (parallel_plan.h) or a GPU whose catalogue row lacks a peak. `layout`: plan_layout(micro, plan), when the
// caller has it.
ParallelTiming time_parallel(const Graph& micro, const ParallelPlan& plan, const hardware::GpuSpec& gpu,
                             GpuPrecision precision, Optimizer optimizer, const GpuCalibration& calibration);
ParallelTiming time_parallel(const Graph& micro, const ParallelPlan& plan, const PlanLayout& layout,
                             const hardware::GpuSpec& gpu, GpuPrecision precision, Optimizer optimizer,
                             const GpuCalibration& calibration);

// Times each of a sharded step's ring collectives (memory/sharding.h) by the collective model on `gpu`'s link, GPUs
// beyond `gpus_per_node` across nodes; a GPU with no link catalogued leaves them untimed.
void time_collectives(std::vector<memory::Collective>& collectives, const hardware::GpuSpec& gpu,
                      int64_t gpus_per_node);

// One GPU's memory under `plan` from `single`, the simulation of one micro-batch of `micro` on one device: per stage,
// the parameters, gradients and optimizer states of its share (the split ones divided by tp), the activations of its
// nodes (split ones divided by tp) times the micro-batches in flight, DDP's buckets for dp > 1; the largest stage. A
// model: no multi-GPU run was measured.
ParallelMemory parallel_memory(const memory::MemoryReport& single, const Graph& micro, const ParallelPlan& plan);
ParallelMemory parallel_memory(const memory::MemoryReport& single, const Graph& micro, const ParallelPlan& plan,
                               const PlanLayout& layout);

}  // namespace dnncast::gpu
