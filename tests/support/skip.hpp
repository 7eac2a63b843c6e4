#pragma once
// Skipping a test so that CTest says "Skipped", never "Passed" (Catch2 v2 has no SKIP), and
// never "Skipped" for a test that also failed.
#include <atomic>
#include <iostream>
#include <string_view>

#include "tests/support/catch.hpp"

namespace ncclsweep::test {

/// The exit status CTest reads as "skipped" (tests/CMakeLists.txt: SKIP_RETURN_CODE).
inline constexpr int k_skip_exit_status = 77;

/// Set once the running test called skip_test().
inline std::atomic<bool>& test_skipped() {
    static std::atomic<bool> skipped{false};
    return skipped;
}

/// Marks the running test as skipped: prints "NCCLSWEEP_SKIP(requirement): reason" on stdout
/// (scripts/check-skips.py reads the requirement from CTest's output) and makes the process exit
/// k_skip_exit_status if nothing failed (tests/support/catch_main.cpp). `requirement` names what
/// the machine lacks (sshd, chromium, mount, slurm, gpu, no-nvidia-smi); check-skips.py fails the
/// test command when it is something that command installs. Return from the test after.
inline void skip_test(std::string_view requirement, std::string_view reason) {
    std::cout << "NCCLSWEEP_SKIP(" << requirement << "): " << reason << std::endl;
    WARN("SKIPPED (" << requirement << "): " << reason);
    test_skipped() = true;
}

/// The process's exit status for Catch's count of failed tests: a failure wins over a skip (1),
/// a skip without a failure is k_skip_exit_status, else 0.
[[nodiscard]] inline int exit_status(int failed) {
    if (failed != 0) return failed == k_skip_exit_status ? 1 : failed;
    return test_skipped() ? k_skip_exit_status : 0;
}

}  // namespace ncclsweep::test
