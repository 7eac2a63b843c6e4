#pragma once
// Where the tpverify engine is, for `engine: tpverify` workloads on the local machine.
#include <filesystem>
#include <string>

namespace ncclsweep {

/// The tpverify to run: next to `self_exe` (same folder, then ../engine/tpverify as in the build
/// tree), then the first `tpverify` on PATH; plain "tpverify" when none is found.
[[nodiscard]] std::string locate_engine(const std::filesystem::path& self_exe);

/// The path of the running executable (/proc/self/exe), or "" when it cannot be read.
[[nodiscard]] std::filesystem::path current_executable();

}  // namespace ncclsweep
