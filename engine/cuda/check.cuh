#pragma once
// --check: collective results against a host reference, fused against unfused norms, and the
// weight-streaming GEMMs against a double-precision reference at the pass's own shapes.
#include <string>
#include <vector>

#include "engine/cuda/rank.cuh"

namespace tpverify::cuda {

/// What --check found on one rank.
struct CheckOutcome {
    long long wrong = 0;              ///< elements that differ from the host reference
    long long checked = 0;            ///< elements compared
    long long fused_mismatch = 0;     ///< fused vs unfused norm elements beyond bf16 tolerance
    double fused_max_err = 0;         ///< largest |fused - unfused|
    long long gemm_checked = 0;       ///< GEMM outputs compared
    double gemm_max_rel_err = 0;      ///< largest |got - ref| / rms(ref) of a GEMM output
    long long attention_checked = 0;  ///< fused attention outputs compared
    double attention_max_rel_err = 0;
    long long moe_streams_checked = 0;  ///< layer outputs compared, two streams against one
    int graph_replays = 0;              ///< checks that replayed the check's graph (--graph on)
    std::string detail;                 ///< first failure, for the error message
};

/// The pass's distinct collectives on pattern inputs whose seed advances on the device with
/// every call, each into a NaN-poisoned output: with --graph on captured once and replayed at
/// every check, so a collective that hands back a previous call's data, or a replay that does
/// not run what was captured, shows as wrong elements.
class CollectiveCheck {
public:
    CollectiveCheck() = default;
    CollectiveCheck(const CollectiveCheck&) = delete;
    CollectiveCheck& operator=(const CollectiveCheck&) = delete;
    ~CollectiveCheck();
    /// Allocates the per-collective result copies and the device seed.
    Status prepare(RankEngine& engine, const PassPlan& plan);
    /// One check: a call (a graph replay with --graph on), then every element against the host.
    Status run(RankEngine& engine, const Options& options, CheckOutcome& out);

private:
    struct Item {
        bool gather = false;
        std::uint64_t elems = 0, result_elems = 0, offset = 0;
    };
    Status enqueue(RankEngine& engine);
    std::vector<Item> m_items;
    std::vector<void*> m_allocations;
    bf16* m_results = nullptr;
    unsigned* m_seed = nullptr;
    unsigned m_calls = 0;
    cudaGraphExec_t m_exec = nullptr;
};

/// With --fusion on: the residual + RMSNorm step fused and unfused on the same pattern inputs
/// (offset by `seed`); the residuals must equal the host's exactly, the norms agree within bf16.
Status check_fused_norm(RankEngine& engine, const PassPlan& plan, unsigned seed, CheckOutcome& out);

/// The weight-streaming GEMMs as the pass runs them, at its shapes: the first experts steps
/// (gate_up, and down with its strided input; up to 4 experts of the layer with their rows)
/// and up to 3 streamed bf16 GEMMs, on random weights in the checkpoint's layout repacked on the
/// device, against a double-precision host reference (all columns of the first matrix, every
/// 7th of the others). An output is wrong when NaN or off by more than 1e-2 of its reference
/// plus 1e-2 of the outputs' RMS.
Status check_stream_gemms(RankEngine& engine, const PassPlan& plan, CheckOutcome& out);

/// With two MoE streams (moe_streams()): the first MoE block of the pass (moe_block_steps) run on
/// one stream, step by step, and on two as the pass runs it (captured and replayed with --graph
/// on), each after every activation buffer was filled with NaN, with delays that make a missing
/// fork or join change the result (check_gemm.cu); the layer outputs (the all-reduce input) must
/// be finite and identical bit for bit.
Status check_moe_streams(RankEngine& engine, const PassPlan& plan, CheckOutcome& out);

/// With MLA attention in the pass: the fused decode kernel (mla_decode), or with
/// TPVERIFY_ATTENTION=two-pass mla_two_pass (run twice, the second output checked), or with =values
/// mla_values_attention (the cuBLAS scores GEMM and the softmax-values kernel), on random queries and
/// cache rows (80 rows over 1000 tokens, split as the pass splits and in one split) against a
/// double-precision softmax reference; an output is wrong when NaN or off by more than 1e-2 of
/// its reference plus 2e-2 of the outputs' RMS.
Status check_attention(RankEngine& engine, const PassPlan& plan, CheckOutcome& out);

/// With head_decode chosen (head_decode_chosen) and a GQA step of its shape in `plans` (the
/// draft's): head_decode run twice (the second output checked, so that a ticket left behind
/// shows) on random queries and caches: 3 KV heads x 3 rows over 1,001 tokens in 5 parts and in
/// one, 2 rows over 700 in 3, 1 row over 37 with V apart in wider rows, and the first such step's
/// own shape and parts (every 8th KV head and the last); wrong as check_attention's.
Status check_head_attention(RankEngine& engine, const std::vector<const PassPlan*>& plans, CheckOutcome& out);

}  // namespace tpverify::cuda
