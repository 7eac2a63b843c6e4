#pragma once
// Skipping a test so that CTest says "Skipped", never "Passed" (Catch2 v2 has no SKIP).
#include <iostream>
#include <string_view>

#include "tests/support/catch.hpp"

namespace ncclsweep::test {

/// Marks the running test as skipped: prints "NCCLSWEEP_SKIP(requirement): reason" on stdout,
/// which tests/CMakeLists.txt gives CTest as SKIP_REGULAR_EXPRESSION. `requirement` names what
/// the machine lacks (sshd, chromium, mount, gpu, no-nvidia-smi); scripts/check-skips.py fails
/// the test command when it is something that command installs. Return from the test after.
inline void skip_test(std::string_view requirement, std::string_view reason) {
    std::cout << "NCCLSWEEP_SKIP(" << requirement << "): " << reason << std::endl;
    WARN("SKIPPED (" << requirement << "): " << reason);
}

}  // namespace ncclsweep::test
