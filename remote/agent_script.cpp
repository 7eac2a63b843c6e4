#include "remote/agent_script.hpp"

#include <charconv>
#include <vector>

namespace ncclsweep::remote {

namespace {

// The agent (POSIX sh; dash, bash, busybox ash). Requests, one per line on stdin, whose ID is
// digits (anything else is ignored):
//   run ID         start SPOOL/ID.sh (written by the client through SFTP) with setsid, in a new
//                  session and process group, stdin /dev/null, stdout and stderr appended to
//                  SPOOL/ID.out and SPOOL/ID.err; answers `started ID PGID` once the group
//                  exists, later `exit ID STATUS ALIVE` (ALIVE 1: other processes of the group
//                  still run)
//   kill ID TENTHS TERM to the group, up to TENTHS tenths of a second for it to empty, then
//                  KILL; answers `killed ID`
//   signal ID SIG  one signal (TERM, KILL, INT, HUP, QUIT, USR1, USR2) to the group
//   forget ID      removes the command's files
//   ping ID        answers `pong ID`
//   quit           ends the agent
// At the end of its input (the client went, or the connection broke) the agent kills every
// group it started whose processes may still run, and removes its spool directory; a watchdog
// does the same within a second when the agent itself was killed (with its sshd, say).
constexpr const char* k_agent_body = R"SH(ncclsweep_group() {
  g=
  [ -f "$spool/$1.pgid" ] && read -r g <"$spool/$1.pgid"
  case $g in ''|*[!0-9]*|0|1) return 1 ;; esac
  return 0
}
ncclsweep_run() {
  if ! : >"$spool/$1.out" || ! : >"$spool/$1.err"; then echo "exit $1 126 0"; return; fi
  # The command's own shell, once it leads its session, records and reports its group (fd 3 is
  # the agent's stdout), so a kill that follows `started` always finds the group; then it runs
  # the script itself (one process start fewer: each costs milliseconds on a busy host).
  (
    setsid /bin/sh -c 'echo "$$" >"$1.pgid"; echo "started $2 $$" >&3; exec 3>&-; . "$1.sh"' \
      sh "$spool/$1" "$1" 3>&1 </dev/null >>"$spool/$1.out" 2>>"$spool/$1.err" &
    p=$!
    wait "$p"
    s=$?
    if kill -s 0 -- "-$p" 2>/dev/null; then a=1; else a=0; : >"$spool/$1.pgid"; fi
    echo "exit $1 $s $a"
  ) 2>/dev/null &
}
ncclsweep_kill() {
  case $2 in ''|*[!0-9]*) t=0 ;; *) t=$2 ;; esac
  if ! ncclsweep_group "$1"; then echo "killed $1"; return; fi
  (
    kill -s TERM -- "-$g"
    i=0
    while [ "$i" -lt "$t" ] && kill -s 0 -- "-$g"; do
      sleep 0.1 || sleep 1
      i=$((i + 1))
    done
    kill -s KILL -- "-$g"
    echo "killed $1"
  ) 2>/dev/null &
}
ncclsweep_signal() {
  case $2 in TERM|KILL|INT|HUP|QUIT|USR1|USR2) ;; *) return 0 ;; esac
  ncclsweep_group "$1" && kill -s "$2" -- "-$g" 2>/dev/null
  return 0
}
ncclsweep_end() {
  trap '' HUP PIPE TERM
  [ -z "$watchdog" ] || kill "$watchdog" 2>/dev/null
  for f in "$spool"/*.pgid; do
    [ -f "$f" ] || continue
    g=
    read -r g <"$f"
    case $g in ''|*[!0-9]*|0|1) ;; *) kill -s KILL -- "-$g" 2>/dev/null ;; esac
  done
  rm -rf "$spool"
  exit 0
}
ncclsweep_agent() {
  tag="ncclsweep-agent-$1"
  for tool in setsid mktemp; do
    command -v "$tool" >/dev/null 2>&1 || { echo "$tag missing $tool"; exit 0; }
  done
  # sh starts background commands with SIGINT and SIGQUIT ignored; the scripts' `env` puts them
  # back where it can (coreutils 8.31 and later): the banner says whether it can.
  flags=-
  env --default-signal=INT,QUIT true 2>/dev/null && flags=default-signal
  spool=$(mktemp -d "${TMPDIR:-/tmp}/ncclsweep-agent.XXXXXX" 2>/dev/null) || spool=
  if [ -z "$spool" ] || [ ! -d "$spool" ]; then echo "$tag missing a spool directory (mktemp -d)"; exit 0; fi
  # Should the agent itself be killed (no end of input to read), this ends its groups within
  # a second.
  watchdog=
  (
    while [ -d "$spool" ] && kill -s 0 "$$" 2>/dev/null; do sleep 1; done
    ncclsweep_end
  ) </dev/null >/dev/null 2>&1 &
  watchdog=$!
  trap ncclsweep_end HUP PIPE TERM
  echo "$tag ready $flags $spool"
  while read -r verb id arg; do
    case $id in ''|*[!0-9]*) continue ;; esac
    case $verb in
      run) ncclsweep_run "$id" ;;
      kill) ncclsweep_kill "$id" "$arg" ;;
      signal) ncclsweep_signal "$id" "$arg" ;;
      forget) rm -f "$spool/$id.sh" "$spool/$id.out" "$spool/$id.err" "$spool/$id.pgid" ;;
      ping) echo "pong $id" ;;
      quit) break ;;
    esac
  done
  ncclsweep_end
}
)SH";

std::vector<std::string_view> words_of(std::string_view line) {
    std::vector<std::string_view> words;
    std::size_t at = 0;
    while (at < line.size()) {
        const std::size_t begin = line.find_first_not_of(' ', at);
        if (begin == std::string_view::npos) break;
        const std::size_t end = std::min(line.find(' ', begin), line.size());
        words.push_back(line.substr(begin, end - begin));
        at = end;
    }
    return words;
}

template <typename Number>
bool number_of(std::string_view word, Number& out) {
    if (word.empty() || word.size() > 18) return false;
    const auto [end, error] = std::from_chars(word.data(), word.data() + word.size(), out);
    return error == std::errc() && end == word.data() + word.size() && out >= 0;
}

}  // namespace

std::string agent_script(std::string_view nonce) {
    std::string script = "# ncclsweep agent, protocol 1 (remote/agent_script.cpp)\n";
    script += k_agent_body;
    script += "ncclsweep_agent ";
    script += nonce;
    script += '\n';
    return script;
}

std::optional<AgentBanner> parse_agent_banner(std::string_view line, std::string_view nonce) {
    const std::string tag = "ncclsweep-agent-" + std::string(nonce) + " ";
    // Start-up files may leave text without a newline before it: look anywhere in the line.
    const auto at = line.find(tag);
    if (at == std::string_view::npos) return std::nullopt;
    const std::string_view rest = line.substr(at + tag.size());
    AgentBanner banner;
    if (rest.rfind("ready ", 0) == 0) {
        const std::string_view after = rest.substr(6);
        const auto space = after.find(' ');
        if (space == std::string_view::npos || space + 1 >= after.size()) return std::nullopt;
        banner.ready = true;
        banner.default_signals = after.substr(0, space) == "default-signal";
        banner.spool = std::string(after.substr(space + 1));
    } else if (rest.rfind("missing ", 0) == 0) {
        banner.missing = std::string(rest.substr(8));
    } else {
        return std::nullopt;
    }
    return banner;
}

std::string_view script_env_options(const AgentBanner& banner) {
    return banner.default_signals ? "--default-signal=INT,QUIT" : "";
}

AgentMessage parse_agent_message(std::string_view line) {
    AgentMessage message;
    const auto words = words_of(line);
    if (words.size() < 2 || !number_of(words[1], message.id)) return AgentMessage{};
    if (words[0] == "started" && words.size() == 3 && number_of(words[2], message.pgid)) {
        message.kind = AgentMessage::Kind::started;
    } else if (words[0] == "exit" && words.size() == 4 && number_of(words[2], message.status) &&
               (words[3] == "0" || words[3] == "1")) {
        message.kind = AgentMessage::Kind::exited;
        message.group_alive = words[3] == "1";
    } else if (words[0] == "killed" && words.size() == 2) {
        message.kind = AgentMessage::Kind::killed;
    } else if (words[0] == "pong" && words.size() == 2) {
        message.kind = AgentMessage::Kind::pong;
    } else {
        return AgentMessage{};
    }
    return message;
}

ExitInfo exit_info_of_status(int status) {
    ExitInfo info;
    if (status > 128 && status <= 128 + 64)
        info.signal = status - 128;
    else
        info.exit_code = status;
    return info;
}

}  // namespace ncclsweep::remote
