// Store throughput: planning 10,000 experiments, recording each with 5 repeats x 3 metrics in
// its own transaction (as a sweep does), and loading them back (as results/diff do).
// Usage: bench_store [DIR] [EXPERIMENTS]   (figures in docs/benchmarks.md, section "Store")
#include <fmt/format.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <string>
#include <vector>

#include "results/store/store.hpp"

using namespace ncclsweep;
using namespace ncclsweep::results;

namespace {

constexpr int k_repeats = 5;
const char* const k_metrics[] = {"tok_s", "verify_us_p50", "verify_us_p99"};

double seconds_since(std::chrono::steady_clock::time_point start) {
    return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

std::vector<Experiment> plan(int count) {
    std::vector<Experiment> experiments;
    experiments.reserve(static_cast<std::size_t>(count));
    const char* algos[] = {"Ring", "Tree", "CollnetDirect", "NVLS"};
    const char* protos[] = {"LL", "LL128", "Simple"};
    for (int id = 1; id <= count; ++id) {
        Experiment e;
        e.id = id;
        const std::string algo = algos[id % 4];
        const std::string proto = protos[(id / 4) % 3];
        const std::string channels = std::to_string(1 + (id / 12) % 32);
        const std::string tokens = std::to_string(id);
        e.params = {
            {"NCCL_ALGO", algo}, {"NCCL_PROTO", proto}, {"NCCL_MIN_NCHANNELS", channels}, {"tokens", tokens}};
        e.canonical = fmt::format("NCCL_ALGO={};NCCL_MIN_NCHANNELS={};NCCL_PROTO={};tokens={}", algo,
                                  channels, proto, tokens);
        e.key = fmt::format("{:016x}", static_cast<unsigned long long>(id) * 0x9E3779B97F4A7C15ULL);
        e.env = {{"NCCL_DEBUG", "INFO"},
                 {"NCCL_DEBUG_SUBSYS", "TUNING"},
                 {"NCCL_ALGO", algo},
                 {"NCCL_PROTO", proto},
                 {"NCCL_MIN_NCHANNELS", channels}};
        e.workload = {{"preset", "llama-70b"}, {"tp", "8"}, {"tokens", tokens}};
        e.argv = {"tpverify", "--json", "--preset", "llama-70b", "--tp", "8", "--tokens", tokens};
        experiments.push_back(std::move(e));
    }
    return experiments;
}

ExperimentOutcome outcome_for(int id) {
    ExperimentOutcome o;
    o.status = id % 17 == 0 ? ExperimentStatus::failed : ExperimentStatus::ok;
    if (o.status == ExperimentStatus::failed) {
        o.failure_class = "graph_capture";
        o.diagnosis = "NCCL WARN Cuda failure 'operation not permitted when stream is capturing'";
    }
    o.effective_nccl = "AllReduce: 16384 Bytes -> Algo RING proto LL channel{Lo..Hi}={0..3}";
    o.timings.init_s = 1.5;
    o.timings.total_s = 4.25;
    for (int r = 0; r < k_repeats; ++r) {
        for (int m = 0; m < 3; ++m) o.samples.push_back({r, k_metrics[m], 1000.0 + id + r * 0.5 + m});
    }
    return o;
}

int run(const std::filesystem::path& path, int count, Durability durability) {
    std::filesystem::remove(path);
    std::filesystem::remove(path.string() + "-wal");
    std::filesystem::remove(path.string() + "-shm");
    StoreOptions options;
    options.durability = durability;
    Result<Store> store = Store::open(path.string(), options);
    if (!store) {
        std::fprintf(stderr, "%s\n", store.error().message.c_str());
        return 1;
    }
    const auto experiments = plan(count);
    SweepRecord record;
    record.name = "bench";
    record.repeats = k_repeats;
    const std::int64_t sweep = *store->create_sweep(record);

    auto start = std::chrono::steady_clock::now();
    if (auto added = store->add_experiments(sweep, experiments); !added) {
        std::fprintf(stderr, "%s\n", added.error().message.c_str());
        return 1;
    }
    const double add_s = seconds_since(start);

    start = std::chrono::steady_clock::now();
    for (const Experiment& e : experiments) {
        if (!store->begin_experiment(sweep, e.id, 1) ||
            !store->record_experiment(sweep, e.id, outcome_for(e.id))) {
            std::fprintf(stderr, "recording experiment %d failed\n", e.id);
            return 1;
        }
    }
    const double record_s = seconds_since(start);

    start = std::chrono::steady_clock::now();
    Result<std::vector<StoredExperiment>> loaded = store->load_experiments(sweep);
    const double load_s = seconds_since(start);
    std::size_t samples = 0;
    for (const auto& e : *loaded) samples += e.outcome.samples.size();

    StoreOptions read_only;
    read_only.access = Access::read_only;
    Result<Store> reader = Store::open(path.string(), read_only);
    start = std::chrono::steady_clock::now();
    Result<std::vector<StoredExperiment>> cold = reader->load_experiments(sweep);
    const double cold_s = seconds_since(start);

    const char* mode = durability == Durability::full ? "FULL" : "NORMAL";
    std::printf("synchronous=%s experiments=%d samples=%zu file=%.1f MB\n", mode, count, samples,
                static_cast<double>(std::filesystem::file_size(path)) / 1e6);
    std::printf("  add_experiments (one transaction):      %8.3f s  (%6.1f us/experiment)\n", add_s,
                add_s * 1e6 / count);
    std::printf("  begin + record (2 transactions each):   %8.3f s  (%6.1f us/experiment)\n", record_s,
                record_s * 1e6 / count);
    std::printf("  load_experiments (same connection):     %8.3f s\n", load_s);
    std::printf("  load_experiments (new read-only store): %8.3f s  (%zu experiments)\n", cold_s,
                cold ? cold->size() : 0);
    return 0;
}

}  // namespace

int main(int argc, char** argv) {
    const std::filesystem::path dir = argc > 1 ? argv[1] : std::filesystem::temp_directory_path();
    const int count = argc > 2 ? std::atoi(argv[2]) : 10000;
    const auto path = dir / "bench_store.db";
    int rc = run(path, count, Durability::full);
    if (rc == 0) rc = run(path, count, Durability::normal);
    std::filesystem::remove(path);
    std::filesystem::remove(path.string() + "-wal");
    std::filesystem::remove(path.string() + "-shm");
    return rc;
}
