#include "core/log.hpp"

#include <unistd.h>

#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <mutex>

namespace ncclsweep::log {
namespace {
std::atomic<Level> g_level{Level::warning};
std::mutex g_write_mutex;
}  // namespace

void set_level(Level level) {
    g_level = level;
}
Level level() {
    return g_level;
}

bool use_color() {
    const char* no_color = std::getenv("NO_COLOR");
    if (no_color && *no_color) return false;
    return isatty(STDERR_FILENO) != 0;
}

void write(Level level, std::string_view message) {
    const char* prefix = "";
    const char* color = "";
    switch (level) {
        case Level::error:
            prefix = "error: ";
            color = "\033[31m";
            break;
        case Level::warning:
            prefix = "warning: ";
            color = "\033[33m";
            break;
        case Level::debug:
            prefix = "debug: ";
            break;
        default:
            break;
    }
    std::lock_guard lock(g_write_mutex);
    if (use_color() && *color)
        std::fprintf(stderr, "%s%s\033[0m%.*s\n", color, prefix, static_cast<int>(message.size()),
                     message.data());
    else
        std::fprintf(stderr, "%s%.*s\n", prefix, static_cast<int>(message.size()), message.data());
}

}  // namespace ncclsweep::log
