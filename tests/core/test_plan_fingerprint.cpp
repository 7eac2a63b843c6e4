// PlanFingerprint: what a sweep runs besides its points, stored as JSON and compared by a resume.
#include <algorithm>
#include <string>
#include <vector>

#include "core/plan/plan_fingerprint.hpp"
#include "core/spec/spec_parser.hpp"
#include "tests/support/catch.hpp"

using namespace ncclsweep;

namespace {

Spec fingerprint_spec(const std::string& text) {
    auto spec = parse_spec(text, "study.yaml");
    if (!spec) FAIL(spec.error().message);
    return std::move(*spec);
}

const char* k_study = R"(sweep: study
workload:
  engine: tpverify
  args: {topology: pcie-gen5}
axes:
  NCCL_PROTO: [LL, Simple]
repeats: 3
)";

std::string part(const PlanFingerprint& f, const std::string& what) {
    for (const auto& [name, value] : f.parts)
        if (name == what) return value;
    FAIL("no part " + what);
    return {};
}

}  // namespace

TEST_CASE("plan fingerprint: names the overrides as typed - the target - the engine and repeats") {
    Spec spec = fingerprint_spec(k_study);
    std::vector<Override> overrides;
    overrides.push_back(*parse_override(OverrideKind::axis, "fusion=on,off"));
    overrides.push_back(*parse_override(OverrideKind::set, "topology=nvlink"));
    PlanOptions options;
    options.engine_path = "/opt/bin/tpverify";
    PlanFingerprint f = fingerprint_of(spec, overrides, options);
    CHECK(part(f, "--axis/--set") == "--axis fusion=on,off --set topology=nvlink");
    CHECK(part(f, "target") == "local");
    CHECK(part(f, "engine") == "/opt/bin/tpverify");
    CHECK(part(f, "repeats") == "3");
}

TEST_CASE("plan fingerprint: an axis value with a comma is written back escaped") {
    Spec spec = fingerprint_spec(k_study);
    std::vector<Override> overrides;
    overrides.push_back(*parse_override(OverrideKind::axis, "label=a\\,b,c"));
    PlanFingerprint f = fingerprint_of(spec, overrides, PlanOptions{});
    CHECK(part(f, "--axis/--set") == "--axis label=a\\,b,c");
}

TEST_CASE("plan fingerprint: JSON round trip keeps settings and command line") {
    PlanFingerprint f;
    f.parts = {{"--axis/--set", "--set a=1"}, {"target", "ssh://me@gpu:22"}};
    f.command_line = "ncclsweep run 'my study.yaml' --set a=1";
    auto back = PlanFingerprint::from_json(f.to_json());
    REQUIRE(back);
    CHECK(back->parts == f.parts);
    CHECK(back->command_line == f.command_line);
    auto empty = PlanFingerprint::from_json("");
    REQUIRE(empty);
    CHECK(empty->parts.empty());
    auto bad = PlanFingerprint::from_json("{\"settings\": 3}");
    CHECK_FALSE(bad);
}

TEST_CASE("plan fingerprint: differences name each setting with both values") {
    PlanFingerprint was, now;
    was.parts = {{"--axis/--set", "--axis fusion=on,off"}, {"target", "local"}, {"repeats", "3"}};
    now.parts = {{"--axis/--set", "--axis fusion=on"}, {"target", "local"}, {"repeats", "5"}};
    auto d = fingerprint_differences(was, now);
    REQUIRE(d.size() == 2);
    CHECK(d[0] == "--axis/--set: was '--axis fusion=on,off', now '--axis fusion=on'");
    CHECK(d[1] == "repeats: was '3', now '5'");
    CHECK(fingerprint_differences(was, was).empty());
    CHECK(fingerprint_differences(PlanFingerprint{}, now).empty());  // recorded before fingerprints
}

TEST_CASE(
    "plan fingerprint: plan differences name the point, its command and environment and stop at the limit") {
    auto point = [](int id, const std::string& value) {
        Experiment e;
        e.id = id;
        e.canonical = "X=" + value;
        e.key = "k" + value;
        e.argv = {"serve"};
        e.env = {{"A", "1"}, {"X", value}};
        return e;
    };
    std::vector<Experiment> stored = {point(1, "a"), point(2, "b")};
    std::vector<Experiment> planned = stored;
    CHECK(plan_differences(stored, planned).empty());
    std::reverse(planned[0].env.begin(), planned[0].env.end());  // order alone is no difference
    CHECK(plan_differences(stored, planned).empty());
    planned[1].env[1].second = "z";
    planned[0] = point(1, "q");
    auto d = plan_differences(stored, planned);
    REQUIRE(d.size() == 2);
    CHECK(d[0] == "experiment 1 was X=a, now X=q");
    CHECK(d[1] == "experiment 2's environment was 'A=1 X=b', now 'A=1 X=z'");
    std::vector<Experiment> many, changed;
    for (int i = 1; i <= 9; ++i) {
        many.push_back(point(i, "a"));
        changed.push_back(point(i, "b"));
    }
    auto capped = plan_differences(many, changed, 3);
    REQUIRE(capped.size() == 4);
    CHECK(capped.back() == "and 6 more experiments differ");
}
