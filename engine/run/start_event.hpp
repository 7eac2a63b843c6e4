#pragma once
// The `start` event both backends emit: one builder, so the sim and the CUDA backend describe
// the pass with the same fields in the same order (docs/engine.md "Events"). Each backend then
// appends what only it knows (the sim: topology model, noise, calibration; CUDA: devices, the
// GEMM path, the draft's weights).
#include <string>

#include "engine/model/model.hpp"
#include "engine/options.hpp"
#include "engine/report.hpp"

namespace tpverify {

/// What the backend decided that the options alone do not say.
struct StartFacts {
    std::string backend;       ///< "sim" or "cuda"
    std::string nccl_version;  ///< the NCCL that runs (or is modelled)
    ProcessModel process_model = ProcessModel::processes;
    int tp = 1;                   ///< ranks actually running
    int draft_steps = 0;          ///< draft steps actually run (0: no draft pass)
    std::string fusion_fallback;  ///< why --fusion falls back to NCCL ("" when fused or off)
    int draft_all_reduces = 0;    ///< collectives of the draft pass (one speculative cycle)
    int draft_all_gathers = 0;
    std::string nccl_env{};              ///< JSON object: the variables the engine runs with (server_env.hpp)
    std::string nccl_env_from_caller{};  ///< JSON array: those the caller set
    std::string libnccl{};               ///< the NCCL library loaded (path), "" when none (the sim)
};

/// The shared fields of the `start` event. `rank` is the reporting process's rank (0 unless
/// this process was started with --rank).
JsonLine start_event_fields(const Options& options, const PassPlan& plan, const StartFacts& facts);

}  // namespace tpverify
