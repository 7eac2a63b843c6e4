// Every shipped study plans unchanged for a GPU host: `ncclsweep plan STUDY --set backend=cuda`
// (the sim's machine - topology, noise, calibration - is ignored there, with a note, not refused).
#include <filesystem>
#include <string>

#include "tests/support/catch.hpp"
#include "tests/support/skip.hpp"
#include "tests/support/temp_dir.hpp"

using ncclsweep::test::binary_path;
using ncclsweep::test::run_command;
using ncclsweep::test::source_path;

TEST_CASE("studies: every experiments/*.yaml plans with --set backend=cuda") {
    const std::filesystem::path ncclsweep = binary_path("cli/ncclsweep");
    if (!std::filesystem::exists(ncclsweep)) {
        ncclsweep::test::skip_test("ncclsweep", "an engine-only build has no ncclsweep to plan with");
        return;
    }
    int studies = 0;
    for (const auto& entry : std::filesystem::directory_iterator(source_path("experiments"))) {
        if (entry.path().extension() != ".yaml") continue;
        ++studies;
        INFO(entry.path().filename().string());
        // ncclsweep finds build/engine/tpverify beside build/cli (core/sweep/engine_locator.cpp).
        const auto r =
            run_command({ncclsweep.string(), "plan", entry.path().string(), "--set", "backend=cuda"});
        INFO(r.out.substr(0, 2000) << r.err.substr(0, 2000));
        CHECK(r.exit_code == 0);
        CHECK(r.err.find("cannot run") == std::string::npos);
    }
    CHECK(studies >= 4);  // incident-pcie, nightly, quickstart, seed-pcie-verify
}
