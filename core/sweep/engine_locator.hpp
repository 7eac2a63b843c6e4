#pragma once
// Where the tpverify engine is, for `engine: tpverify` workloads on the local machine.
#include <filesystem>
#include <string>

#include <vector>

#include "core/experiment.hpp"
#include "core/result.hpp"
#include "core/spec/spec.hpp"

namespace ncclsweep::inline sweep {

/// The tpverify to run: next to `self_exe` (same folder, then ../engine/tpverify as in the build
/// tree), then the first `tpverify` on PATH; plain "tpverify" when none is found.
[[nodiscard]] std::string locate_engine(const std::filesystem::path& self_exe);

/// Checks that `program` (argv[0] of a command run on this machine: a path, or a name looked up
/// in `path_value` like PATH) is an executable file. bad_input naming `what` ("the engine",
/// "the workload command") and the path otherwise, so nothing is recorded for a command that
/// cannot start.
[[nodiscard]] Result<void> check_local_program(const std::string& program, const std::string& path_value,
                                               const std::string& what);

/// For a sweep on the local machine: the engine (`engine_path`, for engine workloads) or the
/// argv[0] of every experiment's command (each distinct one once; shell commands are left to
/// the shell) passes check_local_program, so a command that cannot start is bad input found
/// before a sweep is created. Other targets check nothing here.
[[nodiscard]] Result<void> check_local_programs(const Spec& spec, const std::string& engine_path,
                                                const std::vector<Experiment>& experiments,
                                                const std::string& path_value);

/// The path of the running executable (/proc/self/exe), or "" when it cannot be read.
[[nodiscard]] std::filesystem::path current_executable();

}  // namespace ncclsweep::inline sweep
