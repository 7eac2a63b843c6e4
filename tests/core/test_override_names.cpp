// --set / --axis names that reach nothing are errors; --set repeats=N sets the spec's repeats;
// a client placeholder is checked when planning, like the command's.
#include <string>

#include "core/plan/plan.hpp"
#include "core/plan/planner.hpp"
#include "core/spec/spec_parser.hpp"
#include "tests/support/catch.hpp"

using namespace ncclsweep;

namespace {

const char* k_command_spec = R"(sweep: c
workload:
  command: [serve, --rate, '{rate}']
  metrics: {tok_s: 'tok_s=([0-9.]+)'}
axes:
  rate: [1, 2]
repeats: 3
)";

Spec parsed(const std::string& text) {
    auto spec = parse_spec(text, "c.yaml");
    REQUIRE(spec);
    return std::move(*spec);
}

}  // namespace

TEST_CASE("overrides: --set repeats=5 sets the spec's repeats instead of becoming an engine flag") {
    Spec spec = parsed(
        "sweep: e\nworkload:\n  engine: tpverify\n  args: {tp: 8}\naxes:\n  NCCL_PROTO: [LL]\nrepeats: 3\n");
    REQUIRE(apply_overrides(spec, {*parse_override(OverrideKind::set, "repeats=5")}));
    CHECK(spec.repeats == 5);
    for (const auto& [name, value] : spec.workload.args) CHECK(name != "repeats");
    auto zero = apply_overrides(spec, {*parse_override(OverrideKind::set, "repeats=0")});
    REQUIRE_FALSE(zero);
    CHECK(zero.error().message.find("1..1000") != std::string::npos);
    auto axis = apply_overrides(spec, {*parse_override(OverrideKind::axis, "repeats=1,2")});
    REQUIRE_FALSE(axis);
    CHECK(axis.error().message.find("use --set repeats=N") != std::string::npos);
}

TEST_CASE("overrides: a lower_case name a command cannot see is an error naming it") {
    Spec spec = parsed(k_command_spec);
    auto typo = apply_overrides(spec, {*parse_override(OverrideKind::set, "rte=4")});
    REQUIRE_FALSE(typo);
    CHECK(typo.error().kind == ErrorKind::bad_input);
    CHECK(typo.error().message.find(
              "--set rte: the spec has no axis 'rte' and its command has no {rte} placeholder") !=
          std::string::npos);
    auto axis = apply_overrides(spec, {*parse_override(OverrideKind::axis, "batch=1,2")});
    REQUIRE_FALSE(axis);
    CHECK(axis.error().message.find("--axis batch") != std::string::npos);
    // The spec's own axis and environment variables stay accepted.
    CHECK(apply_overrides(spec, {*parse_override(OverrideKind::set, "rate=4")}));
    CHECK(apply_overrides(spec, {*parse_override(OverrideKind::axis, "NCCL_PROTO=LL,Simple")}));
}

TEST_CASE("overrides: a placeholder in the client makes the name reach the workload") {
    Spec spec = parsed(R"(sweep: c
workload:
  command: [serve]
  client: [bench, '--conc={concurrency}']
  ready: 'ready'
  metrics: {tok_s: 'tok_s=([0-9.]+)'}
axes:
  NCCL_PROTO: [LL]
)");
    CHECK(apply_overrides(spec, {*parse_override(OverrideKind::axis, "concurrency=1,8")}));
}

TEST_CASE("planner: a client placeholder that names no parameter stops the plan at its line") {
    auto spec = parse_spec(R"(sweep: c
workload:
  command: [serve]
  client: [bench, '--conc={concurency}']
  ready: 'ready'
  metrics: {tok_s: 'tok_s=([0-9.]+)'}
axes:
  concurrency: [1, 8]
)",
                           "c.yaml");
    REQUIRE(spec);
    REQUIRE(validate_spec(*spec));
    auto planner = Planner::create(*spec, PlanOptions{});
    REQUIRE(planner);
    Experiment experiment;
    auto more = planner->next(experiment);
    REQUIRE_FALSE(more);
    CHECK(more.error().message.find("client:") == 0);
    CHECK(more.error().message.find("c.yaml:4") != std::string::npos);
    CHECK(more.error().message.find("{concurency}") != std::string::npos);
}
