// One rank: buffers, the pass as stream work (GEMMs, collectives, norms), capture and timing.
#include <algorithm>
#include <cstdlib>
#include <optional>
#include <set>
#include <string>
#include <utility>

#include "engine/cuda/ops.cuh"
#include "engine/cuda/prefetch.cuh"
#include "engine/cuda/rank.cuh"
#include "engine/knobs.hpp"
#include "engine/run/server_env.hpp"

namespace tpverify::cuda {
namespace {

constexpr std::uint64_t k_cublas_workspace = 32ull << 20;
constexpr std::uint64_t k_split_floats = 16ull << 20;  // split-k partial sums (64 MiB)
constexpr unsigned k_split_counters = 1u << 16;

cudaStreamCaptureMode capture_mode(CaptureMode mode) {
    switch (mode) {
        case CaptureMode::global:
            return cudaStreamCaptureModeGlobal;
        case CaptureMode::relaxed:
            return cudaStreamCaptureModeRelaxed;
        default:
            return cudaStreamCaptureModeThreadLocal;
    }
}

}  // namespace

const KernelFusion& kernel_fusion() {
    static const KernelFusion f = [] {
        KernelFusion k;
        const std::string v = env_or("TPVERIFY_FUSE");
        if (v.empty()) return k;
        const std::string s = "," + v + ",";
        const bool all = s == ",all,";
        auto on = [&](const char* group) {
            return all || s.find("," + std::string(group) + ",") != std::string::npos;
        };
        k.mla = on("mla");
        k.moe = on("moe");
        k.silu = on("silu");
        k.expert_silu = on("expert_silu");
        k.expert_sum = on("expert_sum");
        return k;
    }();
    return f;
}

std::string kernel_fusion_name(const KernelFusion& f) {
    std::string s;
    for (auto [on, name] : {std::pair{f.mla, "mla"}, std::pair{f.moe, "moe"}, std::pair{f.silu, "silu"},
                            std::pair{f.expert_silu, "expert_silu"}, std::pair{f.expert_sum, "expert_sum"}})
        if (on) s += (s.empty() ? "" : ",") + std::string(name);
    return s.empty() ? "none" : s;
}

const Omit& omitted_steps() {
    static const Omit o = [] {
        Omit r;
        const unsigned set =
            name_set(env_or("TPVERIFY_OMIT"), {"attention", "mla_ops", "silu", "expert_sum"}, r.unknown);
        r.attention = set & 1u, r.mla_ops = set & 2u, r.silu = set & 4u, r.expert_sum = set & 8u;
        return r;
    }();
    return o;
}

bool Omit::op(Op o) const {
    switch (o) {
        case Op::q_norm:
        case Op::kv_norm:
        case Op::rope:
        case Op::kv_write:
            return mla_ops;
        case Op::silu_mul:
            return silu;
        case Op::expert_sum:
            return expert_sum;
        default:
            return false;
    }
}

std::string omitted_name(const Omit& o) {
    std::string s;
    for (auto [on, name] : {std::pair{o.attention, "attention"}, std::pair{o.mla_ops, "mla_ops"},
                            std::pair{o.silu, "silu"}, std::pair{o.expert_sum, "expert_sum"}})
        if (on) s += (s.empty() ? "" : ",") + std::string(name);
    return s;
}

MoeStreams moe_streams() {
    static const MoeStreams m =
        env_enum("TPVERIFY_MOE_STREAMS",
                 {std::pair{"1", MoeStreams::one}, std::pair{"2r", MoeStreams::routed_alt},
                  std::pair{"2l", MoeStreams::shared_late}},
                 MoeStreams::shared_alt);
    return m;
}

bool moe_priority() {
    static const bool on = env_is("TPVERIFY_MOE_PRIORITY", "1");
    return on;
}

MoeFault moe_fault() {
    static const MoeFault f =
        env_enum("TPVERIFY_MOE_FAULT", {std::pair{"fork", MoeFault::fork}, std::pair{"join", MoeFault::join}},
                 MoeFault::none);
    return f;
}

const L2PrefetchBudget& l2_prefetch_budget() {
    // Unset: the defaults measured fastest (docs/benchmarks-gpu.md).
    constexpr std::uint64_t k_mib = 1ull << 20;
    constexpr int k_attention_default_mib = 0, k_layer_end_default_mib = 0;
    static const L2PrefetchBudget b{
        std::uint64_t(env_int("TPVERIFY_PREFETCH_ATTN_MB", k_attention_default_mib)) * k_mib,
        std::uint64_t(env_int("TPVERIFY_PREFETCH_LAYER_MB", k_layer_end_default_mib)) * k_mib};
    return b;
}

const char* moe_streams_name(MoeStreams m) {
    switch (m) {
        case MoeStreams::one:
            return "1";
        case MoeStreams::routed_alt:
            return "2r";
        case MoeStreams::shared_late:
            return "2l";
        default:
            return "2";
    }
}

std::size_t moe_block_steps(const PassPlan& plan, std::size_t index, GemmPath path) {
    return tpverify::moe_block_steps(plan, index, [path](const Gemm& g) { return skinny_chosen(path, g); });
}

RankEngine::RankEngine(const Options& options, int rank, int nranks, int device, GemmPath gemm)
    : m_options(options), m_rank(rank), m_nranks(nranks), m_device(device), m_gemm(gemm) {}

RankEngine::~RankEngine() {
    cudaSetDevice(m_device);
    for (void* p : m_allocations) cudaFree(p);
    if (m_cublas_workspace != nullptr) cudaFree(m_cublas_workspace);
    if (m_cublas != nullptr) cublasDestroy(m_cublas);
    if (m_begin != nullptr) cudaEventDestroy(m_begin);
    if (m_end != nullptr) cudaEventDestroy(m_end);
    if (m_fork != nullptr) cudaEventDestroy(m_fork);
    if (m_join != nullptr) cudaEventDestroy(m_join);
    if (m_routed_silu != nullptr) cudaEventDestroy(m_routed_silu);
    if (m_prefetch_fork != nullptr) cudaEventDestroy(m_prefetch_fork);
    if (m_prefetch_join != nullptr) cudaEventDestroy(m_prefetch_join);
    if (m_prefetch != nullptr) cudaStreamDestroy(m_prefetch);
    if (m_alt != nullptr) cudaStreamDestroy(m_alt);
    if (m_stream != nullptr) cudaStreamDestroy(m_stream);
}

Status RankEngine::setup(const std::vector<const PassPlan*>& plans, const ncclUniqueId& id) {
    const PassPlan& plan = *plans.front();
    m_hidden = plan.model.hidden;
    m_eps = float(plan.model.rms_eps);
    std::uint64_t scratch = 1, send = 1, gather = 1;
    for (const PassPlan* p : plans) {
        m_max_rows = std::max(m_max_rows, p->tokens);
        for (const Step& s : p->steps) {
            if (s.kind == Step::Kind::gemm) {
                m_max_rows = std::max(m_max_rows, s.gemm.m);
                scratch = std::max(scratch, std::uint64_t(s.gemm.m) * std::max(s.gemm.n, s.gemm.k));
            } else if (s.kind == Step::Kind::op && s.op != Op::expert_sum) {
                scratch = std::max(scratch, std::uint64_t(s.op_rows) * s.op_width * 2);
            } else if (s.kind == Step::Kind::collective) {
                std::uint64_t elems = s.bytes / 2;
                if (s.collective == CollectiveKind::all_gather)
                    gather = std::max(gather, elems * m_nranks), send = std::max(send, elems);
                else
                    send = std::max(send, elems);
            }
        }
    }
    send = std::max(send, std::uint64_t(m_max_rows) * m_hidden);
    scratch = std::max(scratch, send);
    TPV_CUDA("init", cudaSetDevice(m_device));
    // TPVERIFY_MOE_PRIORITY=1 (to compare on the GPU): the pass's stream at the greatest priority
    // and the second stream at the least, graphs run with those priorities; unset: both default.
    int least = 0, greatest = 0;
    TPV_CUDA("init", cudaDeviceGetStreamPriorityRange(&least, &greatest));
    TPV_CUDA("init",
             cudaStreamCreateWithPriority(&m_stream, cudaStreamNonBlocking, moe_priority() ? greatest : 0));
    TPV_CUDA("init", cudaEventCreate(&m_begin));
    TPV_CUDA("init", cudaEventCreate(&m_end));
    TPV_CUDA("init", cudaStreamCreateWithPriority(&m_alt, cudaStreamNonBlocking, moe_priority() ? least : 0));
    TPV_CUDA("init", cudaEventCreateWithFlags(&m_fork, cudaEventDisableTiming));
    TPV_CUDA("init", cudaEventCreateWithFlags(&m_join, cudaEventDisableTiming));
    TPV_CUDA("init", cudaEventCreateWithFlags(&m_routed_silu, cudaEventDisableTiming));
    // The prefetch's own stream only where a prefetch will fork one (off by default).
    const L2PrefetchBudget& prefetch = l2_prefetch_budget();
    if ((prefetch.attention > 0 || prefetch.layer_end > 0) && !prefetch_on_main_stream()) {
        TPV_CUDA("init", cudaStreamCreateWithFlags(&m_prefetch, cudaStreamNonBlocking));
        TPV_CUDA("init", cudaEventCreateWithFlags(&m_prefetch_fork, cudaEventDisableTiming));
        TPV_CUDA("init", cudaEventCreateWithFlags(&m_prefetch_join, cudaEventDisableTiming));
    }
    TPV_CUDA("init", cudaDeviceGetAttribute(&m_sms, cudaDevAttrMultiProcessorCount, m_device));
    // Copy bandwidth first, while memory is free: 1 GiB each way, well past the 60 MB L2.
    TPV_TRY(measure_copy_bandwidth(1ull << 30, m_copy_gbps));
    TPV_CUBLAS("init", cublasCreate(&m_cublas));
    TPV_CUBLAS("init", cublasSetStream(m_cublas, m_stream));
    // A fixed workspace keeps cuBLAS from allocating while a graph is being captured.
    TPV_CUDA("init", cudaMalloc(&m_cublas_workspace, k_cublas_workspace));
    TPV_CUBLAS("init", cublasSetWorkspace(m_cublas, m_cublas_workspace, k_cublas_workspace));
    auto alloc = [&](bf16*& p, std::uint64_t elems, float scale, std::uint64_t seed) -> Status {
        void* raw = nullptr;
        TPV_CUDA("init", cudaMalloc(&raw, elems * sizeof(bf16)));
        m_allocations.push_back(raw);
        p = static_cast<bf16*>(raw);
        TPV_CUDA("init", fill_random(p, elems, scale, seed, m_stream));
        return {};
    };
    std::uint64_t rows_hidden = std::uint64_t(m_max_rows) * m_hidden;
    std::uint64_t seed = 1000003ull * (m_rank + 1);
    TPV_TRY(alloc(m_buf.send, send, 1.0f, seed + 1));
    TPV_TRY(alloc(m_buf.recv, send, 1.0f, seed + 2));
    TPV_TRY(alloc(m_buf.residual, rows_hidden, 1.0f, seed + 3));
    TPV_TRY(alloc(m_buf.normed, rows_hidden, 1.0f, seed + 4));
    TPV_TRY(alloc(m_buf.gamma, m_hidden, 0.0f, 0));
    TPV_TRY(alloc(m_buf.gather, gather, 1.0f, seed + 5));
    TPV_TRY(alloc(m_scratch[0], scratch, 1.0f, seed + 6));
    TPV_TRY(alloc(m_scratch[1], scratch, 1.0f, seed + 7));
    m_scratch_elems = scratch;
    TPV_CUDA("init", fill_bits(m_buf.gamma, m_hidden, 0x3f80, m_stream));  // gamma = 1.0
    for (const Injection& inj : m_options.inject)
        if (inj.kind == "stale") TPV_TRY(alloc(m_stale, send, 0.0f, 0));
    m_skip_collectives = m_nranks == 1 && collectives_skipped(m_options);
    m_fuse_elems = std::uint64_t(m_max_rows) * 65536;
    TPV_TRY(alloc(m_fuse, m_fuse_elems, 1.0f, seed + 8));
    m_buf.send_elems = send;
    m_buf.gather_elems = gather;
    TPV_TRY(m_attention.allocate(plans, m_stream));
    // What else the rank allocates after the weights (NCCL buffers, expert scratch, graphs).
    constexpr std::uint64_t k_reserve = 4ull << 30;
    TPV_TRY(m_weights.allocate(plans, k_reserve, 42, m_stream));
    TPV_TRY(m_experts.build(plans, m_stream));
    TPV_CUDA("init", sg::setup(m_device));
    void* split = nullptr;
    TPV_CUDA("init", cudaMalloc(&split, k_split_floats * sizeof(float)));
    m_allocations.push_back(split);
    m_ws.partial = static_cast<float*>(split);
    m_ws.partial_floats = k_split_floats;
    void* counters = nullptr;
    TPV_CUDA("init", cudaMalloc(&counters, k_split_counters * sizeof(unsigned)));
    m_allocations.push_back(counters);
    TPV_CUDA("init", cudaMemsetAsync(counters, 0, k_split_counters * sizeof(unsigned), m_stream));
    m_ws.counters = static_cast<unsigned*>(counters);
    m_ws.counter_count = k_split_counters;
    const std::uint64_t choices = std::uint64_t(m_max_rows) * std::max(plan.model.active_experts, 1);
    void *ids = nullptr, *weights = nullptr;
    TPV_CUDA("init", cudaMalloc(&ids, choices * sizeof(int)));
    m_allocations.push_back(ids);
    TPV_CUDA("init", cudaMalloc(&weights, choices * sizeof(float)));
    m_allocations.push_back(weights);
    TPV_CUDA("init", cudaMemsetAsync(weights, 0, choices * sizeof(float), m_stream));
    m_topk_ids = static_cast<int*>(ids);
    m_topk_weights = static_cast<float*>(weights);
    TPV_CUDA("init", cudaStreamSynchronize(m_stream));
    TPV_TRY(m_comm.init(id, m_nranks, m_rank));
    return {};
}

Status RankEngine::allocate_fusion() {
    if (!m_options.fusion || m_nranks == 1) return {};
    TPV_CUDA("init", cudaSetDevice(m_device));
    return m_comm.allocate_oneshot(m_max_rows, m_hidden, m_stream);
}

std::string fusion_fallback_before_start(const Options& options, int tokens, int hidden, int device) {
    const int nranks = options.rank >= 0 ? options.nranks : options.tp;
    if (!options.fusion || nranks == 1) return {};
    if (nranks > k_max_peers)
        return "the one-shot kernel supports at most " + std::to_string(k_max_peers) + " ranks";
    if (cudaSetDevice(device) != cudaSuccess) return "cudaSetDevice(" + std::to_string(device) + ") failed";
    const int max_rows = oneshot_max_rows(device, hidden);
    if (tokens > max_rows)
        return "--tokens " + std::to_string(tokens) + " needs that many co-resident row blocks but only " +
               std::to_string(max_rows) + " fit on this GPU at hidden " + std::to_string(hidden);
    return {};
}

Status RankEngine::setup_fusion(const LocalPeers* peers, std::string& fallback_reason) {
    if (!m_options.fusion || m_nranks == 1) return {};
    // Same inputs on every rank, so every rank reaches the same verdict without agreeing.
    if (std::string reason = fusion_fallback_before_start(m_options, m_max_rows, m_hidden, m_device);
        !reason.empty()) {
        fallback_reason = reason;
        m_fused_fallback = true;
        return {};
    }
    bool usable = false;
    TPV_TRY(m_comm.connect_peers(peers ? &peers->buffers : nullptr, peers ? &peers->devices : nullptr,
                                 m_stream, usable, fallback_reason));
    m_fused_fallback = !usable;
    return {};
}

RankEngine::Buffers RankEngine::buffers() const {
    return m_buf;
}

Status RankEngine::collective_call(CollectiveKind kind, const bf16* in, bf16* out, std::uint64_t elems,
                                   const char* phase) {
    // --inject stale: the collective reads the previous call's input (a copy made after each
    // call), so it returns the previous call's result: what only a check on fresh inputs sees.
    const bf16* source = m_stale != nullptr ? m_stale : in;
    if (kind == CollectiveKind::all_gather)
        TPV_NCCL(phase, ncclAllGather(source, out, elems, ncclBfloat16, m_comm.comm(), m_stream));
    else
        TPV_NCCL(phase, ncclAllReduce(source, out, elems, ncclBfloat16, ncclSum, m_comm.comm(), m_stream));
    if (m_stale != nullptr)
        TPV_CUDA(phase,
                 cudaMemcpyAsync(m_stale, in, elems * sizeof(bf16), cudaMemcpyDeviceToDevice, m_stream));
    return {};
}

Status RankEngine::reduce_norm(int rows, const char* phase, bool allow_fused) {
    std::uint64_t elems = std::uint64_t(rows) * m_hidden;
    bool fuse = fused() && allow_fused;
    if (fuse && m_nranks > 1) {
        TPV_CUDA(phase, oneshot_allreduce_rmsnorm(m_comm.peers(), m_buf.send, m_buf.residual, m_buf.gamma,
                                                  m_buf.normed, rows, m_hidden, m_eps, m_stream));
        return {};
    }
    // Fused at N = 1, or skipped as the server skips it: the all-reduce is the identity.
    const bf16* reduced = m_buf.send;
    if (!fuse && !m_skip_collectives) {
        TPV_TRY(collective_call(CollectiveKind::all_reduce, m_buf.send, m_buf.recv, elems, phase));
        reduced = m_buf.recv;
    }
    TPV_CUDA(phase, add_rmsnorm(reduced, m_buf.residual, m_buf.gamma, m_buf.normed, rows, m_hidden, m_eps,
                                m_stream));
    return {};
}

Status RankEngine::collective(const Step& step, PassKind kind, const char* phase) {
    std::uint64_t elems = step.bytes / 2;
    if (kind == PassKind::gemm_only || kind == PassKind::attention_only || kind == PassKind::ops_only)
        return {};
    const std::uint64_t row_bytes = std::uint64_t(m_hidden) * 2;
    const bool hidden_rows =
        step.bytes % row_bytes == 0 && step.bytes / row_bytes <= std::uint64_t(m_max_rows);
    const bool norm = step.fused_norm && hidden_rows;
    if (m_skip_collectives) {
        // As the server at one rank: no collective runs (the logits stay in this rank's shard,
        // the whole of them); the norm after an all-reduce does, reading its input (reduce_norm),
        // in every pass that has norms.
        if (!norm || kind == PassKind::comm_only) return {};
        return reduce_norm(int(step.bytes / row_bytes), phase);
    }
    if (kind == PassKind::norm_kernels) {
        // Only the separate residual + RMSNorm kernel (with fusion it is part of the collective).
        if (!norm || fused()) return {};
        TPV_CUDA(phase, add_rmsnorm(m_buf.recv, m_buf.residual, m_buf.gamma, m_buf.normed,
                                    int(step.bytes / row_bytes), m_hidden, m_eps, m_stream));
        return {};
    }
    if (step.collective == CollectiveKind::all_gather) {
        if (kind == PassKind::norm_only) return {};
        // Logits: this rank's shard is the last GEMM output (lm_head), gathered from every rank.
        return collective_call(CollectiveKind::all_gather, m_scratch[m_last_scratch], m_buf.gather, elems,
                               phase);
    }
    if (norm && (kind != PassKind::comm_only || fused()))
        return reduce_norm(int(step.bytes / row_bytes), phase);
    if (kind == PassKind::norm_only) return {};
    return collective_call(CollectiveKind::all_reduce, m_buf.send, m_buf.recv, elems, phase);
}

Status RankEngine::enqueue(const PassPlan& plan, PassKind kind, const char* phase) {
    m_last_rows = plan.tokens;
    return enqueue_steps(plan, 0, plan.steps.size(), kind, phase, true, moe_streams());
}

Status RankEngine::enqueue_steps(const PassPlan& plan, std::size_t first, std::size_t last, PassKind kind,
                                 const char* phase, bool grouped, MoeStreams streams) {
    for (std::size_t i = first; i < last;) {
        std::size_t used = 0;
        if (streams != MoeStreams::one && kind == PassKind::full &&
            i + moe_block_steps(plan, i, m_gemm) <= last)
            TPV_TRY(enqueue_moe_streams(plan, i, streams, phase, used));
        if (used == 0 && grouped) TPV_TRY(enqueue_fused(plan, i, kind, phase, used));
        if (used == 0) {
            TPV_TRY(enqueue_step(plan, i, kind, phase));
            used = 1;
        }
        i += used;
    }
    return join_prefetch(phase);
}

Status RankEngine::fork_prefetch(const PassPlan& plan, std::size_t from, std::uint64_t budget,
                                 const char* phase) {
    TPV_TRY(join_prefetch(phase));
    if (budget == 0) return {};
    L2Prefetch list;
    for (const PrefetchRegion& r : prefetch_regions(plan, from, budget)) {
        if (list.count == k_prefetch_regions) break;
        list.p[list.count] = m_weights.weight(plan, r.step);
        list.bytes[list.count++] = r.bytes;
    }
    if (list.count == 0) return {};
    if (prefetch_on_main_stream()) {
        TPV_CUDA(phase, prefetch_l2(list, m_sms, true, m_stream));
        return {};
    }
    TPV_CUDA(phase, cudaEventRecord(m_prefetch_fork, m_stream));
    TPV_CUDA(phase, cudaStreamWaitEvent(m_prefetch, m_prefetch_fork, 0));
    TPV_CUDA(phase, prefetch_l2(list, m_sms, false, m_prefetch));
    TPV_CUDA(phase, cudaEventRecord(m_prefetch_join, m_prefetch));
    m_prefetch_pending = true;
    return {};
}

Status RankEngine::join_prefetch(const char* phase) {
    if (!m_prefetch_pending) return {};
    m_prefetch_pending = false;
    TPV_CUDA(phase, cudaStreamWaitEvent(m_stream, m_prefetch_join, 0));
    return {};
}

Status RankEngine::enqueue_fused(const PassPlan& plan, std::size_t index, PassKind kind, const char* phase,
                                 std::size_t& used) {
    used = 0;
    const KernelFusion& fusion = kernel_fusion();
    const std::vector<Step>& st = plan.steps;
    auto is_gemm = [&](std::size_t i) {
        return i < st.size() && st[i].kind == Step::Kind::gemm && skinny_chosen(m_gemm, st[i].gemm) &&
               st[i].gemm.m == st[index].gemm.m;
    };
    auto is_op = [&](std::size_t i, Op op) {
        return i < st.size() && st[i].kind == Step::Kind::op && st[i].op == op;
    };
    auto w = [&](std::size_t i) { return static_cast<const bf16*>(m_weights.weight(plan, i)); };
    const bool gemms = kind == PassKind::full || kind == PassKind::gemm_only;
    const bool ops = kind == PassKind::full || kind == PassKind::ops_only;
    const bool mla_ops = ops && !(kind == PassKind::full && omitted_steps().mla_ops);
    if (st[index].kind == Step::Kind::op) return enqueue_silu_down(plan, index, kind, phase, used);
    if (st[index].kind == Step::Kind::experts)
        return enqueue_expert_down(plan, index, kind, phase, used, true);
    if (st[index].kind != Step::Kind::gemm) return {};
    const int m = st[index].gemm.m;
    // MLA's projections: q_a, kv_a (both on the normed input), q_norm, kv_norm, q_b, kv_b,
    // RoPE, KV write: 2 grouped GEMMs and 2 small kernels instead of 4 + 4. q_b reads q_a's
    // normed output and kv_b kv_a's (as the model does), each in a buffer of its own.
    if (fusion.mla && is_gemm(index) && is_gemm(index + 1) && is_op(index + 2, Op::q_norm) &&
        is_op(index + 3, Op::kv_norm) && is_gemm(index + 4) && is_gemm(index + 5) &&
        is_op(index + 6, Op::rope) && is_op(index + 7, Op::kv_write)) {
        const Gemm &qa = st[index].gemm, &kva = st[index + 1].gemm, &qb = st[index + 4].gemm,
                   &kvb = st[index + 5].gemm;
        const Step &qn = st[index + 2], &kvn = st[index + 3], &rp = st[index + 6], &kw = st[index + 7];
        const std::uint64_t need = std::uint64_t(m) * (qa.n + kva.n + qb.n + kvb.n);
        if (qa.k == m_hidden && kva.k == m_hidden && qa.n != m_hidden && kva.n != m_hidden && qb.k == qa.n &&
            kvb.k <= kva.n && qn.op_width <= qa.n && kvn.op_width <= kva.n && rp.op_width <= qb.n &&
            qn.op_rows == m && kvn.op_rows == m && rp.op_rows == m && kw.op_rows == m &&
            need <= m_fuse_elems && kva.n % 8 == 0 && qa.n % 8 == 0) {
            bf16* a = m_fuse;
            bf16* b = a + std::uint64_t(m) * qa.n;
            bf16* c = b + std::uint64_t(m) * kva.n;
            bf16* d = c + std::uint64_t(m) * qb.n;
            if (gemms) {
                skinny::Part p[2];
                p[0].w = w(index), p[0].x = m_buf.normed, p[0].y = a, p[0].ldx = m_hidden, p[0].n = qa.n;
                p[0].k = qa.k;
                p[1].w = w(index + 1), p[1].x = m_buf.normed, p[1].y = b, p[1].ldx = m_hidden;
                p[1].n = kva.n, p[1].k = kva.k;
                TPV_CUDA(phase, skinny::run_group(p, 2, m, false, m_stream));
            }
            if (mla_ops)
                TPV_CUDA(phase, rmsnorm_rows2(a, qn.op_width, qa.n, b, kvn.op_width, kva.n, m, m_buf.gamma,
                                              m_eps, m_stream));
            if (gemms) {
                skinny::Part p[2];
                p[0].w = w(index + 4), p[0].x = a, p[0].y = c, p[0].ldx = qa.n, p[0].n = qb.n, p[0].k = qb.k;
                p[1].w = w(index + 5), p[1].x = b, p[1].y = d, p[1].ldx = kva.n, p[1].n = kvb.n,
                p[1].k = kvb.k;
                TPV_CUDA(phase, skinny::run_group(p, 2, m, false, m_stream));
            }
            if (mla_ops) {
                const std::string label = kw.label.substr(0, kw.label.find('.') + 1) + "attention";
                bf16* cache = m_attention.cache(label);
                if (cache == nullptr) return Status::fail(phase, "kv_write", "no KV cache for " + label);
                const int row = m_attention.row_width(label);
                const int at = std::max(0, m_attention.rows(label) - m);
                TPV_CUDA(phase, rope_kv_write(c, m, rp.op_width, qb.n, plan.context, b,
                                              std::min(kw.op_width, row), kva.n, cache, row, at, m_stream));
            }
            used = 8;
            return {};
        }
    }
    // A MoE layer's router and shared gate_up (both on the normed input) as one launch, then
    // top-k: 1 GEMM launch instead of 2. The outputs land where the separate GEMMs put them.
    if (fusion.moe && is_gemm(index) && is_op(index + 1, Op::topk) && is_gemm(index + 2)) {
        const Gemm &router = st[index].gemm, &up = st[index + 2].gemm;
        const Step& tk = st[index + 1];
        if (router.k == m_hidden && up.k == m_hidden && router.n != m_hidden && up.n != m_hidden &&
            tk.op_rows == m && tk.op_width == router.n) {
            bf16* r = m_scratch[m_last_scratch ^ 1];
            bf16* g = m_scratch[m_last_scratch];
            if (gemms) {
                skinny::Part p[2];
                p[0].w = w(index), p[0].x = m_buf.normed, p[0].y = r, p[0].ldx = m_hidden, p[0].n = router.n;
                p[0].k = router.k;
                p[1].w = w(index + 2), p[1].x = m_buf.normed, p[1].y = g, p[1].ldx = m_hidden, p[1].n = up.n;
                p[1].k = up.k;
                TPV_CUDA(phase, skinny::run_group(p, 2, m, false, m_stream));
            }
            if (ops)
                TPV_CUDA(phase, topk(r, m, router.n, plan.model.active_experts, m_topk_ids, m_topk_weights,
                                     m_stream));
            used = 3;  // m_last_scratch flipped twice: gate_up's output is the last one
            return {};
        }
    }
    return {};
}

Status RankEngine::enqueue_moe_streams(const PassPlan& plan, std::size_t index, MoeStreams layout,
                                       const char* phase, std::size_t& used) {
    used = 0;
    const std::size_t steps = moe_block_steps(plan, index, m_gemm);
    if (steps == 0 || layout == MoeStreams::one) return {};
    // enqueue_step() enqueues on m_stream: OnStream points it (and cuBLAS, for a bf16 expert path)
    // at the second stream for the steps that run there.
    struct OnStream {
        RankEngine& e;
        cudaStream_t saved;
        OnStream(RankEngine& engine, cudaStream_t s) : e(engine), saved(engine.m_stream) {
            e.m_stream = s;
            cublasSetStream(e.m_cublas, s);
        }
        ~OnStream() {
            e.m_stream = saved;
            cublasSetStream(e.m_cublas, saved);
        }
        OnStream(const OnStream&) = delete;
        OnStream& operator=(const OnStream&) = delete;
    };
    const std::size_t routed = index + steps - 4;  // experts.gate_up
    const bool shared_alt = layout != MoeStreams::routed_alt;
    auto steps_on = [&](bool alt, std::size_t from, std::size_t to) -> Status {
        std::optional<OnStream> on;
        if (alt) on.emplace(*this, m_alt);
        for (std::size_t i = from; i < to;) {
            std::size_t fused = 0;
            if (i + 1 < to) TPV_TRY(enqueue_expert_down(plan, i, PassKind::full, phase, fused, false));
            if (fused == 0) {
                TPV_TRY(enqueue_step(plan, i, PassKind::full, phase));
                fused = 1;
            }
            i += fused;
        }
        return {};
    };
    // Fork after the norm (both paths read its output); steps in plan order, so the router's
    // output and the top-k stay in the scratch buffer and arrays that the shared expert's steps
    // do not write, and the shared down writes the layer output first.
    TPV_CUDA(phase, cudaEventRecord(m_fork, m_stream));
    if (moe_fault() != MoeFault::fork) TPV_CUDA(phase, cudaStreamWaitEvent(m_alt, m_fork, 0));
    if (m_alt_delay_ns > 0) TPV_CUDA(phase, spin(m_alt_delay_ns, m_alt));
    // With fusion group expert_sum (the routed path on this stream, one down launch) the down
    // launch does the weighted sum: the join comes before it, not before the expert_sum step.
    const bool sum_in_down = shared_alt && expert_sum_fusable(plan, routed + 2);
    const std::size_t joined = !sum_in_down                            ? routed + 3
                               : expert_silu_fusable(plan, routed + 1) ? routed + 1
                                                                       : routed + 2;
    // shared_late where the routed SiLU-and-mul and down are launches of their own and the join
    // comes after the down; else the shared_alt order.
    const bool late =
        layout == MoeStreams::shared_late && !sum_in_down && !expert_silu_fusable(plan, routed + 1);
    TPV_TRY(steps_on(!shared_alt, index, index + 2));  // router, top-k
    if (late) {
        // The shared expert's steps read and write what they do in the shared_alt order (its
        // gate_up's output in the scratch buffer the routed steps do not touch, the layer output
        // first): only when its last two run changes.
        TPV_TRY(steps_on(true, index + 2, index + 3));  // shared gate_up
        TPV_TRY(steps_on(false, routed, routed + 2));   // experts gate_up, SiLU-and-mul
        TPV_CUDA(phase, cudaEventRecord(m_routed_silu, m_stream));
        TPV_CUDA(phase, cudaStreamWaitEvent(m_alt, m_routed_silu, 0));
        TPV_TRY(steps_on(true, index + 3, routed));    // shared SiLU-and-mul, down
        TPV_TRY(steps_on(false, routed + 2, joined));  // experts down
    } else {
        TPV_TRY(steps_on(shared_alt, index + 2, routed));  // shared gate_up, SiLU-and-mul, down
        TPV_TRY(steps_on(!shared_alt, routed, joined));    // experts gate_up, SiLU-and-mul, down
    }
    // Join: the weighted sum adds the routed rows to the shared expert's output.
    TPV_CUDA(phase, cudaEventRecord(m_join, m_alt));
    if (moe_fault() != MoeFault::join) TPV_CUDA(phase, cudaStreamWaitEvent(m_stream, m_join, 0));
    if (sum_in_down) {
        std::size_t fused = 0;
        TPV_TRY(enqueue_expert_down(plan, joined, PassKind::full, phase, fused, true));
        if (joined + fused != routed + 4)
            return Status::fail(phase, "experts",
                                "the routed down launch did not take the layer's expert sum");
    } else {
        TPV_TRY(enqueue_step(plan, routed + 3, PassKind::full, phase));
    }
    used = steps;
    return {};
}

Status RankEngine::fill_activations(unsigned short bits) {
    TPV_CUDA("check", fill_bits(m_buf.send, m_buf.send_elems, bits, m_stream));
    TPV_CUDA("check", fill_bits(m_buf.recv, m_buf.send_elems, bits, m_stream));
    TPV_CUDA("check", fill_bits(m_scratch[0], m_scratch_elems, bits, m_stream));
    TPV_CUDA("check", fill_bits(m_scratch[1], m_scratch_elems, bits, m_stream));
    TPV_CUDA("check", fill_bits(m_fuse, m_fuse_elems, bits, m_stream));
    TPV_CUDA("check", m_experts.fill(bits, m_stream));
    m_send_written = false;  // the layer output holds nothing a GEMM should add to
    return {};
}

Status RankEngine::enqueue_silu_down(const PassPlan& plan, std::size_t index, PassKind kind,
                                     const char* phase, std::size_t& used) {
    // The shared expert's (or a dense MLP's) SiLU-and-mul in its down GEMM's input load: the
    // down GEMM reads gate_up's output (the last GEMM's) and applies SiLU(gate) * up itself.
    TPV_TRY(enqueue_expert_down(plan, index, kind, phase, used, true));
    if (used > 0) return {};
    const std::vector<Step>& st = plan.steps;
    if (!kernel_fusion().silu || index == 0 || index + 1 >= st.size()) return {};
    const Step &silu = st[index], &prev = st[index - 1], &down = st[index + 1];
    if (silu.kind != Step::Kind::op || silu.op != Op::silu_mul || prev.kind != Step::Kind::gemm ||
        down.kind != Step::Kind::gemm || !skinny_chosen(m_gemm, down.gemm) || down.gemm.n != m_hidden ||
        down.gemm.k != silu.op_width || prev.gemm.n != 2 * down.gemm.k || silu.op_rows != down.gemm.m)
        return {};
    if (kind == PassKind::full || kind == PassKind::gemm_only) {
        skinny::Part p;
        p.w = static_cast<const bf16*>(m_weights.weight(plan, index + 1));
        p.x = m_scratch[m_last_scratch], p.y = m_buf.send, p.ldx = prev.gemm.n, p.n = down.gemm.n;
        p.k = down.gemm.k, p.silu = true;
        TPV_CUDA(phase, skinny::run_group(&p, 1, down.gemm.m, m_send_written, m_stream));
        m_send_written = true;
    }
    used = 2;
    return {};
}

bool RankEngine::expert_silu_fusable(const PassPlan& plan, std::size_t index) {
    const std::vector<Step>& st = plan.steps;
    if (!kernel_fusion().expert_silu || index + 1 >= st.size()) return false;
    const Step &op = st[index], &next = st[index + 1];
    return op.kind == Step::Kind::op && op.op == Op::silu_mul && next.kind == Step::Kind::experts &&
           !next.experts.gate_up && op.op_width == next.experts.k && op.op_rows == next.experts.total_rows();
}

bool RankEngine::expert_sum_fusable(const PassPlan& plan, std::size_t down) const {
    const std::vector<Step>& st = plan.steps;
    return kernel_fusion().expert_sum && down + 1 < st.size() && st[down].kind == Step::Kind::experts &&
           st[down + 1].kind == Step::Kind::op && st[down + 1].op == Op::expert_sum &&
           st[down + 1].op_width == st[down].experts.n && m_experts.sum_fusable(m_gemm, plan, down);
}

Status RankEngine::enqueue_expert_down(const PassPlan& plan, std::size_t index, PassKind kind,
                                       const char* phase, std::size_t& used, bool with_sum) {
    used = 0;
    const std::vector<Step>& st = plan.steps;
    std::size_t down = index;
    bool silu = false;
    if (st[index].kind == Step::Kind::op && st[index].op == Op::silu_mul) {
        // The routed experts' SiLU-and-mul (the down after it reads its rows): in down's staging.
        if (!expert_silu_fusable(plan, index)) return {};
        down = index + 1;
        silu = true;
    } else if (st[index].kind != Step::Kind::experts || st[index].experts.gate_up) {
        return {};
    }
    // The weighted sum after it, in the same launch.
    const bool sum = with_sum && expert_sum_fusable(plan, down);
    if (!silu && !sum) return {};
    if (kind == PassKind::full || kind == PassKind::gemm_only) {
        sg::ExpertSum args;
        if (sum)
            TPV_TRY(
                m_experts.sum_args(plan, down + 1, m_topk_weights, m_buf.send, m_send_written, phase, args));
        TPV_TRY(m_experts.run(m_cublas, m_gemm, m_ws, m_weights, plan, down, m_buf.normed, m_stream, phase,
                              silu, args));
    }
    // The layer-end L2 prefetch that the expert_sum step would have forked (enqueue_step).
    if (sum && kind == PassKind::full)
        TPV_TRY(fork_prefetch(plan, down + 2, l2_prefetch_budget().layer_end, phase));
    if (sum && (kind == PassKind::full || kind == PassKind::gemm_only || kind == PassKind::ops_only))
        m_send_written = true;  // as the expert_sum step leaves it
    used = down - index + (sum ? 2 : 1);
    return {};
}

Status RankEngine::enqueue_step(const PassPlan& plan, std::size_t index, PassKind kind, const char* phase) {
    const Step& step = plan.steps[index];
    const bool gemms = kind == PassKind::full || kind == PassKind::gemm_only;
    const bool ops = kind == PassKind::full || kind == PassKind::ops_only;
    switch (step.kind) {
        case Step::Kind::gemm: {
            if (!gemms) break;
            const Gemm& g = step.gemm;
            const bf16* in = g.k == m_hidden ? m_buf.normed : m_scratch[m_last_scratch];
            bf16* out = m_scratch[m_last_scratch ^ 1];
            bool accumulate = false;
            if (g.n == m_hidden) {
                out = m_buf.send;  // shared (and then routed) experts sum into the all-reduce input
                accumulate = m_send_written;
                m_send_written = true;
            } else {
                m_last_scratch ^= 1;
            }
            TPV_TRY(run_gemm(m_cublas, m_gemm, m_ws, g, m_weights.weight(plan, index), in, out, accumulate,
                             m_stream, phase));
            break;
        }
        case Step::Kind::experts:
            if (gemms)
                TPV_TRY(m_experts.run(m_cublas, m_gemm, m_ws, m_weights, plan, index, m_buf.normed, m_stream,
                                      phase));
            break;
        case Step::Kind::op:
            // The end of a MoE layer: the next layer's first GEMMs into L2 while the sum, the
            // all-reduce and the norm run.
            if (kind == PassKind::full && step.op == Op::expert_sum)
                TPV_TRY(fork_prefetch(plan, index + 1, l2_prefetch_budget().layer_end, phase));
            if (ops && !(kind == PassKind::full && omitted_steps().op(step.op)))
                TPV_TRY(run_op(plan, step, phase));
            if (step.op == Op::expert_sum && (ops || gemms)) m_send_written = true;
            break;
        case Step::Kind::collective:
            TPV_TRY(collective(step, kind, phase));
            m_send_written = false;
            if (step.collective == CollectiveKind::all_reduce)
                m_last_rows = int(step.bytes / (2ull * m_hidden));
            break;
        case Step::Kind::attention:
            // An attention that reads little (MLA's one latent row a token) leaves DRAM idle:
            // o_proj's first weights into L2 meanwhile.
            if (kind == PassKind::full && step.attention.cache_bytes() < l2_prefetch_budget().attention)
                TPV_TRY(fork_prefetch(plan, index + 1, l2_prefetch_budget().attention, phase));
            if ((kind == PassKind::full && !omitted_steps().attention) || kind == PassKind::attention_only)
                TPV_TRY(m_attention.run(m_cublas, step, m_stream, phase));
            break;
        case Step::Kind::norm:
            if (kind != PassKind::full && kind != PassKind::norm_kernels) break;
            TPV_CUDA(phase, add_rmsnorm(reduced_rows(), m_buf.residual, m_buf.gamma, m_buf.normed,
                                        std::clamp(m_last_rows, 1, m_max_rows), m_hidden, m_eps, m_stream));
            break;
    }
    return {};
}

Status RankEngine::run_op(const PassPlan& plan, const Step& step, const char* phase) {
    bf16* x = m_scratch[m_last_scratch];  // the last GEMM's output: what the op works on
    const int rows = step.op_rows, width = step.op_width;
    switch (step.op) {
        case Op::q_norm:
        case Op::kv_norm:
            TPV_CUDA(phase, rmsnorm_rows(x, rows, width, width, m_buf.gamma, m_eps, m_stream));
            break;
        case Op::rope:
            TPV_CUDA(phase, rope(x, rows, width, width, plan.context, m_stream));
            break;
        case Op::kv_write: {
            // The new rows land at the end of the layer's cache (the draft: one cache, its own layer).
            const std::string label = step.label[0] == 'D'
                                          ? std::string("D.attention")
                                          : step.label.substr(0, step.label.find('.') + 1) + "attention";
            bf16* cache = m_attention.cache(label);
            if (cache == nullptr) return Status::fail(phase, "kv_write", "no KV cache for " + label);
            const int row = m_attention.row_width(label);
            const int at = std::max(0, m_attention.rows(label) - rows);
            TPV_CUDA(phase, kv_write(x, rows, std::min(width, row), width, cache, row, at, m_stream));
            break;
        }
        case Op::topk:
            TPV_CUDA(phase,
                     topk(x, rows, width, plan.model.active_experts, m_topk_ids, m_topk_weights, m_stream));
            break;
        case Op::silu_mul:
            // Routed experts: over the stacked gate_up rows; else the last GEMM's output.
            TPV_CUDA(phase, silu_mul(step.label.find("experts") != std::string::npos ? m_experts.mid() : x,
                                     rows, width, 2 * width, m_stream));
            break;
        case Op::expert_sum:
            TPV_TRY(m_experts.sum(plan, index_of(plan, step), m_topk_weights, m_buf.send, m_send_written,
                                  m_stream, phase));
            break;
    }
    return {};
}

std::size_t RankEngine::index_of(const PassPlan& plan, const Step& step) {
    return std::size_t(&step - plan.steps.data());
}

Status RankEngine::warm_collectives(const PassPlan& plan) {
    std::set<std::pair<int, std::uint64_t>> seen;
    for (const Step& step : plan.steps) {
        if (step.kind != Step::Kind::collective) continue;
        if (!seen.insert({int(step.collective), step.bytes}).second) continue;
        TPV_TRY(collective(step, PassKind::comm_only, "warmup"));
    }
    TPV_CUDA("warmup", cudaStreamSynchronize(m_stream));
    return {};
}

Status RankEngine::capture(const PassPlan& plan, PassKind kind, cudaGraphExec_t& exec, double& seconds) {
    double t0 = now_s();
    cudaGraph_t graph = nullptr;
    TPV_CUDA("capture", cudaStreamBeginCapture(m_stream, capture_mode(m_options.capture_mode)));
    Status inside = enqueue(plan, kind, "capture");
    cudaError_t end = cudaStreamEndCapture(m_stream, &graph);
    if (!inside.ok) {
        if (graph != nullptr) cudaGraphDestroy(graph);
        return inside;
    }
    if (end != cudaSuccess) return Status::fail("capture", "cudaStreamEndCapture", cudaGetErrorString(end));
    cudaError_t inst =
        cudaGraphInstantiate(&exec, graph, moe_priority() ? cudaGraphInstantiateFlagUseNodePriority : 0);
    cudaGraphDestroy(graph);
    if (inst != cudaSuccess) return Status::fail("capture", "cudaGraphInstantiate", cudaGetErrorString(inst));
    TPV_CUDA("capture", cudaGraphUpload(exec, m_stream));
    TPV_CUDA("capture", cudaStreamSynchronize(m_stream));
    seconds = now_s() - t0;
    return {};
}

Status RankEngine::begin_capture(const char* phase) {
    TPV_CUDA(phase, cudaStreamBeginCapture(m_stream, capture_mode(m_options.capture_mode)));
    return {};
}

Status RankEngine::end_capture_and_run(const char* phase) {
    cudaGraph_t graph = nullptr;
    TPV_CUDA(phase, cudaStreamEndCapture(m_stream, &graph));
    cudaGraphExec_t exec = nullptr;
    cudaError_t e = cudaGraphInstantiate(&exec, graph, 0);
    cudaGraphDestroy(graph);
    if (e != cudaSuccess) return Status::fail(phase, "cudaGraphInstantiate", cudaGetErrorString(e));
    e = cudaGraphLaunch(exec, m_stream);
    if (e == cudaSuccess) e = cudaStreamSynchronize(m_stream);
    cudaGraphExecDestroy(exec);
    if (e != cudaSuccess) return Status::fail(phase, "cudaGraphLaunch", cudaGetErrorString(e));
    return {};
}

Status RankEngine::timed_pass(const PassPlan& plan, PassKind kind, cudaGraphExec_t exec, float& us) {
    TPV_CUDA("replay", cudaEventRecord(m_begin, m_stream));
    if (exec != nullptr) {
        TPV_CUDA("replay", cudaGraphLaunch(exec, m_stream));
    } else {
        TPV_TRY(enqueue(plan, kind, "replay"));
    }
    TPV_CUDA("replay", cudaEventRecord(m_end, m_stream));
    TPV_CUDA("replay", cudaEventSynchronize(m_end));
    float ms = 0;
    TPV_CUDA("replay", cudaEventElapsedTime(&ms, m_begin, m_end));
    us = ms * 1000.0f;
    if (m_comm.oneshot_timed_out())
        return Status::fail(
            "replay", "oneshot_allreduce_rmsnorm",
            "a peer's rows did not arrive within 1 s (a rank died or hung); the fused kernel gave up");
    return {};
}

Status RankEngine::measure_copy_bandwidth(std::uint64_t bytes, double& gbps) {
    void *a = nullptr, *b = nullptr;
    TPV_CUDA("init", cudaMalloc(&a, bytes));
    Status st = [&]() -> Status {
        TPV_CUDA("init", cudaMalloc(&b, bytes));
        TPV_CUDA("init", cudaMemsetAsync(a, 1, bytes, m_stream));
        for (int i = 0; i < 3; ++i)
            TPV_CUDA("init", cudaMemcpyAsync(b, a, bytes, cudaMemcpyDeviceToDevice, m_stream));
        constexpr int reps = 10;
        TPV_CUDA("init", cudaEventRecord(m_begin, m_stream));
        for (int i = 0; i < reps; ++i)
            TPV_CUDA("init", cudaMemcpyAsync(b, a, bytes, cudaMemcpyDeviceToDevice, m_stream));
        TPV_CUDA("init", cudaEventRecord(m_end, m_stream));
        TPV_CUDA("init", cudaEventSynchronize(m_end));
        float ms = 0;
        TPV_CUDA("init", cudaEventElapsedTime(&ms, m_begin, m_end));
        gbps = 2.0 * double(bytes) * reps / (double(ms) * 1e-3) / 1e9;
        return {};
    }();
    cudaFree(a);
    if (b != nullptr) cudaFree(b);
    return st;
}

}  // namespace tpverify::cuda
