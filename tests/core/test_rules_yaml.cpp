// User watcher rules: rules files, workload ready/metrics/rules, merging with the built-ins,
// and errors located at file:line:col.
#include <string>
#include <vector>

#include "core/watch/rule_catalog.hpp"
#include "tests/support/catch.hpp"
#include "tests/support/temp_dir.hpp"
#include "tests/support/text.hpp"

using namespace ncclsweep;
using ncclsweep::test::contains;

TEST_CASE("a rules file is loaded with every key") {
    test::TempDir dir;
    auto path = dir.write("rules.yaml", R"(rules:
  - name: client_tok_s
    regex: 'client throughput: (?P<client_tok_s>[0-9.]+) tok/s'
    severity: progress
  - name: abort_seen
    regex: ncclCommAbort
    class: nccl
    fatal: true
  - name: slow_rank
    regex: 'rank [0-9]+ is slow'
    fatal: false
  - name: my_ready
    regex: 'listening on port'
    effect: ready
  - name: latency
    regex: 'p50 latency ([0-9.]+) us'
    metric: p50_us
)");
    auto rules = load_rules_file(path.string());
    REQUIRE(rules.ok());
    REQUIRE(rules->size() == 5);
    const auto& r = *rules;
    CHECK(r[0].name == "client_tok_s");
    CHECK(r[0].severity == Severity::progress);
    CHECK(r[1].severity == Severity::fatal);
    CHECK(r[1].failure_class == "nccl");
    CHECK(r[2].severity == Severity::warning);
    CHECK(r[2].failure_class == "user");
    CHECK(r[3].effect == PhaseEffect::ready);
    CHECK(r[3].severity == Severity::progress);  // a phase rule defaults to progress
    CHECK(r[4].extract == Extract::single_group);
    CHECK(r[4].metric == "p50_us");
    CHECK(r[1].mark.file == path.string());
    CHECK(r[1].mark.line == 6);  // marks point at the regex value
    CHECK(r[1].mark.column == 12);
}

TEST_CASE("an invalid user regex names the rule, file:line:col and RE2's error") {
    auto rules = parse_rules_yaml("- name: ok\n  regex: fine\n- name: broken\n  regex: 'capture (failed'\n",
                                  "my_rules.yaml");
    REQUIRE_FALSE(rules.ok());
    const auto& message = rules.error().message;
    INFO(message);
    CHECK(rules.error().kind == ErrorKind::bad_input);
    CHECK(contains(message, "my_rules.yaml:4:10"));
    CHECK(contains(message, "'broken'"));
    CHECK(contains(message, "missing )"));
}

TEST_CASE("rules file errors are located") {
    SECTION("unknown key") {
        auto rules = parse_rules_yaml("- name: a\n  regex: x\n  fatle: true\n", "r.yaml");
        REQUIRE_FALSE(rules.ok());
        CHECK(contains(rules.error().message, "r.yaml:3:3"));
        CHECK(contains(rules.error().message, "unknown rule key 'fatle'"));
    }
    SECTION("YAML syntax") {
        auto rules = parse_rules_yaml("- name: a\n  regex: [unclosed\n", "r.yaml");
        REQUIRE_FALSE(rules.ok());
        CHECK(contains(rules.error().message, "r.yaml:"));
        CHECK(contains(rules.error().message, "YAML error"));
    }
    SECTION("missing name") {
        auto rules = parse_rules_yaml("- regex: x\n", "r.yaml");
        REQUIRE_FALSE(rules.ok());
        CHECK(contains(rules.error().message, "r.yaml:1:3: this rule has no `name:`"));
    }
    SECTION("bad severity") {
        auto rules = parse_rules_yaml("- name: a\n  regex: x\n  severity: deadly\n", "r.yaml");
        REQUIRE_FALSE(rules.ok());
        CHECK(contains(rules.error().message, "r.yaml:3:13: unknown severity 'deadly'"));
    }
    SECTION("severity and fatal disagree") {
        auto rules =
            parse_rules_yaml("- name: a\n  regex: x\n  severity: warning\n  fatal: true\n", "r.yaml");
        REQUIRE_FALSE(rules.ok());
        CHECK(contains(rules.error().message, "disagree"));
    }
    SECTION("not a list") {
        auto rules = parse_rules_yaml("name: a\n", "r.yaml");
        REQUIRE_FALSE(rules.ok());
        CHECK(contains(rules.error().message, "expected a list of rules"));
    }
    SECTION("missing file") {
        auto rules = load_rules_file("/nonexistent/rules.yaml");
        REQUIRE_FALSE(rules.ok());
        CHECK(contains(rules.error().message, "/nonexistent/rules.yaml: cannot read"));
    }
}

TEST_CASE("user rules come first and replace a built-in of the same name") {
    Rule mine;
    mine.name = "nccl_warn";
    mine.pattern = "NCCL WARN";
    mine.failure_class = "nccl";
    mine.severity = Severity::fatal;
    auto catalog = RuleCatalog::with_user_rules({mine});
    REQUIRE(catalog.ok());
    const auto& c = **catalog;
    CHECK(c.size() == builtin_rules().size());
    REQUIRE(c.find("nccl_warn") == 0);
    CHECK(c.rule(0).severity == Severity::fatal);
    std::vector<int> hits;
    c.match("node1:1:1 [0] NCCL WARN something", hits);
    REQUIRE(hits.size() == 1);
    CHECK(hits[0] == 0);

    auto twice = merge_rules({mine, mine}, builtin_rules());
    REQUIRE_FALSE(twice.ok());
    CHECK(contains(twice.error().message, "used twice"));
}

TEST_CASE("workload ready, metrics and rules become rules") {
    WorkloadSpec workload;
    workload.ready = "Uvicorn running on";
    workload.metrics = {{"tok_s", "tok/s: ([0-9.]+)"}};
    workload.rules = {RuleSpec{"my_fatal", "kaboom", "crash", true, SourceMark{"spec.yaml", 9, 7}}};
    workload.mark = SourceMark{"spec.yaml", 3, 1};
    auto rules = rules_from_workload(workload);
    REQUIRE(rules.ok());
    REQUIRE(rules->size() == 3);
    CHECK((*rules)[0].name == "my_fatal");
    CHECK((*rules)[0].severity == Severity::fatal);
    CHECK((*rules)[1].effect == PhaseEffect::ready);
    CHECK((*rules)[2].extract == Extract::single_group);
    CHECK((*rules)[2].metric == "tok_s");
    auto catalog = RuleCatalog::with_user_rules(*rules);
    CHECK(catalog.ok());

    workload.metrics = {{"tok_s", "tok/s: [0-9.]+"}};
    auto no_group = rules_from_workload(workload);
    REQUIRE_FALSE(no_group.ok());
    CHECK(contains(no_group.error().message, "spec.yaml:3:1"));
    CHECK(contains(no_group.error().message, "no capture group"));

    workload.metrics.clear();
    workload.rules[0].regex = "(?<=x)y";
    auto bad = rules_from_workload(workload);
    REQUIRE_FALSE(bad.ok());
    CHECK(contains(bad.error().message, "spec.yaml:9:7: rule 'my_fatal': invalid regex"));
}

TEST_CASE("compile reports an invalid regex of a rule built in code") {
    Rule broken;
    broken.name = "broken";
    broken.pattern = "a(b";
    broken.mark = SourceMark{"x.yaml", 2, 5};
    auto catalog = RuleCatalog::compile({broken});
    REQUIRE_FALSE(catalog.ok());
    CHECK(contains(catalog.error().message, "x.yaml:2:5: rule 'broken': invalid regex 'a(b'"));
}
