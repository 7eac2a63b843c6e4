// Watcher throughput on an NCCL_DEBUG=INFO-heavy log from 8 ranks (docs/benchmarks.md).
// Generates the log in memory (default 200 MB), then feeds it line by line on one core:
//   1. the rule catalog's match() alone (RE2::Set prefilter + hits),
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

#include "core/watch/rule_catalog.hpp"
#include "core/watch/watcher.hpp"

using namespace ncclsweep;

namespace {

/// A deterministic, realistic mix: TUNING lines for every collective of every pass (the bulk
/// with NCCL_DEBUG_SUBSYS=TUNING), init/transport chatter, server and decode lines.
std::string make_log(std::size_t target_bytes, std::size_t& lines) {
    static const char* k_init[] = {
        "NCCL INFO Channel {:02}/02 : 0 1 2 3 4 5 6 7",
        "NCCL INFO Channel {:02}/0 : {}[{}] -> {}[{}] via P2P/CUMEM/read",
        "NCCL INFO Connected all rings, use ring PXN 0 GDR 0",
        "NCCL INFO threadThresholds 8/8/64 | 64/8/64 | 512 | 512",
        "NCCL INFO comm 0x55d5c0a0b{} rank {} nRanks 8 nNodes 1 localRanks 8 localRank {} MNNVL 0",
        "NCCL INFO {} coll channels, 2 collnet channels, 0 nvls channels, 2 p2p channels, 2 p2p channels per "
        "peer",
        "NCCL INFO ncclCommInitRank comm 0x55d5c0a0b{} rank {} nranks 8 cudaDev {} nvmlDev {} busId 1000 "
        "commId 0x9f2b1c3d4e5f6071 - Init COMPLETE",
        "NCCL INFO P2P Chunksize set to 131072",
    };
    std::string log;
    log.reserve(target_bytes + 4096);
    lines = 0;
    std::size_t step = 0;
    auto add = [&](const std::string& line) {
        log += line;
        log += '\n';
        ++lines;
    };
    while (log.size() < target_bytes) {
        const int rank = static_cast<int>(step % 8);
        const std::string prefix = fmt::format("gpu-node-01:{}:{} [{}] ", 41000 + rank, 41200 + rank, rank);
        const auto kind = step % 20;
        if (kind < 12) {
            const unsigned tokens = 1u << (step % 4);
            add(prefix +
                fmt::format("NCCL INFO AllReduce: {} Bytes -> Algo RING proto LL channel{{Lo..Hi}}={{0..0}}",
                            14336 * tokens));
        } else if (kind < 13) {
            add(prefix +
                fmt::format(
                    "NCCL INFO AllGather: {} Bytes -> Algo RING proto SIMPLE channel{{Lo..Hi}}={{0..1}}",
                    1310720));
        } else if (kind < 18) {
            const int a = static_cast<int>(step % 7);
            add(prefix +
                fmt::format(fmt::runtime(k_init[step % 8]), a, rank, rank, (rank + 1) % 8, (rank + 1) % 8));
        } else if (kind < 19) {
            add(
                fmt::format("[2025-06-01 12:10:{:02} TP{}] Decode batch. #running-req: 1, #token: {}, token "
                            "usage: 0.00, accept len: 3.{:02}, "
                            "cuda graph: True, gen throughput (token/s): 54.{:02}, #queue-req: 0",
                            step % 60, rank, 1000 + step % 5000, step % 100, step % 100));
        } else {
            add(fmt::format(
                "[2025-06-01 12:10:{:02}] INFO:     127.0.0.1:{} - \"POST /generate HTTP/1.1\" 200 OK",
                step % 60, 50000 + step % 10000));
        }
        ++step;
    }
    return log;
}

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
    const std::string log = make_log(megabytes * 1000 * 1000, lines);
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
