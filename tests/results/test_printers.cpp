// results/printers: every printer (table, markdown, json) of list/show/best/diff against golden
// files in tests/golden/results/. Regenerate after an intended change with
//   NCCLSWEEP_UPDATE_GOLDEN=1 ./test_results "printers*"   and review the git diff.
#include <nlohmann/json.hpp>

#include <cstdlib>
#include <fstream>
#include <functional>

#include "results/print/printers.hpp"
#include "tests/results/results_fixtures.hpp"
#include "tests/support/catch.hpp"
#include "tests/support/golden.hpp"
#include "tests/support/temp_dir.hpp"

using namespace ncclsweep;
using namespace ncclsweep::test;
using results::ExperimentStatus;

namespace {

void check_golden(const std::string& name, const std::string& text) {
    check_golden_file(source_path("tests/golden/results/" + name), text);
}

std::string render(results::Format format, const std::function<void(results::Printer&)>& print) {
    std::string text;
    results::Output out(text);
    auto printer = results::make_printer(format, out);
    print(*printer);
    return text;
}

const std::vector<std::pair<results::Format, std::string>> k_formats{
    {results::Format::table, "txt"}, {results::Format::markdown, "md"}, {results::Format::json, "json"}};

std::vector<results::StoredExperiment> base_sweep() {
    return {
        stored_experiment(1, {{"NCCL_PROTO", "LL"}, {"fusion", "off"}}, ExperimentStatus::ok,
                          {812.25, 809.5, 815.75, 811, 813.5, 810.25}, around(4100, 6)),
        stored_experiment(2, {{"NCCL_PROTO", "LL"}, {"fusion", "on"}}, ExperimentStatus::ok, around(905),
                          around(3500)),
        stored_experiment(3, {{"NCCL_PROTO", "Simple"}, {"fusion", "off"}}, ExperimentStatus::ok, around(640),
                          around(5200)),
        failed_experiment(4, {{"NCCL_PROTO", "Simple"}, {"fusion", "on"}}, "graph_capture"),
        stored_experiment(5, {{"NCCL_PROTO", "LL|128"}, {"fusion", "off"}}, ExperimentStatus::ok,
                          {700, 701, 702}),
    };
}

std::vector<results::StoredExperiment> new_sweep() {
    return {
        stored_experiment(1, {{"NCCL_PROTO", "LL"}, {"fusion", "off"}}, ExperimentStatus::ok, around(814),
                          around(4090)),
        stored_experiment(2, {{"NCCL_PROTO", "LL"}, {"fusion", "on"}}, ExperimentStatus::ok, around(790),
                          around(3900)),
        failed_experiment(3, {{"NCCL_PROTO", "Simple"}, {"fusion", "off"}}, "nccl"),
        stored_experiment(4, {{"NCCL_PROTO", "Simple"}, {"fusion", "on"}}, ExperimentStatus::ok, around(660),
                          around(5000)),
        stored_experiment(5, {{"NCCL_PROTO", "LL|128"}, {"fusion", "off"}}, ExperimentStatus::ok,
                          {650, 651, 652}),
        stored_experiment(6, {{"NCCL_PROTO", "LL"}, {"fusion", "on"}, {"tokens", "16"}}, ExperimentStatus::ok,
                          around(400)),
    };
}

results::SweepTable table(std::int64_t id, const std::vector<results::StoredExperiment>& experiments) {
    return results::build_sweep_table(with_counts(sweep_info(id, "nightly", "nightly"), experiments),
                                      experiments);
}

results::SweepDiff fixture_diff() {
    results::DiffOptions options;
    options.metrics = {{"tok_s", stats::Direction::higher_is_better},
                       {"verify_us_p50", stats::Direction::lower_is_better}};
    auto diff = results::diff_tables(table(1, base_sweep()), table(2, new_sweep()), options);
    REQUIRE(diff);
    return *diff;
}

}  // namespace

TEST_CASE("printers: format names parse, unknown ones list the choices") {
    CHECK(*results::parse_format("md") == results::Format::markdown);
    CHECK(*results::parse_format("json") == results::Format::json);
    auto bad = results::parse_format("html");
    REQUIRE_FALSE(bad);
    CHECK(bad.error().message == "unknown format 'html'; use table, markdown or json");
}

TEST_CASE("printers: results list in every format") {
    auto a = with_counts(sweep_info(2, "nightly", "nightly"), new_sweep());
    auto b = with_counts(sweep_info(1, "quickstart"), base_sweep());
    b.state = results::SweepState::interrupted;
    std::vector<results::SweepInfo> sweeps{a, b};
    for (const auto& [format, ext] : k_formats)
        check_golden("list." + ext, render(format, [&](results::Printer& p) { p.print_sweeps(sweeps); }));
    CHECK(render(results::Format::table, [](results::Printer& p) {
              p.print_sweeps({});
          }).find("no sweeps yet") != std::string::npos);
}

TEST_CASE("printers: results show in every format") {
    auto t = table(1, base_sweep());
    for (const auto& [format, ext] : k_formats)
        check_golden("show." + ext, render(format, [&](results::Printer& p) { p.print_table(t); }));
}

TEST_CASE("printers: results best in every format") {
    auto t = table(1, base_sweep());
    auto best = results::best_experiment(t, {"tok_s", stats::Direction::higher_is_better});
    REQUIRE(best);
    for (const auto& [format, ext] : k_formats)
        check_golden("best." + ext, render(format, [&](results::Printer& p) { p.print_best(*best); }));
}

TEST_CASE("printers: diff in every format") {
    auto diff = fixture_diff();
    for (const auto& [format, ext] : k_formats)
        check_golden("diff." + ext, render(format, [&](results::Printer& p) { p.print_diff(diff); }));
}

TEST_CASE("printers: diff table names every regressed experiment and why") {
    auto text = render(results::Format::table, [](results::Printer& p) { p.print_diff(fixture_diff()); });
    CHECK(text.find("regressed: experiment 2 (NCCL_PROTO=LL fusion=on): tok_s -12.7% (p=0.008), "
                    "verify_us_p50 +11.4% (p=0.008)") != std::string::npos);
    CHECK(text.find("regressed: experiment 3 (NCCL_PROTO=Simple fusion=off): ok -> failed (nccl): nccl: the "
                    "process reported an error") != std::string::npos);
    CHECK(text.find("note: experiment 5: too few samples (n=3+3)") != std::string::npos);
}

TEST_CASE("printers: markdown escapes pipes so cells stay cells") {
    auto text = render(results::Format::markdown, [](results::Printer& p) { p.print_diff(fixture_diff()); });
    CHECK(text.find("LL\\|128") != std::string::npos);
    CHECK(text.find("| LL|128 |") == std::string::npos);
}

TEST_CASE("printers: json documents parse, carry their schema and write NaN as null") {
    auto diff = fixture_diff();
    auto text = render(results::Format::json, [&](results::Printer& p) { p.print_diff(diff); });
    auto j = nlohmann::json::parse(text);
    CHECK(j["schema"] == results::k_diff_schema);
    CHECK(j["regression"] == true);
    CHECK(j["counts"]["regressions"] == diff.counts.regressions);
    CHECK(j["only_in_new"].size() == 1);
    CHECK(j["experiments"][0]["metrics"]["tok_s"]["base"]["ci95"].is_object());  // n = 6 has a 95% interval
    CHECK(j["experiments"][0]["metrics"]["tok_s"]["new"]["ci95"].is_null());     // n = 5 has none
    // Invalid UTF-8 in a diagnosis must not break the document.
    auto broken = new_sweep();
    broken[2].outcome.diagnosis = "nccl: bad byte \xff here\n";
    auto t = table(3, broken);
    auto shown = render(results::Format::json, [&](results::Printer& p) { p.print_table(t); });
    CHECK(nlohmann::json::parse(shown)["experiments"][2]["diagnosis"] == "nccl: bad byte \xef\xbf\xbd here");
}

namespace {

// Display width of a line: one column per code point (the tables hold no wide characters).
std::size_t columns_of(std::string_view line) {
    std::size_t n = 0;
    for (char c : line) n += (static_cast<unsigned char>(c) & 0xC0) != 0x80;
    return n;
}

std::string render_fitted(int columns, const std::function<void(results::Printer&)>& print) {
    std::string text;
    results::Output out(text);
    auto printer = results::make_printer(results::Format::table, out, columns);
    print(*printer);
    return text;
}

std::vector<std::string> lines_of(const std::string& text) {
    std::vector<std::string> lines;
    std::size_t start = 0;
    for (std::size_t nl; (nl = text.find('\n', start)) != std::string::npos; start = nl + 1)
        lines.push_back(text.substr(start, nl - start));
    return lines;
}

}  // namespace

TEST_CASE("printers: on a terminal, show and diff tables narrow free text to its width, never numbers") {
    auto experiments = base_sweep();
    experiments[3].outcome.diagnosis =
        "graph_capture: operation not permitted when stream is capturing (cudaErrorStreamCaptureUnsupported) "
        "in ncclAllReduce during torch.cuda.graph capture of the verify step";
    experiments[0].experiment.params[1].second = "on-with-a-very-long-value-nobody-reads-whole";
    auto t = table(1, experiments);
    const auto whole = render(results::Format::table, [&](results::Printer& p) { p.print_table(t); });
    // Not a terminal (columns 0): nothing is cut, whatever the length.
    CHECK(render_fitted(0, [&](results::Printer& p) { p.print_table(t); }) == whole);
    CHECK(whole.find("(cudaErrorStreamCaptureUnsupported)") != std::string::npos);

    const auto fitted = render_fitted(140, [&](results::Printer& p) { p.print_table(t); });
    check_golden("show-140-columns.txt", fitted);
    const auto lines = lines_of(fitted);
    REQUIRE(lines.size() > 6);
    // Every table line (header and rows; not the sweep's heading sentence) fits in 140 columns.
    for (std::size_t i = 1; i < 7; ++i) {
        INFO(lines[i]);
        CHECK(columns_of(lines[i]) <= 140);
    }
    // The numbers and statuses are whole; the diagnosis and the long value are cut, visibly.
    for (const char* kept : {"811.6", "[809.5, 815.8]", "4098", "failed (graph_capture)", "±0.5%"})
        CHECK(fitted.find(kept) != std::string::npos);
    CHECK(fitted.find("cudaErrorStreamCaptureUnsupported") == std::string::npos);
    CHECK(fitted.find("graph_cap...") != std::string::npos);
    CHECK(fitted.find("on-with-a-very-long-value-nobody-reads-whole") == std::string::npos);

    // Too narrow for the numbers: free text stops at 12 columns and the rest stays whole
    // (the terminal wraps it) rather than hide a value.
    const auto narrow = render_fitted(100, [&](results::Printer& p) { p.print_table(t); });
    CHECK(narrow.find("on-with-a...  ") != std::string::npos);  // cut to its 12-column floor
    CHECK(narrow.find("[809.5, 815.8]") != std::string::npos);
    CHECK(narrow.find("failed (graph_capture)") != std::string::npos);

    // diff: the status table's diagnosis is cut the same way; markdown never is.
    auto diff = fixture_diff();
    bool changed = false;
    for (auto& e : diff.experiments)
        if (e.new_id == 3) e.new_diagnosis = experiments[3].outcome.diagnosis, changed = true;
    REQUIRE(changed);
    const auto fitted_diff = render_fitted(100, [&](results::Printer& p) { p.print_diff(diff); });
    bool seen = false;
    for (const auto& line : lines_of(fitted_diff))
        if (line.rfind("  3  Simple", 0) == 0 && line.find("failed (nccl)") != std::string::npos) {
            INFO(line);
            CHECK(columns_of(line) <= 100);
            CHECK(line.find("regression") != std::string::npos);
            seen = true;
        }
    CHECK(seen);
    const auto md = render(results::Format::markdown, [&](results::Printer& p) { p.print_diff(diff); });
    CHECK(md.find("(cudaErrorStreamCaptureUnsupported)") != std::string::npos);
}

TEST_CASE("printers: a simulated sweep says SIMULATED above its table") {
    auto sweep = base_sweep();
    auto t = table(1, sweep);
    t.sweep.record.backend = "sim";
    for (auto format : {results::Format::table, results::Format::markdown}) {
        const auto text = render(format, [&](results::Printer& p) { p.print_table(t); });
        CHECK(text.find("SIMULATED: tpverify's sim backend modelled these numbers") != std::string::npos);
    }
    t.sweep.record.backend = "cuda";
    CHECK(render(results::Format::table, [&](results::Printer& p) { p.print_table(t); }).find("SIMULATED") ==
          std::string::npos);
}

TEST_CASE("printers: a sweep whose runner is gone gives a resume command that pastes as it reads") {
    auto t = table(7, base_sweep());
    t.sweep.state = results::SweepState::running;
    t.sweep.runner_alive = false;
    t.sweep.runner_pid = 4242;
    t.sweep.record.spec_path = "my specs/it's $(x).yaml";
    const auto text = render(results::Format::table, [&](results::Printer& p) { p.print_table(t); });
    CHECK(text.find("its runner (pid 4242) is gone") != std::string::npos);
    CHECK(text.find("`ncclsweep run 'my specs/it'\\''s $(x).yaml' --resume 7` continues it") !=
          std::string::npos);
}
