// Writing an export or report file: temporary file + rename, errors with the path and errno.
#include <fmt/format.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>

#include <unistd.h>

#include "results/export/exports.hpp"

namespace ncclsweep::results::exports {

Result<void> write_file_atomically(const std::string& path, std::string_view text) {
    namespace fs = std::filesystem;
    fs::path target(path);
    fs::path temp = target;
    temp += fmt::format(".tmp-{}", ::getpid());
    auto fail = [&](const char* what) {
        int saved = errno;
        std::remove(temp.c_str());
        return Error::infrastructure(
            fmt::format("cannot {} {}: {}; check that the folder exists and is writable", what, path,
                        std::strerror(saved)));
    };
    std::FILE* file = std::fopen(temp.c_str(), "wb");
    if (!file) return fail("create");
    bool written = std::fwrite(text.data(), 1, text.size(), file) == text.size();
    bool flushed = std::fflush(file) == 0 && ::fsync(fileno(file)) == 0;
    if (std::fclose(file) != 0 || !written || !flushed) return fail("write");
    if (std::rename(temp.c_str(), target.c_str()) != 0) return fail("replace");
    return success();
}

}  // namespace ncclsweep::results::exports
