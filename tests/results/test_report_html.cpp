// The HTML report: what it draws (bars, intervals, heat map, failures, deltas) and that hostile
// text can never become markup. Python's html.parser checks the structure of the page.
#include <nlohmann/json.hpp>

#include "results/query/diff.hpp"
#include "results/report/report_html.hpp"
#include "tests/results/export_fixtures.hpp"

using namespace ncclsweep;
using namespace ncclsweep::results;
using namespace ncclsweep::results::report;
using ncclsweep::test::run_command;
using ncclsweep::test::TempDir;

namespace {

/// Start tags (name -> count) and whether any <script> or external reference appears.
nlohmann::json page_structure(const std::string& html) {
    TempDir dir;
    auto file = dir.write("r.html", html);
    auto run = run_command(
        {"python3", "-c",
         "import sys, json\nfrom html.parser import HTMLParser\n"
         "class P(HTMLParser):\n"
         "    def __init__(s):\n"
         "        super().__init__(); s.tags = {}; s.external = []\n"
         "    def handle_starttag(s, tag, attrs):\n"
         "        s.tags[tag] = s.tags.get(tag, 0) + 1\n"
         "        for k, v in attrs:\n"
         "            if k in ('src', 'href') or (k.startswith('on')): s.external.append([tag, k, v])\n"
         "p = P(); p.feed(open(sys.argv[1], encoding='utf-8').read()); p.close()\n"
         "print(json.dumps({'tags': p.tags, 'external': p.external}))\n",
         file.string()});
    INFO(run.err);
    REQUIRE(run.exit_code == 0);
    return nlohmann::json::parse(run.out);
}

}  // namespace

TEST_CASE("report draws bars with intervals, a heat map and failures by class") {
    TempDir dir;
    auto sweep = test::make_export_sweep((dir.path() / "x.db").string());
    auto data = build_report(sweep, nullptr, {});
    REQUIRE(data);
    REQUIRE(data->bars.size() == 8);
    // Best first, then bars without a value, then failures.
    CHECK(data->bars[0].best);
    for (std::size_t i = 1; i < data->bars.size(); ++i) {
        const auto& a = data->bars[i - 1];
        const auto& b = data->bars[i];
        if (a.stats && b.stats) CHECK(a.stats->median >= b.stats->median);
        if (!a.stats) CHECK_FALSE(b.stats.has_value());
    }
    CHECK(data->bars.back().failure_class.size() > 0);
    bool ci = false, minmax = false;
    for (const auto& bar : data->bars)
        if (bar.stats) (bar.stats->interval_is_ci ? ci : minmax) = true;
    CHECK(ci);
    CHECK(minmax);  // 3 samples: min..max
    // Default heat map: the two parameters that explain most of the variance, largest first.
    REQUIRE(data->heatmap);
    CHECK(data->heatmap->chosen_by_variance);
    CHECK(data->heatmap->x_share >= data->heatmap->y_share);
    CHECK(data->heatmap->x_axis != data->heatmap->y_axis);
    CHECK(data->heatmap->aggregated);
    REQUIRE(data->failures.size() == 3);
    CHECK(data->failures[0].entries.size() == 1);

    std::string html = render_html(*data);
    auto page = page_structure(html);
    CHECK(page["tags"]["svg"] == 2);
    CHECK(page["tags"]["rect"].get<int>() > 8);
    CHECK_FALSE(page["tags"].contains("script"));
    CHECK(page["external"].empty());
    CHECK(html.find("<script") == std::string::npos);
    CHECK(html.find("&lt;script&gt;alert(1)&lt;/script&gt;") != std::string::npos);
    CHECK(html.find("min\xE2\x80\x93max, because fewer than 6 samples") != std::string::npos);
    CHECK(html.find("95% confidence interval of the median") != std::string::npos);
    CHECK(html.find("graph_capture") != std::string::npos);
    CHECK(html.find("graph_capture: capture invalidated &lt;b&gt;&amp;amp;&lt;/b&gt;") != std::string::npos);
    CHECK(html.find("\x1b") == std::string::npos);
    CHECK(html.find("class=\"whisker minmax\"") != std::string::npos);
}

TEST_CASE("heat map over chosen axes marks failed cells by class") {
    TempDir dir;
    auto sweep = test::make_export_sweep((dir.path() / "x.db").string());
    ReportOptions options;
    options.heatmap_axes = {"NCCL_ALGO", "tokens"};
    auto data = build_report(sweep, nullptr, options);
    REQUIRE(data);
    const Heatmap& map = *data->heatmap;
    CHECK(map.x_values == std::vector<std::string>{"Ring", "allreduce:tree", "Tree"});
    CHECK(map.y_values == std::vector<std::string>{"8", "16"});
    const HeatCell& tree8 = map.cells[0 * 3 + 2];
    CHECK_FALSE(tree8.value);
    CHECK(tree8.failed == 1);
    CHECK(tree8.failure_class == "graph_capture");
    CHECK(map.cells[1 * 3 + 2].failure_class == "hang");
    CHECK(map.cells[0 * 3 + 1].value == 1100.0);
    CHECK(map.cells[1 * 3 + 0].value == 1500.0);  // best over the other parameters
    std::string svg = heatmap_svg(map, data->direction);
    CHECK(svg.find("class=\"cell failed\"") != std::string::npos);
    CHECK(svg.find("\xE2\x9C\x97 graph_capture") != std::string::npos);

    options.heatmap_axes = {"NCCL_ALGO", "nope"};
    auto bad = build_report(sweep, nullptr, options);
    REQUIRE_FALSE(bad);
    CHECK(bad.error().message.find("'nope' is not a parameter") != std::string::npos);
    CHECK(bad.error().message.find("NCCL_ALGO, NCCL_PROTO, tokens, label") != std::string::npos);
    options.heatmap_axes = {"tokens"};
    CHECK_FALSE(build_report(sweep, nullptr, options));
}

TEST_CASE("report against a base shows per-experiment change and status changes") {
    TempDir dir;
    auto base = test::make_export_sweep((dir.path() / "x.db").string(), "base");
    auto sweep = base;
    sweep.info.id = 2;
    // Experiment 1 10% slower (significant: 6 vs 6 samples, disjoint), 2 fails now, 3 works now.
    for (auto& s : sweep.experiments[0].outcome.samples)
        if (s.metric == "tok_s") s.value *= 0.9;
    sweep.experiments[1].outcome.status = ExperimentStatus::failed;
    sweep.experiments[1].outcome.failure_class = "nccl";
    sweep.experiments[2].outcome.status = ExperimentStatus::ok;
    sweep.experiments[2].outcome.samples = {{0, "tok_s", 900}};
    sweep.experiments.pop_back();
    sweep.experiments[3].experiment.key = "new-key";
    auto data = build_report(sweep, &base, {});
    REQUIRE(data);
    CHECK(data->only_in_new == 1);
    CHECK(data->only_in_base == 2);
    REQUIRE(data->deltas.size() == 6);
    CHECK(data->deltas[0].verdict == "regression");
    CHECK(*data->deltas[0].delta == Approx(-0.1));
    CHECK(data->deltas[1].verdict == "regression: now nccl");
    CHECK(data->deltas[2].verdict == "improvement: was graph_capture");
    std::string html = render_html(*data);
    CHECK(html.find("<svg class=\"delta\"") != std::string::npos);
    CHECK(html.find("class=\"dbar regression\"") != std::string::npos);
    CHECK(html.find("1 only in this sweep") != std::string::npos);
    CHECK(page_structure(html)["tags"]["svg"] == 3);
}

TEST_CASE("report colours a change the way diff judges it: a significant -2% is grey like diff's ~") {
    TempDir dir;
    auto base = test::make_export_sweep((dir.path() / "x.db").string(), "base");
    auto sweep = base;
    sweep.info.id = 2;
    // Significant (6 vs 6 samples, disjoint after the shift) but under diff's 3% threshold.
    for (auto& s : sweep.experiments[0].outcome.samples)
        if (s.metric == "tok_s") s.value *= 0.98;
    auto significant = stats::compare(exports::metric_values(base.experiments[0], "tok_s"),
                                      exports::metric_values(sweep.experiments[0], "tok_s"), {0.05, 0.0});
    REQUIRE(significant);
    REQUIRE(significant->verdict == stats::Verdict::regression);  // without the threshold it would be red
    auto data = build_report(sweep, &base, {});
    REQUIRE(data);
    CHECK(*data->deltas[0].delta == Approx(-0.02));
    CHECK(data->deltas[0].verdict == "no_change");
    auto table_base = build_sweep_table(base.info, std::span<const StoredExperiment>(base.experiments));
    auto table_new = build_sweep_table(sweep.info, std::span<const StoredExperiment>(sweep.experiments));
    auto diff = diff_tables(table_base, table_new, DiffOptions{});
    REQUIRE(diff);
    for (const auto& e : diff->experiments)
        if (e.new_id == 1) {
            REQUIRE(e.metrics.size() == 1);
            CHECK(e.metrics[0].verdict == stats::Verdict::no_change);
        }
    std::string html = render_html(*data);
    CHECK(html.find("class=\"dbar same\"") != std::string::npos);
}

TEST_CASE("colour ramp is ordered and valid") {
    CHECK(ramp_colour(0) == "#440154");
    CHECK(ramp_colour(1) == "#fde725");
    CHECK(ramp_colour(-3) == ramp_colour(0));
    CHECK(ramp_colour(NAN) == ramp_colour(0));
    CHECK(ramp_colour(0.5).size() == 7);
}

namespace {

/// The nightly study's shape (experiments/nightly.yaml): ring/tree x LL/Simple (tree/Simple
/// excluded) x fusion, an include point with tokens=16, NCCL's defaults with fusion off and on;
/// medians written here (tokens=16 is the slowest).
exports::SweepData nightly_like() {
    exports::SweepData sweep;
    sweep.info.id = 9;
    sweep.info.record.name = "nightly";
    auto add = [&](std::vector<Assignment> params, double median,
                   ExperimentStatus status = ExperimentStatus::ok) {
        StoredExperiment e;
        e.experiment.id = static_cast<int>(sweep.experiments.size()) + 1;
        e.experiment.key = "k" + std::to_string(e.experiment.id);
        e.experiment.params = std::move(params);
        e.experiment.defaults =
            std::none_of(e.experiment.params.begin(), e.experiment.params.end(),
                         [](const Assignment& a) { return a.first.rfind("NCCL_", 0) == 0; });
        e.outcome.status = status;
        for (int r = 0; r < 5; ++r) e.outcome.samples.push_back({r, "tok_s", median + (r - 2) * 0.5});
        sweep.experiments.push_back(std::move(e));
    };
    add({{"NCCL_ALGO", "allreduce:ring"}, {"NCCL_PROTO", "LL"}, {"fusion", "off"}}, 812);
    add({{"NCCL_ALGO", "allreduce:ring"}, {"NCCL_PROTO", "LL"}, {"fusion", "on"}}, 905);
    add({{"NCCL_ALGO", "allreduce:ring"}, {"NCCL_PROTO", "Simple"}, {"fusion", "off"}}, 640);
    add({{"NCCL_ALGO", "allreduce:ring"}, {"NCCL_PROTO", "Simple"}, {"fusion", "on"}}, 700,
        ExperimentStatus::dropped);
    add({{"NCCL_ALGO", "allreduce:tree"}, {"NCCL_PROTO", "LL"}, {"fusion", "off"}}, 790);
    add({{"NCCL_ALGO", "allreduce:tree"}, {"NCCL_PROTO", "LL"}, {"fusion", "on"}}, 880);
    add({{"NCCL_ALGO", "allreduce:ring"}, {"NCCL_PROTO", "LL"}, {"fusion", "on"}, {"tokens", "16"}}, 300);
    add({{"fusion", "off"}}, 810);
    add({{"fusion", "on"}}, 903);
    return sweep;
}

}  // namespace

TEST_CASE("heat map: every point placed or listed, colours against the sweep's best, legend in values") {
    const auto sweep = nightly_like();
    auto data = build_report(sweep, nullptr, {});
    REQUIRE(data);
    REQUIRE(data->heatmap);
    const Heatmap& map = *data->heatmap;
    // Not tokens (only the include point has it): the two axes that place every other point.
    CHECK(map.x_axis != "tokens");
    CHECK(map.y_axis != "tokens");
    int on_map = 0;
    for (const auto& cell : map.cells) on_map += cell.experiments;
    CHECK(on_map + static_cast<int>(map.off_map.size()) == 9);
    // The defaults points are on the map, at "(default)" of an NCCL axis.
    const bool x_nccl = map.x_axis.rfind("NCCL_", 0) == 0;
    const auto& nccl_values = x_nccl ? map.x_values : map.y_values;
    CHECK(std::find(nccl_values.begin(), nccl_values.end(), "(default)") != nccl_values.end());
    // The scale is the sweep's best median (experiment 2, 905), not the best cell of the map.
    REQUIRE(map.reference);
    CHECK(*map.reference == 905.0);
    CHECK(map.reference_id == 2);
    const std::string svg = heatmap_svg(map, data->direction);
    CHECK(svg.find("vs the best (experiment 2)") != std::string::npos);
    CHECK(svg.find("best (905)") != std::string::npos);
    // A map of slow points is not coloured best: restricted to fusion=off it shows 812 against 905.
    Heatmap slow = map;
    for (std::size_t i = 0; i < slow.cells.size(); ++i)
        if (slow.cells[i].value && *slow.cells[i].value > 850) slow.cells[i].value.reset();
    const std::string slow_svg = heatmap_svg(slow, data->direction);
    CHECK(slow_svg.find(ramp_colour(1.0)) == std::string::npos);
    // The dropped point is drawn with its samples, grey, not as a failure.
    const auto dropped =
        std::find_if(data->bars.begin(), data->bars.end(), [](const Bar& b) { return b.id == 4; });
    REQUIRE(dropped != data->bars.end());
    CHECK(dropped->dropped);
    CHECK(dropped->stats);
    CHECK(dropped->failure_class.empty());
    const std::string html = render_html(*data);
    CHECK(html.find("class=\"bar dropped\"") != std::string::npos);
    // The recommendation, against NCCL's defaults, and its tie.
    CHECK(html.find("<h2>Recommendation</h2>") != std::string::npos);
    const bool said = html.find(
                          "experiment 9 (defaults fusion=on): no setting beats NCCL&#39;s defaults: leave "
                          "NCCL alone") != std::string::npos ||
                      html.find(
                          "experiment 9 (defaults fusion=on): no setting beats NCCL's defaults: leave NCCL "
                          "alone") != std::string::npos;
    CHECK(said);
    CHECK(html.find("Tie: ") != std::string::npos);
}

TEST_CASE("heat map: a point without one of the axes is listed beside the map with its value") {
    const auto sweep = nightly_like();
    ReportOptions options;
    options.heatmap_axes = {"NCCL_PROTO", "tokens"};
    auto data = build_report(sweep, nullptr, options);
    REQUIRE(data);
    const Heatmap& map = *data->heatmap;
    // Only experiment 7 sets tokens: 8 experiments are listed, each with its value or status.
    CHECK(map.off_map.size() == 8);
    CHECK(std::find(map.off_map.begin(), map.off_map.end(),
                    "experiment 1 (NCCL_ALGO=allreduce:ring NCCL_PROTO=LL fusion=off): 812") !=
          map.off_map.end());
    CHECK(std::find(map.off_map.begin(), map.off_map.end(),
                    "experiment 4 (NCCL_ALGO=allreduce:ring "
                    "NCCL_PROTO=Simple fusion=on): dropped") != map.off_map.end());
    const std::string html = render_html(*data);
    CHECK(html.find("Not on the map (NCCL_PROTO or tokens is not a parameter of these experiments)") !=
          std::string::npos);
}
