// The test helpers' own contract: run_command never lets a hung command hang CTest.
#include <chrono>
#include <random>

#include "tests/e2e/e2e_support.hpp"
#include "tests/support/catch.hpp"

using namespace ncclsweep::test;

TEST_CASE("support: run_command kills a command that outlives its timeout together with its process group") {
    std::random_device rd;
    const std::string marker =
        "1000." + std::to_string(rd() % 1000000 + 1000000);  // a sleep no one else runs
    const auto start = std::chrono::steady_clock::now();
    auto r = run_command({"sh", "-c", "sleep " + marker + " & echo started; wait"}, {}, {},
                         std::chrono::seconds(1));
    const double wall = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    CHECK(r.timed_out);
    CHECK(r.exit_code == 128 + 9);
    CHECK(r.out == "started\n");
    CHECK(r.err.find("killed after 1 s") != std::string::npos);
    CHECK(wall < 10.0);
    CHECK(run_command({"pgrep", "-f", "sleep " + marker}).exit_code == 1);  // the background sleep went too
}

TEST_CASE("support: run_command of a quick command is not marked timed out") {
    auto r = run_command({"sh", "-c", "echo out; echo err >&2; exit 3"});
    CHECK_FALSE(r.timed_out);
    CHECK(r.exit_code == 3);
    CHECK(r.out == "out\n");
    CHECK(r.err == "err\n");
}
