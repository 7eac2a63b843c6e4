// `nvidia-smi topo -m` as printed, read by engine/topo_matrix: real matrices from
// tests/fixtures/topo/ (tabs, spaces, NIC columns, affinity columns, the legend), colours, and a
// malformed file named by file and line.
#include "engine/topo_matrix.hpp"
#include "tests/support/catch.hpp"
#include "tests/support/temp_dir.hpp"

using namespace tpverify;

namespace {
TopoMatrix load(const std::string& fixture) {
    TopoMatrix m;
    std::string error;
    INFO(fixture);
    REQUIRE(
        load_topo_matrix(ncclsweep::test::source_path("tests/fixtures/topo/" + fixture).string(), m, error));
    CHECK(error.empty());
    return m;
}
std::string cell(const TopoMatrix& m, int a, int b) {
    return topo_link_name(m.link[static_cast<std::size_t>(a)][static_cast<std::size_t>(b)]);
}
std::string parse_error(const std::string& text) {
    TopoMatrix m;
    std::string error;
    CHECK_FALSE(parse_topo_matrix(text, "box.txt", m, error));
    return error;
}
}  // namespace

TEST_CASE("topo matrix: an HGX H100 (tabs, NIC columns and rows, affinity columns)") {
    const TopoMatrix m = load("hgx-h100-nccl-1264.txt");
    REQUIRE(m.gpus() == 8);
    CHECK(cell(m, 0, 7) == "NV18");
    CHECK(m.link[0][7].nvlinks == 18);
    CHECK(cell(m, 3, 3) == "X");
    // NUMA Affinity 0 for GPU0-3, 1 for GPU4-7: two sockets.
    CHECK(m.socket == std::vector<int>{0, 0, 0, 0, 1, 1, 1, 1});
}

TEST_CASE("topo matrix: two-socket PCIe boxes read pair by pair") {
    const TopoMatrix bridges = load("pcie-2socket-nvbridge-trtllm-1868.txt");
    REQUIRE(bridges.gpus() == 8);
    CHECK(cell(bridges, 0, 1) == "NV12");
    CHECK(cell(bridges, 0, 2) == "NODE");
    CHECK(cell(bridges, 3, 4) == "SYS");
    CHECK(cell(bridges, 6, 7) == "NV12");
    CHECK(bridges.socket == std::vector<int>{0, 0, 0, 0, 1, 1, 1, 1});

    const TopoMatrix all_sys = load("pcie-2socket-4090-gpuallocator-17.txt");
    REQUIRE(all_sys.gpus() == 8);  // NIC0 and NIC1's rows are not GPUs
    for (int a = 0; a < 8; ++a)
        for (int b = 0; b < 8; ++b) CHECK(cell(all_sys, a, b) == (a == b ? "X" : "SYS"));
    CHECK(all_sys.socket == std::vector<int>{0, 0, 0, 0, 1, 1, 1, 1});
}

TEST_CASE("topo matrix: spaces, mixed paths and the legend below") {
    const TopoMatrix m = load("pcie-5gpu-mixed-club3090-46.txt");
    REQUIRE(m.gpus() == 5);
    CHECK(cell(m, 0, 1) == "SYS");
    CHECK(cell(m, 1, 2) == "PHB");
    CHECK(cell(m, 1, 3) == "NODE");
    CHECK(cell(m, 3, 4) == "PHB");
    // GPU0 is NUMA node 1, the rest node 0: sockets numbered in order of first appearance.
    CHECK(m.socket == std::vector<int>{0, 1, 1, 1, 1});
}

TEST_CASE("topo matrix: ANSI colours and a command line above are read past") {
    const std::string text =
        "$ nvidia-smi topo -m\n"
        "\t\x1b[4mGPU0\x1b[0m\t\x1b[4mGPU1\x1b[0m\tCPU Affinity\tNUMA Affinity\n"
        "\x1b[4mGPU0\x1b[0m\t X \t\x1b[32mPIX\x1b[0m\t0-15\t0\n"
        "\x1b[4mGPU1\x1b[0m\t\x1b[32mPIX\x1b[0m\t X \t0-15\t0\n";
    TopoMatrix m;
    std::string error;
    REQUIRE(parse_topo_matrix(text, "colour.txt", m, error));
    CHECK(cell(m, 0, 1) == "PIX");
    // Old drivers print SOC for SYS and no NUMA column: sockets follow the CPU Affinity.
    REQUIRE(parse_topo_matrix("\tGPU0\tGPU1\tCPU Affinity\nGPU0\t X \tSOC\t0-7\nGPU1\tSOC\t X \t8-15\n",
                              "old.txt", m, error));
    CHECK(cell(m, 0, 1) == "SYS");
    CHECK(m.socket == std::vector<int>{0, 1});
}

TEST_CASE("topo matrix: a malformed file is named by file and line") {
    CHECK(parse_error("nothing like a matrix\n") ==
          "box.txt:1: no header line naming GPU0, GPU1, ...; give what `nvidia-smi topo -m` prints (tabs, "
          "spaces, "
          "colours and the legend are fine)");
    const std::string header = "\tGPU0\tGPU1\tGPU2\n";
    CHECK(parse_error(header + "GPU0\t X \tPIX\tQPI\nGPU1\tPIX\t X \tPIX\nGPU2\tPIX\tPIX\t X \n") ==
          "box.txt:2: 'QPI' (GPU0 to GPU2) is not a connection nvidia-smi topo -m prints (X, NV#, PIX, PXB, "
          "PHB, "
          "NODE, SYS)");
    CHECK(
        parse_error(header + "GPU0\t X \tPIX\tPIX\nGPU1\tPIX\t X \tPIX\nGPU2\tPIX\tNODE\t X \n") ==
        "box.txt:4: GPU2 to GPU1 is NODE but GPU1 to GPU2 (line 3) is PIX; a connection matrix is symmetric");
    CHECK(parse_error(header + "GPU0\t X \tPIX\nGPU1\tPIX\t X \tPIX\n")
              .find("box.txt:2: GPU0's row has 2 cells") == 0);
    CHECK(parse_error(header + "GPU0\t X \tPIX\tPIX\nGPU1\tPIX\t X \tPIX\n\nLegend:\n") ==
          "box.txt:5: no row for GPU2 (the header names 3 GPUs); paste the whole matrix");
    CHECK(parse_error(header + "GPU0\tPIX\tPIX\tPIX\n")
              .find("box.txt:2: GPU0 to GPU0 is PIX; a GPU's own cell is X") == 0);
    CHECK(parse_error(header + "GPU0\t X \tPIX\tPIX\nGPU0\t X \tPIX\tPIX\n") ==
          "box.txt:3: a second row for GPU0 (the first is line 2)");
    TopoMatrix m;
    std::string error;
    CHECK_FALSE(load_topo_matrix("/nonexistent/topo.txt", m, error));
    CHECK(error.find("/nonexistent/topo.txt: cannot read the topology file") == 0);
}

TEST_CASE("topo matrix: same_paths compares the first n GPUs") {
    const TopoMatrix a = load("pcie-2socket-nvbridge-trtllm-1868.txt");
    const TopoMatrix b = load("pcie-2socket-4090-gpuallocator-17.txt");
    CHECK(a.same_paths(a, 8));
    CHECK_FALSE(a.same_paths(b, 8));
    CHECK_FALSE(a.same_paths(b, 9));  // more GPUs than either has
}
