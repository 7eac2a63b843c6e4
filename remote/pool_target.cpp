#include "remote/pool_target.hpp"

#include <fmt/format.h>

namespace ncclsweep::remote {

PoolTarget::PoolTarget(std::vector<std::unique_ptr<Target>> hosts) : m_hosts(std::move(hosts)) {}

std::string PoolTarget::describe() const {
    std::string names;
    for (const auto& host : m_hosts) names += (names.empty() ? "" : ", ") + host->describe();
    return "pool(" + names + ")";
}

Result<std::string> PoolTarget::prepare_workdir(const std::string& sweep_id) {
    std::string first;
    for (const auto& host : m_hosts) {
        auto dir = host->prepare_workdir(sweep_id);
        if (!dir) return dir.error();
        if (first.empty()) {
            first = *dir;
        } else if (*dir != first) {
            return Error::bad_input(
                fmt::format("the pool's work directories differ ({} on {}, {} on {}); set target.workdir to "
                            "an absolute path "
                            "that exists on every host",
                            first, m_hosts.front()->describe(), *dir, host->describe()));
        }
    }
    return first;
}

Result<void> PoolTarget::lock_workdir(const std::string& holder) {
    for (const auto& host : m_hosts)
        if (auto locked = host->lock_workdir(holder); !locked) return locked.error();
    return success();
}

Result<std::optional<std::string>> PoolTarget::get_file(const std::string& path, std::size_t limit) {
    return m_hosts.front()->get_file(path, limit);
}

Result<void> PoolTarget::put_file(const std::string& path, const std::string& content) {
    return m_hosts.front()->put_file(path, content);
}

Result<std::unique_ptr<Process>> PoolTarget::start(const Command& command) {
    return m_hosts.front()->start(command);
}

Result<std::string> PoolTarget::capture(const std::vector<std::string>& argv, std::chrono::seconds timeout) {
    return m_hosts.front()->capture(argv, timeout);
}

}  // namespace ncclsweep::remote
