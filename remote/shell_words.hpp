#pragma once
// Builds the one line a remote login shell runs for a Command. Every argument and value is
// single-quoted data; nothing from a spec is ever pasted into the line unquoted.
#include <string>
#include <string_view>

#include "core/plan/render.hpp"
#include "core/result.hpp"
#include "core/target.hpp"
#include "core/text.hpp"

namespace ncclsweep::remote {

/// POSIX single-quoting of one word (it's -> 'it'\''s): the one implementation, in core/text.
using ncclsweep::shell_quote;

/// Marker of the handshake line the remote wrapper writes to stderr before the command.
inline constexpr const char* k_pgid_marker = "ncclsweep-pgid:";

/// Whether the command replaces the shell (`exec env -- ...`) or the shell goes on after it.
enum class ExecLast { yes, no };

/// The shell text that runs `command`: `cd 'DIR' || exit 126; [PYTHONPATH=...; export
/// PYTHONPATH; ][exec ]env -- 'NAME=value'... 'argv'...`, every word single-quoted data.
/// bad_input (messages start with `who`) for an empty argv, an invalid variable name or a NUL
/// byte anywhere.
Result<std::string> command_script(const Command& command, const std::string& default_workdir, ExecLast exec,
                                   std::string_view who);

/// The remote line for `command`: `exec /bin/sh -c '<script>'` where the script prints
/// "<marker><pgid>" on stderr, enters the work dir and execs `env -- 'NAME=value'... argv`.
/// The sshd session leader is the shell, so its pid is the process group to kill.
/// bad_input for an empty argv, an invalid variable name or a NUL byte anywhere.
Result<std::string> remote_command_line(const Command& command, const std::string& default_workdir);

}  // namespace ncclsweep::remote
