#pragma once
// Measured kernel times of one GPU, the sim's price list for everything but the collectives:
// what `tpverify --backend cuda --measure-kernels` prints (engine/cuda/measure_kernels.cu).
//
//   tpverify-kernels 1
//   # comments: where and how it was measured
//   gpu NVIDIA H200
//   copy_gbps 4266
//   gemm int4|bf16 ROWS N K COUNT US      one launch over COUNT matrices [N x K], ROWS rows of x
//   op NAME ROWS WIDTH US                 q_norm, kv_norm, rope, kv_write, topk, silu_mul, expert_sum
//   attention ROWS HEADS KV_HEADS ROW_DIM QK_DIM V_DIM CONTEXT US
//   norm BYTES US                         residual + RMSNorm over BYTES of activations
//
// Each time is one kernel's share of a CUDA graph of its kind (its launch gap included). Several
// files (INT4 and bf16 runs) concatenate: a repeated header is accepted; a repeated line keeps
// the first time.
#include <string>
#include <vector>

namespace tpverify::sim {

struct KernelTable {
    std::string source;  ///< file name or builtin:NAME
    std::string gpu;     ///< the GPU it was measured on
    std::string note;    ///< the first comment line (tool and date)
    double copy_gbps = 0;
    struct Gemm {
        bool int4 = false;
        int rows = 0, n = 0, k = 0, count = 0;
        double us = 0;
        [[nodiscard]] double bytes() const;
    };
    struct Op {
        std::string name;
        int rows = 0, width = 0;
        double us = 0;
    };
    struct Attention {
        int rows = 0, heads = 0, kv_heads = 0, row_dim = 0, qk_dim = 0, v_dim = 0, context = 0;
        double us = 0;
    };
    struct Norm {
        double bytes = 0, us = 0;
    };
    std::vector<Gemm> gemms;
    std::vector<Op> ops;
    std::vector<Attention> attention;
    std::vector<Norm> norms;
};

/// Parses a table; on error returns false with "NAME:LINE: what" in `error`.
bool parse_kernel_table(const std::string& text, const std::string& name, KernelTable& out,
                        std::string& error);
/// The tables tpverify carries: "h200" (tests/fixtures/tpverify-kernels/h200.txt, word for word).
std::string builtin_kernel_table(const std::string& name);
/// builtin:h200, parsed once.
const KernelTable& h200_kernel_table();

}  // namespace tpverify::sim
