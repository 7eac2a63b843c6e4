#include "core/sweep/engine_locator.hpp"

#include <unistd.h>

#include <fmt/format.h>

#include <cstdlib>
#include <set>
#include <string_view>
#include <system_error>

namespace ncclsweep::inline sweep {
namespace {

bool is_executable(const std::filesystem::path& path) {
    std::error_code ec;
    return std::filesystem::is_regular_file(path, ec) && ::access(path.c_str(), X_OK) == 0;
}

}  // namespace

std::string locate_engine(const std::filesystem::path& self_exe) {
    if (!self_exe.empty()) {
        std::filesystem::path folder = self_exe.parent_path();
        for (const auto& candidate : {folder / "tpverify", folder / ".." / "engine" / "tpverify"})
            if (is_executable(candidate)) return std::filesystem::weakly_canonical(candidate).string();
    }
    if (const char* path = std::getenv("PATH")) {
        std::string_view rest = path;
        while (!rest.empty()) {
            auto colon = rest.find(':');
            std::string_view folder = rest.substr(0, colon);
            if (!folder.empty() && is_executable(std::filesystem::path(folder) / "tpverify"))
                return (std::filesystem::path(folder) / "tpverify").string();
            if (colon == std::string_view::npos) break;
            rest.remove_prefix(colon + 1);
        }
    }
    return "tpverify";
}

Result<void> check_local_program(const std::string& program, const std::string& path_value,
                                 const std::string& what) {
    if (program.find('/') != std::string::npos) {
        std::error_code ec;
        if (!std::filesystem::exists(program, ec))
            return Error::bad_input(fmt::format(
                "{} '{}' does not exist; {}", what, program,
                what == "the engine" ? "build it or give its path with --engine" : "check the path"));
        if (!is_executable(program))
            return Error::bad_input(fmt::format(
                "{} '{}' is not an executable file; check its path and mode (chmod +x)", what, program));
        return success();
    }
    std::string_view rest = path_value;
    while (!rest.empty()) {
        auto colon = rest.find(':');
        std::string_view folder = rest.substr(0, colon);
        if (is_executable(std::filesystem::path(folder.empty() ? "." : folder) / program)) return success();
        if (colon == std::string_view::npos) break;
        rest.remove_prefix(colon + 1);
    }
    return Error::bad_input(fmt::format("{} '{}' is not on PATH ({}); install it or give its full path", what,
                                        program, path_value));
}

std::filesystem::path current_executable() {
    std::error_code ec;
    auto path = std::filesystem::read_symlink("/proc/self/exe", ec);
    return ec ? std::filesystem::path() : path;
}

Result<void> check_local_programs(const Spec& spec, const std::string& engine_path,
                                  const std::vector<Experiment>& experiments, const std::string& path_value) {
    if (spec.target.url != "local") return success();
    if (!spec.workload.engine.empty()) return check_local_program(engine_path, path_value, "the engine");
    std::set<std::string> checked;
    for (const auto& experiment : experiments) {
        if (experiment.shell || experiment.argv.empty() || !checked.insert(experiment.argv.front()).second)
            continue;
        if (auto ok = check_local_program(experiment.argv.front(), path_value,
                                          fmt::format("the workload command (experiment {})", experiment.id));
            !ok)
            return ok;
    }
    return success();
}

}  // namespace ncclsweep::inline sweep
