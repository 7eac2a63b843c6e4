#include "engine/cuda/prefetch.cuh"

#include "engine/cuda/skinny_gemm.cuh"

namespace tpverify::cuda {
namespace {

constexpr std::uint64_t k_piece = 16 * 1024;

__global__ void prefetch_l2_kernel(L2Prefetch list) {
    const std::uint64_t threads = std::uint64_t(gridDim.x) * blockDim.x;
    const std::uint64_t id = std::uint64_t(blockIdx.x) * blockDim.x + threadIdx.x;
    // Piece i of the regions laid end to end goes to thread i % threads: the first pieces of
    // every thread, and so the regions' first bytes, are asked for first.
    std::uint64_t before = 0;  // pieces of the regions before r
    for (int r = 0; r < list.count; ++r) {
        const std::uint64_t pieces = (list.bytes[r] + k_piece - 1) / k_piece;
        std::uint64_t i = id >= before % threads ? id - before % threads : id + threads - before % threads;
        for (; i < pieces; i += threads) {
            const std::uint64_t offset = i * k_piece;
            const std::uint64_t left = list.bytes[r] - offset;
            skinny::prefetch_l2(static_cast<const char*>(list.p[r]) + offset,
                                unsigned(left < k_piece ? left : k_piece));
        }
        before += pieces;
    }
}

}  // namespace

cudaError_t prefetch_l2(const L2Prefetch& list, int blocks, cudaStream_t s) {
    if (list.count < 0 || list.count > k_prefetch_regions || blocks < 1) return cudaErrorInvalidValue;
    for (int r = 0; r < list.count; ++r)
        if (reinterpret_cast<std::uintptr_t>(list.p[r]) % 16 != 0 || list.bytes[r] % 16 != 0)
            return cudaErrorInvalidValue;
    if (list.count == 0) return cudaSuccess;
    prefetch_l2_kernel<<<blocks, 32, 0, s>>>(list);
    return cudaGetLastError();
}

}  // namespace tpverify::cuda
