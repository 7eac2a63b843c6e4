#pragma once
// --check for the sim: a real (small) host all-reduce + residual + RMSNorm, done the unfused way
// (NCCL ring order, then a norm pass) or the fused way (one-shot order, norm in the same loop),
// compared element by element against a double-precision reference.
#include <cstdint>

namespace tpverify::sim {

/// Counts of one check.
struct CheckOutcome {
    long long wrong = 0;     ///< elements outside bf16 tolerance of the reference
    long long elements = 0;  ///< elements compared (tokens x hidden)
};

/// Reduces `ranks` random bf16 inputs of tokens x hidden, adds a residual and applies RMSNorm
/// (eps), the fused or unfused way. `corrupt_fraction` of the reduced elements are replaced by
/// stale data first (what an unsafe protocol does). Deterministic for a given `seed`.
CheckOutcome host_check(int ranks, int tokens, int hidden, double eps, bool fused, double corrupt_fraction,
                        std::uint32_t seed);

/// Rounds a float to the nearest bf16 value (round to nearest even), returned as float.
float to_bf16(float x);

}  // namespace tpverify::sim
