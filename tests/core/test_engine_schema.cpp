// Engine parameters checked against the engine's own schema (tpverify --describe --json):
// unknown names with did-you-mean, values of the wrong type or outside the allowed ones, each
// at its place in the spec or on the command line.
#include <string>

#include "core/plan/plan.hpp"
#include "core/spec/engine_schema.hpp"
#include "core/spec/spec_parser.hpp"
#include "tests/support/catch.hpp"

using namespace ncclsweep;

namespace {

const char* k_schema = R"({"engine":"tpverify","describe_version":1,"parameters":[
 {"name":"topology","type":"enum","values":["pcie-gen4","pcie-gen5","nvlink"]},
 {"name":"fusion","type":"bool","values":["on","off","true","false"]},
 {"name":"tp","type":"int","min":1,"max":1024},
 {"name":"target-rsd","type":"number","min":1e-9,"max":1},
 {"name":"inject","type":"text"}],
 "metrics":[{"name":"tok_s","unit":"tok/s","better":"higher"},{"name":"verify_us_p50","unit":"us","better":"lower"}]})";

EngineSchema schema() {
    auto parsed = parse_engine_schema(k_schema, "tpverify");
    REQUIRE(parsed);
    return *parsed;
}

Result<void> check(const std::string& text, const std::vector<Override>& overrides = {}) {
    auto spec = parse_spec(text, "s.yaml");
    REQUIRE(spec);
    REQUIRE(apply_overrides(*spec, overrides));
    return check_engine_parameters(*spec, schema());
}

std::string engine_spec(const std::string& args, const std::string& axes) {
    return "sweep: s\nworkload:\n  engine: tpverify\n  args: " + args + "\naxes:\n" + axes;
}

}  // namespace

TEST_CASE("engine schema: parameters and metric definitions are read from the describe JSON") {
    EngineSchema s = schema();
    REQUIRE(s.parameters.size() == 5);
    CHECK(s.parameters[2].name == "tp");
    CHECK(s.parameters[2].max == 1024);
    REQUIRE(s.metrics.size() == 2);
    CHECK(s.metrics[1] == MetricDefinition{"verify_us_p50", "us", stats::Direction::lower_is_better});
    CHECK_FALSE(parse_engine_schema("tpverify: unknown flag --describe", "/opt/tpverify"));
}

TEST_CASE("engine schema: a misspelt argument is refused at its line with a suggestion") {
    auto r = check(engine_spec("{topolgy: nvlink}", "  NCCL_PROTO: [LL]\n"));
    REQUIRE_FALSE(r);
    CHECK(r.error().kind == ErrorKind::bad_input);
    CHECK(r.error().message.find("s.yaml:4") != std::string::npos);
    CHECK(r.error().message.find("tpverify has no parameter 'topolgy'; did you mean 'topology'?") !=
          std::string::npos);
}

TEST_CASE("engine schema: an axis value outside the allowed ones names the value and the choices") {
    auto r = check(engine_spec("{topology: nvlink}", "  fusion: ['off', maybe]\n"));
    REQUIRE_FALSE(r);
    CHECK(r.error().message.find("s.yaml:6") != std::string::npos);
    CHECK(r.error().message.find("fusion: 'maybe' is not one of on, off, true, false") != std::string::npos);
}

TEST_CASE("engine schema: numbers are checked for type and range") {
    auto too_big = check(engine_spec("{tp: 2048}", "  NCCL_PROTO: [LL]\n"));
    REQUIRE_FALSE(too_big);
    CHECK(too_big.error().message.find("tp: 2048 is outside 1..1024") != std::string::npos);
    auto not_int = check(engine_spec("{tp: 2.5}", "  NCCL_PROTO: [LL]\n"));
    REQUIRE_FALSE(not_int);
    CHECK(not_int.error().message.find("'2.5' is not an integer") != std::string::npos);
    CHECK(check(engine_spec("{tp: 8, target_rsd: 0.01, inject: 'hang@warmup:2'}", "  NCCL_PROTO: [LL]\n")));
}

TEST_CASE("engine schema: names from --axis and --set are checked and located at the flag") {
    auto r = check(engine_spec("{tp: 8}", "  NCCL_PROTO: [LL]\n"),
                   {*parse_override(OverrideKind::axis, "fusoin=on,off")});
    REQUIRE_FALSE(r);
    CHECK(r.error().message.find("--axis: tpverify has no parameter 'fusoin'; did you mean 'fusion'?") !=
          std::string::npos);
    auto set = check(engine_spec("{tp: 8}", "  NCCL_PROTO: [LL]\n"),
                     {*parse_override(OverrideKind::set, "topology=nvlnk")});
    REQUIRE_FALSE(set);
    CHECK(set.error().message.find("--set: topology: 'nvlnk' is not one of") != std::string::npos);
    CHECK(set.error().message.find("did you mean 'nvlink'?") != std::string::npos);
}
