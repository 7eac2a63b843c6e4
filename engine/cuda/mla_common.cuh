#pragma once
// What the MLA decode attention kernels share (mla_decode.cu, mla_two_pass.cu, mla_cluster.cu):
// the row shape of absorbed MLA (576 = 512 latent + 64 rope; V = the first 512 of each cached
// row) and the shared-memory copy and fragment helpers their tensor-core loops use.
#include "engine/cuda/common.cuh"

namespace tpverify::cuda::mla {

constexpr int k_dim = 576, k_vdim = 512;
constexpr int k_pitch = k_dim + 8;  ///< bf16 a shared row of q or K (16-byte aligned, no bank conflicts)

__device__ __forceinline__ unsigned smem_address(const void* p) {
    return static_cast<unsigned>(__cvta_generic_to_shared(p));
}

/// 16 bytes global -> shared, asynchronously (cp.async, L2 only); cp.async.commit_group and
/// wait_group order them.
__device__ __forceinline__ void copy_async16(void* smem, const void* global) {
    asm volatile("cp.async.cg.shared.global [%0], [%1], 16;" ::"r"(smem_address(smem)), "l"(global));
}

__device__ __forceinline__ void ldmatrix_x2(unsigned address, unsigned& r0, unsigned& r1) {
    asm volatile("ldmatrix.sync.aligned.m8n8.x2.shared.b16 {%0,%1}, [%2];"
                 : "=r"(r0), "=r"(r1)
                 : "r"(address));
}

__device__ __forceinline__ void ldmatrix_x4_trans(unsigned address, unsigned (&r)[4]) {
    asm volatile("ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16 {%0,%1,%2,%3}, [%4];"
                 : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
                 : "r"(address));
}

/// Starts copying query rows row0 .. row0 + Count - 1 (each k_dim bf16) into shared rows of
/// k_pitch, Threads threads sharing the 16-byte pieces; rows at or past `rows` are zeroed instead.
/// The caller commits and waits for the cp.async group.
template <int Count, int Threads>
__device__ __forceinline__ void copy_query_rows(bf16* qs, const bf16* q, int row0, int rows) {
    constexpr int vecs = k_dim / 8;  // 16-byte pieces a row
    for (int i = threadIdx.x; i < Count * vecs; i += Threads) {
        const int r = i / vecs, c = i % vecs, row = row0 + r;
        if (row < rows)
            copy_async16(qs + r * k_pitch + c * 8, q + std::uint64_t(row) * k_dim + c * 8);
        else
            *reinterpret_cast<uint4*>(qs + r * k_pitch + c * 8) = make_uint4(0, 0, 0, 0);
    }
}

/// Starts copying cached rows first .. first + Tokens - 1 (each k_dim bf16) into shared rows of
/// k_pitch, Threads threads sharing the 16-byte pieces; rows past the context repeat its last row
/// (the callers mask their scores). The caller commits and waits for the cp.async group.
template <int Tokens, int Threads>
__device__ __forceinline__ void copy_cache_rows(bf16* ks, const bf16* cache, int first, int context) {
    constexpr int vecs = k_dim / 8;  // 16-byte pieces a row
    for (int i = threadIdx.x; i < Tokens * vecs; i += Threads) {
        const int r = i / vecs, c = i % vecs;
        const int token = min(first + r, context - 1);
        copy_async16(ks + r * k_pitch + c * 8, cache + std::uint64_t(token) * k_dim + c * 8);
    }
}

/// The launch of a cluster kernel: blocks of `threads` in clusters of `cluster_x` along x, `smem`
/// bytes of dynamic shared memory, programmatic dependent launch when `pdl`; `attrs` holds the
/// attributes the configuration points to (keep it alive until the launch).
inline cudaLaunchConfig_t cluster_launch(dim3 grid, unsigned threads, std::size_t smem, unsigned cluster_x,
                                         cudaStream_t s, cudaLaunchAttribute (&attrs)[2], bool pdl) {
    cudaLaunchConfig_t config{};
    config.gridDim = grid;
    config.blockDim = dim3(threads, 1, 1);
    config.dynamicSmemBytes = smem;
    config.stream = s;
    attrs[0].id = cudaLaunchAttributeClusterDimension;
    attrs[0].val.clusterDim.x = cluster_x;
    attrs[0].val.clusterDim.y = 1;
    attrs[0].val.clusterDim.z = 1;
    attrs[1].id = cudaLaunchAttributeProgrammaticStreamSerialization;
    attrs[1].val.programmaticStreamSerializationAllowed = 1;
    config.attrs = attrs;
    config.numAttrs = pdl ? 2 : 1;
    return config;
}

__device__ __forceinline__ unsigned pack_bf16(float lo, float hi) {
    __nv_bfloat162 v = __floats2bfloat162_rn(lo, hi);
    return *reinterpret_cast<unsigned*>(&v);
}

}  // namespace tpverify::cuda::mla
