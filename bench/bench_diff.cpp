// Benchmark: `ncclsweep diff` and `results show` on two large sweeps (default 10,000 experiments
// x 5 repeats x 3 metrics each). Times what the commands do: open the database read-only, load,
// summarize/compare, render (table and JSON). Figures are recorded in docs/benchmarks-results.md.
//   bench_diff DIR [EXPERIMENTS] [REPEATS] [RUNS]
#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <ctime>
#include <filesystem>
#include <functional>
#include <string>
#include <vector>

#include "results/print/printers.hpp"
#include "results/query/diff.hpp"
#include "results/query/query.hpp"
#include "results/store/store.hpp"

using namespace ncclsweep;

namespace {

using Clock = std::chrono::steady_clock;

Experiment planned(int id) {
    Experiment e;
    e.id = id;
    const std::string algo = id % 2 ? "Ring" : "Tree";
    const std::string proto = id % 3 ? "LL" : "Simple";
    const std::string channels = std::to_string(1 + id % 16);
    e.params = {{"NCCL_ALGO", algo},
                {"NCCL_PROTO", proto},
                {"NCCL_MIN_NCHANNELS", channels},
                {"tokens", std::to_string(id)}};
    e.canonical =
        fmt::format("NCCL_ALGO={};NCCL_MIN_NCHANNELS={};NCCL_PROTO={};tokens={}", algo, channels, proto, id);
    e.key = fmt::format("{:016x}", std::hash<std::string>{}(e.canonical));
    e.env = {{"NCCL_ALGO", algo}, {"NCCL_PROTO", proto}, {"NCCL_MIN_NCHANNELS", channels}};
    e.workload = {{"tokens", std::to_string(id)}};
    e.argv = {"tpverify", "--json", "--tokens", std::to_string(id)};
    return e;
}

// Deterministic noise in [-1%, +1%] from (sweep, id, repeat).
double jitter(int sweep, int id, int repeat) {
    unsigned x = static_cast<unsigned>(sweep * 7919 + id * 104729 + repeat * 1299709);
    x ^= x >> 13;
    x *= 0x5bd1e995u;
    x ^= x >> 15;
    return ((x % 2001) / 1000.0 - 1.0) / 100.0;
}

// Sweep 1: all ok. Sweep 2: every 10th experiment 10% slower, every 100th crashes.
results::ExperimentOutcome outcome(int sweep, int id, int repeats) {
    results::ExperimentOutcome o;
    if (sweep == 2 && id % 100 == 0) {
        o.status = results::ExperimentStatus::failed;
        o.failure_class = "graph_capture";
        o.diagnosis =
            "graph_capture: operation not permitted when stream is capturing\nline (cuda_capture): ...\n";
        return o;
    }
    o.effective_nccl = "AllReduce: Ring/LL, 2 channels";
    o.timings.total_s = 2.0;
    const double slow = sweep == 2 && id % 10 == 0 ? 0.9 : 1.0;
    for (int r = 0; r < repeats; ++r) {
        const double tok_s = (300 + id % 200) * slow * (1 + jitter(sweep, id, r));
        o.samples.push_back({r, "tok_s", tok_s});
        o.samples.push_back({r, "verify_us_p50", 3.2e6 / tok_s - 2000});
        o.samples.push_back({r, "collective_us", 20 + id % 7 + jitter(sweep, id, r)});
    }
    return o;
}

int fill(const std::string& path, int experiments, int repeats) {
    results::StoreOptions options;
    options.durability = results::Durability::normal;
    auto store = results::Store::open(path, options);
    if (!store) return std::fprintf(stderr, "%s\n", store.error().message.c_str()), 1;
    std::vector<Experiment> plan;
    for (int id = 1; id <= experiments; ++id) plan.push_back(planned(id));
    for (int sweep = 1; sweep <= 2; ++sweep) {
        results::SweepRecord record{
            "bench", "bench", "bench.yaml", "sweep: bench\n", "", "local", "", "bench", repeats, "", {}, ""};
        auto id = store->create_sweep(record, plan);
        if (!id) return std::fprintf(stderr, "%s\n", id.error().message.c_str()), 1;
        for (int e = 1; e <= experiments; ++e)
            if (auto ok = store->record_experiment(*id, e, outcome(sweep, e, repeats)); !ok)
                return std::fprintf(stderr, "%s\n", ok.error().message.c_str()), 1;
        if (auto ok = store->finish_sweep(*id, results::SweepState::done); !ok) return 1;
    }
    return 0;
}

// Runs `work` `runs` times and prints min and median wall seconds, and the median CPU seconds
// of this process (the honest figure on a shared, loaded machine).
void measure(const char* what, int runs, const std::function<std::size_t()>& work) {
    std::vector<double> wall, cpu;
    std::size_t bytes = 0;
    for (int i = 0; i < runs; ++i) {
        const auto start = Clock::now();
        const std::clock_t cpu_start = std::clock();
        bytes = work();
        cpu.push_back(static_cast<double>(std::clock() - cpu_start) / CLOCKS_PER_SEC);
        wall.push_back(std::chrono::duration<double>(Clock::now() - start).count());
    }
    std::sort(wall.begin(), wall.end());
    std::sort(cpu.begin(), cpu.end());
    std::printf("%-44s wall min %.3f s  median %.3f s  cpu median %.3f s  (%zu bytes out)\n", what,
                wall.front(), wall[wall.size() / 2], cpu[cpu.size() / 2], bytes);
}

[[noreturn]] void die(const Error& error) {
    std::fprintf(stderr, "bench_diff: %s\n", error.message.c_str());
    std::exit(1);
}

results::Store open_read_only(const std::string& path) {
    results::StoreOptions options;
    options.access = results::Access::read_only;
    auto store = results::Store::open(path, options);
    if (!store) die(store.error());
    return std::move(*store);
}

}  // namespace

int main(int argc, char** argv) {
    if (argc < 2) {
        std::fprintf(stderr, "usage: bench_diff DIR [EXPERIMENTS=10000] [REPEATS=5] [RUNS=5]\n");
        return 2;
    }
    const int experiments = argc > 2 ? std::atoi(argv[2]) : 10000;
    const int repeats = argc > 3 ? std::atoi(argv[3]) : 5;
    const int runs = argc > 4 ? std::atoi(argv[4]) : 5;
    const std::string path = (std::filesystem::path(argv[1]) / "bench_diff.db").string();
    std::filesystem::remove(path);
    auto start = Clock::now();
    if (int rc = fill(path, experiments, repeats); rc != 0) return rc;
    std::printf("filled 2 sweeps x %d experiments x %d repeats x 3 metrics in %.1f s (%s, %.1f MB)\n",
                experiments, repeats, std::chrono::duration<double>(Clock::now() - start).count(),
                path.c_str(), static_cast<double>(std::filesystem::file_size(path)) / 1e6);

    int regressions = 0;
    auto diff_as = [&](results::Format format) {
        return [&, format]() -> std::size_t {
            auto store = open_read_only(path);
            auto diff = results::diff_sweeps(store, "1", "2", {});
            if (!diff) die(diff.error());
            regressions = diff->counts.regressions;
            std::string text;
            results::Output out(text);
            results::make_printer(format, out)->print_diff(*diff);
            return text.size();
        };
    };
    auto show_as = [&](results::Format format) {
        return [&, format]() -> std::size_t {
            auto store = open_read_only(path);
            auto table = results::load_sweep_table(store, "latest");
            if (!table) die(table.error());
            if (auto sorted = results::sort_rows(*table, {"tok_s", stats::Direction::higher_is_better});
                !sorted)
                die(sorted.error());
            std::string text;
            results::Output out(text);
            results::make_printer(format, out)->print_table(*table);
            return text.size();
        };
    };
    auto load_only = [&]() -> std::size_t {
        auto store = open_read_only(path);
        auto loaded = store.load_experiments(2);
        return loaded ? loaded->size() : 0;
    };
    measure("load_experiments (one sweep, for reference)", runs, load_only);
    measure("diff 1 2 (load both + compare + table)", runs, diff_as(results::Format::table));
    measure("diff 1 2 --format json", runs, diff_as(results::Format::json));
    measure("results show latest --sort tok_s (table)", runs, show_as(results::Format::table));
    measure("results show latest --json", runs, show_as(results::Format::json));
    std::printf("diff found %d regressed experiments (expected %d)\n", regressions, experiments / 10);
    return 0;
}
