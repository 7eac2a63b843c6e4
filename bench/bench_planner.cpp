// Planner benchmark: plans a 1,000,000-point sweep (6 axes x 10 values) of the tpverify workload
// the way `ncclsweep plan` does and prints the time of each pass and the peak resident memory:
// the check pass (which also gathers the engine's distinct command lines), the engine's check of
// those lines (`tpverify --describe` and `--validate` on this machine), and each printer. Figures
// go to docs/benchmarks.md ("Planner").
//   bench_planner [points-per-axis=10] [axes=6] [tpverify path; default: the build's]
#include <sys/resource.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <ostream>
#include <streambuf>
#include <string>

#include "core/plan/plan.hpp"
#include "core/plan/plan_printer.hpp"
#include "core/spec/engine_validate.hpp"
#include "core/spec/spec_parser.hpp"
#include "core/sweep/engine_locator.hpp"
#include "core/sweep/workload_check.hpp"
#include "remote/local_target.hpp"

namespace {

/// An ostream that counts bytes and throws them away (the printers' cost without a disk).
class CountingBuffer final : public std::streambuf {
public:
    std::size_t bytes = 0;

protected:
    int_type overflow(int_type c) override {
        ++bytes;
        return c;
    }
    std::streamsize xsputn(const char*, std::streamsize n) override {
        bytes += static_cast<std::size_t>(n);
        return n;
    }
};

double seconds_since(std::chrono::steady_clock::time_point start) {
    return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

long peak_rss_kib() {
    rusage usage{};
    getrusage(RUSAGE_SELF, &usage);
    return usage.ru_maxrss;
}

}  // namespace

int main(int argc, char** argv) {
    using namespace ncclsweep;
    int per_axis = argc > 1 ? std::atoi(argv[1]) : 10;
    int axes = argc > 2 ? std::atoi(argv[2]) : 6;
    // Realistic axis names: three NCCL variables (validated per experiment) and workload parameters.
    const char* names[] = {"NCCL_NTHREADS", "NCCL_MIN_CTAS", "NCCL_BUFFSIZE", "tokens",
                           "iters",         "warmup",        "seed",          "noise"};
    std::string text =
        "sweep: bench\nworkload: {engine: tpverify, args: {backend: sim, topology: pcie-gen5}}\n"
        "env: {NCCL_P2P_LEVEL: SYS}\naxes:\n";
    for (int a = 0; a < axes && a < 8; ++a) {
        text += std::string("  ") + names[a] + ": [";
        for (int v = 0; v < per_axis; ++v) {
            long value = a == 0 ? 64 + 32 * (v % 15) : a == 2 ? 65536L << (v % 12) : v + 1;
            if (v > 0) text += ", ";
            text += std::to_string(value);
        }
        text += "]\n";
    }
    auto start = std::chrono::steady_clock::now();
    auto spec = parse_spec(text, "bench.yaml");
    if (!spec || !validate_spec(*spec)) {
        std::fprintf(stderr, "bench spec rejected: %s\n",
                     spec ? validate_spec(*spec).error().message.c_str() : spec.error().message.c_str());
        return 1;
    }
    PlanOptions options;
    options.max_experiments = 100000000;
    options.engine_path = argc > 3 ? argv[3] : locate_engine(current_executable());
    EngineRunSet engine_runs;
    auto summary = check_plan(*spec, options, [&](const Experiment& e) { engine_runs.add(e); });
    if (!summary) {
        std::fprintf(stderr, "%s\n", summary.error().message.c_str());
        return 1;
    }
    double check_s = seconds_since(start);
    std::printf("points            %llu\n", static_cast<unsigned long long>(summary->count));
    std::printf("warning groups    %zu\n", summary->warnings.size());
    std::printf("check pass        %.2f s (%.2f us/point)\n", check_s,
                1e6 * check_s / double(summary->count));
    // What `plan` and `run` ask the engine before anything runs: only the distinct command lines.
    remote::LocalTarget local;
    auto engine_start = std::chrono::steady_clock::now();
    auto checked = check_engine_spec(*spec, options.engine_path, engine_runs.runs(), local);
    if (!checked) {
        std::fprintf(stderr, "%s\n", checked.error().message.c_str());
        return 1;
    }
    std::printf("engine check      %.2f s (%zu distinct command lines, %s)\n", seconds_since(engine_start),
                engine_runs.runs().size(), options.engine_path.c_str());
    std::printf("plan to here      %.2f s\n", seconds_since(start));
    for (PlanFormat format : {PlanFormat::table, PlanFormat::json}) {
        CountingBuffer buffer;
        std::ostream out(&buffer);
        auto printer = make_plan_printer(format, out);
        auto begin = std::chrono::steady_clock::now();
        if (auto ok = print_plan(*spec, options, *summary, *printer); !ok) {
            std::fprintf(stderr, "%s\n", ok.error().message.c_str());
            return 1;
        }
        double print_s = seconds_since(begin);
        std::printf("print %-5s       %.2f s, %.1f MB written\n",
                    format == PlanFormat::json ? "json" : "table", print_s, double(buffer.bytes) / 1e6);
    }
    std::printf("peak RSS          %.1f MiB\n", double(peak_rss_kib()) / 1024.0);
    return 0;
}
