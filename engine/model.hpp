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
    int dense_layers = 1;          ///< first N layers use a dense MLP
    int hidden = 7168;
    int dense_intermediate = 18432;
    int moe_intermediate = 2048;   ///< per expert
    int heads = 64;
    int experts = 384;             ///< routed experts
    int active_experts = 8;        ///< routed experts per token
    int shared_experts = 1;
    bool mla = true;               ///< multi-head latent attention (else GQA)
    int q_lora_rank = 1536, kv_lora_rank = 512, qk_nope = 128, qk_rope = 64, v_head = 128;
    int kv_heads = 8, head_dim = 128;  ///< GQA (dense models)
    int vocab = 163840;
    double rms_eps = 1e-6;
};

/// Looks up a preset (kimi-k2.5, deepseek-v3, llama-70b); false if unknown.
bool find_preset(const std::string& name, ModelShape& out);
/// Names of all presets.
std::vector<std::string> preset_names();
/// The preset named in options with its overrides applied; error text if invalid.
bool resolve_model(const Options& options, ModelShape& out, std::string& error);

enum class CollectiveKind { all_reduce, all_gather };

/// One GEMM per rank: [m x k] x [k x n], bf16.
struct Gemm {
    std::string name;  ///< e.g. "L3.q_b"
    int m = 0, n = 0, k = 0;
    [[nodiscard]] std::uint64_t weight_bytes() const { return std::uint64_t(n) * k * 2; }
    [[nodiscard]] double flops() const { return 2.0 * m * n * k; }
};

/// One step of the pass, in order. A collective with fused_norm == true is followed by
/// residual add + RMSNorm (the next layer's input norm; after the last layer, the final norm):
/// with --fusion off a backend runs it as a separate kernel, with --fusion on it is part of the
/// fused all-reduce. There are no separate norm steps for those; the only Kind::norm step is
/// layer 0's input norm after the embedding all-reduce (bytes = its activation size).
struct Step {
    enum class Kind { gemm, collective, norm } kind = Kind::gemm;
    Gemm gemm;                        ///< kind == gemm
    CollectiveKind collective{};      ///< kind == collective
    std::uint64_t bytes = 0;          ///< collective: bytes per rank input (bf16)
    bool fused_norm = false;          ///< collective: followed by residual+RMSNorm (fusable)
    std::string label;                ///< "embed", "L0.attn", "L0.mlp", "logits"
};

/// The whole verify pass for one rank.
struct PassPlan {
    ModelShape model;
    int tp = 1;
    int tokens = 4;
    std::vector<Step> steps;
    [[nodiscard]] int collective_count() const;
    [[nodiscard]] int all_reduce_count() const;
    [[nodiscard]] std::uint64_t weight_bytes() const;   ///< bytes of weights read per pass per rank
    [[nodiscard]] double flops() const;
    [[nodiscard]] std::uint64_t all_reduce_bytes() const;  ///< bytes per rank of one all-reduce (0: none)
    [[nodiscard]] std::uint64_t all_gather_bytes() const;  ///< bytes per rank input of the logits all-gather
};

/// Builds the per-rank plan for `tokens` tokens at tensor-parallel degree `tp`.
PassPlan build_pass(const ModelShape& model, int tp, int tokens);

}  // namespace tpverify
