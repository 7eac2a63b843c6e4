#pragma once
// Model presets and the verify-pass plan: which GEMMs and collectives one pass runs, per rank.
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "engine/options.hpp"

namespace tpverify {

/// Shapes of a model (full, unsharded).
struct ModelShape {
    std::string name;
    int layers = 61;
    int dense_layers = 1;  ///< first N layers use a dense MLP
    int hidden = 7168;
    int dense_intermediate = 18432;
    int moe_intermediate = 2048;  ///< per expert
    int heads = 64;
    int experts = 384;       ///< routed experts
    int active_experts = 8;  ///< routed experts per token
    int shared_experts = 1;
    bool mla = true;  ///< multi-head latent attention (else GQA)
    int q_lora_rank = 1536, kv_lora_rank = 512, qk_nope = 128, qk_rope = 64, v_head = 128;
    int kv_heads = 8, head_dim = 128;  ///< GQA (dense models)
    int vocab = 163840;
    double rms_eps = 1e-6;
    /// EAGLE-3 draft head: one Llama decoder layer at the target's hidden size, its attention
    /// heads (head_dim 128), KV heads, MLP width and vocabulary. Kimi-K2.5 / DeepSeek-V3: the
    /// published Kimi-K2.5 EAGLE-3 draft (lightseekorg/kimi-k2.5-eagle3, trained with TorchSpec,
    /// whose configs/draft_models/kimi_k25_eagle3.json gives 64 heads, 64 KV heads, intermediate
    /// 12288, vocabulary 163840 with no smaller draft vocabulary); docs/workload.md.
    int draft_heads = 64, draft_kv_heads = 64, draft_intermediate = 12288, draft_vocab = 163840;
};

/// Whether the run's routed experts are INT4: --expert-format when given, else the model's
/// default (kimi-k2.5: INT4 g32 when its MoE shapes suit the INT4 kernel, as the released
/// checkpoint; other presets bf16).
bool int4_experts(const Options& options, const ModelShape& model);

/// Looks up a preset (kimi-k2.5, deepseek-v3, llama-70b); false if unknown.
bool find_preset(const std::string& name, ModelShape& out);
/// Names of all presets.
std::vector<std::string> preset_names();
/// The preset named in options with its overrides applied; error text if invalid.
bool resolve_model(const Options& options, ModelShape& out, std::string& error);

enum class CollectiveKind { all_reduce, all_gather };

/// Weights per scale of an INT4 GEMM (along k).
constexpr int k_int4_group = 32;

/// One GEMM per rank: [m x k] x [k x n]; bf16 weights, or INT4 with one bf16 scale per
/// k_int4_group weights (activations bf16 either way).
struct Gemm {
    std::string name;  ///< e.g. "L3.q_b"
    int m = 0, n = 0, k = 0;
    bool int4 = false;
    [[nodiscard]] std::uint64_t weight_bytes() const {
        return int4 ? std::uint64_t(n) * k / 2 + std::uint64_t(n) * (k / k_int4_group) * 2
                    : std::uint64_t(n) * k * 2;
    }
    [[nodiscard]] double flops() const { return 2.0 * m * n * k; }
};

/// Decode attention of `rows` query tokens over a KV cache of `context` tokens, per rank.
/// Each cached row holds `row_dim` bf16 per KV head; scores use its first `qk_dim` elements,
/// values the `v_dim` elements from `v_offset`. MLA (absorbed): one latent row of 512 + 64
/// shared by all heads, values = the 512 latent; GQA: K then V of head_dim each.
struct Attention {
    int rows = 0, heads = 0, kv_heads = 1, row_dim = 0, qk_dim = 0, v_offset = 0, v_dim = 0, context = 0;
    /// KV-cache bytes read per pass (every query row reads the same cache).
    [[nodiscard]] std::uint64_t cache_bytes() const {
        return std::uint64_t(kv_heads) * context * row_dim * 2;
    }
    [[nodiscard]] double flops() const { return 2.0 * rows * heads * context * double(qk_dim + v_dim); }
    /// Query rows a KV head reads its cache for (rows x the heads that share it).
    [[nodiscard]] int group_rows() const { return rows * (heads / kv_heads); }
};

/// The small kernels of a layer that are neither GEMMs, attention nor collectives (each one
/// kernel on CUDA; docs/engine.md says which are stand-ins for the server's).
enum class Op {
    q_norm,      ///< RMSNorm of q_a's output (q_lora wide)
    kv_norm,     ///< RMSNorm of kv_a's latent part (kv_lora wide)
    rope,        ///< rotary embedding of the query's and the key's rope parts
    kv_write,    ///< the new tokens' KV rows written into the cache
    topk,        ///< the router's top-k over its logits, with their weights
    silu_mul,    ///< SiLU(gate) * up, in place into the first half of each gate_up row
    expert_sum,  ///< the routed experts' outputs, weighted per token, added to the layer output
};
/// "q_norm", "kv_norm", ...
const char* op_name(Op op);

/// A MoE layer's routed experts for one side (gate_up or down): every expert the router chose,
/// busiest first, run as one batched launch (up to k_stream_max_batch experts and
/// k_stream_rows_per_launch rows of x per launch) on both backends.
struct Experts {
    std::vector<int> rows;  ///< tokens routed to each expert (descending)
    /// For each token t and each of its choices j (t * active + j): the row of that choice in
    /// the experts' stacked outputs (expert-major: the rows of expert 0, then of expert 1, ...).
    std::vector<int> slots;
    int n = 0, k = 0;
    bool int4 = false;
    bool gate_up = true;  ///< gate_up [hidden -> 2 inter]; false: down [inter -> hidden]
    [[nodiscard]] int count() const { return static_cast<int>(rows.size()); }
    [[nodiscard]] int total_rows() const;
    /// One expert's GEMM (m = its rows).
    [[nodiscard]] Gemm gemm(int expert) const;
    [[nodiscard]] std::uint64_t weight_bytes() const;
    [[nodiscard]] double flops() const;
};

/// One step of the pass, in order. A collective with fused_norm == true is followed by
/// residual add + RMSNorm (the next layer's input norm; after the last layer, the final norm):
/// with --fusion off a backend runs it as a separate kernel, with --fusion on it is part of the
/// fused all-reduce. There are no separate norm steps for those; the only Kind::norm step is
/// layer 0's input norm after the embedding all-reduce (bytes = its activation size).
struct Step {
    enum class Kind { gemm, collective, norm, attention, op, experts } kind = Kind::gemm;
    Gemm gemm;                      ///< kind == gemm
    Attention attention;            ///< kind == attention
    Experts experts;                ///< kind == experts; kind == op with Op::expert_sum (its slots)
    Op op = Op::q_norm;             ///< kind == op
    int op_rows = 0, op_width = 0;  ///< kind == op: rows and elements per row it works on
    CollectiveKind collective{};    ///< kind == collective
    std::uint64_t bytes = 0;        ///< collective: bytes per rank input (bf16); op: bytes it moves
    bool fused_norm = false;        ///< collective: followed by residual+RMSNorm (fusable)
    std::string label;              ///< "embed", "L0.attn", "L0.mlp", "logits"
};

/// What a pass is run against, beyond the model and TP degree.
struct PassShape {
    int context = 4096;         ///< tokens already in the KV cache
    unsigned router_seed = 1;   ///< seeds the router's expert choice per token and layer
    bool int4_experts = false;  ///< routed experts in INT4 (shared experts stay bf16)
    /// Draft pass: tokens of its first forward, the extend over the tokens the last cycle emitted
    /// (SGLang's accept_length + 1; tpverify's --accept-len rounded).
    int draft_extend_tokens = 3;
};

/// What the options say about the pass beyond the model: context, router seed, expert format,
/// the draft extend's tokens (round(--accept-len), at least 1).
PassShape pass_shape(const Options& options, const ModelShape& model);

/// The whole verify pass for one rank.
struct PassPlan {
    ModelShape model;
    int tp = 1;
    int tokens = 4;
    int context = 0;
    bool int4_experts = false;  ///< routed experts are INT4
    std::vector<Step> steps;
    /// Distinct routed experts the tokens of each MoE layer chose (in layer order).
    std::vector<int> routed_experts_touched;
    [[nodiscard]] double mean_routed_experts_touched() const;
    [[nodiscard]] std::uint64_t attention_bytes() const;  ///< KV-cache bytes read per pass per rank
    [[nodiscard]] int collective_count() const;
    [[nodiscard]] int all_reduce_count() const;
    [[nodiscard]] std::uint64_t weight_bytes() const;  ///< bytes of weights read per pass per rank
    [[nodiscard]] double flops() const;
    [[nodiscard]] std::uint64_t all_reduce_bytes() const;  ///< bytes per rank of one all-reduce (0: none)
    [[nodiscard]] std::uint64_t all_gather_bytes() const;  ///< bytes per rank input of the logits all-gather
    [[nodiscard]] int all_gather_count() const;
    /// Kernels of each kind the CUDA backend launches for layer `layer` (GEMMs, expert launches,
    /// ops, attention as one, collectives, separate norms with --fusion off).
    [[nodiscard]] int layer_kernels(int layer) const;
};

/// The most experts one launch of the CUDA backend's weight-streaming GEMM runs (engine/cuda/
/// stream_gemm.cuh), and the most rows of x it takes per launch (the mma's n = 8): more experts
/// or more rows are more launches. The sim prices launches by the same numbers.
constexpr int k_stream_max_batch = 40;
constexpr int k_stream_rows_per_launch = 8;

/// The launches of one experts step: [first, first + count) of its experts per launch, in order.
struct ExpertLaunch {
    int first = 0, count = 0;
    int max_rows = 0;  ///< most rows of x among them (launches repeat per k_stream_rows_per_launch)
};
std::vector<ExpertLaunch> expert_launches(const Experts& experts);

/// The steps from `index` that form one MoE block as the CUDA backend can run it on two streams
/// (engine/cuda/rank.cu enqueue_moe_streams) and the sim prices it (engine/sim/pass_layout.hpp):
/// the router, top-k, each shared expert's gate_up / SiLU-and-mul / down, the routed experts'
/// gate_up / SiLU-and-mul / down and their weighted sum; 0 when none starts there. `skinny` says
/// whether a GEMM runs on the skinny kernel (router and shared GEMMs must, so that only the routed
/// path uses the split-k workspace or cuBLAS); every such GEMM has the router's row count.
[[nodiscard]] std::size_t moe_block_steps(const PassPlan& plan, std::size_t index,
                                          const std::function<bool(const Gemm&)>& skinny);

/// The first `bytes` of step `step`'s weights: one region an L2 prefetch asks for.
struct PrefetchRegion {
    std::size_t step = 0;
    std::uint64_t bytes = 0;
};
/// The weights that the GEMM steps from `index` on read first, in plan order, up to `budget`
/// bytes together (the last region cut short, every region a multiple of 16 bytes): the bf16
/// GEMMs that follow, past small kernels, norms and collectives, up to the next attention or
/// experts step (what those read is not known as one region). Empty when none.
[[nodiscard]] std::vector<PrefetchRegion> prefetch_regions(const PassPlan& plan, std::size_t index,
                                                           std::uint64_t budget);

/// Builds the per-rank plan for `tokens` tokens at tensor-parallel degree `tp`. Each token of
/// each MoE layer picks `active_experts` distinct routed experts, uniformly and seeded by
/// (router_seed, layer, token); the experts chosen by at least one token run as one experts
/// step per side (gate_up, then down), each expert with as many rows as tokens chose it.
PassPlan build_pass(const ModelShape& model, int tp, int tokens, const PassShape& shape = {});

/// The EAGLE-3 draft pass of one speculative cycle as SGLang runs it (speculative_num_steps =
/// `steps`): the draft extend over shape.draft_extend_tokens tokens (the tokens the last verify
/// emitted), then steps - 1 one-token forwards. Every forward is one Llama decoder layer at TP:
/// a vocabulary-parallel embedding all-reduce, its attention and MLP all-reduces, and its
/// lm_head on the last token with the logits all-gather; the extend also runs the fc that fuses
/// three target hidden states. 3 all-reduces and 1 all-gather per forward; empty when steps == 0.
PassPlan build_draft_pass(const ModelShape& model, int tp, int steps, const PassShape& shape = {});

}  // namespace tpverify
