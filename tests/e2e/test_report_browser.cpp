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
        skip_test(
            "chromium",
            "chromium is not installed (scripts/install-deps.sh installs it); the report was not rendered");
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
                  "chromium is not installed (scripts/install-deps.sh installs it); the DOM was not checked");
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
