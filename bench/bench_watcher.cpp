// Watcher throughput on an NCCL_DEBUG=INFO-heavy log from 8 ranks (docs/benchmarks-watcher.md).
// Generates the log in memory (default 200 MB), then feeds it line by line on one core:
//   1. the rule catalog's match() alone (the literal prefilter and the candidates' regexes),
//   2. the full Watcher::feed() (match, extraction, effective NCCL config, context ring).
// Usage: bench_watcher [MEGABYTES] [REPEATS]
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <ctime>
#include <string>
#include <string_view>
#include <vector>

#include <fmt/format.h>

#include "bench/nccl_info_log.hpp"
#include "core/watch/rule_catalog.hpp"
#include "core/watch/watcher.hpp"

using namespace ncclsweep;

namespace {

/// CPU time of this thread: on a shared machine, wall time would also count other jobs.
double thread_cpu_seconds() {
    timespec ts{};
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
    return static_cast<double>(ts.tv_sec) + static_cast<double>(ts.tv_nsec) * 1e-9;
}

struct Timing {
    double cpu = 1e30, wall = 1e30;
};

template <typename F>
void measure(Timing& best, F&& work) {
    const auto wall0 = std::chrono::steady_clock::now();
    const double cpu0 = thread_cpu_seconds();
    work();
    best.cpu = std::min(best.cpu, thread_cpu_seconds() - cpu0);
    best.wall =
        std::min(best.wall, std::chrono::duration<double>(std::chrono::steady_clock::now() - wall0).count());
}

void report(const char* what, std::size_t bytes, std::size_t lines, const Timing& t) {
    std::printf("%-24s %7.0f MB/s  %9.0f lines/s per CPU-second (%.2f s CPU, %.2f s wall)\n", what,
                static_cast<double>(bytes) / t.cpu / 1e6, static_cast<double>(lines) / t.cpu, t.cpu, t.wall);
}

}  // namespace

int main(int argc, char** argv) {
    const std::size_t megabytes = argc > 1 ? std::strtoul(argv[1], nullptr, 10) : 200;
    const int repeats = argc > 2 ? std::atoi(argv[2]) : 3;
    std::size_t lines = 0;
    const std::string log = bench::make_log(megabytes * 1000 * 1000, lines);
    std::vector<std::string_view> views;
    views.reserve(lines);
    for (std::size_t begin = 0; begin < log.size();) {
        auto end = log.find('\n', begin);
        views.emplace_back(log.data() + begin, end - begin);
        begin = end + 1;
    }
    auto catalog = RuleCatalog::with_user_rules({});
    if (!catalog) {
        std::fprintf(stderr, "%s\n", catalog.error().message.c_str());
        return 1;
    }
    std::printf("log: %zu bytes, %zu lines, %zu rules\n", log.size(), lines, (*catalog)->size());

    Timing best_match, best_feed;
    std::size_t hits_total = 0;
    for (int r = 0; r < repeats; ++r) {
        std::vector<int> hits;
        hits_total = 0;
        measure(best_match, [&] {
            for (auto view : views) {
                (*catalog)->match(view, hits);
                hits_total += hits.size();
            }
        });
        const auto t0 = std::chrono::steady_clock::now();
        Watcher watcher(*catalog, WatcherOptions{}, t0);
        OutputLine line;
        measure(best_feed, [&] {
            for (auto view : views) {
                line.text.assign(view);
                line.when = t0;
                watcher.feed(line);
            }
        });
        if (r == 0)
            std::printf("verdict: %s, metrics: %zu, effective NCCL: %s\n",
                        std::string(to_string(watcher.state())).c_str(), watcher.metrics().size(),
                        watcher.effective_nccl().summary().c_str());
    }
    std::printf("rule hits: %zu (best of %d runs)\n", hits_total, repeats);
    report("catalog match only", log.size(), lines, best_match);
    report("Watcher::feed (full)", log.size(), lines, best_feed);
    return 0;
}
