// Planner: expansion order, zip, exclude, include, keys, overrides, limits, warnings.
#include <string>
#include <vector>

#include "core/plan/key.hpp"
#include "core/plan/plan.hpp"
#include "core/plan/planner.hpp"
#include "core/spec/spec_parser.hpp"
#include "tests/support/catch.hpp"

using namespace ncclsweep;

namespace {

Spec must_parse(const std::string& text, const std::string& path = "spec.yaml") {
    auto spec = parse_spec(text, path);
    if (!spec) FAIL(spec.error().message);
    auto ok = validate_spec(*spec);
    if (!ok) FAIL(ok.error().message);
    return std::move(*spec);
}

/// Every experiment as "a=1 B=x" (params in order).
std::vector<std::string> expand(const Spec& spec, PlanOptions options = {}) {
    auto planner = Planner::create(spec, options);
    if (!planner) FAIL(planner.error().message);
    std::vector<std::string> out;
    Experiment experiment;
    while (true) {
        auto more = planner->next(experiment);
        if (!more) FAIL(more.error().message);
        if (!*more) break;
        CHECK(experiment.id == static_cast<int>(out.size()) + 1);
        std::string line = experiment.defaults ? "defaults" : "";
        for (const auto& [name, value] : experiment.params)
            line += (line.empty() ? "" : " ") + name + "=" + value;
        out.push_back(line);
    }
    return out;
}

Experiment first_experiment(const Spec& spec) {
    auto planner = Planner::create(spec, PlanOptions{});
    REQUIRE(planner.ok());
    Experiment experiment;
    auto more = planner->next(experiment);
    REQUIRE(more.ok());
    REQUIRE(*more);
    return experiment;
}

const char* k_head = "sweep: t\nworkload: {engine: tpverify, args: {backend: sim}}\n";

}  // namespace

TEST_CASE("cartesian product: first axis slowest") {
    auto spec = must_parse(std::string(k_head) + "axes:\n  a: [1, 2]\n  B: [x, y, z]\n");
    CHECK(expand(spec) ==
          std::vector<std::string>{"a=1 B=x", "a=1 B=y", "a=1 B=z", "a=2 B=x", "a=2 B=y", "a=2 B=z"});
}

TEST_CASE("no axes plan one experiment with the fixed settings") {
    auto spec = must_parse(k_head);
    CHECK(expand(spec) == std::vector<std::string>{""});
}

TEST_CASE("a zip group advances together as one digit at its first axis") {
    auto spec = must_parse(std::string(k_head) +
                           "axes:\n  NCCL_MIN_CTAS: [1, 16]\n  p: [a, b]\n  NCCL_MAX_CTAS: [2, 32]\n"
                           "zip: [[NCCL_MIN_CTAS, NCCL_MAX_CTAS]]\n");
    CHECK(expand(spec) == std::vector<std::string>{
                              "NCCL_MIN_CTAS=1 p=a NCCL_MAX_CTAS=2", "NCCL_MIN_CTAS=1 p=b NCCL_MAX_CTAS=2",
                              "NCCL_MIN_CTAS=16 p=a NCCL_MAX_CTAS=32",
                              "NCCL_MIN_CTAS=16 p=b NCCL_MAX_CTAS=32", "defaults p=a", "defaults p=b"});
}

TEST_CASE("defaults: one point per combination of the other axes, none of the NCCL axes set") {
    auto spec = must_parse(std::string(k_head) +
                           "axes:\n  NCCL_ALGO: [allreduce:ring, allreduce:tree]\n  fusion: ['off', 'on']\n"
                           "  NCCL_PROTO: [LL, Simple]\n  tokens: [4, 8]\n"
                           "exclude:\n  - {fusion: 'on', tokens: 8}\n  - {NCCL_PROTO: Simple, tokens: 4}\n"
                           "include:\n  - {fusion: 'off', tokens: 8}\n");
    const auto points = expand(spec);
    // 16 product points less 8 excluded, the include (itself a defaults point: it sets no NCCL
    // variable), then the defaults of the other combinations: fusion x tokens less the one
    // excluded by a rule over those axes alone (a rule naming NCCL_PROTO never matches them).
    REQUIRE(points.size() == 8 + 1 + 2);
    CHECK(points[8] == "defaults fusion=off tokens=8");
    CHECK(std::vector<std::string>(points.begin() + 9, points.end()) ==
          std::vector<std::string>{"defaults fusion=off tokens=4", "defaults fusion=on tokens=4"});
    // The environment of a defaults point has the fixed env: but no swept NCCL variable.
    auto planner = Planner::create(spec, PlanOptions{});
    REQUIRE(planner);
    Experiment e;
    for (int i = 0; i < 11; ++i) REQUIRE(*planner->next(e));
    CHECK(e.defaults);
    CHECK(e.env.empty());
    CHECK(e.canonical == "fusion=on;tokens=4");
}

TEST_CASE("defaults: none without NCCL axes, none with baseline: none, counted in the size limit") {
    CHECK(expand(must_parse(std::string(k_head) + "axes:\n  a: [1, 2]\n")) ==
          std::vector<std::string>{"a=1", "a=2"});
    CHECK(expand(must_parse(std::string(k_head) + "baseline: none\naxes:\n  NCCL_PROTO: [LL, Simple]\n")) ==
          std::vector<std::string>{"NCCL_PROTO=LL", "NCCL_PROTO=Simple"});
    // Only NCCL axes: one defaults point, without parameters.
    CHECK(expand(must_parse(std::string(k_head) + "axes:\n  NCCL_PROTO: [LL, Simple]\n")) ==
          std::vector<std::string>{"NCCL_PROTO=LL", "NCCL_PROTO=Simple", "defaults"});
    auto spec = must_parse(std::string(k_head) + "axes:\n  NCCL_PROTO: [LL, Simple]\n  a: [1, 2, 3]\n");
    PlanOptions tight;
    tight.max_experiments = 8;
    auto refused = Planner::create(spec, tight);
    REQUIRE_FALSE(refused);
    CHECK(refused.error().message.find("9 points before exclude (NCCL_PROTO 2 x a 3 + 3 defaults)") !=
          std::string::npos);
    auto bad = parse_spec(std::string(k_head) + "baseline: nccl\n", "b.yaml");
    REQUIRE_FALSE(bad);
    CHECK(bad.error().message.find("b.yaml:3:11: baseline: 'nccl' is neither `defaults`") == 0);
}

TEST_CASE("exclude drops points matching all keys, a list value means any of them") {
    auto spec = must_parse(std::string(k_head) +
                           "axes:\n  a: [1, 2, 3]\n  b: [x, y]\n"
                           "exclude:\n  - {a: [1, 3], b: y}\n  - {a: 2, b: x}\n");
    CHECK(expand(spec) == std::vector<std::string>{"a=1 b=x", "a=2 b=y", "a=3 b=x"});
}

TEST_CASE("include adds points after the product, deduplicated") {
    auto spec = must_parse(std::string(k_head) +
                           "axes:\n  a: [1, 2]\n  b: [x, y]\n"
                           "exclude:\n  - {a: 2, b: y}\n"
                           "include:\n"
                           "  - {b: x, a: 1}\n"        // already in the product: dropped
                           "  - {a: 2, b: y}\n"        // excluded product point: added back
                           "  - {a: 3, b: x, c: 9}\n"  // new value and a key that is no axis
                           "  - {c: 9, b: x, a: 3}\n"  // same as the previous one: dropped
                           "  - {b: z}\n");            // a is left unset
    CHECK(expand(spec) ==
          std::vector<std::string>{"a=1 b=x", "a=1 b=y", "a=2 b=x", "a=2 b=y", "a=3 b=x c=9", "b=z"});
}

TEST_CASE("env, workload and argv of an experiment") {
    auto spec = must_parse(
        "workload: {engine: tpverify, args: {backend: sim, iters: 5}}\n"
        "env: {NCCL_P2P_LEVEL: SYS}\naxes:\n  NCCL_PROTO: [LL]\n  tokens: [8]\n  fusion: [on]\n");
    Experiment e = first_experiment(spec);
    CHECK(e.env == std::vector<Assignment>{{"NCCL_P2P_LEVEL", "SYS"}, {"NCCL_PROTO", "LL"}});
    CHECK(e.workload ==
          std::vector<Assignment>{{"backend", "sim"}, {"iters", "5"}, {"tokens", "8"}, {"fusion", "on"}});
    CHECK(e.argv == std::vector<std::string>{"tpverify", "--json", "--backend", "sim", "--iters", "5",
                                             "--tokens", "8", "--fusion", "on"});
    CHECK(e.canonical == "NCCL_PROTO=LL;fusion=on;tokens=8");
    CHECK(e.key == key_of_canonical(e.canonical));
    CHECK_FALSE(e.shell);
}

TEST_CASE("keys: the same point has the same key in any sweep, another point another key") {
    auto one = must_parse(
        "sweep: one\nworkload: {engine: tpverify}\naxes:\n  NCCL_PROTO: [LL, Simple]\n  tp: [8]\n");
    auto two = must_parse(
        "sweep: two\nworkload: {engine: tpverify}\naxes:\n  tp: [2, 8]\n  NCCL_PROTO: [Simple, LL]\n",
        "other.yaml");
    Experiment a = first_experiment(one);  // NCCL_PROTO=LL tp=8
    auto planner = Planner::create(two, PlanOptions{});
    REQUIRE(planner.ok());
    Experiment b;
    std::string ll_key, simple_key;
    while (*planner->next(b)) {
        if (b.canonical == "NCCL_PROTO=LL;tp=8") ll_key = b.key;
        if (b.canonical == "NCCL_PROTO=Simple;tp=8") simple_key = b.key;
    }
    CHECK(ll_key == a.key);
    CHECK(simple_key != a.key);
    CHECK(a.key.size() == 16);
    CHECK(a.key == "1c60ee11046c4175");  // pinned: keys must never change between versions
    // Escaping keeps the canonical text unambiguous.
    CHECK(canonical_text({{"a", "b;c=d"}}) != canonical_text({{"a", "b"}, {"c", "d"}}));
    CHECK(canonical_text({{"a", "b;c=d"}}) == "a=b\\;c\\=d");
    CHECK(experiment_key({{"a", "1"}, {"b", "2"}}) == experiment_key({{"b", "2"}, {"a", "1"}}));
}

TEST_CASE("overrides: --axis replaces or adds, --set fixes") {
    auto spec = must_parse(
        "workload: {engine: tpverify, args: {backend: sim, tokens: 4}}\n"
        "env: {NCCL_P2P_LEVEL: SYS}\naxes:\n  NCCL_PROTO: [LL, Simple]\n  fusion: [off, on]\n"
        "exclude:\n  - {NCCL_PROTO: Simple, fusion: on}\n");
    auto axis = parse_override(OverrideKind::axis, "NCCL_PROTO=LL128,Simple");
    auto added = parse_override(OverrideKind::axis, "tokens=4,8");
    auto fixed = parse_override(OverrideKind::set, "fusion=on");
    auto env = parse_override(OverrideKind::set, "NCCL_P2P_LEVEL=PHB");
    REQUIRE(axis.ok());
    REQUIRE(added.ok());
    REQUIRE(fixed.ok());
    REQUIRE(env.ok());
    REQUIRE(apply_overrides(spec, {*axis, *added, *fixed, *env}).ok());
    REQUIRE(validate_spec(spec).ok());
    CHECK(spec.workload.args.size() == 1);  // tokens became an axis
    CHECK(spec.env[0].second.text == "PHB");
    CHECK(spec.env[0].second.mark.to_string() == "--set");
    CHECK(expand(spec) == std::vector<std::string>{
                              "NCCL_PROTO=LL128 fusion=on tokens=4", "NCCL_PROTO=LL128 fusion=on tokens=8",
                              "defaults fusion=on tokens=4", "defaults fusion=on tokens=8"});
}

TEST_CASE("override parsing: escapes, errors and validation") {
    auto escaped = parse_override(OverrideKind::axis, "NCCL_ALGO=ring\\,tree;allreduce:tree,allreduce:ring");
    REQUIRE(escaped.ok());
    CHECK(escaped->values == std::vector<std::string>{"ring,tree;allreduce:tree", "allreduce:ring"});
    auto whole = parse_override(OverrideKind::set, "label=a,b=c");
    REQUIRE(whole.ok());
    CHECK(whole->values == std::vector<std::string>{"a,b=c"});
    CHECK_FALSE(parse_override(OverrideKind::axis, "NCCL_ALGO").ok());
    auto mixed = parse_override(OverrideKind::axis, "Nccl_Algo=ring");
    REQUIRE_FALSE(mixed.ok());
    CHECK(mixed.error().message.rfind("--axis Nccl_Algo=ring: 'Nccl_Algo' mixes upper and lower case", 0) ==
          0);

    auto spec = must_parse(std::string(k_head) + "axes:\n  NCCL_NTHREADS: [64]\n");
    auto bad = parse_override(OverrideKind::axis, "NCCL_NTHREADS=64,100");
    REQUIRE(bad.ok());
    REQUIRE(apply_overrides(spec, {*bad}).ok());
    auto invalid = validate_spec(spec);
    REQUIRE_FALSE(invalid.ok());
    CHECK(invalid.error().message.rfind("--axis: ", 0) == 0);
}

TEST_CASE("an axis replaced on the command line may drop values named by exclude") {
    auto spec = must_parse(std::string(k_head) +
                           "axes:\n  NCCL_PROTO: [LL, Simple]\n  a: [1, 2]\n"
                           "exclude:\n  - {NCCL_PROTO: Simple, a: 2}\n");
    auto axis = parse_override(OverrideKind::axis, "NCCL_PROTO=LL");
    REQUIRE(axis.ok());
    REQUIRE(apply_overrides(spec, {*axis}).ok());
    CHECK(validate_spec(spec).ok());
    CHECK(expand(spec) ==
          std::vector<std::string>{"NCCL_PROTO=LL a=1", "NCCL_PROTO=LL a=2", "defaults a=1", "defaults a=2"});
}

TEST_CASE("sweeps above the limit are refused without expanding them") {
    std::string text = std::string(k_head) + "axes:\n";
    for (char name = 'a'; name <= 'l'; ++name)
        text += std::string("  ") + name + ": [0,1,2,3,4,5,6,7,8,9]\n";  // 10^12 points
    auto spec = must_parse(text);
    auto refused = Planner::create(spec, PlanOptions{});
    REQUIRE_FALSE(refused.ok());
    CHECK(refused.error().kind == ErrorKind::bad_input);
    CHECK(refused.error().message.rfind(
              "spec.yaml: the sweep expands to 1000000000000 points before exclude (a 10 x "
              "b 10 x",
              0) == 0);
    CHECK(refused.error().message.find(
              "more than the limit of 100000; narrow the axes, or pass --max-experiments "
              "1000000000000 if you mean it") != std::string::npos);
    PlanOptions allow;
    allow.max_experiments = 1000000000000ULL;
    auto allowed = Planner::create(spec, allow);
    REQUIRE(allowed.ok());
    CHECK(allowed->product_size() == 1000000000000ULL);
}

TEST_CASE("a large plan is counted lazily") {
    auto spec =
        must_parse(std::string(k_head) +
                   "axes:\n  a: [0,1,2,3,4,5,6,7,8,9]\n  b: [0,1,2,3,4,5,6,7,8,9]\n"
                   "  c: [0,1,2,3,4,5,6,7,8,9]\n  d: [0,1,2,3,4,5,6,7,8,9]\n  e: [0,1,2,3,4,5,6,7,8,9]\n"
                   "  f: [0,1,2]\nexclude:\n  - {a: 0}\n");
    CHECK_FALSE(check_plan(spec, PlanOptions{}).ok());  // 300,000 > the default limit
    PlanOptions options;
    options.max_experiments = 300000;
    auto summary = check_plan(spec, options);
    REQUIRE(summary.ok());
    CHECK(summary->count == 270000);
}

TEST_CASE("NCCL warnings are grouped with compact experiment ranges, errors stop the plan") {
    auto spec =
        must_parse(std::string(k_head) +
                   "axes:\n  NCCL_ALGO: [Tree, allreduce:tree]\n  NCCL_PROTO: [LL, Simple]\n  a: [1, 2]\n");
    auto summary = check_plan(spec, PlanOptions{});
    REQUIRE(summary.ok());
    CHECK(summary->count == 8 + 2);  // and the defaults points of a=1 and a=2
    CHECK(summary->defaults.to_string() == "9-10");
    bool bare_tree = false;
    for (const auto& group : summary->warnings)
        if (group.code == "bare-tree") {
            bare_tree = true;
            CHECK(group.experiments.to_string() == "1-4");
        }
    CHECK(bare_tree);
    CHECK(summary->warnings_for(1) >= 1);

    auto bad = must_parse(std::string(k_head) + "axes:\n  NCCL_MIN_CTAS: [1, 16]\n  NCCL_MAX_CTAS: [2, 8]\n");
    auto stopped = check_plan(bad, PlanOptions{});
    REQUIRE_FALSE(stopped.ok());
    CHECK(stopped.error().kind == ErrorKind::bad_input);
    CHECK(stopped.error().message.find("experiment 3 (NCCL_MIN_CTAS=16 NCCL_MAX_CTAS=2)") !=
          std::string::npos);
    CHECK(stopped.error().message.rfind("spec.yaml:", 0) == 0);
}

TEST_CASE("every point excluded is an error") {
    auto spec = must_parse(std::string(k_head) + "axes:\n  a: [1]\nexclude:\n  - {a: 1}\n");
    auto summary = check_plan(spec, PlanOptions{});
    REQUIRE_FALSE(summary.ok());
    CHECK(summary.error().message ==
          "spec.yaml: every point of the sweep is excluded; loosen `exclude:` or add "
          "`include:` points");
}

TEST_CASE("workload context: message size from tokens and the model preset, topology from args") {
    auto spec = must_parse(
        "workload: {engine: tpverify, args: {topology: pcie-gen5}}\n"
        "axes:\n  tokens: [4]\n  model: [llama-70b]\n");
    auto context = workload_context(spec, first_experiment(spec));
    CHECK(context.max_message_bytes.value_or(0) == 4 * 8192 * 2);
    CHECK(context.topology.value_or("") == "pcie-gen5");
    auto defaults = must_parse("workload: {engine: tpverify}\n");
    auto plain = workload_context(defaults, first_experiment(defaults));
    CHECK(plain.max_message_bytes.value_or(0) == 4 * 7168 * 2);
    CHECK_FALSE(plain.topology.has_value());
}

TEST_CASE("id ranges print compactly") {
    IdRanges ranges;
    for (int id : {1, 2, 3, 4, 4, 9, 11, 12}) ranges.add(id);
    CHECK(ranges.to_string() == "1-4,9,11-12");
    CHECK(ranges.count() == 7);
    CHECK(ranges.contains(3));
    CHECK_FALSE(ranges.contains(10));
}

TEST_CASE("id ranges for people are capped and say how many ranges are left out") {
    IdRanges ranges;
    for (int id = 1; id <= 100; id += 2) ranges.add(id);  // 50 single ids: 50 ranges
    CHECK(ranges.to_text(3) == "1, 3, 5 and 47 more ranges");
    IdRanges few;
    for (int id : {1, 2, 3, 7}) few.add(id);
    CHECK(few.to_text(12) == "1-3, 7");
    CHECK(few.to_text(1) == "1-3 and 1 more range");
}

TEST_CASE("a warning about the message size is one warning over every size") {
    auto spec = must_parse(
        "workload: {engine: tpverify}\n"
        "axes:\n  tokens: [1, 2, 4]\n  NCCL_NTHREADS: [64]\n");
    auto summary = check_plan(spec, PlanOptions{});
    REQUIRE(summary);
    int about_threads = 0;
    for (const auto& group : summary->warnings)
        if (group.code == "ignored-small" && group.message.rfind("NCCL_NTHREADS", 0) == 0) {
            ++about_threads;
            CHECK(group.message.find("(14336-57344 bytes <= 64 KiB)") != std::string::npos);
            CHECK(group.experiments.to_string() == "1-3");
        }
    CHECK(about_threads == 1);
}
