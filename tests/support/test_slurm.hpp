#pragma once
// One throwaway one-node Slurm cluster per test (scripts/test-slurm.sh: munged, slurmctld and
// slurmd on this machine, partition `debug`), like the sshd of test_sshd.hpp. Tests run the
// Slurm commands, and ncclsweep, with SLURM_CONF pointing at it.
#include <string>
#include <vector>

#include "tests/support/catch.hpp"
#include "tests/support/skip.hpp"
#include "tests/support/temp_dir.hpp"

namespace ncclsweep::test {

/// A running test cluster; `available` is false (and the test marked skipped) when Slurm or
/// munge is not installed, or cannot start for an ordinary user; a cluster that should start
/// here and does not (as root, or a node that never becomes idle) fails the test.
struct TestSlurm {
    TempDir dir;
    std::string conf;  ///< path of its slurm.conf
    bool available = false;

    /// `private_path`: slurmd and its tasks see an empty tmpfs there (a compute node that does not
    /// share that directory with the login node); "" = they see this machine's files.
    explicit TestSlurm(const std::string& private_path = "") {
        std::vector<std::string> argv{source_path("scripts/test-slurm.sh").string(), "start",
                                      dir.path().string()};
        if (!private_path.empty()) {
            argv.push_back("--private");
            argv.push_back(private_path);
        }
        // The script waits up to 60 s for the node to become idle.
        auto r = run_command(argv, {}, {}, std::chrono::seconds(120));
        if (r.exit_code == 77) {
            skip_test("slurm",
                      "no one-node Slurm cluster could be started here (scripts/install-deps.sh installs "
                      "slurmctld slurmd slurm-client munge): " +
                          r.err);
            return;
        }
        if (r.exit_code == 78) {
            skip_test("mount", "a compute node with a private directory needs a mount namespace: " + r.err);
            return;
        }
        // Anything else that did not start (a daemon as root, a node that never became idle) fails.
        INFO(r.err);
        REQUIRE(r.exit_code == 0);
        conf = r.out.substr(0, r.out.find('\n'));
        available = true;
    }
    ~TestSlurm() {
        run_command({source_path("scripts/test-slurm.sh").string(), "stop", dir.path().string()});
    }
    TestSlurm(const TestSlurm&) = delete;
    TestSlurm& operator=(const TestSlurm&) = delete;

    /// The environment entry that points Slurm's commands at this cluster.
    [[nodiscard]] std::string env() const { return "SLURM_CONF=" + conf; }
    /// Runs a Slurm command (squeue, scontrol, ...) against this cluster.
    [[nodiscard]] CommandResult run(const std::vector<std::string>& argv) const {
        return run_command(argv, {}, {env()});
    }
    /// squeue's lines for every job of this cluster (empty when none is queued or running).
    [[nodiscard]] std::string queue() const {
        return run({"squeue", "--noheader", "--array", "--format=%i|%T"}).out;
    }
};

}  // namespace ncclsweep::test
