// The kernel table tpverify carries: builtin:h200 (engine/sim/kernel_table.hpp).
#include "engine/sim/kernel_table.hpp"

namespace tpverify::sim {

std::string builtin_kernel_table(const std::string& name) {
    // tests/fixtures/tpverify-kernels/h200.txt, word for word (tests/engine/test_kernel_table.cpp
    // compares them).
    if (name == "h200")
        return R"table(tpverify-kernels 1
# builtin:h200 - kernel times measured on one NVIDIA H200 (device tool, 2026-12-03), composed
# by scripts/kernel-table.py from the INT4 and bf16 --measure-kernels tables of one build
# (tests/fixtures/tpverify-kernels/): the kernels tpverify runs by default, each step timed
# on its own; us per kernel in a CUDA graph of its kind (its launch gap included).
gpu NVIDIA H200
copy_gbps 4242
gemm bf16 1 12288 1536 1 12.310
gemm bf16 1 1536 7168 1 9.147
gemm bf16 1 16384 512 1 5.797
gemm bf16 1 163840 7168 1 518.044
gemm bf16 1 24576 14336 1 156.978
gemm bf16 1 24576 7168 1 80.034
gemm bf16 1 36864 7168 1 129.740
gemm bf16 1 384 7168 1 5.052
gemm bf16 1 4096 7168 1 15.415
gemm bf16 1 4096 7168 32 442.974
gemm bf16 1 4096 7168 8 124.649
gemm bf16 1 576 7168 1 5.946
gemm bf16 1 7168 12288 1 44.360
gemm bf16 1 7168 18432 1 66.418
gemm bf16 1 7168 2048 1 9.483
gemm bf16 1 7168 2048 32 224.272
gemm bf16 1 7168 2048 8 59.782
gemm bf16 1 7168 8192 1 30.984
gemm bf16 2 4096 7168 28 405.030
gemm bf16 2 4096 7168 29 416.228
gemm bf16 2 4096 7168 30 424.760
gemm bf16 2 4096 7168 31 433.432
gemm bf16 2 7168 2048 28 194.844
gemm bf16 2 7168 2048 29 201.316
gemm bf16 2 7168 2048 30 209.470
gemm bf16 2 7168 2048 31 217.407
gemm bf16 3 24576 14336 1 157.486
gemm bf16 3 24576 7168 1 80.352
gemm bf16 3 4096 7168 28 404.706
gemm bf16 3 4096 7168 29 416.916
gemm bf16 3 7168 12288 1 44.684
gemm bf16 3 7168 2048 28 193.826
gemm bf16 3 7168 2048 29 201.440
gemm bf16 3 7168 21504 1 78.482
gemm bf16 3 7168 8192 1 31.538
gemm bf16 4 12288 1536 1 12.444
gemm bf16 4 1536 7168 1 9.138
gemm bf16 4 16384 512 1 5.917
gemm bf16 4 163840 7168 1 518.548
gemm bf16 4 36864 7168 1 129.982
gemm bf16 4 384 7168 1 5.059
gemm bf16 4 4096 7168 1 15.607
gemm bf16 4 576 7168 1 6.046
gemm bf16 4 7168 18432 1 67.340
gemm bf16 4 7168 2048 1 10.061
gemm bf16 4 7168 8192 1 31.611
gemm int4 1 4096 7168 32 136.989
gemm int4 1 4096 7168 8 38.134
gemm int4 1 7168 2048 32 67.024
gemm int4 1 7168 2048 8 23.641
gemm int4 2 4096 7168 28 125.078
gemm int4 2 4096 7168 29 125.242
gemm int4 2 4096 7168 30 128.836
gemm int4 2 4096 7168 31 136.586
gemm int4 2 7168 2048 28 58.338
gemm int4 2 7168 2048 29 62.314
gemm int4 2 7168 2048 30 64.418
gemm int4 2 7168 2048 31 66.055
gemm int4 3 4096 7168 28 124.912
gemm int4 3 4096 7168 29 126.148
gemm int4 3 7168 2048 28 58.198
gemm int4 3 7168 2048 29 62.344
attention 1 64 1 576 576 512 4096 16.947
attention 1 64 64 256 128 128 4100 88.602
attention 1 64 64 256 128 128 4101 97.722
attention 3 64 64 256 128 128 4099 308.316
attention 4 64 1 576 576 512 4096 19.446
op expert_sum 1 7168 1.848
op expert_sum 4 7168 1.868
op kv_norm 1 512 1.414
op kv_norm 4 512 1.521
op kv_write 1 16384 0.818
op kv_write 1 576 0.691
op kv_write 3 16384 0.804
op kv_write 4 576 0.723
op q_norm 1 1536 1.550
op q_norm 4 1536 1.686
op rope 1 16384 0.960
op rope 1 4160 0.818
op rope 3 16384 1.008
op rope 4 4160 0.826
op silu_mul 1 12288 1.840
op silu_mul 1 18432 1.878
op silu_mul 1 2048 1.441
op silu_mul 3 12288 1.908
op silu_mul 32 2048 2.324
op silu_mul 4 18432 2.038
op silu_mul 4 2048 1.445
op silu_mul 8 2048 1.800
op topk 1 384 5.578
op topk 4 384 5.630
norm 14336 3.400
norm 43008 3.534
norm 57344 3.363
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
