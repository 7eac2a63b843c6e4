// The kernel table tpverify carries: builtin:h200 (engine/sim/kernel_table.hpp).
#include "engine/sim/kernel_table.hpp"

namespace tpverify::sim {

std::string builtin_kernel_table(const std::string& name) {
    // tests/fixtures/tpverify-kernels/h200.txt, word for word (tests/engine/test_kernel_table.cpp
    // compares them).
    if (name == "h200")
        return R"table(tpverify-kernels 1
# builtin:h200 - kernel times measured on one NVIDIA H200 (device tool, 2026-12-03), composed
# by scripts/kernel-table.py from tests/fixtures/tpverify-kernels/ (its docstring says which line
# comes from which run): expert launches and small kernels from tpverify --measure-kernels,
# bf16 GEMMs on cuBLAS from scripts/device-kernel-bench.sh, attention (cuBLAS) from the run that
# timed it; us per kernel in a CUDA graph of its kind (its launch gap included).
gpu NVIDIA H200
copy_gbps 4243
gemm bf16 1 12288 1536 1 11.940
gemm bf16 1 1536 7168 1 10.160
gemm bf16 1 16384 512 1 6.550
gemm bf16 1 163840 7168 1 534.410
gemm bf16 1 24576 14336 1 163.540
gemm bf16 1 24576 7168 1 83.500
gemm bf16 1 36864 7168 1 127.350
gemm bf16 1 384 7168 1 7.380
gemm bf16 1 4096 7168 1 19.270
gemm bf16 1 4096 7168 32 442.930
gemm bf16 1 4096 7168 8 124.287
gemm bf16 1 576 7168 1 7.700
gemm bf16 1 7168 12288 1 45.550
gemm bf16 1 7168 18432 1 68.480
gemm bf16 1 7168 2048 1 10.130
gemm bf16 1 7168 2048 32 228.203
gemm bf16 1 7168 2048 8 60.139
gemm bf16 1 7168 21504 1 79.230
gemm bf16 1 7168 8192 1 33.460
gemm bf16 2 4096 7168 28 417.518
gemm bf16 2 4096 7168 29 420.934
gemm bf16 2 4096 7168 30 426.936
gemm bf16 2 4096 7168 31 433.439
gemm bf16 2 7168 2048 28 197.004
gemm bf16 2 7168 2048 29 207.114
gemm bf16 2 7168 2048 30 211.370
gemm bf16 2 7168 2048 31 217.747
gemm bf16 3 4096 7168 28 416.708
gemm bf16 3 4096 7168 29 420.664
gemm bf16 3 7168 2048 28 197.990
gemm bf16 3 7168 2048 29 206.030
gemm bf16 4 12288 1536 1 11.980
gemm bf16 4 1536 7168 1 10.150
gemm bf16 4 16384 512 1 6.500
gemm bf16 4 163840 7168 1 533.850
gemm bf16 4 24576 14336 1 163.770
gemm bf16 4 24576 7168 1 83.830
gemm bf16 4 36864 7168 1 127.690
gemm bf16 4 384 7168 1 7.440
gemm bf16 4 4096 7168 1 19.440
gemm bf16 4 576 7168 1 7.760
gemm bf16 4 7168 12288 1 46.280
gemm bf16 4 7168 18432 1 69.810
gemm bf16 4 7168 2048 1 9.970
gemm bf16 4 7168 21504 1 80.580
gemm bf16 4 7168 8192 1 33.450
gemm int4 1 4096 7168 32 137.806
gemm int4 1 4096 7168 8 38.545
gemm int4 1 7168 2048 32 68.547
gemm int4 1 7168 2048 8 24.118
gemm int4 2 4096 7168 28 125.486
gemm int4 2 4096 7168 29 126.938
gemm int4 2 4096 7168 30 131.618
gemm int4 2 4096 7168 31 134.016
gemm int4 2 7168 2048 28 59.178
gemm int4 2 7168 2048 29 61.734
gemm int4 2 7168 2048 30 65.546
gemm int4 2 7168 2048 31 66.099
gemm int4 3 4096 7168 28 126.460
gemm int4 3 4096 7168 29 126.830
gemm int4 3 7168 2048 28 59.164
gemm int4 3 7168 2048 29 61.822
attention 1 64 1 576 576 512 4096 16.946
attention 1 64 64 256 128 128 4100 87.920
attention 1 64 64 256 128 128 4101 96.620
attention 3 64 64 256 128 128 4099 303.754
attention 4 64 1 576 576 512 4096 19.329
op expert_sum 1 7168 2.127
op expert_sum 4 7168 2.175
op kv_norm 1 512 1.547
op kv_norm 4 512 1.786
op kv_write 1 16384 1.152
op kv_write 1 576 1.021
op kv_write 3 16384 1.162
op kv_write 4 576 1.037
op q_norm 1 1536 1.679
op q_norm 4 1536 1.870
op rope 1 16384 1.262
op rope 1 4160 1.115
op rope 3 16384 1.366
op rope 4 4160 1.130
op silu_mul 1 12288 2.096
op silu_mul 1 18432 2.134
op silu_mul 1 2048 1.695
op silu_mul 3 12288 2.180
op silu_mul 32 2048 2.149
op silu_mul 4 18432 2.298
op silu_mul 4 2048 1.740
op silu_mul 8 2048 2.054
op topk 1 384 5.718
op topk 4 384 5.838
norm 14336 3.320
norm 43008 3.540
norm 57344 3.411
)table";
    return {};
}

const KernelTable& h200_kernel_table() {
    static const KernelTable table = [] {
        KernelTable t;
        std::string error;
        const std::string text = builtin_kernel_table("h200");
        if (text.empty() || !parse_kernel_table(text, "builtin:h200", t, error)) t = KernelTable{};
        return t;
    }();
    return table;
}

}  // namespace tpverify::sim
