// The policy `ncclsweep run` applies around the sweep loop, held in the library so that it can
// be tested here rather than only through the binary: what counts as success for a workload,
// which rules watch it, how a run ends (exit status), and which commands must exist locally.
#include <string>
#include <vector>

#include "core/sweep/engine_locator.hpp"
#include "core/sweep/sweep_session.hpp"
#include "core/watch/rule_catalog.hpp"
#include "core/watch/watcher.hpp"
#include "tests/support/catch.hpp"
#include "tests/support/temp_dir.hpp"

using namespace ncclsweep;

namespace {

Spec command_spec() {
    Spec spec;
    spec.workload.command = {SpecValue{"/bin/true", {}}};
    return spec;
}

Experiment command_point(int id, std::string program) {
    Experiment e;
    e.id = id;
    e.argv = {std::move(program), "--port", "8000"};
    return e;
}

}  // namespace

TEST_CASE("run policy: the success rule follows the workload and the spec's timeouts are kept") {
    Spec spec = command_spec();
    spec.timeouts.stall = 7;
    spec.timeouts.total = 99;
    CHECK(watcher_options_for(spec).success == SuccessRule::exit_zero);
    CHECK(watcher_options_for(spec).timeouts.stall == 7);
    CHECK(watcher_options_for(spec).timeouts.total == 99);

    spec.workload.metrics = {{"tok_s", "tok_s=([0-9.]+)"}};
    CHECK(watcher_options_for(spec).success == SuccessRule::any_metric);

    // An engine workload needs tpverify's result event, whatever metrics say.
    spec.workload.engine = "tpverify";
    CHECK(watcher_options_for(spec).success == SuccessRule::result_event);
}

TEST_CASE(
    "run policy: a sweep's catalog puts the workload's rules and the --rules file before the built-ins") {
    test::TempDir dir;
    Spec spec = command_spec();
    RuleSpec mine;
    mine.name = "my_fatal";
    mine.regex = "EXPLODED";
    mine.failure_class = "python";
    spec.workload.rules = {mine};
    const auto file =
        dir.write("rules.yaml", "- {name: from_file, regex: 'DISK FULL', class: infra, fatal: true}\n");

    auto catalog = catalog_for(spec, file.string());
    REQUIRE(catalog);
    const int workload_rule = (*catalog)->find("my_fatal");
    const int file_rule = (*catalog)->find("from_file");
    REQUIRE(workload_rule >= 0);
    REQUIRE(file_rule >= 0);
    CHECK(workload_rule < file_rule);
    // Every built-in comes after both user rules (user rules win a tie on the same line).
    for (std::size_t i = 0; i < (*catalog)->size(); ++i) {
        const auto& name = (*catalog)->rule(static_cast<int>(i)).name;
        if (name != "my_fatal" && name != "from_file" && name.rfind("workload_", 0) != 0) {
            CHECK(static_cast<int>(i) > file_rule);
            break;
        }
    }

    auto missing = catalog_for(spec, (dir.path() / "nope.yaml").string());
    REQUIRE_FALSE(missing);
    CHECK(missing.error().message.find("nope.yaml") != std::string::npos);

    auto without_file = catalog_for(spec, "");
    REQUIRE(without_file);
    CHECK((*without_file)->find("from_file") < 0);
}

TEST_CASE("run policy: how a run ends decides its exit status") {
    SweepOutcome outcome;
    outcome.summary.ran = 3;
    outcome.summary.ok = 1;
    outcome.summary.failed = 2;
    CHECK(ending_of(outcome) == SweepEnding::done);

    outcome.summary.ok = 0;
    outcome.summary.failed = 3;
    CHECK(ending_of(outcome) == SweepEnding::nothing_succeeded);

    // A resume whose earlier part had finished experiments still has something to recommend.
    outcome.skipped_finished = 2;
    CHECK(ending_of(outcome) == SweepEnding::done);

    // Nothing ran at all (everything was already finished): done, not a negative verdict.
    outcome = SweepOutcome{};
    CHECK(ending_of(outcome) == SweepEnding::done);

    // An interrupt wins: the sweep is resumable, whatever ran before.
    outcome.summary.ran = 1;
    outcome.summary.interrupted = true;
    CHECK(ending_of(outcome) == SweepEnding::interrupted);
}

TEST_CASE("run policy: local commands and the engine must exist before a sweep is created") {
    test::TempDir dir;
    const std::string path_value = "/usr/bin:/bin";
    Spec spec = command_spec();

    std::vector<Experiment> fine = {command_point(1, "true"), command_point(2, "/bin/true")};
    CHECK(check_local_programs(spec, "", fine, path_value));

    std::vector<Experiment> broken = {command_point(1, "true"),
                                      command_point(2, (dir.path() / "serve").string())};
    auto refused = check_local_programs(spec, "", broken, path_value);
    REQUIRE_FALSE(refused);
    CHECK(refused.error().kind == ErrorKind::bad_input);
    CHECK(refused.error().message.find("experiment 2") != std::string::npos);
    CHECK(refused.error().message.find((dir.path() / "serve").string()) != std::string::npos);

    // A shell command is the shell's business.
    broken[1].shell = true;
    CHECK(check_local_programs(spec, "", broken, path_value));

    // Engine workloads check the engine, not argv.
    spec.workload.engine = "tpverify";
    auto no_engine = check_local_programs(spec, (dir.path() / "tpverify").string(), fine, path_value);
    REQUIRE_FALSE(no_engine);
    CHECK(no_engine.error().message.find("the engine") != std::string::npos);

    // Another host: nothing can be checked from here.
    spec.target.url = "ssh://me@gpu-host";
    CHECK(check_local_programs(spec, (dir.path() / "tpverify").string(), fine, path_value));
}
