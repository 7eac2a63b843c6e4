// Host reference for --check in the sim backend.
#include "engine/sim/sim_check.hpp"

#include <cmath>
#include <cstring>
#include <random>
#include <vector>

namespace tpverify::sim {

float to_bf16(float x) {
    std::uint32_t bits = 0;
    std::memcpy(&bits, &x, sizeof bits);
    if ((bits & 0x7f800000u) == 0x7f800000u) return x;  // inf / nan unchanged
    bits += 0x7fffu + ((bits >> 16) & 1u);
    bits &= 0xffff0000u;
    float out = 0;
    std::memcpy(&out, &bits, sizeof out);
    return out;
}

CheckOutcome host_check(int ranks, int tokens, int hidden, double eps, bool fused, double corrupt_fraction,
                        std::uint32_t seed) {
    std::mt19937 rng(seed);
    std::normal_distribution<float> normal(0.0f, 1.0f);
    const std::size_t n = static_cast<std::size_t>(tokens) * hidden;
    std::vector<std::vector<float>> input(ranks, std::vector<float>(n));
    for (auto& r : input)
        for (float& v : r) v = to_bf16(normal(rng));
    std::vector<float> residual(n), weight(hidden);
    for (float& v : residual) v = to_bf16(normal(rng));
    for (float& v : weight) v = to_bf16(1.0f + 0.1f * normal(rng));

    // Reduction in the order the chosen implementation uses, accumulated in fp32.
    std::vector<float> sum(n, 0.0f);
    for (std::size_t i = 0; i < n; ++i) {
        float acc = 0;
        const int chunk_owner = static_cast<int>((i * ranks) / n);  // ring: each chunk starts elsewhere
        for (int k = 0; k < ranks; ++k) acc += input[fused ? k : (chunk_owner + 1 + k) % ranks][i];
        sum[i] = fused ? acc : to_bf16(acc);  // unfused: the all-reduce writes bf16 to memory
    }
    std::uniform_real_distribution<double> uniform(0.0, 1.0);
    if (corrupt_fraction > 0) {
        for (std::size_t i = 0; i < n; ++i)
            if (uniform(rng) < corrupt_fraction) sum[i] = input[0][(i + n / 2 + 1) % n];  // stale line
    }

    CheckOutcome out;
    out.elements = static_cast<long long>(n);
    for (int t = 0; t < tokens; ++t) {
        const std::size_t row = static_cast<std::size_t>(t) * hidden;
        double ref_ss = 0, ss = 0;
        std::vector<double> ref(hidden);
        std::vector<float> h(hidden);
        for (int j = 0; j < hidden; ++j) {
            double exact = residual[row + j];
            for (int k = 0; k < ranks; ++k) exact += input[k][row + j];
            ref[j] = exact;
            ref_ss += exact * exact;
            h[j] = fused ? sum[row + j] + residual[row + j] : to_bf16(sum[row + j] + residual[row + j]);
            ss += static_cast<double>(h[j]) * h[j];
        }
        const double ref_scale = 1.0 / std::sqrt(ref_ss / hidden + eps);
        const float scale = static_cast<float>(1.0 / std::sqrt(ss / hidden + eps));
        for (int j = 0; j < hidden; ++j) {
            const double expect = ref[j] * ref_scale * weight[j];
            const double got = to_bf16(h[j] * scale * weight[j]);
            if (std::fabs(got - expect) > 0.03 + 0.02 * std::fabs(expect)) ++out.wrong;
        }
    }
    return out;
}

}  // namespace tpverify::sim
