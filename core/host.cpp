#include "core/host.hpp"

#include <signal.h>
#include <unistd.h>

#include <cerrno>
#include <fstream>
#include <sstream>

namespace ncclsweep {
namespace {

/// /proc/PID/stat's state letter and start time (fields 3 and 22); the command name (field 2)
/// may hold spaces and ')', so the fields are counted from the last ')'.
bool read_stat(long pid, char& state, std::string& start_ticks) {
    std::ifstream file("/proc/" + std::to_string(pid) + "/stat");
    std::string text;
    if (!file || !std::getline(file, text)) return false;
    const auto close = text.rfind(')');
    if (close == std::string::npos) return false;
    std::istringstream fields(text.substr(close + 1));
    std::string field;
    // Fields after the name start at 3 (state); the start time is field 22.
    for (int index = 3; fields >> field; ++index) {
        if (index == 3) state = field.empty() ? '?' : field[0];
        if (index == 22) {
            start_ticks = field;
            return true;
        }
    }
    return false;
}

std::string boot_id() {
    std::ifstream file("/proc/sys/kernel/random/boot_id");
    std::string id;
    if (file) std::getline(file, id);
    return id;
}

}  // namespace

std::string host_name() {
    char name[256] = {};
    if (::gethostname(name, sizeof name - 1) != 0) return {};
    return name;
}

std::string short_host_name() {
    const std::string host = host_name();
    return host.substr(0, host.find('.'));
}

std::string process_identity(long pid) {
    char state = '?';
    std::string start;
    if (pid <= 0 || !read_stat(pid, state, start)) return {};
    return boot_id() + ":" + start;
}

ProcessLiveness probe_process(long pid, const std::string& identity) {
    if (pid <= 0) return ProcessLiveness::gone;
    // Signal 0 probes without sending anything; EPERM means it exists under another user.
    if (::kill(static_cast<pid_t>(pid), 0) != 0 && errno != EPERM) return ProcessLiveness::gone;
    char state = '?';
    std::string start;
    if (!read_stat(pid, state, start)) return ProcessLiveness::unknown;
    // A zombie has exited: it only waits for its parent (a container without an init reaps late).
    if (state == 'Z' || state == 'X') return ProcessLiveness::gone;
    if (!identity.empty() && identity != boot_id() + ":" + start) return ProcessLiveness::gone;
    return ProcessLiveness::running;
}

std::string process_name(long pid) {
    std::ifstream comm("/proc/" + std::to_string(pid) + "/comm");
    std::string name;
    if (comm) std::getline(comm, name);
    return name;
}

}  // namespace ncclsweep
