// Whole-sweep exports: golden files, and proof that real parsers (python3 csv, xml.etree, json)
// read them back exactly, hostile text included.
// Regenerate goldens after an intended change: NCCLSWEEP_UPDATE_GOLDEN=1 ./test_results "[golden]"
#include <nlohmann/json.hpp>

#include <cstdlib>
#include <fstream>

#include "tests/results/export_fixtures.hpp"
#include "tests/support/golden.hpp"

using namespace ncclsweep;
using namespace ncclsweep::results::exports;
using ncclsweep::test::run_command;
using ncclsweep::test::TempDir;

namespace {

void check_export_golden(const std::string& name, const std::string& actual) {
    test::check_golden_file(test::source_path("tests/golden/export/" + name), actual);
}

/// Runs python3 with `script`, the file as argv[1]; returns stdout (REQUIREs success).
std::string python(const std::string& script, const std::string& file) {
    auto run = run_command({"python3", "-c", script, file});
    INFO(run.err);
    REQUIRE(run.exit_code == 0);
    return run.out;
}

}  // namespace

TEST_CASE("golden: json, csv, md and junit of the fixture sweep", "[golden]") {
    TempDir dir;
    auto sweep = test::make_export_sweep((dir.path() / "x.db").string());
    check_export_golden("fixture.json", to_json(sweep));
    check_export_golden("fixture.csv", to_csv(sweep));
    check_export_golden("fixture.md", to_markdown(sweep, "tok_s"));
    check_export_golden("fixture.junit.xml", to_junit(sweep));
}

TEST_CASE("json export holds every experiment with exact values") {
    TempDir dir;
    auto sweep = test::make_export_sweep((dir.path() / "x.db").string());
    auto j = nlohmann::json::parse(to_json(sweep));
    CHECK(j["format"] == "ncclsweep.export");
    CHECK(j["version"] == 1);
    REQUIRE(j["experiments"].size() == 8);
    auto& hostile = j["experiments"][3];
    CHECK(hostile["params"]["label"] == test::k_hostile_label);
    CHECK(hostile["env"]["NS_LABEL"] == test::k_hostile_label);
    CHECK(hostile["metrics"]["tok_s"]["median"] == 1500.0);
    CHECK(hostile["metrics"]["tok_s"]["interval"] == "ci95");
    CHECK(hostile["metrics"]["tok_s"]["values"].size() == 7);
    CHECK(j["experiments"][1]["metrics"]["tok_s"]["interval"] == "min_max");
    CHECK(j["experiments"][1]["metrics"]["tok_s"]["low"] == 1090.0);
    CHECK(j["experiments"][2]["status"] == "failed");
    CHECK(j["experiments"][2]["failure_class"] == "graph_capture");
    CHECK(j["experiments"][2]["diagnosis_line"] == "graph_capture: capture invalidated <b>&amp;</b>");
    CHECK(j["experiments"][7]["status"] == "pending");
    CHECK(j["sweep"]["counts"]["ok"] == 3);
}

TEST_CASE("csv export is RFC 4180: python's csv module reads every field back") {
    TempDir dir;
    auto sweep = test::make_export_sweep((dir.path() / "x.db").string());
    auto file = dir.write("x.csv", to_csv(sweep));
    auto out = python(
        "import csv, json, sys\n"
        "rows = list(csv.DictReader(open(sys.argv[1], newline='', encoding='utf-8')))\n"
        "print(json.dumps(rows))\n",
        file.string());
    auto rows = nlohmann::json::parse(out);
    // 3 ok experiments x 2 metrics + 5 without samples.
    REQUIRE(rows.size() == 11);
    CHECK(rows[0]["exp_id"] == "1");
    CHECK(rows[0]["metric"] == "tok_s");
    CHECK(rows[0]["median"] == "1001");
    CHECK(rows[0]["interval"] == "ci95");
    bool saw_hostile = false;
    for (const auto& row : rows) {
        if (row["exp_id"] != "4") continue;
        saw_hostile = true;
        CHECK(row["param:label"] == test::k_hostile_label);
        CHECK(row["sweep"] == "export \"fixture\" <&>");
    }
    CHECK(saw_hostile);
    CHECK(rows[4]["status"] == "failed");
    CHECK(rows[4]["metric"] == "");
    CHECK(rows[4]["failure_class"] == "graph_capture");
}

TEST_CASE("junit export parses with xml.etree: cases, failures, errors, properties") {
    TempDir dir;
    auto sweep = test::make_export_sweep((dir.path() / "x.db").string());
    auto file = dir.write("x.xml", to_junit(sweep));
    auto out = python(
        "import json, sys, xml.etree.ElementTree as ET\n"
        "root = ET.parse(sys.argv[1]).getroot()\n"
        "suite = root.find('testsuite')\n"
        "cases = []\n"
        "for c in suite.findall('testcase'):\n"
        "    d = {'classname': c.get('classname'), 'name': c.get('name'),\n"
        "         'props': {p.get('name'): p.get('value') for p in c.findall('properties/property')}}\n"
        "    for kind in ('failure', 'error', 'skipped'):\n"
        "        e = c.find(kind)\n"
        "        if e is not None: d[kind] = {'type': e.get('type'), 'message': e.get('message'), 'text': "
        "e.text}\n"
        "    cases.append(d)\n"
        "print(json.dumps({'root': root.attrib, 'suite': suite.attrib, 'cases': cases}))\n",
        file.string());
    auto j = nlohmann::json::parse(out);
    CHECK(j["root"]["tests"] == "8");
    CHECK(j["root"]["failures"] == "2");
    CHECK(j["root"]["errors"] == "1");
    CHECK(j["root"]["skipped"] == "2");
    auto& cases = j["cases"];
    REQUIRE(cases.size() == 8);
    CHECK(cases[0]["classname"] == "export \"fixture\" <&>");
    CHECK(cases[0]["name"] == "1 NCCL_ALGO=Ring NCCL_PROTO=LL tokens=8 label=plain");
    CHECK(cases[0]["props"]["tok_s.median"] == "1001");
    CHECK(cases[0]["props"]["tok_s.ci95_low"] == "990");
    CHECK(cases[1]["props"]["tok_s.min"] == "1090");
    CHECK_FALSE(cases[0].contains("failure"));
    // The failure: class as type, one line as message, control bytes visible, invalid UTF-8 replaced.
    auto& failure = cases[2]["failure"];
    CHECK(failure["type"] == "graph_capture");
    CHECK(failure["message"] == "graph_capture: capture invalidated <b>&amp;</b>");
    std::string text = failure["text"];
    CHECK(text.find("\\x1b[31mNo algorithm\\x07") != std::string::npos);
    CHECK(text.find("\xef\xbf\xbd\xef\xbf\xbd ]]> \"x\"") != std::string::npos);
    CHECK(text.find('\n') != std::string::npos);
    // The hostile label arrives exactly, except the newline made visible in the attribute.
    std::string name = cases[3]["name"];
    CHECK(name.find("q\"uote' <script>alert(1)</script> & | pipe\\x0anew line \xe6\x97\xa5") !=
          std::string::npos);
    CHECK(cases[4]["failure"]["type"] == "hang");
    CHECK(cases[5]["error"]["type"] == "connection");
    CHECK(cases[5]["error"]["message"] == "ssh connection lost");
    CHECK(cases[6].contains("skipped"));
    CHECK(cases[7]["skipped"]["message"] == "not run (pending)");
}

TEST_CASE("clean_text and xml_escape never emit characters XML forbids") {
    std::string all;
    for (int c = 0; c < 256; ++c) all += static_cast<char>(c);
    all += "\xed\xa0\x80";  // an encoded surrogate: invalid
    all += "\xef\xbf\xbe";  // U+FFFE: not an XML character
    all += "\xc0\xaf";      // overlong '/'
    std::string escaped = xml_escape(all);
    TempDir dir;
    auto file = dir.write("x.xml", "<?xml version=\"1.0\" encoding=\"UTF-8\"?><r a=\"" +
                                       xml_escape(all, false) + "\">" + escaped + "</r>");
    python("import sys, xml.etree.ElementTree as ET\nET.parse(sys.argv[1])\n", file.string());
    CHECK(escaped.find("\\x00") != std::string::npos);
    CHECK(escaped.find("\\x1f") != std::string::npos);
    CHECK(escaped.find("\\x7f") != std::string::npos);
    CHECK(escaped.find("\\xfffe") != std::string::npos);
    CHECK(escaped.find("&lt;&gt;") == std::string::npos);  // '<' (0x3c) and '>' (0x3e) are apart
    CHECK(escaped.find("&amp;") != std::string::npos);
    CHECK(clean_text("caf\xc3\xa9 \xf0\x9f\x8e\x89", false) == "caf\xc3\xa9 \xf0\x9f\x8e\x89");
    CHECK(clean_text("a\nb\tc\rd", true) == "a\nb\tc\\x0dd");
    CHECK(clean_text("a\nb", false) == "a\\x0ab");
}

TEST_CASE("markdown export escapes cells so the table keeps its shape") {
    TempDir dir;
    auto sweep = test::make_export_sweep((dir.path() / "x.db").string());
    auto md = to_markdown(sweep, "tok_s");
    CHECK(md.find("<script>") == std::string::npos);
    CHECK(md.find("&lt;script&gt;") != std::string::npos);
    // Every table line has the same number of unescaped pipes.
    std::size_t expected = 0;
    std::size_t start = md.find("| id |");
    REQUIRE(start != std::string::npos);
    std::string table = md.substr(start, md.find("\n\n", start) - start);
    std::size_t pos = 0;
    int lines = 0;
    while (pos < table.size()) {
        std::size_t end = table.find('\n', pos);
        if (end == std::string::npos) end = table.size();
        std::size_t pipes = 0;
        for (std::size_t i = pos; i < end; ++i)
            if (table[i] == '|' && (i == 0 || table[i - 1] != '\\')) ++pipes;
        if (!expected) expected = pipes;
        CHECK(pipes == expected);
        ++lines;
        pos = end + 1;
    }
    CHECK(lines == 10);
    CHECK(md.find("; * = min – max") != std::string::npos);
}

TEST_CASE("best experiment follows the metric's direction, errors name what exists") {
    TempDir dir;
    auto sweep = test::make_export_sweep((dir.path() / "x.db").string());
    auto best = best_experiment(sweep, "tok_s");
    REQUIRE(best);
    CHECK((*best)->experiment.id == 4);
    auto fastest = best_experiment(sweep, "verify_us_p50");
    REQUIRE(fastest);
    CHECK((*fastest)->experiment.id == 4);
    CHECK(metric_direction(sweep, "verify_us_p50") == stats::Direction::lower_is_better);
    CHECK(metric_direction(sweep, "tok_s") == stats::Direction::higher_is_better);
    CHECK(metric_direction(sweep, "latency") == stats::Direction::lower_is_better);
    CHECK(metric_direction(sweep, "tok_s:lower") == stats::Direction::lower_is_better);
    auto missing = best_experiment(sweep, "gbps");
    REQUIRE_FALSE(missing);
    CHECK(missing.error().kind == ErrorKind::bad_input);
    CHECK(missing.error().message.find("metrics present: tok_s, verify_us_p50") != std::string::npos);
    auto absent = results::exports::find_experiment(sweep, 99);
    REQUIRE_FALSE(absent);
    CHECK(absent.error().message.find("experiments 1..8") != std::string::npos);
}

TEST_CASE("export_sweep checks which flags fit which format") {
    TempDir dir;
    auto sweep = test::make_export_sweep((dir.path() / "x.db").string());
    CHECK_FALSE(parse_format("xml"));
    CHECK(parse_format("md").value() == Format::markdown);
    CHECK(parse_format("nccl-tuner").value() == Format::nccl_tuner);
    ExportRequest request;
    request.format = Format::csv;
    request.best = true;
    auto refused = export_sweep(sweep, request);
    REQUIRE_FALSE(refused);
    CHECK(refused.error().message.find("only to --format sitecustomize") != std::string::npos);
    request.format = Format::env;
    request.best = false;
    auto unnamed = export_sweep(sweep, request);
    REQUIRE_FALSE(unnamed);
    CHECK(unnamed.error().message.find("--best") != std::string::npos);
    request.experiment = 1;
    auto env = export_sweep(sweep, request);
    REQUIRE(env);
    CHECK(env->find("NCCL_ALGO='Ring'") != std::string::npos);
}
