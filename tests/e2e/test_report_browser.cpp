// End-to-end: `ncclsweep report` rendered by a real headless browser (Debian's chromium):
// a screenshot that is not blank, no console errors, and the SVG in the DOM. Without chromium
// the cases are skipped with a message (CI installs it through scripts/install-deps.sh).
#include <cstdlib>
#include <filesystem>

#include "tests/e2e/e2e_support.hpp"
#include "tests/support/catch.hpp"
#include "tests/support/skip.hpp"

using namespace ncclsweep;
using namespace ncclsweep::test;

namespace {

std::string chromium_path() {
    for (const char* candidate : {"/usr/bin/chromium", "/usr/bin/chromium-browser", "/usr/bin/google-chrome"})
        if (std::filesystem::exists(candidate)) return candidate;
    return {};
}

std::vector<std::string> browser(const std::string& path, const TempDir& dir) {
    return {path,
            "--headless",
            "--no-sandbox",
            "--disable-gpu",
            "--no-first-run",
            "--disable-extensions",
            "--user-data-dir=" + (dir.path() / "profile").string(),
            "--window-size=1200,900"};
}

/// Two sweeps of the simulated engine, the second on a slower topology, and the report of both.
std::string make_report(const TempDir& dir) {
    std::string db = (dir.path() / "r.db").string();
    std::string axes = "  NCCL_ALGO: [Ring, \"allreduce:tree\", Tree]\n  tokens: [4, 16]\n";
    auto first = dir.write("a.yaml", sim_spec("e2e-report \"<img src=x onerror=alert(1)>\" & co", axes, 2));
    REQUIRE(run_ncclsweep({"run", first.string(), "--db", db}).exit_code == 0);
    std::string slower = sim_spec("e2e-report", axes, 2);
    slower.replace(slower.find("pcie-gen5"), 9, "pcie-gen4");
    auto second = dir.write("b.yaml", slower);
    REQUIRE(run_ncclsweep({"run", second.string(), "--db", db}).exit_code == 0);
    std::string html = (dir.path() / "report.html").string();
    auto r = run_ncclsweep({"report", "latest", "--vs", "latest~1", "--db", db, "-o", html});
    INFO(r.err);
    REQUIRE(r.exit_code == 0);
    return html;
}

}  // namespace

TEST_CASE("report: headless chromium renders it with no console errors and a non-blank screenshot") {
    std::string chromium = chromium_path();
    if (chromium.empty()) {
        skip_test("chromium",
                  "chromium is not installed (scripts/install-deps.sh --test installs it); the report was "
                  "not rendered");
        return;
    }
    TempDir dir;
    std::string html = make_report(dir);
    std::string png = (dir.path() / "shot.png").string();
    auto args = browser(chromium, dir);
    args.insert(args.end(), {"--enable-logging=stderr", "--v=0", "--screenshot=" + png, "file://" + html});
    auto shot = run_command(args);
    INFO(shot.err);
    REQUIRE(shot.exit_code == 0);
    REQUIRE(std::filesystem::exists(png));
    auto size = std::filesystem::file_size(png);
    CHECK(size > 20000);  // a blank 1200x900 PNG compresses to a few kB
    std::string bytes = read_file(png);
    CHECK(bytes.rfind("\x89PNG\r\n\x1a\n", 0) == 0);
    CHECK(shot.err.find("Uncaught") == std::string::npos);
    CHECK(shot.err.find(":CONSOLE(") == std::string::npos);
    CHECK(shot.err.find("Refused to") == std::string::npos);  // Content-Security-Policy violations
    if (const char* keep = std::getenv("NCCLSWEEP_KEEP_SCREENSHOT"))
        std::filesystem::copy_file(png, keep, std::filesystem::copy_options::overwrite_existing);
}

TEST_CASE("report: the DOM chromium builds holds the charts and no injected script") {
    std::string chromium = chromium_path();
    if (chromium.empty()) {
        skip_test("chromium",
                  "chromium is not installed (scripts/install-deps.sh --test installs it); the DOM was not "
                  "checked");
        return;
    }
    TempDir dir;
    std::string html = make_report(dir);
    auto args = browser(chromium, dir);
    args.insert(args.end(), {"--dump-dom", "file://" + html});
    auto dom = run_command(args);
    INFO(dom.err);
    REQUIRE(dom.exit_code == 0);
    CHECK(dom.out.find("<svg class=\"bars\"") != std::string::npos);
    CHECK(dom.out.find("<svg class=\"heatmap\"") != std::string::npos);
    CHECK(dom.out.find("<svg class=\"delta\"") != std::string::npos);
    CHECK(dom.out.find("<rect class=\"bar") != std::string::npos);
    CHECK(dom.out.find("class=\"cell failed\"") != std::string::npos);
    CHECK(dom.out.find("<script") == std::string::npos);
    CHECK(dom.out.find("<img") == std::string::npos);
    CHECK(dom.out.find("&lt;img src=x onerror=alert(1)&gt;\" &amp; co") != std::string::npos);
}

namespace {

/// The text of every <tspan> of the bar and delta labels in `dom`.
std::vector<std::string> label_lines_of(const std::string& dom) {
    std::vector<std::string> lines;
    for (std::size_t at = dom.find("<tspan"); at != std::string::npos; at = dom.find("<tspan", at + 1)) {
        const auto open = dom.find('>', at);
        const auto close = dom.find("</tspan>", open);
        if (open == std::string::npos || close == std::string::npos) break;
        lines.push_back(dom.substr(open + 1, close - open - 1));
    }
    return lines;
}

/// UTF-8 code points of `text` (what a label line's width is counted in).
std::size_t code_points(const std::string& text) {
    std::size_t n = 0;
    for (unsigned char c : text)
        if ((c & 0xC0) != 0x80) ++n;
    return n;
}

}  // namespace

TEST_CASE(
    "report: the seed study at 1400 and 800 px wide has whole labels and a heat map legend in percent") {
    std::string chromium = chromium_path();
    if (chromium.empty()) {
        skip_test("chromium",
                  "chromium is not installed (scripts/install-deps.sh --test installs it); the report was "
                  "not rendered");
        return;
    }
    TempDir dir;
    const std::string db = (dir.path() / "seed.db").string();
    // The study as written (97 points, 7 varying parameters); fewer repeats and iterations keep
    // the test short, and backend sim keeps it the same on a GPU host.
    auto run =
        run_ncclsweep({"run", source_path("experiments/seed-pcie-verify.yaml").string(), "--set", "repeats=2",
                       "--set", "iters=5", "--set", "warmup=1", "--set", "backend=sim", "--db", db});
    INFO(run.err);
    REQUIRE(run.exit_code == 0);
    const std::string html = (dir.path() / "seed.html").string();
    auto report = run_ncclsweep({"report", "latest", "--db", db, "-o", html});
    INFO(report.err);
    REQUIRE(report.exit_code == 0);

    auto args = browser(chromium, dir);
    args.insert(args.end(), {"--dump-dom", "file://" + html});
    auto dom = run_command(args);
    REQUIRE(dom.exit_code == 0);
    const auto lines = label_lines_of(dom.out);
    REQUIRE(lines.size() >= 97);
    for (const auto& line : lines) {
        INFO(line);
        CHECK(code_points(line) <= 46);                           // fits the 380 px label column at 12 px
        CHECK(line.find("\xE2\x80\xA6") == std::string::npos);    // never cut with an ellipsis
        CHECK(line.find("NCCL_P2P_LEVEL") == std::string::npos);  // fixed for the sweep: not in a label
    }
    CHECK(dom.out.find("<g class=\"scale\">") != std::string::npos);
    // The legend's ticks name the percent short of the sweep's best and the value it stands for.
    CHECK(dom.out.find(">best (") != std::string::npos);
    CHECK(dom.out.find("%") != std::string::npos);
    CHECK(dom.out.find(") or more</text>") != std::string::npos);
    CHECK(dom.out.find("explain most of the variance") != std::string::npos);

    for (const char* width : {"1400", "800"}) {
        INFO(width);
        const std::string png = (dir.path() / (std::string("seed-") + width + ".png")).string();
        auto shot_args = browser(chromium, dir);
        shot_args.back() = std::string("--window-size=") + width + ",1600";
        shot_args.insert(shot_args.end(),
                         {"--enable-logging=stderr", "--v=0", "--screenshot=" + png, "file://" + html});
        auto shot = run_command(shot_args);
        INFO(shot.err);
        REQUIRE(shot.exit_code == 0);
        REQUIRE(std::filesystem::exists(png));
        CHECK(std::filesystem::file_size(png) > 20000);
        CHECK(shot.err.find(":CONSOLE(") == std::string::npos);
        if (const char* keep = std::getenv("NCCLSWEEP_KEEP_SCREENSHOT"))
            std::filesystem::copy_file(png, std::string(keep) + "-" + width + ".png",
                                       std::filesystem::copy_options::overwrite_existing);
    }
}
