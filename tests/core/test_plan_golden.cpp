// Golden tests: the table and JSON of `ncclsweep plan` for the shipped experiments and a fixture.
// To regenerate after an intended change: NCCLSWEEP_UPDATE_GOLDEN=1 ./test_core "[golden]"
// then review `git diff tests/golden/planner/`.
#include <cstdlib>
#include <fstream>
#include <sstream>
#include <string>

#include "core/plan/plan.hpp"
#include "core/plan/plan_printer.hpp"
#include "tests/support/catch.hpp"
#include "tests/support/golden.hpp"
#include "tests/support/temp_dir.hpp"

using namespace ncclsweep;

namespace {

std::string render(const std::string& spec_path, PlanFormat format) {
    auto spec = prepare_spec(spec_path, {});
    if (!spec) FAIL(spec.error().message);
    PlanOptions options;
    options.engine_path = "tpverify";
    auto summary = check_plan(*spec, options);
    if (!summary) FAIL(summary.error().message);
    std::ostringstream out;
    auto printer = make_plan_printer(format, out);
    auto ok = print_plan(*spec, options, *summary, *printer);
    if (!ok) FAIL(ok.error().message);
    return out.str();
}

void check_golden(const std::string& spec_relative, const std::string& golden_name, PlanFormat format) {
    test::check_golden_file(test::source_path("tests/golden/planner/" + golden_name),
                            render(test::source_path(spec_relative).string(), format));
}

}  // namespace

TEST_CASE("golden: quickstart plan", "[golden]") {
    check_golden("experiments/quickstart.yaml", "quickstart.table.txt", PlanFormat::table);
    check_golden("experiments/quickstart.yaml", "quickstart.json.txt", PlanFormat::json);
}

TEST_CASE("golden: seed-pcie-verify plan", "[golden]") {
    check_golden("experiments/seed-pcie-verify.yaml", "seed-pcie-verify.table.txt", PlanFormat::table);
    check_golden("experiments/seed-pcie-verify.yaml", "seed-pcie-verify.json.txt", PlanFormat::json);
}

TEST_CASE("golden: nightly plan", "[golden]") {
    check_golden("experiments/nightly.yaml", "nightly.table.txt", PlanFormat::table);
    check_golden("experiments/nightly.yaml", "nightly.json.txt", PlanFormat::json);
}

TEST_CASE("golden: expansion fixture (zip, exclude, include, hostile values)", "[golden]") {
    check_golden("tests/golden/planner/expansion.yaml", "expansion.table.txt", PlanFormat::table);
    check_golden("tests/golden/planner/expansion.yaml", "expansion.json.txt", PlanFormat::json);
}

TEST_CASE("plan table: fixed arguments with their value, the defaults point labelled", "[plan]") {
    test::TempDir dir;
    const auto path = dir.write("fixed.yaml",
                                "sweep: fixed\n"
                                "workload: {engine: tpverify, args: {backend: sim, tokens: 4}}\n"
                                "env: {NCCL_P2P_LEVEL: SYS}\n"
                                "axes:\n  NCCL_PROTO: [LL]\n"
                                "include:\n  - {NCCL_PROTO: Simple, tokens: 16}\n");
    const std::string table = render(path.string(), PlanFormat::table);
    CHECK(table.find("fixed: NCCL_P2P_LEVEL=SYS backend=sim tokens=4\n") != std::string::npos);
    CHECK(table.find("defaults: experiment 3 sets none of the swept NCCL variables") != std::string::npos);
    // Where a point does not set tokens it runs with the fixed value, and says so; the include
    // point's own value wins; the defaults point leaves NCCL_PROTO to NCCL.
    CHECK(table.find(" 1  LL          4 (fixed)") != std::string::npos);
    CHECK(table.find(" 2  Simple      16") != std::string::npos);
    CHECK(table.find(" 3  (default)   4 (fixed)") != std::string::npos);
    CHECK(table.find("(unset)") == std::string::npos);
    const std::string json = render(path.string(), PlanFormat::json);
    CHECK(json.find("\"canonical\":\"\",\"defaults\":true") != std::string::npos);
}
