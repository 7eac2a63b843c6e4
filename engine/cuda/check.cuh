#pragma once
// --check: collective results against a host reference, and fused against unfused norms.
#include <string>

#include "engine/cuda/rank.cuh"

namespace tpverify::cuda {

/// What --check found on one rank.
struct CheckOutcome {
    long long wrong = 0;           ///< elements that differ from the host reference
    long long checked = 0;         ///< elements compared
    long long fused_mismatch = 0;  ///< fused vs unfused norm elements beyond bf16 tolerance
    double fused_max_err = 0;      ///< largest |fused - unfused|
    std::string detail;            ///< first failing collective, for the error message
};

/// Runs every distinct collective of `plan` (through a graph with --graph on) on known
/// per-rank inputs and compares with the host reference; with --fusion on, also runs the
/// residual + RMSNorm step fused and unfused on the same inputs and compares them. With INT4
/// experts, the first check also runs our W4A16 GEMM against a host reference.
Status run_check(RankEngine& engine, const PassPlan& plan, CheckOutcome& out);

}  // namespace tpverify::cuda
