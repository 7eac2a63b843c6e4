#pragma once
// Golden-file comparison, one rule for every golden test: NCCLSWEEP_UPDATE_GOLDEN=1 (exactly
// "1") rewrites the files instead of comparing; any other value, or none, compares.
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>
#include <string_view>

#include "tests/support/catch.hpp"
#include "tests/support/temp_dir.hpp"

namespace ncclsweep::test {

/// True when NCCLSWEEP_UPDATE_GOLDEN is exactly "1".
[[nodiscard]] inline bool update_goldens() {
    const char* value = std::getenv("NCCLSWEEP_UPDATE_GOLDEN");
    return value != nullptr && std::string_view(value) == "1";
}

/// Checks `actual` against the golden file `path`; with update_goldens(), rewrites the file
/// (and says so) instead. A missing golden file fails the check.
inline void check_golden_file(const std::filesystem::path& path, const std::string& actual) {
    if (update_goldens()) {
        std::ofstream(path, std::ios::binary) << actual;
        WARN("updated " << path.string());
        return;
    }
    INFO("golden file " << path.string()
                        << " (NCCLSWEEP_UPDATE_GOLDEN=1 rewrites it; review the git diff)\n--- got ---\n"
                        << actual);
    REQUIRE(std::filesystem::exists(path));
    CHECK(actual == read_file(path));
}

}  // namespace ncclsweep::test
