// The sim's price of everything but the collectives: measured kernel times where the kernel
// table has them (engine/sim/kernel_table.hpp), carried to other shapes and GPUs by the rules
// below (docs/engine.md, "Time of a pass"); the roofline estimates where it has nothing.
#include <algorithm>
#include <cmath>

#include "engine/sim/kernel_table.hpp"
#include "engine/sim/sim_model.hpp"

namespace tpverify::sim {
namespace {

constexpr double k_min_device_us = 0.3;  // a measured kernel's device time is never taken below this

/// A measured time less the launch gap the sim adds back per kernel.
double device_time(const GpuModel& g, double us) {
    return std::max(k_min_device_us, us - g.launch_graph_us);
}

}  // namespace

/// Bandwidth the table's efficiencies apply to: the measured copy bandwidth on its own GPU,
/// the model's (datasheet) bandwidth elsewhere.
double GpuModel::copy_bw_gbs() const {
    return table_native ? table->copy_gbps : hbm_bw_gbs;
}

double GpuModel::gemm_launch_us(bool int4, int rows, int n, int k, int count) const {
    const double nk = double(n) * k;
    const double bytes = count * (int4 ? nk / 2 + nk / 32 * 2 : nk * 2);
    const double flops = 2.0 * rows * nk * count;
    if (table == nullptr) return gemm_us(std::uint64_t(bytes), flops);
    // The fraction of copy bandwidth the kernel reached at this launch's size: measured at this
    // shape, else interpolated in log(bytes) between the measured launches of the format.
    std::vector<std::pair<double, double>> points;  // bytes, efficiency
    for (const KernelTable::Gemm& p : table->gemms) {
        if (p.int4 != int4) continue;
        const double d = device_time(*this, p.us);
        const double efficiency = p.bytes() / (d * table->copy_gbps * 1e3);
        if (p.rows == rows && p.n == n && p.k == k && p.count == count)
            return std::max(d * table->copy_gbps / copy_bw_gbs(), flops / (peak_tflops * 1e6));
        points.emplace_back(p.bytes(), efficiency);
    }
    if (points.empty()) return gemm_us(std::uint64_t(bytes), flops);
    std::sort(points.begin(), points.end());
    double efficiency = points.front().second;
    if (bytes >= points.back().first) {
        efficiency = points.back().second;
    } else if (bytes > points.front().first) {
        auto hi = std::upper_bound(points.begin(), points.end(), std::make_pair(bytes, 1e300));
        auto lo = hi - 1;
        const double t =
            (std::log(bytes) - std::log(lo->first)) / (std::log(hi->first) - std::log(lo->first));
        efficiency = lo->second + t * (hi->second - lo->second);
    }
    return std::max(
        {bytes / (copy_bw_gbs() * efficiency * 1e3), flops / (peak_tflops * 1e6), k_min_device_us});
}

double GpuModel::attention_us(const Attention& a) const {
    const double bytes = double(a.cache_bytes()), flops = a.flops();
    const double roofline = gemm_us(a.cache_bytes(), flops);
    if (table == nullptr || table->attention.empty()) return roofline;
    // Measured at this shape; else the measured point of the same kind (latent or per-head rows)
    // nearest in flops, scaled by the larger of the bytes and flops ratios.
    const KernelTable::Attention* best = nullptr;
    double best_distance = 0;
    for (const KernelTable::Attention& p : table->attention) {
        Attention q;
        q.rows = p.rows, q.heads = p.heads, q.kv_heads = p.kv_heads, q.row_dim = p.row_dim;
        q.qk_dim = p.qk_dim, q.v_offset = 0, q.v_dim = p.v_dim, q.context = p.context;
        const double scale = table->copy_gbps / copy_bw_gbs();
        if (p.rows == a.rows && p.heads == a.heads && p.kv_heads == a.kv_heads && p.row_dim == a.row_dim &&
            p.qk_dim == a.qk_dim && p.v_dim == a.v_dim && p.context == a.context)
            return device_time(*this, p.us) * scale;
        if (p.row_dim != a.row_dim) continue;
        const double distance =
            std::fabs(std::log(std::max(q.flops(), 1.0)) - std::log(std::max(flops, 1.0)));
        if (best == nullptr || distance < best_distance) best = &p, best_distance = distance;
    }
    if (best == nullptr) return roofline;
    Attention q;
    q.rows = best->rows, q.heads = best->heads, q.kv_heads = best->kv_heads, q.row_dim = best->row_dim;
    q.qk_dim = best->qk_dim, q.v_dim = best->v_dim, q.context = best->context;
    const double ratio =
        std::max(bytes / std::max(double(q.cache_bytes()), 1.0), flops / std::max(q.flops(), 1.0));
    return std::max(roofline, device_time(*this, best->us) * ratio * table->copy_gbps / copy_bw_gbs());
}

double GpuModel::op_us(Op op, int rows, int width, std::uint64_t bytes) const {
    const double estimate = stream_us(bytes);
    if (table == nullptr) return estimate;
    // Measured at this size; else the nearest measured size of the op, plus the extra bytes at
    // this GPU's bandwidth. Small kernels cost their launch and a memory round trip, which the
    // sim takes to be the same on every GPU.
    const KernelTable::Op* best = nullptr;
    double best_distance = 0;
    for (const KernelTable::Op& p : table->ops) {
        if (p.name != op_name(op)) continue;
        if (p.rows == rows && p.width == width) return device_time(*this, p.us);
        const double distance =
            std::fabs(std::log(double(p.rows) * p.width) - std::log(double(rows) * width));
        if (best == nullptr || distance < best_distance) best = &p, best_distance = distance;
    }
    if (best == nullptr) return estimate;
    const double measured_bytes = double(bytes) * (double(best->rows) * best->width) / (double(rows) * width);
    return device_time(*this, best->us) +
           std::max(0.0, double(bytes) - measured_bytes) / (copy_bw_gbs() * 1e3);
}

double GpuModel::norm_us(std::uint64_t bytes) const {
    const double estimate = std::max(kernel_floor_us, 3.0 * static_cast<double>(bytes) / (hbm_bw_gbs * 1e3));
    if (table == nullptr || table->norms.empty()) return estimate;
    const KernelTable::Norm* best = nullptr;
    for (const KernelTable::Norm& p : table->norms) {
        if (p.bytes == double(bytes)) return device_time(*this, p.us);
        if (best == nullptr ||
            std::fabs(std::log(p.bytes / double(bytes))) < std::fabs(std::log(best->bytes / double(bytes))))
            best = &p;
    }
    return device_time(*this, best->us) +
           std::max(0.0, 3.0 * (double(bytes) - best->bytes)) / (copy_bw_gbs() * 1e3);
}

std::string GpuModel::price_source() const {
    if (table == nullptr) return "roofline estimates (no kernel times measured on this GPU)";
    return "kernel times measured on " + table->gpu + " (" + table->source + ")";
}

std::string GpuModel::price_assumption() const {
    if (table != nullptr) return {};
    // The H200's measured times are not carried to this GPU: its small kernels are launch- and
    // latency-bound and its GEMMs' shapes at TP > 1 were not measured; the estimates below are.
    return "nothing measured on " + name + ": every GEMM and attention at " +
           std::to_string(int(gemm_efficiency * 100 + 0.5)) + " % of its " + std::to_string(int(hbm_bw_gbs)) +
           " GB/s memory bandwidth or its " + std::to_string(int(peak_tflops)) +
           " TFLOP/s, every kernel at least " + std::to_string(int(kernel_floor_us)) +
           " us (estimates, docs/engine.md)";
}

}  // namespace tpverify::sim

namespace tpverify::sim {

void attach_kernel_table(GpuModel& gpu) {
    const KernelTable& table = h200_kernel_table();
    // Measured times apply to the GPU they were measured on (and, interpolated, to its other
    // shapes); another GPU keeps the roofline estimates, which price_assumption() names.
    if (table.copy_gbps <= 0 || gpu.name.rfind(table.gpu, 0) != 0) return;
    gpu.table = &table;
    gpu.table_native = true;
}

}  // namespace tpverify::sim
