// Weight-streaming GEMMs (engine/cuda/stream_gemm.cuh): the load-time repacks and the launcher,
// which picks how many k slices a launch splits into.
#include <algorithm>
#include <cstdlib>
#include <string>

#include "engine/cuda/stream_gemm.cuh"
#include "engine/cuda/stream_k.cuh"
#include "engine/knobs.hpp"

namespace tpverify::cuda::sg {

__global__ void int4_repack_kernel(const unsigned* ct_words, const bf16* ct_scales, unsigned char* out, int n,
                                   int k) {
    const std::uint64_t words = std::uint64_t(n) * k / 8;
    const int chunks = k / k_chunk;
    unsigned* out_words = reinterpret_cast<unsigned*>(out);
    bf16* out_scales = reinterpret_cast<bf16*>(out + int4_packed_bytes(n, k));
    for (std::uint64_t i = blockIdx.x * std::uint64_t(blockDim.x) + threadIdx.x; i < words + words / 4;
         i += std::uint64_t(gridDim.x) * blockDim.x) {
        if (i < words) {
            // i = ((tile * chunks + chunk) * 32 + lane) * 4 + step
            const int step = int(i % 4), lane = int(i / 4 % 32);
            const std::uint64_t tc = i / 128;
            const int chunk = int(tc % chunks), tile = int(tc / chunks);
            const int g = lane >> 2, t = lane & 3;
            unsigned word = 0;
            for (int j = 0; j < 8; ++j) {
                const int r = j & 3, half = j >> 2;
                const int col = tile * k_tile + g + 8 * (r & 1);
                const int kk = chunk * k_chunk + 16 * step + 2 * t + 8 * (r >> 1) + half;
                const unsigned src = ct_words[std::uint64_t(col) * (k / 8) + kk / 8];
                word |= ((src >> (4 * (kk % 8))) & 15u) << (4 * j);
            }
            out_words[i] = word;
        } else {
            // s = ((tile * chunks + chunk) * 8 + g) * 4 + q
            const std::uint64_t s = i - words;
            const int q = int(s % 4), g = int(s / 4 % 8);
            const std::uint64_t tc = s / 32;
            const int chunk = int(tc % chunks), tile = int(tc / chunks);
            const int col = tile * k_tile + g + 8 * (q & 1);
            out_scales[s] = ct_scales[std::uint64_t(col) * (k / 32) + chunk * 2 + (q >> 1)];
        }
    }
}

__global__ void bf16_repack_kernel(const bf16* w, unsigned char* out, int n, int k) {
    const std::uint64_t pairs = std::uint64_t(n) * k / 2;
    const int chunks = k / k_chunk;
    auto* out_pairs = reinterpret_cast<__nv_bfloat162*>(out);
    for (std::uint64_t i = blockIdx.x * std::uint64_t(blockDim.x) + threadIdx.x; i < pairs;
         i += std::uint64_t(gridDim.x) * blockDim.x) {
        // i = (((tile * chunks + chunk) * 4 + step) * 32 + lane) * 4 + r
        const int r = int(i % 4), lane = int(i / 4 % 32), step = int(i / 128 % 4);
        const std::uint64_t tc = i / 512;
        const int chunk = int(tc % chunks), tile = int(tc / chunks);
        const int g = lane >> 2, t = lane & 3;
        const int row = tile * k_tile + g + 8 * (r & 1);
        const int kk = chunk * k_chunk + 16 * step + 2 * t + 8 * (r >> 1);
        out_pairs[i] = __halves2bfloat162(w[std::uint64_t(row) * k + kk], w[std::uint64_t(row) * k + kk + 1]);
    }
}

namespace {

int g_sms = 132;
int g_max_dynamic_smem = 48 << 10;

using Kernel = void (*)(Batch, int, int, int, int, int, int, Workspace, int, int, ExpertSum);

/// The INT4 kernels: chunks in flight per warp (the slice rule's unit), the folded
/// dequantisation (chunk_mma_folded), the shared-memory stages of the bulk-copy kernels (0: the
/// loads in registers).
struct Int4Kernel {
    const char* name;
    int unroll;
    bool fold;
    int ring;
    Kernel kernel;
};
constexpr Int4Kernel k_int4_kernels[] = {
    {"u4", 4, false, 0, stream_gemm_kernel<Format::int4, 4>},
    {"u4f", 4, true, 0, stream_gemm_kernel<Format::int4, 4, true>},
    {"u8", 8, false, 0, stream_gemm_kernel<Format::int4, 8>},
    {"u4r", 4, false, 0, stream_gemm_kernel<Format::int4, 4, false, true>},
    {"u4fr", 4, true, 0, stream_gemm_kernel<Format::int4, 4, true, true>},
    {"bulk4", 4, false, 4, stream_gemm_kernel<Format::int4, 4, false, false, 4>},
    {"bulk8", 4, false, 8, stream_gemm_kernel<Format::int4, 4, false, false, 8>},
    {"bulk16", 4, false, 16, stream_gemm_kernel<Format::int4, 4, false, false, 16>},
    {"bulk8f", 4, true, 8, stream_gemm_kernel<Format::int4, 4, true, false, 8>},
};
/// The default kernel of a launch: the folded one, except for a launch of at most
/// k_plain_max_experts experts of one row of x each (the one-token pass at top-8), which runs the
/// plain one. On the H200 (docs/benchmarks-gpu.md, 2026-12-04): the one-token pass 11,182-11,196
/// us plain against 11,254 us folded (and 11,102 against 11,153-11,166 in an earlier call); the
/// four-token pass, whose launches carry 28-32 experts, 19,825 us folded throughout against
/// 19,932-19,944 us with its single-row launches plain, and 20,018 us plain throughout.
constexpr int k_int4_plain = 0;
constexpr int k_int4_folded = 1;
constexpr int k_plain_max_experts = 8;

/// TPVERIFY_INT4 (kept once): a kernel name above, or `sk`, for every INT4 launch, or per shape n x k
/// (`7168x2048=u8,4096x7168=sk`; shape_text()), to compare on the GPU; the default where unset or
/// the shape is not named.
std::string int4_choice(int n, int k) {
    static const std::string text = env_or("TPVERIFY_INT4");
    return shape_text(text, n, k, "");
}

/// The kernel of an INT4 launch of `count` experts carrying at most `max_rows` rows of x each, of
/// shape n x k: TPVERIFY_INT4's where it names one, else the default.
const Int4Kernel& int4_kernel(int count, int max_rows, int n, int k) {
    const std::string v = int4_choice(n, k);
    for (const Int4Kernel& kernel : k_int4_kernels)
        if (v == kernel.name) return kernel;
    const bool plain = max_rows <= 1 && count <= k_plain_max_experts;
    return k_int4_kernels[plain ? k_int4_plain : k_int4_folded];
}

/// TPVERIFY_INT4=sk (or `NxK=sk`): INT4 launches on the stream-K kernel (stream_k.cuh) where it can
/// take them (no SiLU in the staging, no fused expert sum, x of the experts a block touches within
/// its shared memory); the others on the default kernel. 6 chunks in flight a warp at 2
/// blocks an SM (127 registers, none spilled), as many as the sliced kernel's 4 at 3 blocks: held
/// to 80 registers for 3 blocks, 4 chunks in flight spill around the flush, and that form ran the
/// INT4 launches twice as long on an H100 (docs/benchmarks-gpu.md, 2026-12-07 tenth session).
constexpr auto k_stream_k_kernel = stream_k_kernel<6, 2>;
bool stream_k_chosen(int n, int k) {
    return int4_choice(n, k) == "sk";
}

}  // namespace

cudaError_t setup(int device) {
    cudaDeviceProp prop{};
    if (cudaError_t e = cudaGetDeviceProperties(&prop, device); e != cudaSuccess) return e;
    g_sms = prop.multiProcessorCount;
    // The kernel's static shared memory is one int; leave 1 KiB for it and the runtime.
    g_max_dynamic_smem = int(prop.sharedMemPerBlockOptin) - 1024;
    for (const Int4Kernel& k : k_int4_kernels)
        if (cudaError_t e = cudaFuncSetAttribute(k.kernel, cudaFuncAttributeMaxDynamicSharedMemorySize,
                                                 g_max_dynamic_smem);
            e != cudaSuccess)
            return e;
    if (cudaError_t e = cudaFuncSetAttribute(k_stream_k_kernel, cudaFuncAttributeMaxDynamicSharedMemorySize,
                                             g_max_dynamic_smem);
        e != cudaSuccess)
        return e;
    return cudaFuncSetAttribute(stream_gemm_kernel<Format::bf16, k_bf16_unroll>,
                                cudaFuncAttributeMaxDynamicSharedMemorySize, g_max_dynamic_smem);
}

bool fits(int n, int k) {
    return n > 0 && k > 0 && n % k_tile == 0 && k % k_chunk == 0;
}

namespace {

/// TPVERIFY_INT4_SLICES (to compare on the GPU): unset, the rule of plan_launch; `blocks4`, the
/// rule before it (enough blocks for 4 an SM, as bf16 keeps; no longest slice); a number, that many k slices
/// for every INT4 launch; `NxK=S,...`, S slices for the launches of those shapes and the rule for the others
/// (within the limits; 0 = the rule).
int int4_slices_choice(int n, int k) {
    static const std::string text = env_or("TPVERIFY_INT4_SLICES");
    return text == "blocks4" ? 0 : shape_int(text, n, k, 0);
}

bool int4_blocks4_rule() {
    static const bool chosen = env_is("TPVERIFY_INT4_SLICES", "blocks4");
    return chosen;
}

/// The longest INT4 slice, in chunks (k 2,048): a warp walks its slice's chunks one after another,
/// so a long slice is a long serial tail. On an H100 (docs/benchmarks-gpu.md, 2026-12-06) gate_up
/// (k 7,168, 112 chunks) ran fastest in 4 slices at 1 token (3 and 2 slower) and at 4 tokens (1
/// slower), and down (k 2,048) in 1 slice at 1 token (2 and 4 slower).
constexpr int k_int4_longest_slice = 32;

}  // namespace

LaunchShape plan_launch(Format format, int n, int k, int count, int max_rows, const Workspace& ws) {
    LaunchShape shape;
    const int chunks = k / k_chunk;
    const int groups = (n + k_group_cols - 1) / k_group_cols;
    const long long blocks = (long long)groups * count;
    const bool int4 = format == Format::int4;
    // INT4: slices of at most k_int4_longest_slice chunks, and more where the blocks would not
    // fill every SM once (as many blocks as fit an SM at the launch's shared memory and the
    // kernel's registers: 3 for the 80-register INT4 kernels). bf16: enough blocks for 4 an SM.
    // Each slice at least 2 rounds of the unroll (INT4) or 4 chunks (bf16). For INT4,
    // TPVERIFY_INT4_SLICES's number instead where set.
    const Int4Kernel* const kernel = int4 ? &int4_kernel(count, max_rows, n, k) : nullptr;
    const int min_len = int4 ? 2 * kernel->unroll : 4 * k_bf16_unroll;
    const int choice = int4 ? int4_slices_choice(n, k) : 0;
    auto smem_of = [&](int slice_chunks) {
        return std::size_t(std::max(max_rows, 1)) * (slice_chunks * k_chunk + k_pad) * sizeof(bf16) +
               (int4 && kernel->fold ? fold_bytes(slice_chunks) : 0) + (int4 ? ring_bytes(kernel->ring) : 0);
    };
    int slices = 1;
    if (choice > 0) {
        slices = choice;
    } else if (!int4 || int4_blocks4_rule()) {
        const long long target = 4ll * g_sms;
        slices = blocks >= target ? 1 : int((target + blocks - 1) / blocks);
    } else {
        slices = (chunks + k_int4_longest_slice - 1) / k_int4_longest_slice;
        int resident = 0;
        if (cudaOccupancyMaxActiveBlocksPerMultiprocessor(
                &resident, kernel->kernel, k_threads, smem_of((chunks + slices - 1) / slices)) != cudaSuccess)
            resident = 1;
        const long long target = (long long)std::max(resident, 1) * g_sms;
        if (blocks * slices < target) slices = int((target + blocks - 1) / blocks);
    }
    slices = std::min(slices, std::max(1, chunks / min_len));
    auto needs = [&](int s) { return std::uint64_t(count) * s * k_rows * std::uint64_t(n); };
    const bool room = std::uint64_t(count) * groups <= ws.counter_count;
    while (slices > 1 && (needs(slices) > ws.partial_floats || !room)) --slices;
    for (;;) {
        shape.slice_chunks = (chunks + slices - 1) / slices;
        shape.slices = (chunks + shape.slice_chunks - 1) / shape.slice_chunks;
        shape.smem = smem_of(shape.slice_chunks);
        if (shape.smem <= std::size_t(g_max_dynamic_smem) || shape.slice_chunks == 1) break;
        ++slices;  // x of the slice must fit in shared memory: cut k finer
    }
    shape.ok = shape.smem <= std::size_t(g_max_dynamic_smem) &&
               (shape.slices == 1 || (needs(shape.slices) <= ws.partial_floats && room));
    return shape;
}

namespace {

/// A stream-K launch (stream_k.cuh): its split, blocks and dynamic shared memory; ok false where
/// the kernel cannot take it (x of the experts a block touches past the shared memory, or the
/// workspace too small), and the sliced kernel runs it instead.
struct StreamKShape {
    KSplit split;
    int blocks = 0;
    std::size_t smem = 0;
    bool ok = false;
};

StreamKShape plan_stream_k(int n, int k, int count, int max_rows, const Workspace& ws) {
    StreamKShape shape;
    const auto smem_of = [&](int slots) {
        return std::size_t(slots) * std::size_t(std::max(max_rows, 1)) * (k + k_pad) * sizeof(bf16);
    };
    // The grid is the blocks the SMs hold at once at the launch's shared memory, which depends on
    // how many experts' x a block stages, which depends on the grid: from one slot up until the
    // slots the split needs are the slots the grid was sized for.
    for (int slots = 1; slots <= k_max_batch;) {
        int resident = 0;
        if (smem_of(slots) > std::size_t(g_max_dynamic_smem) ||
            cudaOccupancyMaxActiveBlocksPerMultiprocessor(&resident, k_stream_k_kernel, k_threads,
                                                          smem_of(slots)) != cudaSuccess ||
            resident < 1)
            return shape;
        const KSplit split = ks_make(count, n, k, max_rows, (long long)resident * g_sms * k_warps, k_warps);
        if (split.slots <= slots) {
            shape.split = split;
            shape.split.slots = slots;
            shape.blocks = int((split.warps + k_warps - 1) / k_warps);
            shape.smem = smem_of(slots);
            shape.ok = ks_partial_floats(split) <= ws.partial_floats &&
                       std::uint64_t(count) * split.tiles <= ws.counter_count;
            return shape;
        }
        slots = split.slots;
    }
    return shape;
}

}  // namespace

cudaError_t run(Format format, const Batch& batch, int n, int k, int ldx, bool accumulate,
                const Workspace& ws, cudaStream_t stream, bool silu, const ExpertSum& sum) {
    if (!fits(n, k) || batch.count < 1 || batch.count > k_max_batch || ldx % 8 != 0 || (silu && ldx < 2 * k))
        return cudaErrorInvalidValue;
    int most = 0;
    for (int e = 0; e < batch.count; ++e) most = std::max(most, batch.rows[e]);
    // The fused sum needs every expert's rows from this one launch, and its counters (the
    // workspace's last column groups) apart from the split-k ones.
    const unsigned groups = unsigned((n + k_group_cols - 1) / k_group_cols);
    if (sum.y != nullptr && (most > k_rows || n % 2 != 0 || sum.tokens < 1 || sum.k < 1 ||
                             std::uint64_t(batch.count + 1) * groups > ws.counter_count))
        return cudaErrorInvalidValue;
    // At most k_rows rows of x per launch: more rows are more launches over the same weights.
    for (int r0 = 0; r0 < most; r0 += k_rows) {
        Batch part;
        int max_rows = 0;
        for (int e = 0; e < batch.count; ++e) {
            if (batch.rows[e] <= r0) continue;
            const int i = part.count++;
            part.w[i] = batch.w[e];
            part.x[i] = batch.x[e] + std::uint64_t(r0) * ldx;
            part.y[i] = batch.y[e] + std::uint64_t(r0) * n;
            part.rows[i] = std::min(k_rows, batch.rows[e] - r0);
            max_rows = std::max(max_rows, part.rows[i]);
        }
        const int acc = accumulate ? 1 : 0;
        if (format == Format::int4 && stream_k_chosen(n, k) && !silu && sum.y == nullptr) {
            const StreamKShape sk = plan_stream_k(n, k, part.count, max_rows, ws);
            if (sk.ok) {
                if (cudaError_t e =
                        skinny::launch_pdl(k_stream_k_kernel, dim3(unsigned(sk.blocks)), k_threads, sk.smem,
                                           stream, skinny::pdl_enabled(), part, n, k, ldx, sk.split, acc, ws);
                    e != cudaSuccess)
                    return e;
                if (cudaError_t e = cudaGetLastError(); e != cudaSuccess) return e;
                continue;
            }
        }
        const LaunchShape shape = plan_launch(format, n, k, part.count, max_rows, ws);
        if (!shape.ok) return cudaErrorInvalidValue;
        const dim3 grid(unsigned((n + k_group_cols - 1) / k_group_cols), unsigned(shape.slices),
                        unsigned(part.count));
        // skinny::prefetch_kib() in chunks: 576 bytes of a warp's tile (INT4 + scales), 2 KiB bf16.
        const int prefetch = skinny::prefetch_kib() * 1024 / (format == Format::int4 ? 576 : 2048);
        cudaLaunchConfig_t config{};
        config.gridDim = grid;
        config.blockDim = dim3(k_threads, 1, 1);
        config.dynamicSmemBytes = shape.smem;
        config.stream = stream;
        cudaLaunchAttribute pdl{};
        pdl.id = cudaLaunchAttributeProgrammaticStreamSerialization;
        pdl.val.programmaticStreamSerializationAllowed = 1;
        config.attrs = &pdl;
        config.numAttrs = skinny::pdl_enabled() ? 1 : 0;
        cudaError_t launched =
            format == Format::int4
                ? cudaLaunchKernelEx(&config, int4_kernel(part.count, max_rows, n, k).kernel, part, n, k, ldx,
                                     shape.slice_chunks, shape.slices, acc, ws, prefetch, silu ? 1 : 0, sum)
                : cudaLaunchKernelEx(&config, stream_gemm_kernel<Format::bf16, k_bf16_unroll>, part, n, k,
                                     ldx, shape.slice_chunks, shape.slices, acc, ws, prefetch, silu ? 1 : 0,
                                     sum);
        if (launched != cudaSuccess) return launched;
        if (cudaError_t e = cudaGetLastError(); e != cudaSuccess) return e;
    }
    return cudaSuccess;
}

cudaError_t repack_int4(const unsigned* ct_words, const bf16* ct_scales, void* out, int n, int k,
                        cudaStream_t s) {
    if (!fits(n, k)) return cudaErrorInvalidValue;
    int4_repack_kernel<<<1024, 256, 0, s>>>(ct_words, ct_scales, static_cast<unsigned char*>(out), n, k);
    return cudaGetLastError();
}

cudaError_t repack_bf16(const bf16* w, void* out, int n, int k, cudaStream_t s) {
    if (!fits(n, k)) return cudaErrorInvalidValue;
    bf16_repack_kernel<<<1024, 256, 0, s>>>(w, static_cast<unsigned char*>(out), n, k);
    return cudaGetLastError();
}

}  // namespace tpverify::cuda::sg
