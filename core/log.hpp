#pragma once
// People-facing messages go to stderr through here; stdout is for results only.
#include <fmt/format.h>

#include <string_view>

namespace ncclsweep::log {

/// How chatty stderr is.
enum class Level { quiet = 0, error = 1, warning = 2, info = 3, debug = 4 };

/// Sets the process-wide level (cli/ does this once from --quiet/--verbose).
void set_level(Level level);
/// The current level.
Level level();
/// True when messages should carry ANSI colour (stderr is a TTY and NO_COLOR is unset).
bool use_color();
/// Writes one already-formatted line to stderr with a level prefix.
void write(Level level, std::string_view message);

}  // namespace ncclsweep::log

/// Formats only when the level is enabled (ccache-style).
#define NCCLSWEEP_LOG(lvl, ...)                                                              \
    do {                                                                                     \
        if (::ncclsweep::log::level() >= ::ncclsweep::log::Level::lvl)                       \
            ::ncclsweep::log::write(::ncclsweep::log::Level::lvl, fmt::format(__VA_ARGS__)); \
    } while (0)
