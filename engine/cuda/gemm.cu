// The pass's GEMMs: the weight arena, and each GEMM on the streaming kernel or cuBLAS.
#include <algorithm>
#include <cstdlib>
#include <string>

#include "engine/cuda/gemm.cuh"
#include "engine/cuda/kernels.cuh"
#include "engine/knobs.hpp"

namespace tpverify::cuda {

GemmPath gemm_path_from_env(bool& ok) {
    ok = true;
    const std::string v = env_or("TPVERIFY_GEMM", "auto");
    if (v == "auto") return GemmPath::automatic;
    if (v == "cublas") return GemmPath::cublas;
    ok = false;
    return GemmPath::automatic;
}

const char* gemm_path_name(GemmPath path) {
    return path == GemmPath::cublas ? "cublas" : "auto";
}

WeightPool::~WeightPool() {
    if (m_base != nullptr) cudaFree(m_base);
}

Status WeightPool::allocate(const std::vector<const PassPlan*>& plans, std::uint64_t reserve,
                            std::uint64_t seed, cudaStream_t stream) {
    auto padded = [](std::uint64_t b) { return (b + 255) / 256 * 256; };
    // Every matrix of a plan in order: (step, bytes of one matrix, how many).
    struct Matrix {
        std::size_t step;
        std::uint64_t bytes;
        int count;
    };
    std::map<const PassPlan*, std::vector<Matrix>> matrices;
    std::uint64_t largest = 0, need = 256;
    for (const PassPlan* plan : plans) {
        std::uint64_t total = 0;
        for (std::size_t i = 0; i < plan->steps.size(); ++i) {
            const Step& s = plan->steps[i];
            Matrix mx{i, 0, 1};
            if (s.kind == Step::Kind::gemm)
                mx.bytes = padded(s.gemm.weight_bytes());
            else if (s.kind == Step::Kind::experts && s.experts.count() > 0)
                mx.bytes = padded(s.experts.gemm(0).weight_bytes()), mx.count = s.experts.count();
            else
                continue;
            matrices[plan].push_back(mx);
            total += mx.bytes * std::uint64_t(mx.count);
            largest = std::max(largest, mx.bytes * std::uint64_t(mx.count));
        }
        need = std::max(need, total);
    }
    m_bytes = plans.empty() ? 0 : plans.front()->weight_bytes();
    std::size_t free_bytes = 0, total_bytes = 0;
    TPV_CUDA("init", cudaMemGetInfo(&free_bytes, &total_bytes));
    std::uint64_t room = free_bytes > reserve ? free_bytes - reserve : 0;
    m_arena = std::min({need, k_max_arena_bytes, room});
    if (m_arena < need && m_arena < std::max(k_min_arena_bytes, 2 * largest)) {
        return Status::fail("init", "cudaMalloc",
                            "weights of this pass need " + std::to_string(need >> 20) + " MiB (at least " +
                                std::to_string(std::max(k_min_arena_bytes, 2 * largest) >> 20) +
                                " MiB as a reused arena) but only " + std::to_string(free_bytes >> 20) +
                                " MiB are free; shrink the model (--layers, --experts) or raise --tp");
    }
    TPV_CUDA("init", cudaMalloc(&m_base, m_arena));
    // Small random values (scale 1/128) keep activations O(1) through the chain of GEMMs; as
    // INT4 bytes they are random nibbles and bf16 scales of that size.
    TPV_CUDA("init", fill_random(static_cast<bf16*>(m_base), m_arena / 2, 1.0f / 128.0f, seed, stream));
    for (const auto& [plan, list] : matrices) {
        auto& placed = m_weights[plan];
        std::uint64_t offset = 0;
        for (const Matrix& mx : list) {
            // A step's matrices stay together (one batched launch reads them).
            if (offset + mx.bytes * std::uint64_t(mx.count) > m_arena) offset = 0;
            auto& pointers = placed[mx.step];
            for (int e = 0; e < mx.count; ++e) {
                pointers.push_back(static_cast<char*>(m_base) + offset);
                offset += mx.bytes;
            }
        }
    }
    return {};
}

const void* WeightPool::weight(const PassPlan& plan, std::size_t step, int expert) const {
    return m_weights.at(&plan).at(step).at(std::size_t(expert));
}

bool streams(GemmPath path, const Gemm& g, bool expert) {
    if (g.m < 1 || !sg::fits(g.n, g.k)) return false;
    if (g.int4) return true;
    // bf16: routed experts as one batched launch of the streaming kernel; every other GEMM on
    // cuBLAS, which ran them faster on the H200 than our kernel did (docs/benchmarks-gpu.md).
    return expert && path == GemmPath::automatic;
}

bool skinny_chosen(GemmPath path, const Gemm& g) {
    static const double max_mb = std::atof(env_or("TPVERIFY_SKINNY_MAX_MB", "160").c_str());
    // TPVERIFY_SKINNY_EXCLUDE=NxK,...: shapes left to cuBLAS (for comparing the two per shape).
    static const std::string exclude = "," + env_or("TPVERIFY_SKINNY_EXCLUDE") + ",";
    if (exclude.size() > 2 &&
        exclude.find("," + std::to_string(g.n) + "x" + std::to_string(g.k) + ",") != std::string::npos)
        return false;
    return path == GemmPath::automatic && !g.int4 && skinny::fits(g.m, g.n, g.k) &&
           double(g.weight_bytes()) <= max_mb * 1e6;
}

Status run_gemm(cublasHandle_t handle, GemmPath path, const sg::Workspace& ws, const Gemm& g, const void* w,
                const bf16* x, bf16* y, bool accumulate, cudaStream_t stream, const char* phase, int ldx) {
    if (ldx == 0) ldx = g.k;
    if (streams(path, g, false)) {
        sg::Batch batch;
        batch.w[0] = w;
        batch.x[0] = x;
        batch.y[0] = y;
        batch.rows[0] = g.m;
        batch.count = 1;
        TPV_CUDA(phase, sg::run(g.int4 ? sg::Format::int4 : sg::Format::bf16, batch, g.n, g.k, ldx,
                                accumulate, ws, stream));
        return {};
    }
    if (skinny_chosen(path, g)) {
        TPV_CUDA(phase,
                 skinny::run(static_cast<const bf16*>(w), x, ldx, y, g.m, g.n, g.k, accumulate, stream));
        return {};
    }
    if (g.int4)
        return Status::fail(phase, "stream_gemm",
                            "INT4 GEMM of shape n " + std::to_string(g.n) + " k " + std::to_string(g.k) +
                                " does not suit the kernel (n % 16, k % 64)");
    // Column-major view: y^T [n x m] = W [n x k] (stored k x n, transposed) * x^T [k x m].
    float alpha = 1.0f, beta = accumulate ? 1.0f : 0.0f;
    TPV_CUBLAS(phase, cublasGemmEx(handle, CUBLAS_OP_T, CUBLAS_OP_N, g.n, g.m, g.k, &alpha, w, CUDA_R_16BF,
                                   g.k, x, CUDA_R_16BF, ldx, &beta, y, CUDA_R_16BF, g.n, CUBLAS_COMPUTE_32F,
                                   CUBLAS_GEMM_DEFAULT));
    return {};
}

}  // namespace tpverify::cuda
