#include "engine/cuda/prefetch.cuh"

#include <algorithm>

#include "engine/cuda/skinny_gemm.cuh"
#include "engine/knobs.hpp"

namespace tpverify::cuda {
namespace {

/// Bytes each request covers: a 16 KiB bulk prefetch, a 128-byte line prefetch, a 16-byte load
/// that asks the L2 for its 256-byte block.
template <PrefetchMode M>
constexpr std::uint64_t k_piece = M == PrefetchMode::bulk ? 16 * 1024 : (M == PrefetchMode::line ? 128 : 256);

template <PrefetchMode M>
__global__ void prefetch_l2_kernel(L2Prefetch list) {
    if constexpr (M == PrefetchMode::empty) return;
    const std::uint64_t threads = std::uint64_t(gridDim.x) * blockDim.x;
    const std::uint64_t id = std::uint64_t(blockIdx.x) * blockDim.x + threadIdx.x;
    // Piece i of the regions laid end to end goes to thread i % threads: the first pieces of
    // every thread, and so the regions' first bytes, are asked for first.
    std::uint64_t before = 0;  // pieces of the regions before r
    for (int r = 0; r < list.count; ++r) {
        const std::uint64_t pieces = (list.bytes[r] + k_piece<M> - 1) / k_piece<M>;
        std::uint64_t i = id >= before % threads ? id - before % threads : id + threads - before % threads;
        for (; i < pieces; i += threads) {
            const std::uint64_t offset = i * k_piece<M>;
            const char* p = static_cast<const char*>(list.p[r]) + offset;
            if constexpr (M == PrefetchMode::bulk) {
                const std::uint64_t left = list.bytes[r] - offset;
                skinny::prefetch_l2(p, unsigned(left < k_piece<M> ? left : k_piece<M>));
            } else if constexpr (M == PrefetchMode::line) {
                asm volatile("prefetch.global.L2 [%0];" ::"l"(p));
            } else {
                unsigned v;  // unused: asm volatile keeps the load
                asm volatile("ld.global.nc.L1::no_allocate.L2::256B.u32 %0, [%1];" : "=r"(v) : "l"(p));
            }
        }
        before += pieces;
    }
}

}  // namespace

PrefetchMode prefetch_mode() {
    static const PrefetchMode mode = [] {
        switch (env_choice("TPVERIFY_PREFETCH_MODE", {"line", "touch", "empty"})) {
            case 0:
                return PrefetchMode::line;
            case 1:
                return PrefetchMode::touch;
            case 2:
                return PrefetchMode::empty;
            default:
                return PrefetchMode::bulk;
        }
    }();
    return mode;
}

cudaError_t prefetch_l2(const L2Prefetch& list, int sms, cudaStream_t s) {
    if (list.count < 0 || list.count > k_prefetch_regions || sms < 1) return cudaErrorInvalidValue;
    for (int r = 0; r < list.count; ++r)
        if (reinterpret_cast<std::uintptr_t>(list.p[r]) % 16 != 0 || list.bytes[r] % 16 != 0)
            return cudaErrorInvalidValue;
    if (list.count == 0) return cudaSuccess;
    switch (prefetch_mode()) {
        case PrefetchMode::bulk:
            // Half the SMs' copy engines, one warp each: 24 MB is ~23 bulk requests a thread.
            prefetch_l2_kernel<PrefetchMode::bulk><<<std::max(1, sms / 2), 32, 0, s>>>(list);
            break;
        case PrefetchMode::line:
            prefetch_l2_kernel<PrefetchMode::line><<<sms, 256, 0, s>>>(list);
            break;
        case PrefetchMode::touch:
            prefetch_l2_kernel<PrefetchMode::touch><<<sms, 256, 0, s>>>(list);
            break;
        case PrefetchMode::empty:
            prefetch_l2_kernel<PrefetchMode::empty><<<1, 32, 0, s>>>(list);
            break;
    }
    return cudaGetLastError();
}

}  // namespace tpverify::cuda
