#pragma once
// Builds the sh script that runs a Command on a host (the ssh agent's and the Slurm tasks'
// scripts, run by /bin/sh, never by the user's login shell). Every argument and value is
// single-quoted data; nothing from a spec is ever pasted into a script unquoted.
#include <string>
#include <string_view>

#include "core/plan/render.hpp"
#include "core/result.hpp"
#include "core/target.hpp"
#include "core/text.hpp"

namespace ncclsweep::remote {

/// POSIX single-quoting of one word (it's -> 'it'\''s): the one implementation, in core/text.
using ncclsweep::shell_quote;

/// Whether the command replaces the shell (`exec env -- ...`) or the shell goes on after it.
enum class ExecLast { yes, no };

/// The shell text that runs `command`: `cd 'DIR' || exit 126; [PYTHONPATH=...; export
/// PYTHONPATH; ][exec ]env [ENV_OPTIONS] -- 'NAME=value'... 'argv'...`, every word single-quoted
/// data (a program whose path holds '=' runs as `/bin/sh -c 'exec "$0" "$@"' 'argv'...`, since
/// env would take it for an assignment); `env_options` is fixed text of the caller's
/// (`--default-signal=INT,QUIT`), never a value. bad_input (messages start with `who`) for an
/// empty argv, an invalid variable name or a NUL byte anywhere.
Result<std::string> command_script(const Command& command, const std::string& default_workdir, ExecLast exec,
                                   std::string_view who, std::string_view env_options = {});

}  // namespace ncclsweep::remote
