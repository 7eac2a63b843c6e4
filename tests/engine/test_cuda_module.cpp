// tpverify's CUDA backend is a module beside the executable (engine/run/cuda_module.hpp): the sim
// never loads it, and when it is missing --backend cuda says which file it could not load.
#include <filesystem>
#include <string>

#include "tests/support/catch.hpp"
#include "tests/support/temp_dir.hpp"
#include "tests/support/text.hpp"

using ncclsweep::test::binary_path;
using ncclsweep::test::contains;
using ncclsweep::test::run_command;
using ncclsweep::test::TempDir;

namespace {
// Built with CUDA, the build tree has the module beside tpverify.
bool built_with_cuda() {
    return std::filesystem::exists(binary_path("engine/libtpverify-cuda.so"));
}
}  // namespace

TEST_CASE(
    "cuda module: a tpverify without its CUDA module still simulates, and --backend cuda names the missing "
    "file") {
    TempDir dir;
    const auto copy = dir.path() / "tpverify";
    std::filesystem::copy_file(binary_path("engine/tpverify"), copy);
    const auto sim = run_command({copy.string(), "--backend", "sim", "--json", "--tp", "2", "--iters", "3"});
    INFO(sim.err);
    CHECK(sim.exit_code == 0);
    CHECK(contains(sim.out, "\"event\":\"result\""));
    const auto auto_backend =
        run_command({copy.string(), "--backend", "auto", "--json", "--tp", "1", "--iters", "3"});
    INFO(auto_backend.err);
    CHECK(auto_backend.exit_code == 0);
    CHECK(contains(auto_backend.err, "running the SIMULATION instead"));
    const auto cuda = run_command({copy.string(), "--backend", "cuda", "--json", "--tp", "1",
                                   "--process-model", "threads", "--iters", "3"});
    INFO(cuda.out << cuda.err);
    CHECK(cuda.exit_code == 1);
    if (built_with_cuda()) {
        CHECK(contains(cuda.out + cuda.err,
                       (dir.path() / "libtpverify-cuda.so").string() + " could not be loaded"));
    } else {
        CHECK(contains(cuda.out + cuda.err, "built without CUDA"));
    }
}

TEST_CASE("cuda module: the build's tpverify loads its module for --backend cuda and not for the sim") {
    const std::string tpv = binary_path("engine/tpverify").string();
    // The sim's start: none of CUDA's libraries are mapped (LD_DEBUG=files lists every load).
    const auto sim =
        run_command({tpv, "--backend", "sim", "--json", "--tp", "2", "--iters", "3"}, {}, {"LD_DEBUG=files"});
    REQUIRE(sim.exit_code == 0);
    CHECK_FALSE(contains(sim.err, "libcudart"));
    CHECK_FALSE(contains(sim.err, "libnccl"));
    CHECK_FALSE(contains(sim.err, "libtpverify-cuda"));
    const auto cuda = run_command({tpv, "--backend", "cuda", "--json", "--tp", "1", "--process-model",
                                   "threads", "--iters", "3", "--layers", "1"},
                                  {}, {"LD_DEBUG=files"});
    INFO(cuda.out.substr(0, 2000) << cuda.err.substr(0, 4000));
    if (!built_with_cuda()) {
        CHECK(cuda.exit_code == 1);
        CHECK(contains(cuda.out + cuda.err, "built without CUDA"));
        return;
    }
    // Loaded, with CUDA's libraries: on a host without a GPU the run then fails in CUDA's own
    // init (not in loading), on a GPU host it runs.
    CHECK(contains(cuda.err, "libtpverify-cuda.so"));
    CHECK(contains(cuda.err, "libcudart"));
    CHECK_FALSE(contains(cuda.out + cuda.err, "could not be loaded"));
    if (cuda.exit_code != 0) CHECK(contains(cuda.out + cuda.err, "cudaGetDeviceCount"));
}
