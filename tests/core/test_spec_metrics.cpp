// Metrics of a command workload (docs/spec.md "Metrics"): a capture group that cannot hold a
// number is a located error, repeated matches aggregate as each metric says, and a server that
// nothing would stop is a plan error saying what to add.
#include <string>
#include <vector>

#include "core/spec/spec_parser.hpp"
#include "core/sweep/sweep_detail.hpp"
#include "tests/support/catch.hpp"

using namespace ncclsweep;

namespace {

/// The message of parsing `text` as "m.yaml" ("" when it is accepted).
std::string metrics_error_of(const std::string& text) {
    auto spec = parse_spec(text, "m.yaml");
    if (spec) return {};
    CHECK(spec.error().kind == ErrorKind::bad_input);
    return spec.error().message;
}

std::string with_metric(const std::string& metric) {
    return "workload:\n  command: [bench]\n  metrics:\n    tok_s: " + metric + "\n";
}

}  // namespace

TEST_CASE("metrics: a capture group that cannot capture a number is an error at the regex") {
    const std::string message = metrics_error_of(with_metric("'gen throughput (token/s): [0-9.]+'"));
    CHECK(message.rfind("m.yaml:4:12: workload.metrics.tok_s: the capture group (token/s) cannot capture a "
                        "number",
                        0) == 0);
    CHECK(message.find("\\(") != std::string::npos);  // says how to write literal parentheses
    CHECK(metrics_error_of(with_metric("'state: (ready|busy)'")).find("(ready|busy) cannot capture") !=
          std::string::npos);
    // Groups that can hold a number pass, however they are written.
    for (const char* ok :
         {"'gen throughput \\(token/s\\): ([0-9.]+)'", "'tok/s=(\\d+(?:\\.\\d+)?)'", "'x=(?P<v>[-+0-9.eE]+)'",
          "'x=(\\S+)'", "'x=([^ ]+) ms'", "'x=(.*)'", "'t \\((s)\\)=([0-9]+)'"}) {
        INFO(ok);
        const std::string error = metrics_error_of(with_metric(ok));
        // The last one has two groups: rejected for its count, not for its first group's text.
        if (std::string(ok).find("(s)") != std::string::npos)
            CHECK(error.find("exactly 1 capturing group") != std::string::npos);
        else
            CHECK(error.empty());
    }
}

TEST_CASE("metrics: aggregate and warm-up are read per metric and checked") {
    auto spec = parse_spec(R"(workload:
  command: [bench]
  metrics:
    tok_s: {regex: 'tok/s=([0-9.]+)', aggregate: median, warmup: 2}
    ttft_ms: {regex: 'ttft=([0-9.]+)', better: lower, aggregate: mean}
    itl_ms: 'itl=([0-9.]+)'
)",
                           "m.yaml");
    REQUIRE(spec);
    REQUIRE(spec->workload.metric_extraction.size() == 3);
    CHECK(spec->workload.metric_extraction[0].aggregate == Aggregate::median);
    CHECK(spec->workload.metric_extraction[0].warmup == 2);
    CHECK(spec->workload.metric_extraction[1].aggregate == Aggregate::mean);
    CHECK(spec->workload.metric_extraction[1].warmup == 0);
    CHECK(spec->workload.metric_extraction[2].aggregate == Aggregate::last);

    CHECK(metrics_error_of(with_metric("{regex: 'x=([0-9]+)', aggregate: max}")) ==
          "m.yaml:4:45: workload.metrics.tok_s.aggregate: 'max' is not last, median or mean (how the "
          "matches of one run become its value)");
    CHECK(metrics_error_of(with_metric("{regex: 'x=([0-9]+)', warmup: -1}"))
              .rfind("m.yaml:4:42: workload.metrics.tok_s.warmup must be a whole number", 0) == 0);
}

TEST_CASE("metrics: one run's value aggregates its matches after the warm-up") {
    const std::vector<double> matches{100, 10, 30, 20, 50};
    CHECK(detail::run_value(matches, {}) == 50);  // default: the last match
    CHECK(detail::run_value(matches, {Aggregate::median, 0}) == 30);
    CHECK(detail::run_value(matches, {Aggregate::median, 1}) == 25);  // 10 20 30 50
    CHECK(detail::run_value(matches, {Aggregate::mean, 1}) == 27.5);
    CHECK(detail::run_value(matches, {Aggregate::last, 4}) == 50);
    CHECK_FALSE(detail::run_value(matches, {Aggregate::mean, 5}));  // the warm-up left none
    CHECK_FALSE(detail::run_value({}, {}));
}

TEST_CASE("metrics: a server that nothing stops is an error saying what to add") {
    const std::string server =
        "workload:\n  command: [serve]\n  ready: 'ready'\n  metrics: {tok_s: 't=([0-9]+)'}\n";
    const std::string message = metrics_error_of(server);
    CHECK(message.rfind("m.yaml:3:10: workload.ready makes this command a server", 0) == 0);
    CHECK(message.find("add `client: [...]`") != std::string::npos);
    CHECK(message.find("`stop_after: 20 matches`") != std::string::npos);
    CHECK(message.find("`stop_after: exit`") != std::string::npos);

    auto stop = [&](const std::string& value) {
        return parse_spec(server + "  stop_after: " + value + "\n", "m.yaml");
    };
    auto matches = stop("20 matches");
    REQUIRE(matches);
    CHECK(matches->workload.stop_after.kind == StopAfter::Kind::matches);
    CHECK(matches->workload.stop_after.matches == 20);
    auto seconds = stop("5m");
    REQUIRE(seconds);
    CHECK(seconds->workload.stop_after.kind == StopAfter::Kind::seconds);
    CHECK(seconds->workload.stop_after.seconds == 300);
    auto exits = stop("exit");
    REQUIRE(exits);
    CHECK(exits->workload.stop_after.kind == StopAfter::Kind::exit);
    CHECK(metrics_error_of(server + "  stop_after: 0 matches\n")
              .rfind("m.yaml:5:15: workload.stop_after: '0 matches' is none of `exit`", 0) == 0);
    // A client ends the runs; a command without `ready:` ends when it exits.
    CHECK(metrics_error_of(server + "  client: [bench]\n").empty());
    CHECK(metrics_error_of("workload:\n  command: [bench]\n  metrics: {tok_s: 't=([0-9]+)'}\n").empty());
    CHECK(metrics_error_of("workload:\n  engine: tpverify\n  stop_after: exit\n")
              .find("only applies to `command:` workloads") != std::string::npos);
}
