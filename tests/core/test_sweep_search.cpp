// The sweep loop under a search (core/sweep + core/search) with a FakeTarget that answers by
// the command's NCCL settings and an in-memory FakeStore: skip (pruned, dropped) and stop
// (budget) paths, later rounds added to a point's record, resume and interrupt of a search.
#include <atomic>
#include <string>
#include <vector>

#include "core/sweep/sweep_session.hpp"
#include "core/watch/rule_catalog.hpp"
#include "tests/support/catch.hpp"
#include "tests/support/fake_store.hpp"
#include "tests/support/fake_target.hpp"
#include "tests/support/quiet_observer.hpp"
#include "tests/support/sweep_options.hpp"

using namespace ncclsweep;
using ncclsweep::test::FakeRun;
using ncclsweep::test::FakeStore;
using ncclsweep::test::FakeTarget;

namespace {

/// The issue's 24 points (NCCL_ALGO x NCCL_PROTO x NCCL_MIN_NCHANNELS, first axis slowest).
std::vector<Experiment> issue_plan() {
    std::vector<Experiment> plan;
    int id = 1;
    for (std::string algo : {"Ring", "Tree"})
        for (std::string proto : {"LL", "LL128", "Simple"})
            for (std::string channels : {"1", "2", "4", "8"}) {
                Experiment e;
                e.id = id++;
                e.params = {{"NCCL_ALGO", algo}, {"NCCL_PROTO", proto}, {"NCCL_MIN_NCHANNELS", channels}};
                e.env = e.params;
                e.key = "k" + std::to_string(e.id);
                e.canonical = algo + proto + channels;
                e.argv = {"/opt/serve"};
                plan.push_back(e);
            }
    return plan;
}

std::string command_env(const Command& command, const std::string& name) {
    for (const auto& [n, v] : command.env)
        if (n == name) return v;
    return "";
}

/// Every Tree run dies in graph capture; Ring/LL/4 is clearly best. Without `noisy` every run
/// of a point gives the same value: the race measures no noise and decides by the U test alone
/// (drops after 4 + 4 samples); with it samples vary by +-1% with the repeat, and the noise
/// screens out the points clearly behind after the first round.
FakeTarget issue_target(int* starts = nullptr, int* tree_starts = nullptr, bool noisy = false) {
    FakeTarget target;
    target.respond = [starts, tree_starts, noisy](const Command& command) {
        if (starts) ++*starts;
        FakeRun run;
        if (command_env(command, "NCCL_ALGO") == "Tree") {
            if (tree_starts) ++*tree_starts;
            run.lines.emplace_back(Stream::err,
                                   "RuntimeError: operation not permitted when stream is capturing");
            run.exit = ExitInfo{1, 0};
            return run;
        }
        const bool best =
            command_env(command, "NCCL_PROTO") == "LL" && command_env(command, "NCCL_MIN_NCHANNELS") == "4";
        const int repeat = std::stoi(command_env(command, "NCCLSWEEP_REPEAT"));
        const double base =
            best ? 150.0 : 100.0 + 2.0 * std::stoi(command_env(command, "NCCL_MIN_NCHANNELS"));
        run.lines.emplace_back(
            Stream::out, "tok_s=" + std::to_string(noisy ? base * (1 + 0.01 * ((repeat % 3) - 1)) : base));
        return run;
    };
    return target;
}

SweepRunOptions search_options(spec::Budget budget = {}) {
    SweepRunOptions options = ncclsweep::test::unit_run_options(8);
    spec::SearchSpec search;
    search.prune_after = 2;
    search.race = spec::RaceSpec{2, 8, 0.95};
    search.budget = budget;
    options.search = search::Settings::from(search, 8, "tok_s", stats::Direction::higher_is_better);
    return options;
}

SweepRequest issue_request() {
    SweepRequest request;
    request.sweep.name = "unit";
    request.sweep.fingerprint.parts = {{"search", "prune after 2; race 2..8"}};
    request.experiments = issue_plan();
    return request;
}

int count_writes(const FakeStore& store, const std::string& text) {
    int n = 0;
    for (const auto& w : store.writes) n += w == text;
    return n;
}

int count_status(FakeStore& store, RunStatus status) {
    int n = 0;
    for (const auto& [id, report] : store.current().finished) n += report.status == status;
    return n;
}

}  // namespace

TEST_CASE("sweep search: Tree is pruned after two runs and the race keeps Ring/LL/4 within 50 runs") {
    int starts = 0, tree_starts = 0;
    FakeTarget target = issue_target(&starts, &tree_starts);
    FakeStore store;
    test::QuietObserver observer;
    std::atomic<bool> stop{false};
    auto outcome = run_sweep(issue_request(), target, store, observer, search_options(), stop);
    REQUIRE(outcome);
    CHECK(tree_starts == 2);
    CHECK(starts == 50);
    CHECK(outcome->summary.runs == 50);
    CHECK(outcome->summary.pruned == 10);
    CHECK(outcome->summary.dropped == 11);
    CHECK(outcome->summary.rounds == 2);
    CHECK(outcome->summary.ran == 14);  // 12 Ring + 2 Tree points dispatched a first time
    CHECK(store.current().state == "done");
    CHECK(count_status(store, RunStatus::pruned) == 10);
    CHECK(count_status(store, RunStatus::dropped) == 11);
    const ExperimentReport& best = store.current().finished.at(3);  // Ring/LL/4
    CHECK(best.status == RunStatus::ok);
    CHECK(best.samples.size() == 4);
    // A later round adds to the record without starting the point again in the store.
    CHECK(count_writes(store, "started 3#1") == 1);
    CHECK(count_writes(store, "finished 3 ok") == 2);
    const ExperimentReport& pruned = store.current().finished.at(24);
    CHECK(pruned.status == RunStatus::pruned);
    CHECK(pruned.diagnosis.find("NCCL_ALGO=Tree failed 2 times with graph_capture") == 0);
    const ExperimentReport& dropped = store.current().finished.at(1);
    CHECK(dropped.status == RunStatus::dropped);
    CHECK(dropped.samples.size() == 4);
    CHECK(dropped.diagnosis.find("behind experiment 3 after round 2") == 0);
    bool round_noticed = false;
    for (const auto& n : observer.notices) round_noticed |= n.find("round 2:") == 0;
    CHECK(round_noticed);
}

TEST_CASE("sweep search: a spent budget stops the loop and the sweep ends resumable") {
    FakeTarget target = issue_target();
    FakeStore store;
    test::QuietObserver observer;
    std::atomic<bool> stop{false};
    spec::Budget budget;
    budget.runs = 30;
    auto outcome = run_sweep(issue_request(), target, store, observer, search_options(budget), stop);
    REQUIRE(outcome);
    CHECK(outcome->summary.budget_spent);
    CHECK(outcome->summary.runs <= 30);
    CHECK(store.current().state == "interrupted");
    CHECK(store.current().reason.find("budget of 30 runs spent") == 0);
    CHECK(ending_of(*outcome) == SweepEnding::done);
}

TEST_CASE("sweep search: --resume continues a search from what was recorded") {
    int starts = 0;
    FakeTarget target = issue_target(&starts);
    FakeStore store;
    test::QuietObserver observer;
    std::atomic<bool> stop{false};
    spec::Budget budget;
    budget.runs = 30;
    auto first = run_sweep(issue_request(), target, store, observer, search_options(budget), stop);
    REQUIRE(first);
    const int first_starts = starts;
    SweepRequest again = issue_request();
    again.resume_id = first->sweep_id;
    auto second = run_sweep(again, target, store, observer, search_options(), stop);
    REQUIRE(second);
    // Nothing runs twice: the whole search costs what it costs uninterrupted.
    CHECK(first_starts + second->summary.runs == 50);
    CHECK(starts == 50);
    CHECK(store.current().state == "done");
    CHECK(count_status(store, RunStatus::pruned) == 10);
    CHECK(count_status(store, RunStatus::dropped) == 11);
    CHECK(store.current().finished.at(3).samples.size() == 4);
}

TEST_CASE("sweep search: an interrupt in a later round keeps the point's earlier samples") {
    int starts = 0;
    FakeTarget target = issue_target(&starts);
    std::atomic<bool> stop{false};
    auto respond = target.respond;
    target.respond = [&](const Command& command) {
        FakeRun run = respond(command);
        if (starts == 30) run.on_start = [&stop] { stop = true; };  // in round 2
        return run;
    };
    FakeStore store;
    test::QuietObserver observer;
    auto outcome = run_sweep(issue_request(), target, store, observer, search_options(), stop);
    REQUIRE(outcome);
    CHECK(outcome->summary.interrupted);
    CHECK(store.current().state == "interrupted");
    int with_two = 0;
    for (const auto& [id, report] : store.current().finished)
        with_two += report.status == RunStatus::ok && report.samples.size() == 2;
    CHECK(with_two >= 1);  // the point in flight among them: its round-1 record stands
    stop = false;
    SweepRequest again = issue_request();
    again.resume_id = outcome->sweep_id;
    auto resumed = run_sweep(again, target, store, observer, search_options(), stop);
    REQUIRE(resumed);
    CHECK(store.current().state == "done");
    CHECK(store.current().finished.at(3).status == RunStatus::ok);
    CHECK(count_status(store, RunStatus::dropped) == 11);
}

TEST_CASE("sweep search: with measured noise the points clearly behind are dropped after the first round") {
    int starts = 0, tree_starts = 0;
    FakeTarget target = issue_target(&starts, &tree_starts, true);
    FakeStore store;
    test::QuietObserver observer;
    std::atomic<bool> stop{false};
    auto outcome = run_sweep(issue_request(), target, store, observer, search_options(), stop);
    REQUIRE(outcome);
    // Round 1: 12 Ring points x 2 samples and the 2 Tree runs that prune Tree. The others are
    // 23-32% behind Ring/LL/4 with a noise of about 1% per run: dropped at once, 26 runs in all
    // (the U test alone needs 50: 4 + 4 samples before it can drop anything).
    CHECK(starts == 26);
    CHECK(outcome->summary.rounds == 1);
    CHECK(count_status(store, RunStatus::dropped) == 11);
    const ExperimentReport& dropped = store.current().finished.at(1);
    CHECK(dropped.diagnosis.find("behind experiment 3 after round 1: median ") == 0);
    CHECK(dropped.diagnosis.find("more than the 3% threshold plus ") != std::string::npos);
    CHECK(dropped.diagnosis.find("x the noise of ") != std::string::npos);
    CHECK(store.current().finished.at(3).status == RunStatus::ok);
}
