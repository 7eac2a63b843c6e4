#pragma once
// PoolTarget: several hosts (ssh targets) as one target with one slot per host, so the sweep
// loop runs one experiment per host at a time, in parallel.
#include <memory>
#include <string>
#include <vector>

#include "core/target.hpp"

namespace ncclsweep::remote {

/// A pool of hosts; slot i is host i. Calls on the pool itself (preflight, the engine check)
/// go to the first host.
class PoolTarget final : public Target {
public:
    /// `hosts` must not be empty.
    explicit PoolTarget(std::vector<std::unique_ptr<Target>> hosts);
    /// "pool(ssh://a:22, ssh://b:22)".
    [[nodiscard]] std::string describe() const override;
    /// Prepares the directory on every host; infrastructure when one fails, bad_input when the
    /// hosts' paths differ (a relative target.workdir under different home directories).
    Result<std::string> prepare_workdir(const std::string& sweep_id) override;
    /// Locks the directory on every host (infrastructure when one is held by another runner).
    Result<void> lock_workdir(const std::string& holder) override;
    Result<void> put_file(const std::string& path, const std::string& content) override;
    /// From the first host (each experiment reads from its slot's host).
    Result<std::optional<std::string>> get_file(const std::string& path, std::size_t limit) override;
    Result<std::unique_ptr<Process>> start(const Command& command) override;
    Result<std::string> capture(const std::vector<std::string>& argv, std::chrono::seconds timeout) override;
    [[nodiscard]] int slots() const override { return static_cast<int>(m_hosts.size()); }
    Target& slot_target(int slot) override { return *m_hosts.at(static_cast<std::size_t>(slot)); }

private:
    std::vector<std::unique_ptr<Target>> m_hosts;
};

}  // namespace ncclsweep::remote
