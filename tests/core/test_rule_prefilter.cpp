// The literal prefilter in front of the rules (core/watch/rule_prefilter.hpp) gives exactly the
// answer of the RE2::Set of all rules: on every fixture line, on mutated rule examples, around
// the 32-byte blocks of the wide scan, on the crafted lines, on lines with characters RE2 folds
// onto ASCII letters, and for user rules the prefilter cannot filter.
#include "core/watch/rule_prefilter.hpp"

#include <filesystem>
#include <random>
#include <sstream>
#include <string>
#include <vector>

#include "core/watch/rule_catalog.hpp"
#include "tests/core/adversarial_lines.hpp"
#include "tests/support/catch.hpp"
#include "tests/support/temp_dir.hpp"

using namespace ncclsweep;

namespace {

std::shared_ptr<const RuleCatalog> prefilter_catalog(const std::vector<Rule>& user = {}) {
    auto catalog = RuleCatalog::with_user_rules(user);
    REQUIRE(catalog.ok());
    REQUIRE((*catalog)->prefilter() != nullptr);
    return *catalog;
}

/// The rules' names a line matches, through the prefilter and through the set.
struct Answers {
    std::vector<int> prefilter, set;
};

Answers answers(const RuleCatalog& catalog, const std::string& line) {
    Answers a;
    catalog.match(line, a.prefilter);
    catalog.match_with_set(line, a.set);
    return a;
}

/// Counts the lines checked and fails with the first line whose answers differ.
std::size_t check_same(const RuleCatalog& catalog, const std::vector<std::string>& lines) {
    for (const auto& line : lines) {
        const auto a = answers(catalog, line);
        INFO("line (" << line.size() << " bytes): " << line.substr(0, 300));
        REQUIRE(a.prefilter == a.set);
    }
    return lines.size();
}

/// Every line of every fixture log and recording.
std::vector<std::string> fixture_corpus() {
    std::vector<std::string> lines;
    for (const char* folder : {"tests/fixtures/logs", "tests/fixtures/recorded"})
        for (const auto& entry : std::filesystem::directory_iterator(test::source_path(folder))) {
            if (!entry.is_regular_file()) continue;
            std::istringstream in(test::read_file(entry.path()));
            for (std::string line; std::getline(in, line);) {
                if (entry.path().extension() == ".rec")
                    line = line.substr(line.find('\t', line.find('\t') + 1) + 1);
                lines.push_back(line);
            }
        }
    REQUIRE(lines.size() > 300);
    return lines;
}

}  // namespace

TEST_CASE("prefilter: the built-in rules are all filtered and most are confirmed by their literal alone") {
    auto catalog = prefilter_catalog();
    const RulePrefilter& prefilter = *catalog->prefilter();
    CHECK(prefilter.unfiltered_rules() == 0);
    // docs/watcher.md, "How a line is judged": 29 of the 46 built-ins are one literal.
    CHECK(builtin_rules().size() == 46);
    CHECK(prefilter.literal_rules() == 29);
    CHECK(prefilter.atoms().size() >= 40);
}

TEST_CASE("prefilter: same answer as the RE2::Set on every fixture line and every rule example") {
    auto catalog = prefilter_catalog();
    const auto lines = fixture_corpus();
    std::size_t matched = 0;
    for (const auto& line : lines) {
        std::vector<int> hits;
        catalog->match(line, hits);
        matched += hits.empty() ? 0 : 1;
    }
    CHECK(matched > 100);  // the corpus exercises the rules, not only their absence
    check_same(*catalog, lines);
    std::vector<std::string> examples;
    for (const auto& rule : builtin_rules()) examples.push_back(rule.example);
    check_same(*catalog, examples);
}

TEST_CASE("prefilter: same answer on rule examples mutated, cut, moved and case-changed") {
    auto catalog = prefilter_catalog();
    std::mt19937 random(20261203);
    std::vector<std::string> lines;
    const std::string noise = "abcXYZ_:-> ()[]{}\"'/.0123456789\t";
    for (const auto& rule : builtin_rules()) {
        const std::string& example = rule.example;
        for (int round = 0; round < 60; ++round) {
            std::string line = example;
            for (char& c : line)  // random case
                if (random() % 3 == 0)
                    c = static_cast<char>(std::islower(static_cast<unsigned char>(c)) != 0
                                              ? std::toupper(static_cast<unsigned char>(c))
                                              : std::tolower(static_cast<unsigned char>(c)));
            switch (round % 5) {
                case 0:  // one byte changed
                    line[random() % line.size()] = noise[random() % noise.size()];
                    break;
                case 1:  // cut at both ends
                    line = line.substr(random() % (line.size() / 2 + 1));
                    line = line.substr(0, line.size() - random() % (line.size() / 2 + 1));
                    break;
                case 2:  // moved behind some text
                    line = std::string(random() % 90, 'x') + line;
                    break;
                case 3:  // a byte dropped
                    line.erase(random() % line.size(), 1);
                    break;
                default:  // two examples in one line
                    line += " " + builtin_rules()[random() % builtin_rules().size()].example;
            }
            lines.push_back(line);
        }
    }
    CHECK(check_same(*catalog, lines) == 46 * 60);
}

TEST_CASE("prefilter: an atom at every position of lines of 1 to 140 bytes (the wide scan's block edges)") {
    auto catalog = prefilter_catalog();
    std::vector<std::string> lines;
    for (const char* atom : {"Bytes -> Algo ", "NCCL WARN", "CUDA error:", "\"ready\"", "accept len: 3.2"}) {
        const std::string text = atom;
        for (std::size_t size = 1; size <= 140; ++size)
            for (std::size_t at = 0; at + text.size() <= size; at += 1) {
                std::string line(size, '.');
                line.replace(at, text.size(), text);
                lines.push_back(line);
            }
        // Cut atoms at the end of the line match nothing.
        for (std::size_t keep = 1; keep < text.size(); ++keep)
            lines.push_back(std::string(70, ' ') + text.substr(0, keep));
    }
    CHECK(check_same(*catalog, lines) > 30000);
}

TEST_CASE("prefilter: same answer on the crafted lines and 1 MB lines") {
    auto catalog = prefilter_catalog();
    check_same(*catalog, {test::near_matches(1 << 20), test::nested_parentheses(1 << 20),
                          test::a_run(1 << 20), test::fatal_at_end(1 << 20), test::nested_result_event(20000),
                          test::repeat_to("NCCL WARN Cuda failure 'out of memor' ", 1 << 20),
                          test::repeat_to("->", 1 << 20), test::repeat_to("-> Bytes -> Algo  ", 1 << 20)});
}

TEST_CASE(
    "prefilter: characters RE2 folds onto ASCII letters and other non-ASCII bytes get the set's answer") {
    auto catalog = prefilter_catalog();
    // U+017F (ſ) folds onto s and U+212A (Kelvin sign) onto k: RE2 matches them case-insensitively.
    const std::string long_s = "\xc5\xbf", kelvin = "\xe2\x84\xaa";
    const std::vector<std::string> lines = {
        "Traceback (mo" + long_s + "t recent call la" + long_s + "t):",
        "node1:1:1 [0] NCCL WARN " + kelvin + "ernel failed",
        "Watchdog timeout (self.watchdog_timeout=300) " + kelvin,
        "Scheduler hit an exception: " + long_s + "omething",
        "INFO 06-01 10:00:00 Capturing CUDA graph shapes: 100%|\xe2\x96\x88\xe2\x96\x88| 67/67",
        "\xff\xfe binary \x80 CUDA error: bad",
        "ℹ info: watchdog timeout",
    };
    check_same(*catalog, lines);
    std::vector<int> hits;
    catalog->match(lines[0], hits);
    REQUIRE(hits.size() == 1);  // the set's answer: the traceback rule, through the folded s
    CHECK(catalog->rule(hits[0]).name == "python_traceback");
}

TEST_CASE("prefilter: user rules it cannot filter, AND and OR of literals, anchors and case flags") {
    std::vector<Rule> user;
    auto rule = [&](std::string name, std::string pattern) {
        Rule r;
        r.name = std::move(name);
        r.pattern = std::move(pattern);
        r.failure_class = "user";
        user.push_back(r);
    };
    rule("digits_only", R"(^\d+$)");                        // no literal: always a candidate
    rule("two_words", R"(alpha.*omega)");                   // both needed
    rule("either", R"(first thing|second thing)");          // one of two
    rule("anchored", R"(^step \d+ done$)");                 // anchors around a literal
    rule("case_sensitive", R"((?-i:ExactCase) marker)");    // a literal RE2 must not fold
    rule("umlaut", "Fehler: Gerät");                        // a non-ASCII literal
    rule("escapes", R"(a\.b\(c\) \[d\] e\+f)");             // a literal written with escapes
    rule("short", R"(ab)");                                 // an atom too short to filter by
    rule("class_start", R"([Ee]rror code (?P<code>\d+))");  // a class before the literal
    auto catalog = prefilter_catalog(user);
    CHECK(catalog->prefilter()->unfiltered_rules() >= 2);  // digits_only and short
    const std::vector<std::string> lines = {
        "12345",
        "12345 ",
        "alpha then omega",
        "omega then alpha",
        "OMEGA ALPHA OMEGA",
        "the first thing",
        "the SECOND THING",
        "step 12 done",
        "a step 12 done",
        "ExactCase marker",
        "exactcase marker",
        "Fehler: Gerät",
        "FEHLER: GERÄT",
        "fehler: gerat",
        "a.b(c) [d] e+f",
        "a.b(c) [d] ee+f",
        "xaby",
        "error code 42",
        "ERROR CODE 7",
        "rror code 7",
        "",
        "a",
    };
    check_same(*catalog, lines);
    check_same(*catalog, fixture_corpus());
}

TEST_CASE(
    "prefilter: candidates() adds only rules whose extraction confirms them, and knows where they start") {
    auto catalog = prefilter_catalog();
    std::vector<std::string> lines = fixture_corpus();
    lines.push_back("accept len: none yet, gen throughput (token/s): n/a");  // the literals, not the numbers
    lines.push_back("x accept len: y accept len: 3.5");                      // a second occurrence matches
    std::size_t unconfirmed = 0;
    for (const auto& line : lines) {
        std::vector<int> exact, candidates;
        std::vector<std::size_t> starts;
        catalog->match(line, exact);
        catalog->candidates(line, candidates, starts);
        REQUIRE(starts.size() == candidates.size());
        INFO(line);
        for (int rule : exact)
            CHECK(std::find(candidates.begin(), candidates.end(), rule) != candidates.end());
        for (std::size_t i = 0; i < candidates.size(); ++i) {
            const int rule = candidates[i];
            if (std::find(exact.begin(), exact.end(), rule) == exact.end()) {
                CHECK(catalog->extracted_alone(rule));
                ++unconfirmed;
            }
            if (starts[i] == std::string::npos) continue;
            // Where the literal the rule's matches start with first occurs.
            bool whole = false;
            const auto prefix = RulePrefilter::literal_start(catalog->rule(rule).pattern, whole);
            REQUIRE_FALSE(prefix.empty());
            std::string lower = line;
            for (char& c : lower) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
            CHECK(starts[i] == lower.find(prefix));
        }
    }
    CHECK(unconfirmed >= 2);
}

TEST_CASE("prefilter: the literal a pattern starts with") {
    bool whole = false;
    CHECK(RulePrefilter::literal_start("NCCL WARN", whole) == "nccl warn");
    CHECK(whole);
    CHECK(RulePrefilter::literal_start(R"(Traceback \(most recent call last\):)", whole) ==
          "traceback (most recent call last):");
    CHECK(whole);
    CHECK(RulePrefilter::literal_start(R"(accept len:\s*(?P<x>[0-9.]+))", whole) == "accept len:");
    CHECK_FALSE(whole);
    CHECK(RulePrefilter::literal_start("graphs? captured", whole) == "graph");  // the s is optional
    CHECK(RulePrefilter::literal_start("ab*c", whole) == "a");
    CHECK(RulePrefilter::literal_start("first|second", whole).empty());  // either may start it
    CHECK(RulePrefilter::literal_start(R"(a\|b)", whole) == "a|b");
    CHECK(RulePrefilter::literal_start(R"(^tpverify: )", whole).empty());
    CHECK(RulePrefilter::literal_start("Gerät", whole) == "ger");  // ASCII only
    CHECK_FALSE(whole);
}
