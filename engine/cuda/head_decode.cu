// Decode attention of grouped-query heads of 128 dims at a few query rows a KV head (the EAGLE-3
// draft's; engine/cuda/attention.cuh declares it): softmax(Q K^T / sqrt(128)) V in one kernel,
// split over the context, the parts combined by the block of each head that finishes last.
//
// Why: the cuBLAS path (a batched scores GEMM, the softmax, a batched values GEMM) reads the cache
// far below the bandwidth at these shapes: 1 to 4 query rows a head over a context that is rarely
// a multiple of 8. On the H200 it took 304 us for the draft extend's 3 rows x 64 heads over 4,099
// cached tokens and 81 and 97 us for the one-token steps (tests/fixtures/tpverify-kernels/
// run19-h200-kernels-int4.txt), against 31 us of cache bytes at the copy bandwidth.
//
// Grid (parts, KV heads), 8 warps a block. Block (p, h) takes head h's tokens p L .. p L + L - 1,
// 32 at a time a warp (the block's chunks dealt to its warps in turn):
//  - scores: 16 lanes a token, 8 dims and one 16-byte load each, two tokens a step; q, scaled by
//    log2(e) / sqrt(128), stays in registers (8 dims x R rows a lane); 4 shuffles sum a dot;
//  - the chunk's scores go to the warp's shared rows; lane t takes token t: the chunk's max, each
//    row's running max m and sum l (online softmax), and P in place of the scores;
//  - values: lane l keeps dims 4l .. 4l + 3 of every row's sum; each token's V (256 bytes) is one
//    8-byte load a lane.
// The warps' (m, l, O) meet in shared memory. With one part the block writes O / l; else it leaves
// its (m, l, O) in the workspace, takes a ticket (an atomic add), and the head's last block
// combines the parts and sets the ticket back to zero, so that every call, a graph replay too,
// starts from zero. Launched with programmatic dependent launch where it is on; it waits for the
// kernel before it before reading anything.
#include <algorithm>
#include <cmath>

#include "engine/cuda/attention.cuh"
#include "engine/cuda/skinny_gemm.cuh"
#include "engine/knobs.hpp"

namespace tpverify::cuda {
namespace {

constexpr int k_head = 128;                    ///< qk and v dims
constexpr int k_max_rows = 4;                  ///< query rows a KV head at most
constexpr int k_threads = 256;                 ///< 8 warps
constexpr int k_warps = k_threads / 32;        ///< 8
constexpr int k_chunk = 32;                    ///< tokens a warp takes at a time
constexpr int k_m_at = k_max_rows * k_head;    ///< a record's rows' m, after their O
constexpr int k_l_at = k_m_at + k_max_rows;    ///< then their l
constexpr int k_record = k_l_at + k_max_rows;  ///< floats a (head, part)
constexpr int k_min_part = 64;                 ///< tokens a part at least

__device__ __forceinline__ void unpack8(const uint4& v, float (&out)[8]) {
    const __nv_bfloat162* p = reinterpret_cast<const __nv_bfloat162*>(&v);
#pragma unroll
    for (int i = 0; i < 4; ++i) {
        const float2 f = __bfloat1622float2(p[i]);
        out[2 * i] = f.x, out[2 * i + 1] = f.y;
    }
}

__device__ __forceinline__ void unpack4(const uint2& v, float (&out)[4]) {
    const __nv_bfloat162* p = reinterpret_cast<const __nv_bfloat162*>(&v);
    const float2 a = __bfloat1622float2(p[0]), b = __bfloat1622float2(p[1]);
    out[0] = a.x, out[1] = a.y, out[2] = b.x, out[3] = b.y;
}

/// R: query rows a KV head the kernel is built for (1, 2 or 4); `rows` <= R of them are real.
template <int R>
__global__ void __launch_bounds__(k_threads, 2)
    head_decode_kernel(const bf16* q, const bf16* cache, bf16* out, float* work, int* tickets, int rows,
                       int context, int row_dim, int v_offset, int part_len, float scale_log2) {
    skinny::pdl_trigger();                      // the next kernel may launch (it waits for this one)
    skinny::pdl_wait();                         // launched early (PDL): the query and the new KV rows first
    __shared__ float s_p[k_warps][R][k_chunk];  // a warp's chunk of scores, then of P
    __shared__ float s_o[k_warps][R][k_head];   // each warp's O
    __shared__ float s_m[k_warps][R], s_l[k_warps][R];
    __shared__ bool s_last;
    const int part = int(blockIdx.x), parts = int(gridDim.x), head = int(blockIdx.y);
    const int warp = int(threadIdx.x) >> 5, lane = int(threadIdx.x) & 31;
    const int t0 = part * part_len, n = min(context, t0 + part_len) - t0;
    const bf16* kv = cache + (std::uint64_t(head) * context + t0) * row_dim;

    // The scores' view: lane (half, piece) takes dims 8 piece .. of the step's token `half`.
    const int half = lane >> 4, piece = lane & 15;
    float qr[R][8];
#pragma unroll
    for (int r = 0; r < R; ++r) {
        if (r < rows) {
            unpack8(
                *reinterpret_cast<const uint4*>(q + (std::uint64_t(head) * rows + r) * k_head + piece * 8),
                qr[r]);
#pragma unroll
            for (int d = 0; d < 8; ++d) qr[r][d] *= scale_log2;
        } else {
#pragma unroll
            for (int d = 0; d < 8; ++d) qr[r][d] = 0.0f;
        }
    }
    float m_run[R], l_lane[R], acc[R][4];
#pragma unroll
    for (int r = 0; r < R; ++r) {
        m_run[r] = -INFINITY, l_lane[r] = 0.0f;
        acc[r][0] = acc[r][1] = acc[r][2] = acc[r][3] = 0.0f;
    }

    for (int base = warp * k_chunk; base < n; base += k_warps * k_chunk) {
        // Scores of the chunk's 32 tokens, 8 steps of two tokens in flight at a time; tokens past
        // the part repeat its last one (their score is masked).
#pragma unroll 1
        for (int s0 = 0; s0 < k_chunk / 2; s0 += 8) {
            uint4 kx[8];
#pragma unroll
            for (int j = 0; j < 8; ++j) {
                const int t = min(base + 2 * (s0 + j) + half, n - 1);
                kx[j] = *reinterpret_cast<const uint4*>(kv + std::uint64_t(t) * row_dim + piece * 8);
            }
#pragma unroll
            for (int j = 0; j < 8; ++j) {
                float k8[8];
                unpack8(kx[j], k8);
                const int token = 2 * (s0 + j) + half;  // within the chunk
#pragma unroll
                for (int r = 0; r < R; ++r) {
                    float dot = 0.0f;
#pragma unroll
                    for (int d = 0; d < 8; ++d) dot = fmaf(k8[d], qr[r][d], dot);
                    dot += __shfl_xor_sync(0xffffffffu, dot, 1);
                    dot += __shfl_xor_sync(0xffffffffu, dot, 2);
                    dot += __shfl_xor_sync(0xffffffffu, dot, 4);
                    dot += __shfl_xor_sync(0xffffffffu, dot, 8);
                    if (piece == 0) s_p[warp][r][token] = base + token < n ? dot : -INFINITY;
                }
            }
        }
        __syncwarp();
        // Online softmax: lane t takes token t of the chunk (the chunk has a token, so the new
        // maximum is finite; the first chunk's correction is exp2(-inf) = 0).
#pragma unroll
        for (int r = 0; r < R; ++r) {
            const float x = s_p[warp][r][lane];
            float most = x;
#pragma unroll
            for (int o = 16; o > 0; o >>= 1) most = fmaxf(most, __shfl_xor_sync(0xffffffffu, most, o));
            const float m_new = fmaxf(m_run[r], most);
            const float corr = exp2f(m_run[r] - m_new);
            const float p = exp2f(x - m_new);
            l_lane[r] = fmaf(l_lane[r], corr, p);
            m_run[r] = m_new;
            s_p[warp][r][lane] = p;
#pragma unroll
            for (int i = 0; i < 4; ++i) acc[r][i] *= corr;
        }
        __syncwarp();
        // Values: 16 tokens' V in flight at a time (8 at 4 rows, for the registers); P is zero
        // past the part.
        constexpr int batch = R == 4 ? 8 : 16;
        const int valid = min(k_chunk, n - base);
#pragma unroll 1
        for (int c = 0; c < valid; c += batch) {
            uint2 vx[batch];
#pragma unroll
            for (int j = 0; j < batch; ++j) {
                const int t = min(base + c + j, n - 1);
                vx[j] =
                    *reinterpret_cast<const uint2*>(kv + std::uint64_t(t) * row_dim + v_offset + lane * 4);
            }
#pragma unroll
            for (int j = 0; j < batch; ++j) {
                float v4[4];
                unpack4(vx[j], v4);
#pragma unroll
                for (int r = 0; r < R; ++r) {
                    const float p = s_p[warp][r][c + j];
#pragma unroll
                    for (int i = 0; i < 4; ++i) acc[r][i] = fmaf(p, v4[i], acc[r][i]);
                }
            }
        }
        __syncwarp();  // the next chunk writes s_p again
    }

    // The warps meet: each row's (m, l) and O in shared memory, then the block's (m, l, O).
#pragma unroll
    for (int r = 0; r < R; ++r) {
        float l = l_lane[r];
#pragma unroll
        for (int o = 16; o > 0; o >>= 1) l += __shfl_xor_sync(0xffffffffu, l, o);
        if (lane == 0) s_m[warp][r] = m_run[r], s_l[warp][r] = l;
        *reinterpret_cast<float4*>(&s_o[warp][r][lane * 4]) =
            make_float4(acc[r][0], acc[r][1], acc[r][2], acc[r][3]);
    }
    __syncthreads();
    float* record = work + (std::uint64_t(head) * parts + part) * k_record;
    for (int i = int(threadIdx.x); i < R * k_head; i += k_threads) {
        const int r = i / k_head, d = i % k_head;
        if (r >= rows) continue;
        float most = -INFINITY;
#pragma unroll
        for (int w = 0; w < k_warps; ++w) most = fmaxf(most, s_m[w][r]);
        float o = 0.0f, l = 0.0f;
#pragma unroll
        for (int w = 0; w < k_warps; ++w) {
            const float weight =
                s_m[w][r] == -INFINITY ? 0.0f : exp2f(s_m[w][r] - most);  // a warp without tokens
            o = fmaf(weight, s_o[w][r][d], o);
            l = fmaf(weight, s_l[w][r], l);
        }
        if (parts == 1) {
            out[(std::uint64_t(head) * rows + r) * k_head + d] = __float2bfloat16(o / l);
        } else {
            record[r * k_head + d] = o;
            if (d == 0) record[k_m_at + r] = most, record[k_l_at + r] = l;
        }
    }
    if (parts == 1) return;
    __threadfence();  // this block's record before its ticket
    __syncthreads();
    if (threadIdx.x == 0) s_last = atomicAdd(tickets + head, 1) == parts - 1;
    __syncthreads();
    if (!s_last) return;
    __threadfence();  // every other block's record after their tickets
    const float* first = work + std::uint64_t(head) * parts * k_record;
    for (int i = int(threadIdx.x); i < rows * k_head; i += k_threads) {
        const int r = i / k_head, d = i % k_head;
        float most = -INFINITY;
        for (int p = 0; p < parts; ++p) most = fmaxf(most, __ldcg(first + p * k_record + k_m_at + r));
        float o = 0.0f, l = 0.0f;
        for (int p = 0; p < parts; ++p) {
            const float* rec = first + p * k_record;
            const float weight = exp2f(__ldcg(rec + k_m_at + r) - most);  // every part has tokens
            o = fmaf(weight, __ldcg(rec + r * k_head + d), o);
            l = fmaf(weight, __ldcg(rec + k_l_at + r), l);
        }
        out[(std::uint64_t(head) * rows + r) * k_head + d] = __float2bfloat16(o / l);
    }
    if (threadIdx.x == 0) tickets[head] = 0;  // every block of this call has taken its ticket
}

template <int R>
cudaError_t launch(const bf16* q, const bf16* cache, bf16* out, int rows, int kv_heads, int context,
                   int row_dim, int v_offset, int parts, float* work, int* tickets, cudaStream_t s) {
    // Whole parts: every part has tokens (the combine and the ticket count on it).
    const int part_len = (context + parts - 1) / parts;
    parts = (context + part_len - 1) / part_len;
    const float scale_log2 = 1.4426950408889634f / std::sqrt(float(k_head));
    const cudaError_t e = skinny::launch_pdl(head_decode_kernel<R>, dim3(unsigned(parts), unsigned(kv_heads)),
                                             k_threads, 0, s, skinny::pdl_enabled(), q, cache, out, work,
                                             tickets, rows, context, row_dim, v_offset, part_len, scale_log2);
    return e != cudaSuccess ? e : cudaGetLastError();
}

}  // namespace

bool head_decode_fits(const Attention& a) {
    if (a.kv_heads < 1 || a.heads % a.kv_heads != 0 || a.context < 1) return false;
    const int group_rows = a.group_rows();
    // 16-byte loads of K and 8-byte loads of V: the row and V's offset in whole pieces.
    return a.qk_dim == k_head && a.v_dim == k_head && group_rows >= 1 && group_rows <= k_max_rows &&
           a.row_dim % 8 == 0 && a.v_offset % 4 == 0 && a.v_offset + k_head <= a.row_dim;
}

int head_decode_parts(int kv_heads, int context, int sms) {
    // Two blocks an SM run at once (the kernel's launch bounds): one wave of them, each part at
    // least k_min_part tokens.
    const int wave = std::max(1, 2 * sms / std::max(kv_heads, 1));
    return std::clamp((context + k_min_part - 1) / k_min_part, 1, wave);
}

std::size_t head_decode_floats(int kv_heads, int parts) {
    return std::size_t(kv_heads) * std::size_t(parts) * k_record;
}

bool head_decode_chosen() {
    // The default since an H100 run showed it right and the draft 340 us faster a cycle than on
    // the cuBLAS path (docs/benchmarks-gpu.md, 2026-12-07); TPVERIFY_HEAD_ATTENTION=cublas for
    // comparing.
    static const bool chosen = !env_is("TPVERIFY_HEAD_ATTENTION", "cublas");
    return chosen;
}

cudaError_t head_decode(const bf16* q, const bf16* cache, bf16* out, int group_rows, int kv_heads,
                        int context, int row_dim, int v_offset, int parts, float* work, int* tickets,
                        cudaStream_t s) {
    if (group_rows < 1 || group_rows > k_max_rows || kv_heads < 1 || context < 1 || parts < 1)
        return cudaErrorInvalidValue;
    switch (group_rows) {
        case 1:
            return launch<1>(q, cache, out, 1, kv_heads, context, row_dim, v_offset, parts, work, tickets, s);
        case 2:
            return launch<2>(q, cache, out, 2, kv_heads, context, row_dim, v_offset, parts, work, tickets, s);
        default:
            return launch<4>(q, cache, out, group_rows, kv_heads, context, row_dim, v_offset, parts, work,
                             tickets, s);
    }
}

}  // namespace tpverify::cuda
