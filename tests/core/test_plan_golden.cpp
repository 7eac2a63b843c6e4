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
