#pragma once
// One rank of the CUDA backend: device state, the pass as stream work, graphs and timing.
#include <atomic>
#include <string>
#include <vector>

#include "engine/cuda/attention.cuh"
#include "engine/cuda/comm.cuh"
#include "engine/cuda/experts.cuh"
#include "engine/cuda/gemm.cuh"
#include "engine/options.hpp"

namespace tpverify::cuda {

/// What a pass enqueues: the whole pass; only its collectives (comm-only timing: with fusion the
/// fused kernel is the collective); only the all-reduce + residual + RMSNorm steps (fused or
/// NCCL + norm kernel, for comparing the two); or one part of the pass for `parts_us`: only
/// the GEMMs (experts launches included), only the attention, only the separate residual +
/// RMSNorm kernels, only the small kernels (ops).
enum class PassKind { full, comm_only, norm_only, gemm_only, attention_only, norm_kernels, ops_only };

/// Which groups of steps enqueue() runs as fewer kernels (TPVERIFY_FUSE: a comma list of mla,
/// moe, silu, expert_silu, expert_sum; all; none; unset: mla,moe, the fastest measured on the
/// H200): mla = q_a+kv_a as one launch, their two norms as one, q_b+kv_b as one, RoPE+KV write as
/// one; moe = a MoE layer's router + shared gate_up as one launch; silu = the shared expert's down with
/// SiLU-and-mul in its input load (measured slower, docs/benchmarks-gpu.md); expert_silu = the
/// routed experts' down launch with the SiLU-and-mul in its staging of x (ExpertSet::run);
/// expert_sum = that launch also does the layer's weighted sum of the experts' rows (its last
/// block of a column group; sg::ExpertSum), where the down is one streaming launch.
/// --measure-kernels times steps one by one.
struct KernelFusion {
    bool mla = true, moe = true, silu = false, expert_silu = false, expert_sum = false;
};
const KernelFusion& kernel_fusion();
/// The groups that are on, comma-separated in the order above ("mla,moe"), or "none".
std::string kernel_fusion_name(const KernelFusion& f);

/// Steps every full pass (verify, 1-token, draft) leaves out, for measuring only
/// (TPVERIFY_OMIT, a comma list): what the pass takes without them, so what they cost inside it.
/// attention = the decode attention's kernels, mla_ops = the q/kv norms, RoPE and KV write,
/// silu = the SiLU-and-mul kernels, expert_sum = the weighted expert sum. The outputs are then
/// not the model's: run_cuda refuses --check with any, and a name it does not know (`unknown`).
struct Omit {
    bool attention = false, mla_ops = false, silu = false, expert_sum = false;
    std::string unknown;
    [[nodiscard]] bool any() const { return attention || mla_ops || silu || expert_sum; }
    [[nodiscard]] bool op(Op o) const;
};
const Omit& omitted_steps();
/// The omitted steps, comma-separated in the order above, or "" when none.
std::string omitted_name(const Omit& o);

/// How a MoE layer's shared expert and its routed path (router, top-k, experts) run in the full
/// pass (TPVERIFY_MOE_STREAMS): as SGLang's DeepseekV2MoE runs them when the shared expert is not
/// fused into the routed ones and a batch has at most 1,024 tokens
/// (forward_normal_dual_stream), on two streams forked after the norm and joined before the
/// weighted sum: `shared_alt` (unset or 2: the routed path on the pass's stream, the shared
/// expert on the second, as SGLang now orders them), `routed_alt` (2r: the other way round, as
/// earlier SGLang releases did); `one` (1): one stream, in plan order; `shared_late` (2l, to
/// compare on the GPU): as shared_alt, but the shared expert's SiLU-and-mul and down wait on the
/// second stream until the routed SiLU-and-mul is done, so that the shared down's blocks take the
/// SMs the routed down's last round leaves idle instead of sharing the router's time.
enum class MoeStreams { one, shared_alt, routed_alt, shared_late };
MoeStreams moe_streams();
/// TPVERIFY_MOE_PRIORITY=1 (to compare on the GPU): the pass's stream at the greatest priority,
/// the second stream at the least, graphs instantiated to run with them.
bool moe_priority();
/// TPVERIFY_MOE_FAULT (for the GPU test of --check, which must then fail): `fork` drops the
/// second stream's wait for the norm, `join` the pass's wait for the second stream; unset: none.
enum class MoeFault { none, fork, join };
MoeFault moe_fault();
/// "1", "2", "2r" or "2l" (the TPVERIFY_MOE_STREAMS value).
const char* moe_streams_name(MoeStreams m);

/// L2 prefetch of the coming GEMMs' first weights (tpverify::prefetch_regions), issued on a
/// stream of its own while the full pass's stream runs kernels that leave DRAM idle: `attention`
/// bytes when an attention starts that reads less KV cache than that (an MLA layer's, whose next
/// GEMM is o_proj; TPVERIFY_PREFETCH_ATTN_MB), `layer_end` bytes when a MoE layer's weighted
/// expert sum starts (the next layer's q_a, kv_a, q_b, kv_b; TPVERIFY_PREFETCH_LAYER_MB). 0: off.
struct L2PrefetchBudget {
    std::uint64_t attention = 0, layer_end = 0;
};
const L2PrefetchBudget& l2_prefetch_budget();

/// The steps from `index` that form one MoE block the two-stream layout can run
/// (tpverify::moe_block_steps with the GEMMs `path` puts on the skinny kernel); 0 when none.
std::size_t moe_block_steps(const PassPlan& plan, std::size_t index, GemmPath path);

/// Where this rank's threads meet (one process, one thread per GPU); null in --rank mode.
struct LocalPeers {
    std::vector<bf16*> buffers;  ///< each rank's one-shot buffer
    std::vector<int> devices;    ///< each rank's device
};

/// Why the fused one-shot all-reduce cannot run for this run, known before any rank starts
/// (more ranks than it supports, or more --tokens than row blocks can be co-resident); ""
/// when it can (or fusion is off, or there is one rank).
std::string fusion_fallback_before_start(const Options& options, int tokens, int hidden, int device);

/// The device side of one rank.
class RankEngine {
public:
    RankEngine(const Options& options, int rank, int nranks, int device, GemmPath gemm);
    RankEngine(const RankEngine&) = delete;
    RankEngine& operator=(const RankEngine&) = delete;
    ~RankEngine();
    /// Device, stream, cuBLAS, buffers sized for every plan in `plans`, their weights, KV
    /// caches and batched experts, and the NCCL communicator.
    Status setup(const std::vector<const PassPlan*>& plans, const ncclUniqueId& id);
    /// After every rank's setup (and, in one process, `peers` filled): fused one-shot buffers.
    /// With fusion off this does nothing. Sets fused_fallback() when peers are unreachable.
    Status setup_fusion(const LocalPeers* peers, std::string& fallback_reason);
    /// Allocates the one-shot buffer (before every rank publishes it in LocalPeers).
    Status allocate_fusion();
    /// Runs every distinct collective of `plan` once, eagerly (lazy NCCL connection outside
    /// any capture).
    Status warm_collectives(const PassPlan& plan);
    /// Enqueues one pass on the stream (eager, or being captured).
    Status enqueue(const PassPlan& plan, PassKind kind, const char* phase);
    /// Enqueues steps [first, last) of `plan`: `grouped` runs kernel_fusion()'s groups as fewer
    /// kernels, `streams` is the MoE blocks' layout in the full pass (moe_streams()).
    Status enqueue_steps(const PassPlan& plan, std::size_t first, std::size_t last, PassKind kind,
                         const char* phase, bool grouped, MoeStreams streams);
    /// Fills every activation buffer a pass writes (not the normed input, the residual or the KV
    /// caches) with `bits`: a check's poison, so that what a run did not write shows.
    Status fill_activations(unsigned short bits);
    /// A check's delays: the second stream of a two-stream MoE block waits `alt_ns` after its fork
    /// before its first step (0: no delay, as in the pass).
    void set_moe_check_delay(unsigned alt_ns) { m_alt_delay_ns = alt_ns; }
    /// Enqueues step `index` of `plan` as part of a pass of kind `kind` (what enqueue() does per
    /// step; --measure-kernels times steps one kind at a time with it).
    Status enqueue_step(const PassPlan& plan, std::size_t index, PassKind kind, const char* phase);
    /// Captures one pass into a graph (mode from --capture-mode); capture seconds in `seconds`.
    Status capture(const PassPlan& plan, PassKind kind, cudaGraphExec_t& exec, double& seconds);
    /// Runs one pass (graph replay when `exec`, else eager) between two events; its time in µs.
    Status timed_pass(const PassPlan& plan, PassKind kind, cudaGraphExec_t exec, float& us);
    /// Device-to-device copy bandwidth in GB/s (read + write bytes), over `bytes` of buffer.
    Status measure_copy_bandwidth(std::uint64_t bytes, double& gbps);
    /// The copy bandwidth measured by setup (GB/s).
    [[nodiscard]] double copy_gbps() const { return m_copy_gbps; }
    [[nodiscard]] RankComm& comm() { return m_comm; }
    [[nodiscard]] cudaStream_t stream() const { return m_stream; }
    [[nodiscard]] bool fused() const { return m_options.fusion && !m_fused_fallback; }
    /// Whether the pass's collectives are skipped, as the server skips them at one rank
    /// (collectives_skipped(), engine/run/server_env.hpp): an all-reduce leaves its input in the
    /// send buffer, where the norm after it reads it, and the logits all-gather does nothing.
    [[nodiscard]] bool skips_collectives() const { return m_skip_collectives; }
    [[nodiscard]] bool fused_fallback() const { return m_fused_fallback; }
    [[nodiscard]] std::uint64_t weight_bytes() const { return m_weights.bytes(); }
    [[nodiscard]] std::uint64_t weight_arena_bytes() const { return m_weights.arena_bytes(); }
    [[nodiscard]] int device() const { return m_device; }
    [[nodiscard]] int hidden() const { return m_hidden; }
    [[nodiscard]] int max_rows() const { return m_max_rows; }
    [[nodiscard]] cublasHandle_t cublas() const { return m_cublas; }
    [[nodiscard]] GemmPath gemm_path() const { return m_gemm; }
    [[nodiscard]] const sg::Workspace& workspace() const { return m_ws; }
    /// Buffers exposed to the --check code.
    struct Buffers {
        bf16 *send, *recv, *residual, *normed, *gamma, *gather;
        std::uint64_t send_elems, gather_elems;
    };
    [[nodiscard]] Buffers buffers() const;
    /// The all-reduce of `rows` hidden rows + residual + RMSNorm: fused when fusion is on and
    /// `allow_fused`, else NCCL all-reduce then the norm kernel.
    Status reduce_norm(int rows, const char* phase, bool allow_fused = true);
    /// One collective of `elems` bf16 (sum for the all-reduce) on the stream, as the pass runs
    /// it (with --inject stale, on the previous call's input).
    Status collective_call(CollectiveKind kind, const bf16* in, bf16* out, std::uint64_t elems,
                           const char* phase);
    /// Runs `work` once on the stream: captured into a graph and replayed with --graph on,
    /// eagerly otherwise; waits for it.
    template <typename Work>
    Status run_once(Work&& work, const char* phase);

private:
    Status begin_capture(const char* phase);
    Status end_capture_and_run(const char* phase);
    Status collective(const Step& step, PassKind kind, const char* phase);
    Status run_op(const PassPlan& plan, const Step& step, const char* phase);
    /// Where steps [index, index + used) of `plan` form a group that runs as fewer kernels
    /// (kernel_fusion()), enqueues them so and sets `used`; else leaves `used` 0.
    Status enqueue_fused(const PassPlan& plan, std::size_t index, PassKind kind, const char* phase,
                         std::size_t& used);
    /// Where a MoE block starts at `index` (moe_block_steps) and the full pass runs it on two
    /// streams, enqueues it so and sets `used`; else leaves `used` 0.
    Status enqueue_moe_streams(const PassPlan& plan, std::size_t index, MoeStreams layout, const char* phase,
                               std::size_t& used);
    Status enqueue_silu_down(const PassPlan& plan, std::size_t index, PassKind kind, const char* phase,
                             std::size_t& used);
    /// The routed experts' down launch with what it can fuse: from op step `index` (their
    /// silu_mul, fusion group expert_silu) or from the experts down step itself, and with
    /// `with_sum` the layer's expert_sum after it (fusion group expert_sum, one streaming launch).
    /// Sets `used` to the steps it enqueued (0: none; enqueue them one by one).
    Status enqueue_expert_down(const PassPlan& plan, std::size_t index, PassKind kind, const char* phase,
                               std::size_t& used, bool with_sum);
    /// Whether op step `index` is the routed experts' silu_mul, with the down it feeds after it,
    /// and fusion group expert_silu is on.
    static bool expert_silu_fusable(const PassPlan& plan, std::size_t index);
    /// Whether experts step `down` can do the expert_sum step after it in its launch (fusion group
    /// expert_sum on, one streaming launch).
    [[nodiscard]] bool expert_sum_fusable(const PassPlan& plan, std::size_t down) const;
    static std::size_t index_of(const PassPlan& plan, const Step& step);
    /// Where an all-reduce's result is: its input (send) where collectives are skipped, else recv.
    [[nodiscard]] const bf16* reduced_rows() const { return m_skip_collectives ? m_buf.send : m_buf.recv; }
    /// Joins any earlier prefetch, then forks m_prefetch from the pass's stream and asks the L2
    /// for prefetch_regions(plan, from, budget) there (nothing when budget is 0 or none).
    Status fork_prefetch(const PassPlan& plan, std::size_t from, std::uint64_t budget, const char* phase);
    /// Makes the pass's stream wait for the last forked prefetch (a capture must join it).
    Status join_prefetch(const char* phase);

    const Options& m_options;
    int m_rank, m_nranks, m_device;
    GemmPath m_gemm;
    int m_hidden = 0, m_max_rows = 1;
    float m_eps = 1e-6f;
    bool m_fused_fallback = false;
    double m_copy_gbps = 0;
    cudaStream_t m_stream = nullptr;
    cudaStream_t m_alt = nullptr;  ///< the second stream of a two-stream MoE block
    cudaEvent_t m_fork = nullptr, m_join = nullptr;
    cudaEvent_t m_routed_silu = nullptr;  ///< shared_late: the routed SiLU-and-mul done
    cudaStream_t m_prefetch = nullptr;    ///< L2 prefetches (fork_prefetch)
    cudaEvent_t m_prefetch_fork = nullptr, m_prefetch_join = nullptr;
    bool m_prefetch_pending = false;
    int m_sms = 1;
    unsigned m_alt_delay_ns = 0;
    cublasHandle_t m_cublas = nullptr;
    void* m_cublas_workspace = nullptr;
    cudaEvent_t m_begin = nullptr, m_end = nullptr;
    WeightPool m_weights;
    ExpertSet m_experts;
    sg::Workspace m_ws;         ///< split-k scratch of the streaming GEMMs
    int* m_topk_ids = nullptr;  ///< the router's top-k of the current layer (device)
    float* m_topk_weights = nullptr;
    AttentionSet m_attention;
    RankComm m_comm;
    std::vector<void*> m_allocations;
    Buffers m_buf{};
    bf16* m_scratch[2] = {};
    std::uint64_t m_scratch_elems = 0;
    bf16* m_stale = nullptr;          ///< --inject stale: the previous call's collective input
    bool m_skip_collectives = false;  ///< skips_collectives()
    bf16* m_fuse = nullptr;           ///< the fused groups' outputs (enqueue_fused)
    std::uint64_t m_fuse_elems = 0;
    int m_last_scratch = 0;
    int m_last_rows = 1;  ///< rows of the last all-reduce (the next norm step's rows)
    bool m_send_written = false;
};

template <typename Work>
Status RankEngine::run_once(Work&& work, const char* phase) {
    if (m_options.graph) {
        TPV_TRY(begin_capture(phase));
        Status inside = work();
        Status ended = end_capture_and_run(phase);
        if (!inside.ok) return inside;
        return ended;
    }
    TPV_TRY(work());
    TPV_CUDA(phase, cudaStreamSynchronize(m_stream));
    return {};
}

}  // namespace tpverify::cuda
