#pragma once
// Where the tpverify engine is, for `engine: tpverify` workloads on the local machine.
#include <filesystem>
#include <string>

#include "core/result.hpp"

namespace ncclsweep {

/// The tpverify to run: next to `self_exe` (same folder, then ../engine/tpverify as in the build
/// tree), then the first `tpverify` on PATH; plain "tpverify" when none is found.
[[nodiscard]] std::string locate_engine(const std::filesystem::path& self_exe);

/// Checks that `program` (argv[0] of a command run on this machine: a path, or a name looked up
/// in `path_value` like PATH) is an executable file. bad_input naming `what` ("the engine",
/// "the workload command") and the path otherwise, so nothing is recorded for a command that
/// cannot start.
[[nodiscard]] Result<void> check_local_program(const std::string& program, const std::string& path_value,
                                               const std::string& what);

/// The path of the running executable (/proc/self/exe), or "" when it cannot be read.
[[nodiscard]] std::filesystem::path current_executable();

}  // namespace ncclsweep
