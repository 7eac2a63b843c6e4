// Built-in watcher rules: each fires on its example line, ordinary log lines fire nothing,
// priorities pick the specific class, and pathological lines complete (RE2 is linear).
#include <algorithm>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "core/watch/rule_catalog.hpp"
#include "tests/support/catch.hpp"
#include "tests/support/temp_dir.hpp"

using namespace ncclsweep;

namespace {

std::shared_ptr<const RuleCatalog> builtin_catalog() {
    auto catalog = RuleCatalog::with_user_rules({});
    REQUIRE(catalog.ok());
    return catalog.value();
}

std::vector<std::string> lines_of(const std::string& fixture) {
    std::istringstream in(test::read_file(test::source_path("tests/fixtures/logs/" + fixture)));
    std::vector<std::string> lines;
    for (std::string line; std::getline(in, line);) lines.push_back(line);
    REQUIRE_FALSE(lines.empty());
    return lines;
}

std::vector<std::string> hit_names(const RuleCatalog& catalog, const std::string& line) {
    std::vector<int> hits;
    catalog.match(line, hits);
    std::vector<std::string> names;
    for (int hit : hits) names.push_back(catalog.rule(hit).name);
    return names;
}

/// Name of the first fatal rule (highest priority) matching `line`, "" if none.
std::string first_fatal(const RuleCatalog& catalog, const std::string& line) {
    std::vector<int> hits;
    catalog.match(line, hits);
    for (int hit : hits)
        if (catalog.rule(hit).severity == watch::Severity::fatal) return catalog.rule(hit).name;
    return "";
}

}  // namespace

TEST_CASE("every built-in rule fires on its example line") {
    auto catalog = builtin_catalog();
    REQUIRE(catalog->size() == builtin_rules().size());
    for (const auto& rule : builtin_rules()) {
        INFO("rule " << rule.name << " example: " << rule.example);
        REQUIRE_FALSE(rule.example.empty());
        auto names = hit_names(*catalog, rule.example);
        CHECK(std::find(names.begin(), names.end(), rule.name) != names.end());
    }
}

TEST_CASE("built-in rule names are unique and fatal rules have a class") {
    std::set<std::string> names;
    for (const auto& rule : builtin_rules()) {
        INFO(rule.name);
        CHECK(names.insert(rule.name).second);
        if (rule.severity == watch::Severity::fatal) CHECK_FALSE(rule.failure_class.empty());
    }
}

TEST_CASE("ordinary log lines fire no rule") {
    auto catalog = builtin_catalog();
    for (const auto& line : lines_of("ordinary_lines.log")) {
        INFO(line);
        CHECK(hit_names(*catalog, line).empty());
    }
}

TEST_CASE("rules match case-insensitively (wording drifts between versions)") {
    auto catalog = builtin_catalog();
    CHECK(first_fatal(*catalog, "Exception: Capture CUDA graph failed: boom") == "sglang_capture_failed");
    CHECK(first_fatal(*catalog, "RUNTIMEERROR: cuda ERROR: AN ILLEGAL MEMORY ACCESS WAS ENCOUNTERED") ==
          "cuda_illegal_address");
}

TEST_CASE("the most specific fatal rule of a line decides") {
    auto catalog = builtin_catalog();
    CHECK(first_fatal(*catalog, "RuntimeError: CUDA error: out of memory") == "oom_generic");
    CHECK(
        first_fatal(*catalog, "RuntimeError: CUDA error: operation not permitted when stream is capturing") ==
        "cuda_capture_not_permitted");
    CHECK(first_fatal(
              *catalog,
              "Exception: Capture cuda graph failed: CUDA error: an illegal memory access was encountered") ==
          "sglang_capture_failed");
    CHECK(first_fatal(*catalog,
                      "RuntimeError: NCCL error in: x.cpp:1, unhandled cuda error (run with NCCL_DEBUG=INFO "
                      "for details)") == "nccl_unhandled_cuda");
    CHECK(first_fatal(*catalog,
                      "tpverify: replay: cudaGraphLaunch failed: an illegal memory access was encountered") ==
          "tpverify_failure");
    CHECK(first_fatal(
              *catalog,
              "[2025-06-01 10:00:01 TP0] Scheduler hit an exception: Traceback (most recent call last):") ==
          "sglang_scheduler_exception");
    // "NCCL WARN" alone is only a warning.
    CHECK(first_fatal(*catalog, "node1:1:1 [0] NCCL WARN NET/Socket : peer 10.0.0.2<41234> message truncated")
              .empty());
}

TEST_CASE("metric rules and phase rules are not fatal") {
    auto catalog = builtin_catalog();
    for (const auto& name :
         {"bench_output_throughput", "sglang_ready", "vllm_capture_end", "nccl_tuning", "tpverify_result"}) {
        INFO(name);
        int index = catalog->find(name);
        REQUIRE(index >= 0);
        CHECK(catalog->rule(index).severity != watch::Severity::fatal);
    }
    CHECK(catalog->find("no_such_rule") == -1);
}

TEST_CASE("a pathological 1 MB line completes and matches correctly") {
    auto catalog = builtin_catalog();
    std::string line(1 << 20, 'a');
    // Near-matches of many rules, repeated through the line.
    for (std::size_t at = 0; at + 64 < line.size(); at += 4096)
        line.replace(at, 48, "Capture cuda graph faile NCCL WAR CUDA error {\"ev");
    std::vector<int> hits;
    catalog->match(line, hits);
    CHECK(hits.empty());
    line += " CUDA out of memory";
    catalog->match(line, hits);
    REQUIRE_FALSE(hits.empty());
    CHECK(catalog->rule(hits.front()).name == "oom_cuda");
}

TEST_CASE("docs/watcher.md lists every built-in rule") {
    const auto doc = test::read_file(test::source_path("docs/watcher.md"));
    REQUIRE_FALSE(doc.empty());
    for (const auto& rule : builtin_rules()) {
        INFO(rule.name);
        CHECK(doc.find("| `" + rule.name + "` |") != std::string::npos);
    }
}
