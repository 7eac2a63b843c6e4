// The search alone (core/search): order, pruning, racing, budget and restore, driven by a
// scripted "workload" per point; nothing runs.
#include <algorithm>
#include <cmath>
#include <functional>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "core/search/search.hpp"
#include "tests/support/catch.hpp"

using namespace ncclsweep;
using search::Action;
using search::Mark;
using search::Observation;
using search::Point;
using search::Search;
using search::Settings;
using search::Step;

namespace {

/// The issue's sweep: NCCL_ALGO Ring/Tree x NCCL_PROTO LL/LL128/Simple x NCCL_MIN_NCHANNELS
/// 1/2/4/8, in plan order (first axis slowest), ids 1..24.
std::vector<Point> issue_points() {
    std::vector<Point> points;
    int id = 1;
    for (std::string algo : {"Ring", "Tree"})
        for (std::string proto : {"LL", "LL128", "Simple"})
            for (std::string channels : {"1", "2", "4", "8"})
                points.push_back(
                    {id++, {{"NCCL_ALGO", algo}, {"NCCL_PROTO", proto}, {"NCCL_MIN_NCHANNELS", channels}}});
    return points;
}

std::string value_of(const Point& point, const std::string& name) {
    for (const auto& [n, v] : point.params)
        if (n == name) return v;
    return "";
}

/// The issue's workload: every Tree run dies in graph capture; Ring/LL/4 is 30% ahead of the
/// rest, which are spread over 100..120; each sample varies by +-1% with the repeat.
Observation issue_workload(const Point& point, int first_repeat, int repeats) {
    Observation o;
    o.runs = repeats;
    o.seconds = repeats * 10.0;
    if (value_of(point, "NCCL_ALGO") == "Tree") {
        o.ok = false;
        o.runs = 1;  // the first repeat dies; the point's other repeats do not run
        o.seconds = 10.0;
        o.failure_class = "graph_capture";
        return o;
    }
    const bool best = value_of(point, "NCCL_PROTO") == "LL" && value_of(point, "NCCL_MIN_NCHANNELS") == "4";
    const double base = best ? 156.0 : 100.0 + (point.exp_id % 11) * 2.0;
    for (int r = first_repeat; r < first_repeat + repeats; ++r)
        o.values.push_back(base * (1 + 0.01 * ((r % 3) - 1)));
    return o;
}

struct Trace {
    std::vector<Step> steps;
    int runs = 0;
    std::map<int, int> runs_by_id;
    Step last;
};

/// Runs `search` to its stop with `workload` answering each run step.
Trace drive(Search& search, const std::vector<Point>& points,
            const std::function<Observation(const Point&, int, int)>& workload, int limit = 1000) {
    Trace trace;
    for (int i = 0; i < limit; ++i) {
        Step step = search.next();
        trace.steps.push_back(step);
        if (step.action == Action::stop) {
            trace.last = step;
            break;
        }
        if (step.action != Action::run) continue;
        Observation o = workload(points[step.point], step.first_repeat, step.repeats);
        trace.runs += o.runs;
        trace.runs_by_id[points[step.point].exp_id] += o.runs;
        search.record(step.point, o);
    }
    return trace;
}

Settings search_settings(int repeats = 8) {
    spec::SearchSpec spec;
    spec.prune_after = 2;
    spec.race = spec::RaceSpec{2, 8, 0.95};
    return Settings::from(spec, repeats, "tok_s", stats::Direction::higher_is_better);
}

int count(const Trace& trace, Action action, Mark mark = Mark::pruned) {
    int n = 0;
    for (const auto& s : trace.steps) n += s.action == action && (action != Action::skip || s.mark == mark);
    return n;
}

}  // namespace

TEST_CASE("search: without settings every point runs once with all repeats in plan order") {
    auto points = issue_points();
    Settings settings;
    settings.repeats = 3;
    Search search(points, settings);
    Trace trace = drive(search, points, [](const Point&, int, int n) {
        Observation o;
        o.runs = n;
        o.values.assign(static_cast<std::size_t>(n), 1.0);
        return o;
    });
    REQUIRE(trace.steps.size() == 25);
    for (std::size_t i = 0; i < 24; ++i) {
        CHECK(trace.steps[i].action == Action::run);
        CHECK(trace.steps[i].point == i);
        CHECK(trace.steps[i].first_repeat == 0);
        CHECK(trace.steps[i].repeats == 3);
    }
    CHECK(trace.last.reason.empty());
    CHECK(search.worst_case_runs() == 72);
}

TEST_CASE("search: the interleaved order brings every value of every axis up early") {
    auto points = issue_points();
    auto order = search::interleaved_order(points);
    REQUIRE(order.size() == points.size());
    CHECK(order[0] == 0);  // ties go to plan order
    CHECK(value_of(points[order[1]], "NCCL_ALGO") == "Tree");
    std::set<std::string> protos, channels;
    for (std::size_t i = 0; i < 4; ++i) {
        protos.insert(value_of(points[order[i]], "NCCL_PROTO"));
        channels.insert(value_of(points[order[i]], "NCCL_MIN_NCHANNELS"));
    }
    CHECK(protos.size() == 3);
    CHECK(channels.size() == 4);
    std::set<std::size_t> all(order.begin(), order.end());
    CHECK(all.size() == points.size());
}

TEST_CASE("search: a value that failed twice with one class and never succeeded prunes its other points") {
    auto points = issue_points();
    Search search(points, search_settings());
    Trace trace = drive(search, points, issue_workload);
    int tree_runs = 0;
    for (const auto& [id, runs] : trace.runs_by_id) tree_runs += id > 12 ? runs : 0;
    CHECK(tree_runs == 2);
    CHECK(count(trace, Action::skip, Mark::pruned) == 10);
    CHECK(search.progress().pruned == 10);
    for (const auto& step : trace.steps) {
        if (step.action != Action::skip || step.mark != Mark::pruned) continue;
        CHECK(value_of(points[step.point], "NCCL_ALGO") == "Tree");
        CHECK(step.reason.find("NCCL_ALGO=Tree failed 2 times with graph_capture (experiments ") == 0);
        CHECK(step.reason.find("never succeeded") != std::string::npos);
    }
}

TEST_CASE("search: without measured noise the U test drops the points behind after 4 + 4 samples") {
    auto points = issue_points();
    Search search(points, search_settings());
    // Every run of a point gives the same value: no noise to screen with, the U test decides.
    Trace trace = drive(search, points, [](const Point& p, int first, int n) {
        Observation o = issue_workload(p, first, n);
        for (double& v : o.values) v = std::round(v / 1.01) * 1.0;  // one value per point
        if (!o.values.empty()) std::fill(o.values.begin(), o.values.end(), o.values.front());
        return o;
    });
    // 12 Ring points x (2 + 2) samples and 2 Tree runs: the issue's "at most 60" (exhaustive 98).
    CHECK(trace.runs == 50);
    CHECK(count(trace, Action::skip, Mark::dropped) == 11);
    CHECK(trace.last.action == Action::stop);
    CHECK_FALSE(trace.last.budget_spent);
    CHECK(trace.last.reason.find("one point is left after round 2") == 0);
    // The one left is Ring/LL/4 (experiment 3), with 4 samples.
    CHECK(trace.runs_by_id.at(3) == 4);
    for (const auto& step : trace.steps) {
        if (step.action != Action::skip || step.mark != Mark::dropped) continue;
        CHECK(points[step.point].exp_id != 3);
        CHECK(step.reason.find("behind experiment 3 after round 2: median ") == 0);
        CHECK(step.reason.find("n=4+4") != std::string::npos);
        CHECK(step.reason.find("alpha 0.05)") != std::string::npos);  // as written, not 0.05000000000000004
    }
}

TEST_CASE("search: with measured noise the points clearly behind go after the first round") {
    auto points = issue_points();
    Search search(points, search_settings());
    Trace trace = drive(search, points, issue_workload);  // +-1% per repeat
    // Round 1: 12 Ring points x 2 samples and 2 Tree runs; the rest are >= 23% behind with about
    // 1% noise per run, far more than the threshold plus the noise allows.
    CHECK(trace.runs == 26);
    CHECK(count(trace, Action::skip, Mark::dropped) == 11);
    CHECK(search.progress().noise > 0.003);
    CHECK(search.progress().noise < 0.02);
    CHECK(trace.last.reason.find("one point is left after round 1") == 0);
    for (const auto& step : trace.steps)
        if (step.action == Action::skip && step.mark == Mark::dropped)
            CHECK(step.reason.find("behind experiment 3 after round 1: median ") == 0);
}

TEST_CASE("search: points that cannot be told apart settle within the threshold and none is dropped") {
    auto points = issue_points();
    points.resize(4);  // Ring/LL x 1, 2, 4, 8
    Search search(points, search_settings());
    Trace trace = drive(search, points, [](const Point&, int first, int n) {
        Observation o;
        o.runs = n;
        for (int r = first; r < first + n; ++r) o.values.push_back(100 + (r % 4));
        return o;
    });
    CHECK(count(trace, Action::skip, Mark::dropped) == 0);
    // Round 2 (4 samples each) measures the noise; every point is then within 3% of the leader
    // with 95% confidence: settled, the race is decided without the last round to 8.
    CHECK(trace.runs == 16);
    CHECK(search.progress().round == 2);
    CHECK(search.progress().settled == 3);
    CHECK(trace.last.reason.find(
              "decided after round 2: 3 points are within the 3% threshold of the leader") == 0);
}

TEST_CASE("search: an axis that shows no effect is collapsed to its first value after round 1") {
    // NCCL_BUFFSIZE does nothing here (same effective choice, same values up to the noise);
    // NCCL_PROTO changes NCCL's choice and Simple is 10% behind; each doubling of the channels
    // gains 4%.
    std::vector<Point> points;
    int id = 1;
    for (std::string proto : {"LL", "Simple"})
        for (std::string channels : {"1", "2", "4", "8"})
            for (std::string buffsize : {"131072", "16777216"})
                points.push_back(
                    {id++,
                     {{"NCCL_PROTO", proto}, {"NCCL_MIN_NCHANNELS", channels}, {"NCCL_BUFFSIZE", buffsize}}});
    Settings settings = search_settings();
    settings.race->min_repeats = 1;
    settings.race->max_repeats = 4;
    settings.prune_after = 0;
    Search search(points, settings);
    Trace trace = drive(search, points, [](const Point& p, int first, int n) {
        Observation o;
        o.runs = n;
        const bool ll = value_of(p, "NCCL_PROTO") == "LL";
        o.effective = std::string("AllReduce 57344B: RING/") + (ll ? "LL" : "SIMPLE") +
                      " ch0..0; env: NCCL_BUFFSIZE=" + value_of(p, "NCCL_BUFFSIZE");
        const double channels = std::stod(value_of(p, "NCCL_MIN_NCHANNELS"));  // 4% a doubling
        for (int r = first; r < first + n; ++r)
            o.values.push_back((ll ? 150.0 : 135.0) * (1 + 0.04 * std::log2(channels)) *
                               (1 + 0.005 * (((p.exp_id * 7 + r * 3) % 5) - 2)));
        return o;
    });
    int collapsed = 0;
    for (const auto& step : trace.steps) {
        if (step.action != Action::skip ||
            step.reason.find("collapsed after round 1: NCCL_BUFFSIZE shows no effect") != 0)
            continue;
        ++collapsed;
        CHECK(value_of(points[step.point], "NCCL_BUFFSIZE") == "16777216");
        CHECK(step.reason.find("the race keeps its points with NCCL_BUFFSIZE=131072") != std::string::npos);
    }
    CHECK(collapsed == 8);
    CHECK(search.progress().collapsed == 8);
    // NCCL_PROTO changes the effective choice: never collapsed (Simple goes as behind instead).
    for (const auto& step : trace.steps)
        CHECK(step.reason.find("collapsed after round 1: NCCL_PROTO") == std::string::npos);
}

TEST_CASE("search: an axis whose effect is confined to some points is not collapsed") {
    // NCCL_BUFFSIZE=16777216 is 20% faster with Simple on 8 channels only (an interaction), the
    // same elsewhere, and NCCL reports the same choice: the one pair far beyond the noise keeps it.
    std::vector<Point> points;
    int id = 1;
    for (std::string proto : {"LL", "Simple"})
        for (std::string channels : {"1", "2", "4", "8"})
            for (std::string buffsize : {"131072", "16777216"})
                points.push_back(
                    {id++,
                     {{"NCCL_PROTO", proto}, {"NCCL_MIN_NCHANNELS", channels}, {"NCCL_BUFFSIZE", buffsize}}});
    Settings settings = search_settings();
    settings.race->min_repeats = 1;
    settings.race->max_repeats = 4;
    settings.prune_after = 0;
    Search search(points, settings);
    drive(search, points, [](const Point& p, int first, int n) {
        Observation o;
        o.runs = n;
        const bool boost = value_of(p, "NCCL_PROTO") == "Simple" &&
                           value_of(p, "NCCL_BUFFSIZE") == "16777216" &&
                           value_of(p, "NCCL_MIN_NCHANNELS") == "8";
        // NCCL's TUNING lines cannot show a buffer size: the same choice either way.
        o.effective = "AllReduce 57344B: RING/" + value_of(p, "NCCL_PROTO") + " ch0..0";
        for (int r = first; r < first + n; ++r)
            o.values.push_back((boost ? 180.0 : 150.0) * (1 + 0.005 * (((p.exp_id * 7 + r * 3) % 5) - 2)));
        return o;
    });
    CHECK(search.progress().collapsed == 0);
}

TEST_CASE("search: without effective NCCL choices nothing collapses") {
    // Nothing recorded what NCCL chose: an axis cannot be shown to leave NCCL alone, and large
    // differences that happen to average out are not "no effect".
    std::vector<Point> points;
    int id = 1;
    for (std::string channels : {"1", "2", "4", "8"})
        for (std::string buffsize : {"131072", "16777216"})
            points.push_back({id++, {{"NCCL_MIN_NCHANNELS", channels}, {"NCCL_BUFFSIZE", buffsize}}});
    Settings settings = search_settings();
    settings.race->min_repeats = 1;
    settings.prune_after = 0;
    Search search(points, settings);
    drive(search, points, [](const Point& p, int first, int n) {
        Observation o;
        o.runs = n;
        for (int r = first; r < first + n; ++r) o.values.push_back(100.0 + (p.exp_id * 37 % 11) * 2.0);
        return o;
    });
    CHECK(search.progress().collapsed == 0);
}

TEST_CASE("search: infrastructure and timeout failures never prune") {
    auto points = issue_points();
    Search search(points, search_settings());
    Trace trace = drive(search, points, [](const Point& p, int first, int n) {
        Observation o = issue_workload(p, first, n);
        if (!o.ok) o.says_about_setting = false;  // e.g. timed out on a busy host
        return o;
    });
    CHECK(count(trace, Action::skip, Mark::pruned) == 0);
    int tree_runs = 0;
    for (const auto& [id, runs] : trace.runs_by_id) tree_runs += id > 12 ? runs : 0;
    CHECK(tree_runs == 12);
}

TEST_CASE("search: values that failed together wait and a value that succeeded is never pruned") {
    std::vector<Point> points = {
        {1, {{"A", "x"}, {"B", "p"}}}, {2, {{"A", "y"}, {"B", "p"}}}, {3, {{"A", "x"}, {"B", "q"}}},
        {4, {{"A", "y"}, {"B", "q"}}}, {5, {{"A", "x"}, {"B", "r"}}},
    };
    Settings settings;
    settings.repeats = 1;
    settings.prune_after = 1;
    Search search(points, settings);  // plan order
    Trace trace = drive(search, points, [](const Point& p, int, int n) {
        Observation o;
        o.runs = n;
        o.ok = value_of(p, "A") != "x";
        o.failure_class = "nccl";
        if (o.ok) o.values = {1.0};
        return o;
    });
    // 1 (x,p) fails: x and p failed in the same experiment, so neither is to blame yet; 2 (y,p)
    // succeeds, which clears p for good; 3 (x,q) fails: x failed in 1 and 3, q only in 3 (which
    // x explains): x is pruned, and with it 5 (x,r).
    CHECK(trace.runs == 4);
    REQUIRE(count(trace, Action::skip, Mark::pruned) == 1);
    for (const auto& step : trace.steps) {
        if (step.action != Action::skip) continue;
        CHECK(points[step.point].exp_id == 5);
        CHECK(step.reason == "A=x failed 2 times with nccl (experiments 1, 3) and never succeeded");
    }
}

TEST_CASE("search: a run budget stops before the dispatch that would pass it") {
    auto points = issue_points();
    Settings settings = search_settings();
    settings.budget.runs = 20;
    Search search(points, settings);
    Trace trace = drive(search, points, issue_workload);
    CHECK(trace.runs <= 20);
    CHECK(trace.runs >= 19);
    CHECK(trace.last.budget_spent);
    CHECK(trace.last.reason.find("budget of 20 runs spent") == 0);
    CHECK(search.next().action == Action::stop);  // stays stopped
}

TEST_CASE("search: a time budget stops when the average run would not fit") {
    auto points = issue_points();
    Settings settings = search_settings();
    settings.budget.seconds = 205;  // 10 s a run; the whole search needs 260 s
    Search search(points, settings);
    Trace trace = drive(search, points, issue_workload);
    CHECK(search.progress().seconds <= 205);
    CHECK(search.progress().seconds >= 180);
    CHECK(trace.last.budget_spent);
}

TEST_CASE("search: what the budget covers is said up front") {
    auto points = issue_points();
    Settings settings = search_settings();
    settings.budget.runs = 60;
    Search search(points, settings);
    auto lines = search.plan_lines();
    REQUIRE(lines.size() == 4);
    CHECK(lines[0].find("prune: a value that failed 2 times") == 0);
    CHECK(lines[1].find("race on tok_s (higher is better): samples per point by round 2, 4, 8") == 0);
    CHECK(lines[2] == "worst case: 192 runs (24 points x 8 repeats); the first round needs 48");
    CHECK(lines[3] == "budget 60 runs: covers the first round and 12 more runs for the leaders");
}

TEST_CASE("search: a search restored from what was recorded continues where it stopped") {
    auto points = issue_points();
    // The uninterrupted search, and one cut after 20 steps and restored from its records.
    Search whole(points, search_settings());
    Trace full = drive(whole, points, issue_workload);

    Search first(points, search_settings());
    std::map<std::size_t, Observation> recorded;
    std::map<std::size_t, Mark> marks;
    for (int i = 0; i < 20; ++i) {
        Step step = first.next();
        REQUIRE(step.action != Action::stop);
        if (step.action == Action::skip) {
            marks[step.point] = step.mark;
            continue;
        }
        Observation o = issue_workload(points[step.point], step.first_repeat, step.repeats);
        first.record(step.point, o);
        Observation& all = recorded[step.point];
        all.ok = o.ok;
        all.failure_class = o.failure_class;
        all.runs += o.runs;
        all.seconds += o.seconds;
        all.values.insert(all.values.end(), o.values.begin(), o.values.end());
    }
    Search resumed(points, search_settings());
    for (const auto& [index, mark] : marks) resumed.restore_mark(index, mark);
    for (const auto& [index, o] : recorded) resumed.restore(index, o);
    Trace rest = drive(resumed, points, issue_workload);
    int first_runs = 0;
    for (const auto& [index, o] : recorded) first_runs += o.runs;
    CHECK(first_runs + rest.runs == full.runs);
    CHECK(resumed.progress().pruned == whole.progress().pruned);
    CHECK(resumed.progress().dropped == whole.progress().dropped);
    CHECK(rest.last.reason == full.last.reason);
}
