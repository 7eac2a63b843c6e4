#pragma once
// The outside world of `ncclsweep run` for unit tests of its policy (core/sweep/run_policy.hpp):
// a RunHost that hands out one FakeTarget and records what preflight was asked to check, and a
// RunRecord over a FakeStore. Written by hand; every call is logged in order.
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "core/sweep/run_policy.hpp"
#include "tests/support/fake_store.hpp"
#include "tests/support/fake_target.hpp"

namespace ncclsweep::test {

/// A host whose open() hands out `target` (once) and whose preflight answers `facts`.
class FakeHost final : public RunHost {
public:
    std::unique_ptr<FakeTarget> target = std::make_unique<FakeTarget>();
    FakeTarget* opened = nullptr;  ///< the target open() handed out
    HostFacts facts;               ///< what preflight() returns (before_experiment set as asked)
    std::optional<Error> open_error, preflight_error;
    std::vector<std::string> calls;  ///< "open URL", "preflight"
    std::vector<HostChecks> asked;   ///< every preflight's checks
    int release_checks = 0;          ///< times the installed before_experiment ran

    Result<std::unique_ptr<Target>> open(const TargetSpec& spec) override {
        calls.push_back("open " + spec.url);
        if (open_error) return *open_error;
        opened = target.get();
        return std::unique_ptr<Target>(std::move(target));
    }
    Result<HostFacts> preflight(Target& /*target*/, const HostChecks& checks) override {
        calls.push_back("preflight");
        asked.push_back(checks);
        if (preflight_error) return *preflight_error;
        HostFacts out = facts;
        if (checks.release_check)
            out.before_experiment = [this](const std::vector<long>&) -> Result<void> {
                ++release_checks;
                return success();
            };
        return out;
    }
};

/// A database that is a FakeStore; `resumable` answers resume_candidate.
class FakeRecord final : public RunRecord {
public:
    FakeStore store;
    std::optional<std::int64_t> resumable;  ///< resume_candidate's answer (bad_input when empty)
    std::optional<Error> open_error;
    std::vector<std::string> calls;  ///< "open", "resume REF NAME"

    Result<SweepStore*> open() override {
        calls.push_back("open");
        if (open_error) return *open_error;
        return static_cast<SweepStore*>(&store);
    }
    Result<std::int64_t> resume_candidate(const std::string& ref, const std::string& name) override {
        calls.push_back("resume " + ref + " " + name);
        if (!resumable) return Error::bad_input("--resume: no unfinished sweep named '" + name + "'");
        return *resumable;
    }
    [[nodiscard]] std::string where() const override { return "fake.db"; }
    [[nodiscard]] std::int64_t recorded_sweep() const override { return store.current_id(); }
};

}  // namespace ncclsweep::test
