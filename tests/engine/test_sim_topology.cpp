// The sim on a machine's own `nvidia-smi topo -m` (--topology-file): P2P per pair under
// NCCL_P2P_LEVEL, rings that cross sockets at NCCL's inter-socket bandwidth, fusion only where no
// pair is SYS apart. Each rule against its source figure (docs/engine.md, "Topology files").
#include <map>
#include <string>

#include "engine/sim/sim_model.hpp"
#include "engine/topo_matrix.hpp"
#include "tests/engine/sim_env.hpp"
#include "tests/support/catch.hpp"
#include "tests/support/temp_dir.hpp"

using namespace tpverify;
using namespace tpverify::sim;
using tpverify::sim::testing::env_of;

namespace {
TopologyModel machine(const std::string& fixture, Topology base = Topology::pcie_gen5) {
    TopoMatrix m;
    std::string error;
    REQUIRE(
        load_topo_matrix(ncclsweep::test::source_path("tests/fixtures/topo/" + fixture).string(), m, error));
    return with_matrix(topology_model(base), m);
}
Choice all_reduce(const TopologyModel& topo, const std::map<std::string, std::string>& vars = {},
                  std::uint64_t bytes = 57344, int ranks = 8) {
    return Comm(topo, env_of(vars), ranks).choose(Func::all_reduce, bytes);
}
}  // namespace

TEST_CASE("sim topology: a two-socket box prices an 8-rank all-reduce clearly above a one-switch box") {
    const TopologyModel one_switch = machine("one-switch-8gpu-handwritten.txt");
    const TopologyModel two_socket = machine("pcie-2socket-4090-gpuallocator-17.txt");
    const TopologyModel bridges = machine("pcie-2socket-nvbridge-trtllm-1868.txt");
    // The ring's bandwidth is its slowest hop: a PCIe Gen5 link (NCCL topo.cc, 48 GB/s) on the
    // switch, NCCL's AMD_BW (16 GB/s) where it crosses between sockets.
    CHECK(ring_graph(one_switch, 8).bus_bw_gbs == 48.0);
    CHECK_FALSE(ring_graph(one_switch, 8).crosses_sockets);
    CHECK(ring_graph(two_socket, 8).bus_bw_gbs == k_inter_socket_bw_gbs);
    CHECK(ring_graph(bridges, 8).crosses_sockets);
    CHECK(ring_graph(bridges, 8).type_intra == Path::sys);
    const Choice fast = all_reduce(one_switch);
    const Choice slow = all_reduce(two_socket);
    CHECK(fast.transport == Transport::p2p);  // PIX is within NCCL's default level PXB
    CHECK(slow.transport == Transport::shm);  // SYS is not
    CHECK(slow.time_us > 1.3 * fast.time_us);
    CHECK(all_reduce(bridges).time_us > 1.3 * fast.time_us);
    // At 57 KB Ring/LL's latency is the same on both (NCCL's PCI hop latency): the difference is
    // bandwidth, 57344 B at LL's half of 16 GB/s x 8/14 x 0.77 (SHM) against half of 48 x 8/14.
    CHECK(fast.time_us == Approx(20.6 + 57344 / (24.0 * 8 / 14 * 1000)));
    CHECK(slow.time_us == Approx(20.6 + 57344 / (8.0 * 8 / 14 * k_shm_bw_factor * 1000)));
    // P2P everywhere (NCCL_P2P_LEVEL=SYS) removes SHM's cost but not the socket crossing.
    const Choice p2p = all_reduce(two_socket, {{"NCCL_P2P_LEVEL", "SYS"}});
    CHECK(p2p.transport == Transport::p2p);
    CHECK(p2p.time_us < slow.time_us);
    CHECK(p2p.time_us > 1.3 * fast.time_us);
}

TEST_CASE("sim topology: P2P per pair under NCCL_P2P_LEVEL (paths.cc)") {
    const TopologyModel bridges = machine("pcie-2socket-nvbridge-trtllm-1868.txt");
    // Two ranks on one NVLink bridge: NVL is within PXB, so P2P; NVLink latency; LL128 on (NVB or closer).
    const Comm pair(bridges, env_of({}), 2);
    CHECK(pair.transport() == Transport::p2p);
    CHECK(pair.graph().type_intra == Path::nvl);
    CHECK(pair.ll128_default());
    // Four ranks of one socket: the ring's NODE hop is PHB for NCCL, beyond the default PXB.
    CHECK(Comm(bridges, env_of({}), 4).transport() == Transport::shm);
    CHECK(Comm(bridges, env_of({{"NCCL_P2P_LEVEL", "PHB"}}), 4).transport() == Transport::p2p);
    CHECK(Comm(bridges, env_of({{"NCCL_P2P_LEVEL", "PHB"}}), 8).transport() == Transport::shm);  // SYS hops
    CHECK(Comm(bridges, env_of({{"NCCL_P2P_LEVEL", "SYS"}}), 8).transport() == Transport::p2p);
    CHECK_FALSE(Comm(bridges, env_of({}), 4).ll128_default());
}

TEST_CASE("sim topology: the ring crosses each socket boundary once each way") {
    const TopologyModel mixed = machine("pcie-5gpu-mixed-club3090-46.txt");
    // GPU0 sits on NUMA node 1, GPU1-4 on node 0.
    CHECK(ring_graph(mixed, 5).order == std::vector<int>{0, 1, 2, 3, 4});
    CHECK(pair_path(mixed, 0, 1) == Path::sys);
    CHECK(pair_path(mixed, 1, 3) == Path::phb);  // NODE is NCCL's PHB
    TopoMatrix interleaved;
    std::string error;
    REQUIRE(
        parse_topo_matrix("\tGPU0\tGPU1\tGPU2\tGPU3\tCPU Affinity\tNUMA Affinity\n"
                          "GPU0\t X \tSYS\tNODE\tSYS\t0-7\t0\nGPU1\tSYS\t X \tSYS\tNODE\t8-15\t1\n"
                          "GPU2\tNODE\tSYS\t X \tSYS\t0-7\t0\nGPU3\tSYS\tNODE\tSYS\t X \t8-15\t1\n",
                          "interleaved.txt", interleaved, error));
    const RingGraph g = ring_graph(with_matrix(topology_model(Topology::pcie_gen5), interleaved), 4);
    CHECK(g.order == std::vector<int>{0, 2, 1, 3});  // not 0-1-2-3, which would cross four times
}

TEST_CASE("sim topology: an NVLink box's ring runs at # x NCCL's per-link bandwidth") {
    const TopologyModel hgx = machine("hgx-h100-nccl-1264.txt", Topology::nvlink);
    const RingGraph g = ring_graph(hgx, 8);
    CHECK(g.type_intra == Path::nvl);
    CHECK(g.bus_bw_gbs == Approx(18 * 20.6));  // NV18 x SM90_NVLINK_BW (topo.h)
    CHECK(Comm(hgx, env_of({}), 8).ll128_default());
    CHECK(Comm(hgx, env_of({}), 8).transport() == Transport::p2p);
}

TEST_CASE("sim topology: fusion only where every pair of the ranks has peer access") {
    std::string reason;
    CHECK(fusion_possible(machine("one-switch-8gpu-handwritten.txt"), env_of({}), 8, reason));
    CHECK(fusion_possible(machine("pcie-2socket-nvbridge-trtllm-1868.txt"), env_of({}), 4, reason));
    CHECK_FALSE(fusion_possible(machine("pcie-2socket-nvbridge-trtllm-1868.txt"), env_of({}), 8, reason));
    CHECK(reason.find("GPU0 and GPU4 are SYS apart (across sockets)") != std::string::npos);
    CHECK(reason.find("pcie-2socket-nvbridge-trtllm-1868.txt") != std::string::npos);
}

TEST_CASE("sim topology: each figure is its source's") {
    // Measured: 4 x RTX PRO 6000, all_reduce_perf 32 MB bus bandwidth, NCCL's default (SHM between
    // NODE pairs) 30.3 GB/s vs NCCL_P2P_LEVEL=SYS 39.3 GB/s (voipmonitor/rtx6kpro).
    CHECK(k_shm_bw_factor == Approx(30.3 / 39.3));
    // NCCL 2.28 src/graph/topo.h: AMD_BW 16.0; SM90_NVLINK_BW 20.6, SM100_NVLINK_BW 40.1, SM80 20.0.
    CHECK(k_inter_socket_bw_gbs == 16.0);
    CHECK(nvlink_bw_gbs(90) == 20.6);
    CHECK(nvlink_bw_gbs(100) == 40.1);
    CHECK(nvlink_bw_gbs(120) == 40.1);
    CHECK(nvlink_bw_gbs(80) == 20.0);
    // NCCL 2.28 src/graph/topo.cc: a PCI link is width x the generation's rate / 80 (32 GT/s -> 240,
    // 16 GT/s -> 120), so x16 Gen5 48 GB/s and Gen4 24 GB/s.
    CHECK(topology_model(Topology::pcie_gen5).bus_bw_gbs == 16 * 240 / 80.0);
    CHECK(topology_model(Topology::pcie_gen4).bus_bw_gbs == 16 * 120 / 80.0);
}
