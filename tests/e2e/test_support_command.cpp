// The test helpers' own contract: run_command never lets a hung command hang CTest.
#include <chrono>
#include <random>
#include <thread>

#include "tests/e2e/e2e_support.hpp"
#include "tests/support/catch.hpp"

using namespace ncclsweep::test;

TEST_CASE("support: run_command kills a command that outlives its timeout together with its process group") {
    std::random_device rd;
    const std::string marker =
        "1000." + std::to_string(rd() % 1000000 + 1000000);  // a sleep no one else runs
    // The sleep outlives any test: only the kill can have ended it.
    auto r = run_command({"sh", "-c", "sleep " + marker + " & echo started; wait"}, {}, {},
                         std::chrono::seconds(3));
    CHECK(r.timed_out);
    CHECK(r.exit_code == 128 + 9);
    CHECK(r.out == "started\n");
    CHECK(r.err.find("killed after 3 s") != std::string::npos);
    // The background sleep went too: SIGKILL reaches it asynchronously, so poll until it is gone.
    bool gone = false;
    for (int i = 0; i < 200 && !gone; ++i) {
        gone = run_command({"pgrep", "-f", "sleep " + marker}).exit_code == 1;
        if (!gone) std::this_thread::sleep_for(std::chrono::milliseconds(50));
    }
    CHECK(gone);
}

TEST_CASE("support: run_command of a quick command is not marked timed out") {
    auto r = run_command({"sh", "-c", "echo out; echo err >&2; exit 3"});
    CHECK_FALSE(r.timed_out);
    CHECK(r.exit_code == 3);
    CHECK(r.out == "out\n");
    CHECK(r.err == "err\n");
}
