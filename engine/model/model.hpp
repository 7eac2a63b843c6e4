#pragma once
// Model presets and the verify-pass plan: which GEMMs and collectives one pass runs, per rank.
#include <cstdint>
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
    /// EAGLE-3 draft head (one Llama-style decoder layer at the target's hidden size, GQA):
    /// its MLP width and its own (reduced) vocabulary. Assumed, not read from a checkpoint.
    int draft_intermediate = 18432, draft_vocab = 32000, draft_kv_heads = 8;
};

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
};

/// One step of the pass, in order. A collective with fused_norm == true is followed by
/// residual add + RMSNorm (the next layer's input norm; after the last layer, the final norm):
/// with --fusion off a backend runs it as a separate kernel, with --fusion on it is part of the
/// fused all-reduce. There are no separate norm steps for those; the only Kind::norm step is
/// layer 0's input norm after the embedding all-reduce (bytes = its activation size).
struct Step {
    enum class Kind { gemm, collective, norm, attention } kind = Kind::gemm;
    Gemm gemm;                    ///< kind == gemm
    Attention attention;          ///< kind == attention
    CollectiveKind collective{};  ///< kind == collective
    std::uint64_t bytes = 0;      ///< collective: bytes per rank input (bf16)
    bool fused_norm = false;      ///< collective: followed by residual+RMSNorm (fusable)
    std::string label;            ///< "embed", "L0.attn", "L0.mlp", "logits"
};

/// What a pass is run against, beyond the model and TP degree.
struct PassShape {
    int context = 4096;         ///< tokens already in the KV cache
    unsigned router_seed = 1;   ///< seeds the router's expert choice per token and layer
    bool int4_experts = false;  ///< routed experts in INT4 (shared experts stay bf16)
};

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
};

/// The most experts one launch of the CUDA backend's W4A16 kernel runs (one per grid row), and
/// the most rows of x it takes per launch (engine/cuda/gemm.cu, run_w4a16): more experts or
/// more rows are more launches.
constexpr int k_int4_max_batch = 40;
constexpr int k_int4_rows_per_launch = 4;

/// A run of >= 2 adjacent (gate_up, down) GEMM pairs of equal shapes: a MoE layer's experts
/// with equal m (build_pass orders them by m). The CUDA backend runs such a run as one batched
/// gate_up, one batched down and a sum kernel (engine/cuda/moe.cu); the sim prices it the same
/// way. A pair is gate_up [hidden -> 2i] then down [i -> hidden] with equal m and format.
struct ExpertRun {
    std::size_t first_step = 0;  ///< index in plan.steps of the first gate_up
    int pairs = 0;
};
/// The expert runs of `plan`, in step order (`hidden`: the model's hidden size).
std::vector<ExpertRun> expert_runs(const PassPlan& plan, int hidden);

/// Builds the per-rank plan for `tokens` tokens at tensor-parallel degree `tp`. Each token of
/// each MoE layer picks `active_experts` distinct routed experts, uniformly and seeded by
/// (router_seed, layer, token); every expert chosen by at least one token gets one
/// (gate_up, down) pair whose m is the number of tokens routed to it.
PassPlan build_pass(const ModelShape& model, int tp, int tokens, const PassShape& shape = {});

/// The EAGLE-3 draft pass: `steps` autoregressive draft steps of one token each, each one
/// Llama-style decoder layer at TP (its own attention and MLP all-reduces) plus the draft
/// lm_head and its logits all-gather; the first step also runs the fc that fuses three target
/// hidden states. Empty when steps == 0.
PassPlan build_draft_pass(const ModelShape& model, int tp, int steps, const PassShape& shape = {});

}  // namespace tpverify
