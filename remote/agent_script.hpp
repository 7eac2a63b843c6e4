#pragma once
// ncclsweep's agent on an ssh host: a small POSIX sh program started once per connection. The
// user's login shell is given one fixed line, k_agent_command, and the agent's source arrives
// on its standard input; from then on every command of the sweep is a request to the agent
// (one line on its stdin) and every event an answer (one line on its stdout). Scripts reach it
// by SFTP, output comes back by SFTP from its spool directory: no value of a spec is ever read
// by the login shell. docs/targets.md "The agent" describes the protocol.
#include <optional>
#include <string>
#include <string_view>

#include "core/target.hpp"

namespace ncclsweep::remote {

/// The only command line a login shell is ever given: fixed, and made of characters every
/// shell reads the same way (sh, bash, zsh, fish, csh/tcsh, nushell).
inline constexpr const char* k_agent_command = "exec /bin/sh -s";

/// The agent's source for one connection. `nonce` ([a-z0-9], 8 to 32 characters) tags its
/// banner, so that what the user's start-up files print before it is never read as the
/// agent's. Its last line starts it, so sh has read all of it before the banner appears and
/// no request can be taken for source.
[[nodiscard]] std::string agent_script(std::string_view nonce);

/// How the agent greets: `ncclsweep-agent-NONCE ready FLAGS SPOOL` (FLAGS `default-signal`
/// when the host's env has --default-signal, else `-`; SPOOL its spool directory, where each
/// command's script and output files live), or `ncclsweep-agent-NONCE missing WHAT` when the
/// host lacks a tool it needs (setsid, mktemp).
struct AgentBanner {
    bool ready = false;
    bool default_signals = false;  ///< `env --default-signal=INT,QUIT` works there
    std::string spool;             ///< when ready
    std::string missing;           ///< otherwise
};

/// The banner in `line`, or nullopt when `line` is not this agent's (other output of the
/// login shell's start-up files).
[[nodiscard]] std::optional<AgentBanner> parse_agent_banner(std::string_view line, std::string_view nonce);

/// One line the agent wrote after its banner.
struct AgentMessage {
    enum class Kind {
        started,  ///< `started ID PGID`: the command runs, leader of its own session and group
        exited,   ///< `exit ID STATUS ALIVE`: its leader ended with sh's STATUS; ALIVE 1 when others of its
                  ///< group still run
        killed,   ///< `killed ID`: a kill request finished (TERM, grace, KILL)
        pong,     ///< `pong ID`: the answer to `ping ID`
        other,    ///< anything else (ignored)
    };
    Kind kind = Kind::other;
    long id = 0;
    long pgid = 0;
    int status = 0;
    bool group_alive = false;
};

/// The `env` options of a command's script on a host whose agent said `banner`: SIGINT and
/// SIGQUIT back to their default action (sh left them ignored) where env can.
[[nodiscard]] std::string_view script_env_options(const AgentBanner& banner);

/// Parses one line of the agent (without its newline); `other` when it is not a message.
[[nodiscard]] AgentMessage parse_agent_message(std::string_view line);

/// How a command ended, from the status sh's `wait` reported: 128 + N (N a signal number,
/// 1..64) is death by signal N, anything else the exit code (a program that exits with 130 by
/// itself reads as SIGINT: sh cannot tell them apart, and Slurm's tasks are read the same way).
[[nodiscard]] ExitInfo exit_info_of_status(int status);

}  // namespace ncclsweep::remote
