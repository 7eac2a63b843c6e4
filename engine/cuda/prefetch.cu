#include "engine/cuda/prefetch.cuh"

#include <algorithm>

#include "engine/cuda/skinny_gemm.cuh"
#include "engine/knobs.hpp"

namespace tpverify::cuda {
namespace {

/// Bytes each request covers: a 16 KiB bulk prefetch, a 128-byte line prefetch, a 4-byte load
/// that asks the L2 for its 256-byte block.
template <PrefetchMode M>
constexpr std::uint64_t k_piece = M == PrefetchMode::bulk ? 16 * 1024 : (M == PrefetchMode::line ? 128 : 256);

/// Chain: launched after the pass's previous kernel on its stream (programmatic dependent
/// launch): lets the next kernel launch at once, asks, then waits for the previous kernel, so that
/// a kernel that waits for this one has waited for that one too.
template <PrefetchMode M, bool Chain>
__global__ void prefetch_l2_kernel(L2Prefetch list) {
    if constexpr (Chain) skinny::pdl_trigger();
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
            } else if constexpr (M == PrefetchMode::touch) {
                unsigned v;  // unused: asm volatile keeps the load
                asm volatile("ld.global.nc.L1::no_allocate.L2::256B.u32 %0, [%1];" : "=r"(v) : "l"(p));
            }
        }
        before += pieces;
    }
    if constexpr (Chain) skinny::pdl_wait();
}

}  // namespace

PrefetchMode prefetch_mode() {
    static const PrefetchMode mode =
        env_enum("TPVERIFY_PREFETCH_MODE",
                 {std::pair{"line", PrefetchMode::line}, std::pair{"touch", PrefetchMode::touch},
                  std::pair{"empty", PrefetchMode::empty}},
                 PrefetchMode::bulk);
    return mode;
}

bool prefetch_on_main_stream() {
    static const bool main = env_is("TPVERIFY_PREFETCH_STREAM", "main");
    return main;
}

namespace {
template <PrefetchMode M>
cudaError_t launch(const L2Prefetch& list, int blocks, int threads, bool chain, cudaStream_t s) {
    if (!chain) {
        prefetch_l2_kernel<M, false><<<blocks, threads, 0, s>>>(list);
        return cudaGetLastError();
    }
    cudaLaunchConfig_t config{};
    config.gridDim = dim3(unsigned(blocks), 1, 1);
    config.blockDim = dim3(unsigned(threads), 1, 1);
    config.stream = s;
    cudaLaunchAttribute attribute{};
    attribute.id = cudaLaunchAttributeProgrammaticStreamSerialization;
    attribute.val.programmaticStreamSerializationAllowed = 1;
    config.attrs = &attribute;
    config.numAttrs = 1;
    return cudaLaunchKernelEx(&config, prefetch_l2_kernel<M, true>, list);
}
}  // namespace

cudaError_t prefetch_l2(const L2Prefetch& list, int sms, bool chain, cudaStream_t s) {
    if (list.count < 0 || list.count > k_prefetch_regions || sms < 1) return cudaErrorInvalidValue;
    for (int r = 0; r < list.count; ++r)
        if (reinterpret_cast<std::uintptr_t>(list.p[r]) % 16 != 0 || list.bytes[r] % 16 != 0)
            return cudaErrorInvalidValue;
    if (list.count == 0) return cudaSuccess;
    chain = chain && skinny::pdl_enabled();
    switch (prefetch_mode()) {
        case PrefetchMode::bulk:
            // Half the SMs' copy engines, one warp each: 24 MB is ~23 bulk requests a thread.
            return launch<PrefetchMode::bulk>(list, std::max(1, sms / 2), 32, chain, s);
        case PrefetchMode::line:
            return launch<PrefetchMode::line>(list, sms, 256, chain, s);
        case PrefetchMode::touch:
            return launch<PrefetchMode::touch>(list, sms, 256, chain, s);
        case PrefetchMode::empty:
            return launch<PrefetchMode::empty>(list, 1, 32, chain, s);
    }
    return cudaErrorInvalidValue;
}

}  // namespace tpverify::cuda
