#include "remote/workdir_lock.hpp"

#include <unistd.h>

#include <fmt/format.h>

#include <charconv>
#include <map>

#include "core/host.hpp"

namespace ncclsweep::remote {
namespace {

std::map<std::string, std::string> lock_fields_of(const std::string& text) {
    std::map<std::string, std::string> fields;
    std::size_t begin = 0;
    while (begin < text.size()) {
        std::size_t end = text.find('\n', begin);
        if (end == std::string::npos) end = text.size();
        const std::string line = text.substr(begin, end - begin);
        if (const auto colon = line.find(": "); colon != std::string::npos)
            fields.emplace(line.substr(0, colon), line.substr(colon + 2));
        begin = end + 1;
    }
    return fields;
}

/// One line of the lock file: control characters would split it.
std::string lock_one_line(const std::string& text) {
    std::string out;
    for (char c : text) out += static_cast<unsigned char>(c) < 0x20 ? ' ' : c;
    return out;
}

}  // namespace

std::string lock_holder_text(const std::string& holder) {
    return fmt::format("holder: {}\npid: {}\nhost: {}\nprocess: {}\n", lock_one_line(holder), ::getpid(),
                       lock_one_line(host_name()), process_identity(::getpid()));
}

std::string describe_lock_holder(const std::string& text) {
    const auto fields = lock_fields_of(text);
    const auto holder = fields.find("holder");
    std::string out = holder == fields.end() || holder->second.empty() ? "another runner" : holder->second;
    const auto pid = fields.find("pid");
    const auto host = fields.find("host");
    if (pid != fields.end() && host != fields.end())
        out += fmt::format(", run by pid {} on host {}", pid->second, host->second);
    return out;
}

bool lock_holder_gone(const std::string& text) {
    const auto fields = lock_fields_of(text);
    const auto pid_field = fields.find("pid");
    const auto host = fields.find("host");
    if (pid_field == fields.end() || host == fields.end() || host->second != host_name()) return false;
    long pid = 0;
    const std::string& digits = pid_field->second;
    const auto [end, ec] = std::from_chars(digits.data(), digits.data() + digits.size(), pid);
    if (ec != std::errc() || end != digits.data() + digits.size() || pid <= 0) return false;
    const auto identity = fields.find("process");
    return probe_process(pid, identity == fields.end() ? std::string() : identity->second) ==
           ProcessLiveness::gone;
}

bool lock_holder_is_this_process(const std::string& text) {
    const auto fields = lock_fields_of(text);
    auto field = [&](const char* name) {
        const auto it = fields.find(name);
        return it == fields.end() ? std::string() : it->second;
    };
    return field("pid") == std::to_string(::getpid()) && field("host") == host_name() &&
           field("process") == process_identity(::getpid());
}

}  // namespace ncclsweep::remote
