// Probe: does a kernel on a non-blocking stream see the data of a pageable cudaMemcpy (legacy
// stream) that has just returned? The engine's checks did that until 2026-12-05 (then
// engine/cuda/check_gemm.cu copy_in: the copy on the engine's stream, then a wait).
// Build and run on the GPU machine (device tool), from the repository root:
//   nvcc -O2 -arch=sm_90 engine/cuda/bench/copy_order_probe.cu -o copy_order_probe && ./copy_order_probe
// On an H100 80GB HBM3 (driver 580.159.04, nvcc 13.0), 2026-12-05, two runs:
//   65536 bytes: 0 of 200 copies not yet landed when the kernel read (0 words)
//   1048576 bytes: 200 of 200 copies not yet landed when the kernel read (35652832 words)
//   16777216 bytes: 0 of 200 copies not yet landed when the kernel read (0 words)
//   (second run: 0, 199 of 200 (34302656 words), 0)
// A GPU test's fused-attention check (a 1.2 MB KV cache copied so) failed once that session.
#include <cstdio>
#include <vector>
__global__ void count_bad(const unsigned* p, size_t n, unsigned want, unsigned long long* bad) {
    for (size_t i = blockIdx.x * size_t(blockDim.x) + threadIdx.x; i < n; i += size_t(gridDim.x) * blockDim.x)
        if (p[i] != want) atomicAdd(bad, 1ull);
}
int main() {
    cudaStream_t s;
    cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking);
    unsigned long long* bad;
    cudaMalloc(&bad, 8);
    for (size_t bytes : {size_t(64) << 10, size_t(1) << 20, size_t(16) << 20}) {
        size_t n = bytes / 4;
        unsigned* d;
        cudaMalloc(&d, bytes);
        std::vector<unsigned> h(n);
        int runs_bad = 0;
        unsigned long long total = 0;
        for (int r = 0; r < 200; ++r) {
            for (auto& v : h) v = r + 1;
            cudaMemcpy(d, h.data(), bytes, cudaMemcpyHostToDevice);  // legacy stream, pageable
            cudaMemsetAsync(bad, 0, 8, s);
            count_bad<<<264, 256, 0, s>>>(d, n, r + 1, bad);
            unsigned long long b = 0;
            cudaMemcpyAsync(&b, bad, 8, cudaMemcpyDeviceToHost, s);
            cudaStreamSynchronize(s);
            if (b) {
                ++runs_bad;
                total += b;
            }
        }
        std::printf("%zu bytes: %d of 200 copies not yet landed when the kernel read (%llu words)\n", bytes,
                    runs_bad, total);
        cudaFree(d);
    }
    std::printf("err %s\n", cudaGetErrorString(cudaDeviceSynchronize()));
}
