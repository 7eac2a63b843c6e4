#pragma once
// The NCCL_DEBUG=INFO-heavy log of 8 ranks the watcher benchmarks read (docs/benchmarks-watcher.md):
// bench_watcher feeds it from memory, bench_watch_vs_grep writes it to a file for
// `ncclsweep watch --log` and grep.
#include <cstddef>
#include <string>

#include <fmt/format.h>

namespace ncclsweep::bench {

/// A deterministic, realistic mix: TUNING lines for every collective of every pass (the bulk
/// with NCCL_DEBUG_SUBSYS=TUNING), init/transport chatter, server and decode lines.
inline std::string make_log(std::size_t target_bytes, std::size_t& lines) {
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

}  // namespace ncclsweep::bench
