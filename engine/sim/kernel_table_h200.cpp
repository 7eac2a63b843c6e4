// The kernel table tpverify carries: builtin:h200 (engine/sim/kernel_table.hpp).
#include "engine/sim/kernel_table.hpp"

namespace tpverify::sim {

std::string builtin_kernel_table(const std::string& name) {
    // tests/fixtures/tpverify-kernels/h200.txt, word for word (tests/engine/test_kernel_table.cpp
    // compares them).
    if (name == "h200")
        return R"table(tpverify-kernels 1
# builtin:h200 - kernel times measured on one NVIDIA H200 (device tool, 2026-12-04), composed
# by scripts/kernel-table.py from the INT4 and bf16 --measure-kernels tables of one build
# (tests/fixtures/tpverify-kernels/): the kernels that build ran by default, each step timed
# on its own; us per kernel in a CUDA graph of its kind (its launch gap included).
gpu NVIDIA H200
copy_gbps 4242
gemm bf16 1 12288 1536 1 12.131
gemm bf16 1 1536 7168 1 9.126
gemm bf16 1 16384 512 1 5.811
gemm bf16 1 163840 7168 1 517.798
gemm bf16 1 24576 14336 1 157.786
gemm bf16 1 24576 7168 1 80.154
gemm bf16 1 36864 7168 1 129.848
gemm bf16 1 384 7168 1 5.053
gemm bf16 1 4096 7168 1 15.454
gemm bf16 1 4096 7168 32 443.054
gemm bf16 1 4096 7168 8 125.292
gemm bf16 1 576 7168 1 5.945
gemm bf16 1 7168 12288 1 44.372
gemm bf16 1 7168 18432 1 66.264
gemm bf16 1 7168 2048 1 9.487
gemm bf16 1 7168 2048 32 224.376
gemm bf16 1 7168 2048 8 59.802
gemm bf16 1 7168 8192 1 30.977
gemm bf16 2 4096 7168 28 404.412
gemm bf16 2 4096 7168 29 412.966
gemm bf16 2 4096 7168 30 423.846
gemm bf16 2 4096 7168 31 433.576
gemm bf16 2 7168 2048 28 194.746
gemm bf16 2 7168 2048 29 201.764
gemm bf16 2 7168 2048 30 209.780
gemm bf16 2 7168 2048 31 217.526
gemm bf16 3 24576 14336 1 157.694
gemm bf16 3 24576 7168 1 80.518
gemm bf16 3 4096 7168 28 407.204
gemm bf16 3 4096 7168 29 414.458
gemm bf16 3 7168 12288 1 44.670
gemm bf16 3 7168 2048 28 194.390
gemm bf16 3 7168 2048 29 201.198
gemm bf16 3 7168 21504 1 78.270
gemm bf16 3 7168 8192 1 31.606
gemm bf16 4 12288 1536 1 12.443
gemm bf16 4 1536 7168 1 9.140
gemm bf16 4 16384 512 1 5.933
gemm bf16 4 163840 7168 1 518.308
gemm bf16 4 36864 7168 1 130.260
gemm bf16 4 384 7168 1 5.079
gemm bf16 4 4096 7168 1 15.627
gemm bf16 4 576 7168 1 6.029
gemm bf16 4 7168 18432 1 67.540
gemm bf16 4 7168 2048 1 10.036
gemm bf16 4 7168 8192 1 31.633
gemm int4 1 4096 7168 32 133.857
gemm int4 1 4096 7168 8 38.674
gemm int4 1 7168 2048 32 67.701
gemm int4 1 7168 2048 8 24.239
gemm int4 2 4096 7168 28 128.228
gemm int4 2 4096 7168 29 129.412
gemm int4 2 4096 7168 30 129.634
gemm int4 2 4096 7168 31 131.595
gemm int4 2 7168 2048 28 59.470
gemm int4 2 7168 2048 29 63.584
gemm int4 2 7168 2048 30 64.038
gemm int4 2 7168 2048 31 67.585
gemm int4 3 4096 7168 28 128.370
gemm int4 3 4096 7168 29 129.762
gemm int4 3 7168 2048 28 59.532
gemm int4 3 7168 2048 29 63.332
attention 1 64 1 576 576 512 4096 12.795
attention 1 64 64 256 128 128 4100 81.572
attention 1 64 64 256 128 128 4101 97.902
attention 3 64 64 256 128 128 4099 307.834
attention 4 64 1 576 576 512 4096 15.765
op expert_sum 1 7168 1.847
op expert_sum 4 7168 1.871
op kv_norm 1 512 1.296
op kv_norm 4 512 1.418
op kv_write 1 16384 0.828
op kv_write 1 576 0.699
op kv_write 3 16384 0.826
op kv_write 4 576 0.732
op q_norm 1 1536 1.423
op q_norm 4 1536 1.604
op rope 1 16384 0.970
op rope 1 4160 0.819
op rope 3 16384 1.016
op rope 4 4160 0.831
op silu_mul 1 12288 1.836
op silu_mul 1 18432 1.874
op silu_mul 1 2048 1.457
op silu_mul 3 12288 1.922
op silu_mul 32 2048 2.286
op silu_mul 4 18432 2.062
op silu_mul 4 2048 1.446
op silu_mul 8 2048 1.801
op topk 1 384 3.230
op topk 4 384 3.229
norm 14336 2.294
norm 43008 2.466
norm 57344 2.315
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
