// Points the engine cannot run (tpverify --validate), refused where the spec set the value.
#include <string>
#include <vector>

#include "core/plan/planner.hpp"
#include "core/spec/engine_validate.hpp"
#include "core/spec/spec_parser.hpp"
#include "tests/support/catch.hpp"

using namespace ncclsweep;

namespace {

Spec spec_of(const std::string& text) {
    auto spec = parse_spec(text, "s.yaml");
    REQUIRE(spec);
    return *spec;
}

std::vector<Experiment> experiments_of(const Spec& spec) {
    auto planner = Planner::create(spec, PlanOptions{});
    REQUIRE(planner);
    std::vector<Experiment> out;
    for (;;) {
        Experiment e;
        auto more = planner->next(e);
        REQUIRE(more);
        if (!*more) break;
        out.push_back(std::move(e));
    }
    return out;
}

const char* k_spec = R"(sweep: s
workload:
  engine: tpverify
  args:
    model: kimi-k2.5
axes:
  NCCL_PROTO: [LL, Simple]
  tp: [8, 3]
)";

const char* k_tp3 =
    R"({"valid":false,"error":"--tp 3: the attention heads (64) does not split evenly over 3 ranks; pick a --tp that divides it or override --heads","parameters":["tp","heads"]})";

}  // namespace

TEST_CASE("engine validate: one command line per distinct engine argv - env axes do not add any") {
    const Spec spec = spec_of(k_spec);
    const auto runs = distinct_engine_runs(experiments_of(spec));
    REQUIRE(runs.size() == 2);
    CHECK(runs[0].experiment_id == 1);
    CHECK(runs[1].experiment_id == 2);
    CHECK(runs[0].args.front() == "--json");
}

TEST_CASE("engine validate: an invalid point is refused at the axis value the engine blames") {
    const Spec spec = spec_of(k_spec);
    const auto runs = distinct_engine_runs(experiments_of(spec));
    auto r = judge_engine_runs(spec, runs, std::string("{\"valid\":true}\n") + k_tp3 + "\n", "tpverify");
    REQUIRE_FALSE(r);
    CHECK(r.error().kind == ErrorKind::bad_input);
    INFO(r.error().message);
    CHECK(r.error().message.rfind("s.yaml:8:", 0) == 0);
    CHECK(r.error().message.find(": tp: 3: tpverify cannot run experiment 2 (model=kimi-k2.5, tp=3): --tp 3: "
                                 "the attention heads (64)") != std::string::npos);
    CHECK(judge_engine_runs(spec, runs, "{\"valid\":true}\n{\"valid\":true}\n", "tpverify"));
}

TEST_CASE("engine validate: output that is not one verdict per command line is an infrastructure error") {
    const Spec spec = spec_of(k_spec);
    const auto runs = distinct_engine_runs(experiments_of(spec));
    auto few = judge_engine_runs(spec, runs, "{\"valid\":true}\n", "tpverify");
    REQUIRE_FALSE(few);
    CHECK(few.error().kind == ErrorKind::infrastructure);
    auto old = judge_engine_runs(spec, runs, "tpverify: unknown flag --validate\n", "tpverify");
    REQUIRE_FALSE(old);
    CHECK(old.error().kind == ErrorKind::infrastructure);
}

TEST_CASE("engine validate: a blamed parameter the spec never set falls back to the spec and the reason") {
    const Spec spec = spec_of(k_spec);
    const auto runs = distinct_engine_runs(experiments_of(spec));
    auto r = judge_engine_runs(
        spec, runs,
        "{\"valid\":true}\n{\"valid\":false,\"error\":\"--heads 7: no\",\"parameters\":[\"heads\"]}\n",
        "tpverify");
    REQUIRE_FALSE(r);
    CHECK(r.error().message.rfind("s.yaml: tpverify cannot run experiment 2", 0) == 0);
}
