// ncclsweep plan: expand a spec into experiments and print them (nothing is run).
#include <iostream>
#include <memory>

#include "cli/commands.hpp"
#include "cli/spec_flags.hpp"
#include "core/plan/plan.hpp"
#include "core/plan/plan_printer.hpp"
#include "core/spec/engine_validate.hpp"
#include "core/sweep/workload_check.hpp"
#include "remote/local_target.hpp"

namespace ncclsweep::cli {
namespace {

struct PlanCommandOptions {
    SpecFlags spec;
    std::string format = "table";
    bool json = false;
};

ExitStatus run_plan(const PlanCommandOptions& options) {
    if (options.json && options.format != "table" && options.format != "json")
        return report_error(
            Error::bad_input("--json and --format disagree: --json is --format json; give one of them"));
    auto overrides = overrides_from(options.spec);
    if (!overrides) return report_error(overrides.error());
    auto spec = prepare_spec(options.spec.spec_path, *overrides);
    if (!spec) return report_error(spec.error());
    PlanOptions plan_options = plan_options_from(options.spec);
    // One walk checks the plan and gathers the engine's distinct command lines; the printer walks
    // it again, one experiment at a time (nothing is held in memory).
    EngineRunSet engine_runs;
    auto summary = check_plan(*spec, plan_options, [&](const Experiment& e) { engine_runs.add(e); });
    if (!summary) return report_error(summary.error());
    remote::LocalTarget local;
    if (auto checked = check_engine_spec(*spec, plan_options.engine_path, engine_runs.runs(), local);
        !checked)
        return report_error(checked.error());
    auto printer = make_plan_printer(
        options.json || options.format == "json" ? PlanFormat::json : PlanFormat::table, std::cout);
    if (auto ok = print_plan(*spec, plan_options, *summary, *printer); !ok) return report_error(ok.error());
    std::cout.flush();
    return ExitStatus::done;
}

}  // namespace

Command setup_plan(CLI::App& app) {
    auto options = std::make_shared<PlanCommandOptions>();
    CLI::App* sub = app.add_subcommand(
        "plan",
        "Expand a sweep spec into its experiments and check them; runs nothing.\n\n"
        "A spec (YAML, full reference in docs/spec.md) names a `workload` (engine: tpverify with args, or a\n"
        "command), fixed `env`, and `axes` whose cartesian product is the sweep (first axis slowest).\n"
        "UPPER_CASE axes are environment variables (NCCL_ALGO, NCCL_PROTO, ...), lower_case axes are\n"
        "workload parameters (tokens, tp, fusion, ...). `zip` makes axes advance together, `exclude`\n"
        "drops points, `include` adds points. Every NCCL_* value is checked: errors stop the plan\n"
        "(exit 2, located as file:line:col), warnings are listed with the experiments they affect.");
    add_spec_flags(*sub, options->spec);
    sub->add_option("--format", options->format, "table (for people, default) or json (streamed, for tools)")
        ->check(one_of({"table", "json"}));
    sub->add_flag("--json", options->json, "Same as --format json");
    sub->footer(
        "Examples:\n"
        "  ncclsweep plan experiments/quickstart.yaml\n"
        "  ncclsweep plan experiments/seed-pcie-verify.yaml --axis NCCL_PROTO=LL,LL128 --set tokens=8\n"
        "  ncclsweep plan spec.yaml --axis 'NCCL_ALGO=ring\\,tree;allreduce:tree,allreduce:ring'   # \\, = "
        "comma\n"
        "  ncclsweep plan spec.yaml --json | jq '.experiments[].key'\n\n"
        "--axis NAME=v1,v2 replaces the axis NAME (or adds it as the last, fastest axis); --set NAME=v\n"
        "fixes one value: an existing axis becomes single-valued, otherwise UPPER_CASE names become a\n"
        "fixed env value and lower_case names a fixed engine arg (--set repeats=N sets the spec's repeats;\n"
        "a name that reaches nothing is an error). Each experiment's `key` hashes its\n"
        "sorted axis values, so the same point has the same key in every sweep.\n"
        "Exit status: 0 planned, 2 bad spec or flags (message on stderr, nothing printed).");
    return Command{sub, [options] { return run_plan(*options); }};
}

}  // namespace ncclsweep::cli
