// NCCL 2.28's rules as the sim applies them: NCCL_P2P_LEVEL parsing (paths.cc, ncclGetLevel),
// per-architecture caps and protocol factors (tuning.cc), the channel/thread cut (enqueue.cc),
// GPU models per topology and where fusion can run.
#include <map>
#include <string>

#include "engine/sim/sim_model.hpp"
#include "tests/engine/sim_env.hpp"
#include "tests/support/catch.hpp"

using namespace tpverify;
using namespace tpverify::sim;
using tpverify::sim::testing::env_of;

namespace {
Choice rules_pick(const std::map<std::string, std::string>& vars, Func f, std::uint64_t bytes,
                  const TopologyModel& topo = topology_model(Topology::pcie_gen5), int ranks = 8) {
    return Comm(topo, env_of(vars), ranks).choose(f, bytes);
}
}  // namespace

TEST_CASE("sim rules: NCCL_P2P_LEVEL numbers are NCCL's old numbering LOC PIX PXB PHB SYS") {
    CHECK(parse_p2p_level("0") == static_cast<int>(Path::loc));
    CHECK(parse_p2p_level("1") == static_cast<int>(Path::pix));
    CHECK(parse_p2p_level("2") == static_cast<int>(Path::pxb));
    CHECK(parse_p2p_level("3") == static_cast<int>(Path::phb));
    CHECK(parse_p2p_level("4") == static_cast<int>(Path::sys));
    CHECK(parse_p2p_level("9") == static_cast<int>(Path::sys));   // clamped to the last old level
    CHECK(parse_p2p_level("3x") == static_cast<int>(Path::phb));  // strtol stops at the x
    CHECK(parse_p2p_level("PHB") == static_cast<int>(Path::phb));
    CHECK(parse_p2p_level("NVL") == static_cast<int>(Path::nvl));
    CHECK(parse_p2p_level("phb") == -1);  // NCCL compares names with strcmp: case matters
    CHECK(parse_p2p_level("Sys") == -1);
    CHECK(parse_p2p_level("") == -1);
    CHECK(parse_p2p_level("NET") == -1);  // beyond SYS: not a P2P level
}

TEST_CASE("sim rules: NCCL_P2P_LEVEL=3 and PHB give the same transport and the same pass") {
    const auto topo = topology_model(Topology::pcie_gen5);
    const Comm by_number(topo, env_of({{"NCCL_P2P_LEVEL", "3"}}), 8);
    const Comm by_name(topo, env_of({{"NCCL_P2P_LEVEL", "PHB"}}), 8);
    CHECK(by_number.transport() == Transport::p2p);  // the GPUs sit behind the host bridge (PHB)
    CHECK(by_name.transport() == Transport::p2p);
    CHECK(by_number.choose(Func::all_reduce, 57344).time_us ==
          by_name.choose(Func::all_reduce, 57344).time_us);
    // Lower case is not a level for NCCL: the default (PXB) applies and NCCL goes through SHM.
    CHECK(Comm(topo, env_of({{"NCCL_P2P_LEVEL", "phb"}}), 8).transport() == Transport::shm);
    CHECK(Comm(topo, env_of({{"NCCL_P2P_LEVEL", "2"}}), 8).transport() == Transport::shm);
    // NCCL_P2P_DISABLE counts only when it is 1; it wins over NCCL_P2P_LEVEL.
    CHECK(Comm(topo, env_of({{"NCCL_P2P_DISABLE", "2"}, {"NCCL_P2P_LEVEL", "SYS"}}), 8).transport() ==
          Transport::p2p);
    CHECK(Comm(topo, env_of({{"NCCL_P2P_DISABLE", "1"}, {"NCCL_P2P_LEVEL", "SYS"}}), 8).transport() ==
          Transport::shm);
}

TEST_CASE("sim rules: each topology has its own GPU and the incident's is the RTX PRO 6000 on PCIe gen5") {
    const auto gen5 = topology_model(Topology::pcie_gen5);
    CHECK(gen5.gpu.name.find("RTX PRO 6000") != std::string::npos);
    CHECK(gen5.gpu.sm == 120);
    CHECK_FALSE(gen5.nvlink);
    CHECK(gen5.path == Path::phb);
    CHECK(topology_model(Topology::nvlink).gpu.sm == 90);
    CHECK(topology_model(Topology::pcie_gen4).gpu.sm == 89);
    // The same GEMM is slower on the GDDR7 card than on the H200's HBM.
    const std::uint64_t weights = 64ull << 20;
    CHECK(gen5.gpu.gemm_us(weights, 1e6) > topology_model(Topology::nvlink).gpu.gemm_us(weights, 1e6));
}

TEST_CASE("sim rules: Ring/LL runs at half the bus bandwidth capped by the architecture's LL maximum") {
    // Large enough that the bandwidth term dominates; Ring/LL over 2 PCIe channels of 24 GB/s.
    const std::uint64_t bytes = 64ull << 20;
    const Choice ll = rules_pick({{"NCCL_ALGO", "ring"}, {"NCCL_PROTO", "LL"}}, Func::all_gather, bytes);
    const Choice simple =
        rules_pick({{"NCCL_ALGO", "ring"}, {"NCCL_PROTO", "Simple"}}, Func::all_gather, bytes);
    const double ll_lat = 6.6 + 7 * 1.0, simple_lat = 8.4 + 7 * 5.7;
    // Model time minus latency is bytes / bandwidth: LL's is twice Simple's (x0.5 in 2.28; x1/3 for
    // AllGather in NCCL <= 2.20 would make it three times).
    CHECK((ll.model_us - ll_lat) / (simple.model_us - simple_lat) == Approx(2.0).epsilon(1e-6));
    // On NVLink (16 channels, 360 GB/s of bus) half the bus is 180 GB/s: above Hopper's LL cap
    // (141 GB/s), below Blackwell's (2 x 141).
    TopologyModel nvl = topology_model(Topology::nvlink);
    const double nvl_lat = 6.6 + 7 * 0.6;
    const double algo_ratio = 8.0 / 7.0;  // ring AllGather: bus -> algorithm bandwidth
    const Choice hopper =
        rules_pick({{"NCCL_ALGO", "ring"}, {"NCCL_PROTO", "LL"}}, Func::all_gather, bytes, nvl);
    CHECK(hopper.model_us - nvl_lat == Approx(bytes / (1000.0 * 141.0 * algo_ratio)).epsilon(1e-4));
    nvl.gpu.sm = 100;
    const Choice blackwell =
        rules_pick({{"NCCL_ALGO", "ring"}, {"NCCL_PROTO", "LL"}}, Func::all_gather, bytes, nvl);
    CHECK(blackwell.model_us - nvl_lat == Approx(bytes / (1000.0 * 180.0 * algo_ratio)).epsilon(1e-4));
}

TEST_CASE("sim rules: Tree is 0.92 of the bus capped at channels x perChMaxTreeBw") {
    const std::uint64_t bytes = 1ull << 30;                // tree correction factor is 1 at this size
    TopologyModel nvl = topology_model(Topology::nvlink);  // 16 channels x 22.5 GB/s = 360
    const auto tree = [&](const TopologyModel& t) {
        return rules_pick({{"NCCL_ALGO", "tree"}, {"NCCL_PROTO", "Simple"}}, Func::all_reduce, bytes, t)
                   .model_us -
               (8.4 + 14 * 4.0);
    };
    // Hopper: min(360 x 0.92, 16 x 38.7) = 331.2; algorithm bandwidth is half of it.
    CHECK(tree(nvl) == Approx(bytes / (1000.0 * 331.2 * 0.5)).epsilon(1e-4));
    TopologyModel capped = nvl;
    capped.bus_bw_gbs = 16 * 60.0;  // 883 > 16 x 38.7 = 619.2: the per-channel cap binds
    CHECK(tree(capped) == Approx(bytes / (1000.0 * 619.2 * 0.5)).epsilon(1e-4));
}

TEST_CASE("sim rules: LL128 is capped per channel by architecture and off by default over PCIe") {
    TopologyModel nvl = topology_model(Topology::nvlink);
    nvl.bus_bw_gbs = 16 * 60.0;
    const std::uint64_t bytes = 1ull << 30;
    const auto ring_ll128 = [&](const TopologyModel& t) {
        return rules_pick({{"NCCL_ALGO", "ring"}, {"NCCL_PROTO", "LL128"}}, Func::all_reduce, bytes, t)
                   .model_us -
               (14.0 + 14 * 1.9);
    };
    const double ar_ratio = 8.0 / 14.0;
    CHECK(ring_ll128(nvl) == Approx(bytes / (1000.0 * 16 * 36.7 * ar_ratio)).epsilon(1e-4));  // Hopper
    nvl.gpu.sm = 100;
    CHECK(ring_ll128(nvl) == Approx(bytes / (1000.0 * 16 * 40.0 * ar_ratio)).epsilon(1e-4));  // Blackwell
    const auto gen5 = topology_model(Topology::pcie_gen5);
    CHECK_FALSE(Comm(gen5, env_of({}), 8).ll128_default());
    CHECK(Comm(topology_model(Topology::nvlink), env_of({}), 8).ll128_default());
}

TEST_CASE("sim rules: Simple's extra warp comes after the channel cut") {
    // 8 ranks, Ring/Simple, 2 channels of 512 threads, 64 B per thread: the cut keeps 2 channels
    // from 2 x 512 x 64 = 64 KiB up. Adding the warp first (544 threads) would move that edge
    // to 68 KiB and cut a 66 KiB message to one channel.
    const std::map<std::string, std::string> simple = {{"NCCL_ALGO", "ring"}, {"NCCL_PROTO", "Simple"}};
    const Choice c = rules_pick(simple, Func::all_reduce, 66 * 1024);
    CHECK(c.channels == 2);
    CHECK(c.threads == 512 + 32);
    const Choice small = rules_pick(simple, Func::all_reduce, 60 * 1024);
    CHECK(small.channels == 1);
    // Tree always runs NCCL_MAX_NTHREADS (640) threads.
    CHECK(rules_pick({{"NCCL_ALGO", "tree"}, {"NCCL_PROTO", "Simple"}}, Func::all_reduce, 1 << 20).threads ==
          640);
}

TEST_CASE("sim rules: fusion runs only with peer access and at most 8 ranks") {
    const auto topo = topology_model(Topology::pcie_gen5);
    std::string reason;
    CHECK(fusion_possible(topo, env_of({}), 8, reason));
    CHECK(reason.empty());
    CHECK_FALSE(fusion_possible(topo, env_of({{"NCCL_P2P_DISABLE", "1"}}), 8, reason));
    CHECK(reason.find("NCCL_P2P_DISABLE") != std::string::npos);
    reason.clear();
    CHECK_FALSE(fusion_possible(topo, env_of({}), 16, reason));
    CHECK(reason.find("at most 8 ranks") != std::string::npos);
    TopologyModel no_peer = topo;
    no_peer.peer_access = false;
    reason.clear();
    CHECK_FALSE(fusion_possible(no_peer, env_of({}), 8, reason));
    CHECK(reason.find("cannot access") != std::string::npos);
}
