#pragma once
// The sweep loop's options for unit tests with a FakeTarget: a command workload reporting
// tok_s ("tok_s=123"), success on any metric, no timeouts, no kill grace.
#include <chrono>

#include "core/sweep/sweep.hpp"
#include "core/watch/rule_catalog.hpp"
#include "tests/support/catch.hpp"

namespace ncclsweep::test {

/// Options for the loop over FakeTarget runs: `repeats` samples per experiment.
inline SweepRunOptions unit_run_options(int repeats = 1) {
    SweepRunOptions options;
    options.sweep_name = "unit";
    options.repeats = repeats;
    options.workload.command = {SpecValue{"/opt/serve", {}}};
    options.workload.metrics = {{"tok_s", "tok_s=([0-9.]+)"}};
    options.watcher.success = SuccessRule::any_metric;
    options.watcher.timeouts = Timeouts{0, 0, 0, 0};
    auto rules = rules_from_workload(options.workload);
    REQUIRE(rules);
    auto catalog = RuleCatalog::with_user_rules(*rules);
    REQUIRE(catalog);
    options.catalog = *catalog;
    options.kill_grace = std::chrono::milliseconds(0);
    return options;
}

}  // namespace ncclsweep::test
