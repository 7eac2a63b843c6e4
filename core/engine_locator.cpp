#include "core/engine_locator.hpp"

#include <unistd.h>

#include <cstdlib>
#include <string_view>
#include <system_error>

namespace ncclsweep {
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

std::filesystem::path current_executable() {
    std::error_code ec;
    auto path = std::filesystem::read_symlink("/proc/self/exe", ec);
    return ec ? std::filesystem::path() : path;
}

}  // namespace ncclsweep
