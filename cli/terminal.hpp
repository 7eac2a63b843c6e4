#pragma once
// The terminal the CLI writes to: its width, for output that is fitted to it.

namespace ncclsweep::cli {

/// Width of the terminal on `fd` (TIOCGWINSZ, else $COLUMNS, else 80), or 0 when `fd` is not a
/// terminal: output piped to a file or another program is never cut.
[[nodiscard]] int terminal_columns(int fd);

}  // namespace ncclsweep::cli
