// Metric definitions: the documented default direction, the spec's long form, and the stored
// JSON form every results command reads.
#include <string>

#include "core/spec/metric.hpp"
#include "core/spec/spec_parser.hpp"
#include "tests/support/catch.hpp"

using namespace ncclsweep;
using stats::Direction;

TEST_CASE("metric: the default direction follows the documented name rule") {
    CHECK(default_direction("tok_s") == Direction::higher_is_better);
    CHECK(default_direction("baseline_tok_s") == Direction::higher_is_better);
    CHECK(default_direction("requests_per_s") == Direction::higher_is_better);
    CHECK(default_direction("throughput") == Direction::higher_is_better);
    CHECK(default_direction("goodput") == Direction::higher_is_better);
    CHECK(default_direction("warm_s") == Direction::lower_is_better);
    CHECK(default_direction("verify_us_p50") == Direction::lower_is_better);
    CHECK(default_direction("step_ms") == Direction::lower_is_better);
    CHECK(default_direction("ttft") == Direction::lower_is_better);
    CHECK(default_direction("p99_latency") == Direction::lower_is_better);
    CHECK(default_direction("rsd") == Direction::lower_is_better);
    CHECK(default_direction("Warm_S") == Direction::lower_is_better);
    CHECK(default_direction("status") == Direction::higher_is_better);  // "_s" must be a whole word
}

TEST_CASE("metric: a declared definition wins over the default and JSON keeps it") {
    std::vector<MetricDefinition> declared = {{"goodput", "req/s", Direction::higher_is_better},
                                              {"score", "", Direction::lower_is_better}};
    CHECK(definition_of("score", declared).better == Direction::lower_is_better);
    CHECK(definition_of("warm_s", declared) == MetricDefinition{"warm_s", "", Direction::lower_is_better});
    auto back = metrics_from_json(metrics_to_json(declared));
    REQUIRE(back);
    CHECK(*back == declared);
    CHECK(metrics_from_json("")->empty());
    CHECK_FALSE(metrics_from_json("{\"name\":1}"));
    CHECK_FALSE(metrics_from_json("[{\"name\":\"x\",\"better\":\"up\"}]"));
}

TEST_CASE("metric: the spec's long form declares unit and better - the short form takes the default") {
    const char* text = R"(sweep: m
workload:
  command: [serve]
  metrics:
    warm_s: 'warm ([0-9.]+)'
    score: {regex: 'score ([0-9.]+)', better: lower, unit: points}
    goodput: {regex: 'goodput ([0-9.]+)', unit: req/s}
axes:
  NCCL_PROTO: [LL, Simple]
)";
    auto spec = parse_spec(text, "m.yaml");
    REQUIRE(spec);
    const auto& d = spec->workload.metric_definitions;
    REQUIRE(d.size() == 3);
    CHECK(d[0] == MetricDefinition{"warm_s", "", Direction::lower_is_better});
    CHECK(d[1] == MetricDefinition{"score", "points", Direction::lower_is_better});
    CHECK(d[2] == MetricDefinition{"goodput", "req/s", Direction::higher_is_better});
    REQUIRE(spec->workload.metrics.size() == 3);
    CHECK(spec->workload.metrics[1] == std::pair<std::string, std::string>{"score", "score ([0-9.]+)"});
}

TEST_CASE("metric: a long form with a bad direction or without regex is refused at its line") {
    auto bad_better = parse_spec(R"(sweep: m
workload:
  command: [serve]
  metrics:
    score: {regex: 'score ([0-9.]+)', better: up}
axes:
  NCCL_PROTO: [LL]
)",
                                 "m.yaml");
    REQUIRE_FALSE(bad_better);
    CHECK(bad_better.error().message.find("m.yaml:5") != std::string::npos);
    CHECK(bad_better.error().message.find("better must be 'higher' or 'lower', not 'up'") !=
          std::string::npos);
    auto no_regex = parse_spec(R"(sweep: m
workload:
  command: [serve]
  metrics:
    score: {better: lower}
axes:
  NCCL_PROTO: [LL]
)",
                               "m.yaml");
    REQUIRE_FALSE(no_regex);
    CHECK(no_regex.error().message.find("needs `regex:`") != std::string::npos);
}
