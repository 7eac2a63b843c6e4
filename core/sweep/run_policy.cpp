// The policy of `ncclsweep run` (core/sweep/run_policy.hpp): what is checked in which order,
// and what the sweep loop runs with.
#include "core/sweep/run_policy.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cctype>
#include <cstdlib>
#include <filesystem>
#include <set>

#include "core/host.hpp"
#include "core/log.hpp"
#include "core/nccl/effective_nccl.hpp"
#include "core/plan/plan.hpp"
#include "core/plan/plan_fingerprint.hpp"
#include "core/search/search.hpp"
#include "core/spec/engine_validate.hpp"
#include "core/spec/spec_parser.hpp"
#include "core/sweep/engine_locator.hpp"
#include "core/sweep/inherited_env.hpp"
#include "core/sweep/workload_check.hpp"
#include "core/text.hpp"
#include "core/watch/rule_catalog.hpp"
#include "core/watch/watcher.hpp"

namespace ncclsweep::inline sweep {
namespace {

/// `word` as a shell word: as-is when it has only characters no shell treats specially.
std::string shell_word(const std::string& word) {
    const bool plain = !word.empty() && std::all_of(word.begin(), word.end(), [](char c) {
        return std::isalnum(static_cast<unsigned char>(c)) ||
               std::string_view("_./=,:@%+-").find(c) != std::string_view::npos;
    });
    return plain ? word : shell_quote(word);
}

/// --axis and --set as overrides, all --axis first (the order the planner applies them in).
Result<std::vector<Override>> overrides_of(const RunFlags& flags) {
    std::vector<Override> out;
    auto add = [&out](OverrideKind kind, const std::vector<std::string>& texts) -> Result<void> {
        for (const auto& text : texts) {
            auto parsed = parse_override(kind, text);
            if (!parsed) return parsed.error();
            out.push_back(std::move(*parsed));
        }
        return success();
    };
    if (auto axes = add(OverrideKind::axis, flags.axis); !axes) return axes.error();
    if (auto sets = add(OverrideKind::set, flags.set); !sets) return sets.error();
    return out;
}

/// True when some experiment sets NCCL_DEBUG or NCCL_DEBUG_SUBSYS itself.
bool sets_nccl_debug(const std::vector<Experiment>& experiments) {
    return std::any_of(experiments.begin(), experiments.end(), [](const Experiment& e) {
        return std::any_of(e.env.begin(), e.env.end(), [](const Assignment& a) {
            return a.first == "NCCL_DEBUG" || a.first == "NCCL_DEBUG_SUBSYS";
        });
    });
}

/// The facts of the run header: the spec, the target, what preflight found, the engine.
RunHeader header_of(const Spec& spec, const HostFacts& host, const std::string& target,
                    std::size_t experiments, const std::string& backend) {
    RunHeader h;
    h.version = NCCLSWEEP_VERSION;
    h.sweep = spec.name;
    h.experiments = static_cast<int>(experiments);
    h.repeats = spec.repeats;
    h.target = target;
    if (target == "local") h.host = host_name();
    h.gpus = host.gpus;
    h.nccl = host.nccl;
    for (const auto& [name, value] : spec.workload.args)
        if (name == "tp") h.ranks = value.text + " (tp)";
    h.backend = backend;
    if (backend == "sim") h.backend += " (simulated GPUs and NCCL)";
    return h;
}

/// The search the run uses (docs/search.md): the spec's `search:` (with --budget), racing on
/// search.metric or --metric with the sweep's own definition of "better"; empty without one.
Result<std::optional<search::Settings>> search_settings(const Spec& spec, const MetricChoice& flag,
                                                        const std::vector<MetricDefinition>& metrics) {
    if (!spec.search.enabled()) return std::optional<search::Settings>{};
    auto choice =
        spec.search.metric.empty() ? Result<MetricChoice>(flag) : parse_metric_choice(spec.search.metric);
    if (!choice) return choice.error();
    const stats::Direction direction =
        choice->direction_given ? choice->direction : definition_of(choice->name, metrics).better;
    return std::optional<search::Settings>(
        search::Settings::from(spec.search, spec.repeats, choice->name, direction));
}

/// The spec with the flags that change it: --axis/--set, --budget, --target.
Result<Spec> spec_of(const RunFlags& flags, const std::vector<Override>& overrides) {
    auto spec = prepare_spec(flags.spec_path, overrides);
    if (!spec) return spec.error();
    if (!flags.budget.empty()) {
        auto budget = parse_budget(flags.budget, "--budget");
        if (!budget) return budget.error();
        spec->search.budget = *budget;
    }
    if (!flags.target.empty()) spec->target.url = flags.target;
    return spec;
}

/// The sweep loop's options for `run` (the search's settings are added by the caller).
SweepRunOptions loop_options(const RunFlags& flags, const Spec& spec,
                             std::shared_ptr<const RuleCatalog> catalog,
                             const std::vector<Experiment>& experiments) {
    SweepRunOptions options;
    options.sweep_name = spec.name;
    options.delivery = spec.target.env_delivery;
    options.repeats = spec.repeats;
    options.watcher = watcher_options_for(spec);
    options.catalog = std::move(catalog);
    options.workload = spec.workload;
    options.kill_grace = flags.kill_grace;
    // NCCL's TUNING lines fill the "effective NCCL" column. Asking for them adds lines, never a
    // verdict: the watcher lets the lines the request alone makes NCCL print decide nothing. A
    // spec that sets NCCL_DEBUG or NCCL_DEBUG_SUBSYS anywhere gets no request.
    if (options.watcher.record_effective_nccl && !sets_nccl_debug(experiments)) {
        options.extra_env = nccl::tuning_request();
        options.watcher.nccl_debug_requested = true;
    }
    return options;
}

/// `repeats: auto`: a resume keeps the repeats its sweep was recorded with (its plan must not
/// change); a new sweep takes them from the noise of the previous sweep of this spec.
Result<void> decide_repeats(PreparedRun& run, const RunFlags& flags, RunRecord& record) {
    const AutoRepeatsSpec& automatic = *run.spec.auto_repeats;
    auto use = [&run](int repeats) {
        run.spec.repeats = repeats;
        run.options.repeats = repeats;
    };
    if (run.request.resume_id) {
        auto stored = record.recorded_repeats(*run.request.resume_id);
        if (!stored) return stored.error();
        if (*stored) {
            use(**stored);
            run.repeats_line = fmt::format("repeats: auto -> {} (as sweep {} was started with)", **stored,
                                           *run.request.resume_id);
            return success();
        }
    }
    auto history =
        record.previous_samples(run.spec.name, flags.tag, run.metric.name, run.request.resume_id.value_or(0));
    if (!history) return history.error();
    const std::string source = flags.tag.empty() ? fmt::format("the sweep name '{}'", run.spec.name)
                                                 : fmt::format("the tag '{}'", flags.tag);
    const AutoRepeatsDecision decided =
        decide_auto_repeats(automatic, run.request.experiments, *history, run.metric.name, source);
    use(decided.repeats);
    run.repeats_line = decided.line;
    run.repeats_capped = decided.capped;
    run.request.plan_warnings.emplace_back("repeats_auto", decided.line);
    return success();
}

}  // namespace

std::string run_command_line(const RunFlags& flags) {
    std::string out = "ncclsweep run " + shell_word(flags.spec_path);
    auto add = [&out](std::string_view flag, const std::string& value) {
        out += fmt::format(" {} {}", flag, shell_word(value));
    };
    for (const auto& axis : flags.axis) add("--axis", axis);
    for (const auto& set : flags.set) add("--set", set);
    if (flags.max_experiments != k_default_max_experiments)
        add("--max-experiments", std::to_string(flags.max_experiments));
    if (!flags.engine.empty()) add("--engine", flags.engine);
    if (!flags.target.empty()) add("--target", flags.target);
    if (!flags.rules_file.empty()) add("--rules", flags.rules_file);
    if (!flags.db.empty()) add("--db", flags.db);
    if (!flags.budget.empty()) add("--budget", flags.budget);
    return out;
}

Result<PreparedRun> prepare_run(const RunFlags& flags, RunHost& host, RunRecord& record) {
    auto overrides = overrides_of(flags);
    if (!overrides) return overrides.error();
    auto parsed = spec_of(flags, *overrides);
    if (!parsed) return parsed.error();
    // Without --metric, the summary, the recommendation and a race rank by the spec's first
    // declared metric (a command workload's `metrics:`), else tok_s.
    const std::string metric_text = !flags.metric.empty() ? flags.metric
                                    : !parsed->workload.metrics.empty()
                                        ? parsed->workload.metrics.front().first
                                        : std::string("tok_s");
    auto metric = parse_metric_choice(metric_text);
    if (!metric) return Error::bad_input("--metric: " + metric.error().message);
    PreparedRun run;
    run.spec = std::move(*parsed);
    run.metric = *metric;
    const Spec& spec = run.spec;
    PlanOptions plan;
    plan.max_experiments = flags.max_experiments;
    plan.engine_path = flags.engine.empty() ? locate_engine(current_executable()) : flags.engine;

    // The plan is expanded once: the NCCL checks, the experiments the sweep runs, and the
    // engine's distinct command lines all come from this walk.
    std::vector<Experiment>& experiments = run.request.experiments;
    EngineRunSet engine_runs;
    auto checked = check_plan(spec, plan, [&](const Experiment& experiment) {
        engine_runs.add(experiment);
        experiments.push_back(experiment);
    });
    if (!checked) return checked.error();
    for (const auto& group : checked->warnings) {
        std::string message =
            group.message + " (experiments " + group.experiments.to_text(k_warning_ranges) + ")";
        NCCLSWEEP_LOG(warning, "{}", message);
        run.request.plan_warnings.emplace_back(group.code, std::move(message));
    }
    auto catalog = catalog_for(spec, flags.rules_file);
    if (!catalog) return catalog.error();
    const char* path = std::getenv("PATH");
    if (auto runnable = check_local_programs(spec, plan.engine_path, experiments, path ? path : "");
        !runnable)
        return runnable.error();
    if (spec.target.url.rfind("slurm://", 0) == 0 && !spec.workload.client.empty())
        return Error::bad_input(
            "workload.client is not supported on a Slurm target (a client must run next to its server, "
            "in the same allocation); wrap server and client in one workload.command script");

    auto target = host.open(spec.target);
    if (!target) return target.error();
    run.target = std::move(*target);
    // A batch scheduler's preflight runs on the login node, whose GPUs (if any) are not the ones
    // used; between experiments on one host, nothing of the last one may still hold a GPU (a
    // pool or a scheduler's nodes are not checked: docs/targets.md).
    const bool scheduled = run.target->schedules_batches();
    HostChecks checks;
    checks.refuse_busy_gpus = !scheduled && !flags.force;
    checks.release_check = !scheduled && run.target->slots() == 1;
    auto facts = host.preflight(*run.target, checks);
    if (!facts) return facts.error();
    run.host = std::move(*facts);
    auto workload = check_engine_spec(spec, plan.engine_path, engine_runs.runs(), *run.target);
    if (!workload) return workload.error();
    for (const auto& note : run.host.notes) NCCLSWEEP_LOG(info, "preflight: {}", note);
    for (const auto& warning : run.host.warnings) NCCLSWEEP_LOG(warning, "preflight: {}", warning);
    run.options = loop_options(flags, spec, *catalog, experiments);
    // What the workload inherits besides the spec's settings: said once here, recorded with the
    // sweep (docs/targets.md, "Precedence").
    auto inherited = inherited_environment(*run.target, experiments, run.options.extra_env);
    if (!inherited) return inherited.error();
    if (auto conflict = defaults_point_conflict(*inherited, experiments, run.target->describe());
        !conflict.empty())
        return Error::bad_input(conflict);
    if (auto warning = inherited_warning(*inherited, run.target->describe()); !warning.empty())
        NCCLSWEEP_LOG(warning, "{}", warning);

    auto store = record.open();
    if (!store) return store.error();
    run.store = *store;
    if (flags.resume) {
        auto id = record.resume_candidate(*flags.resume, spec.name);
        if (!id) return id.error();
        run.request.resume_id = *id;
    }
    if (spec.auto_repeats)
        if (auto decided = decide_repeats(run, flags, record); !decided) return decided.error();
    run.command_line = run_command_line(flags);
    if (spec.search.budget.runs > 0 || spec.search.budget.seconds > 0) {
        // A command that works as printed: the same flags, twice the budget (--resume added).
        Budget larger = spec.search.budget;
        larger.runs *= 2;
        larger.seconds *= 2;
        RunFlags next = flags;
        next.budget = larger.to_string();
        run.continue_command = run_command_line(next);
    }
    const std::string target_name = run.target->describe();
    run.request.sweep = NewSweep{spec.name,         flags.tag,        spec.path,
                                 spec.text,         target_name,      run.host.record,
                                 NCCLSWEEP_VERSION, spec.repeats,     fingerprint_of(spec, *overrides, plan),
                                 workload->metrics, workload->backend};
    run.request.sweep.fingerprint.command_line = run.command_line;
    run.request.sweep.inherited_env = std::move(*inherited);
    // Named to a second runner of the sweep's work directory, wherever that one was started.
    std::error_code absolute_error;
    run.request.database = std::filesystem::absolute(record.where(), absolute_error).string();

    run.options.before_experiment = run.host.before_experiment;
    auto settings = search_settings(spec, run.metric, workload->metrics);
    if (!settings) return settings.error();
    run.options.search = *settings;
    if (run.options.search) {
        // Say up front what the search will do and what its budget covers.
        std::vector<search::Point> points;
        for (const auto& experiment : experiments) points.push_back({experiment.id, experiment.params});
        run.search = search::Search(std::move(points), *run.options.search).plan_lines();
    }
    run.header = header_of(spec, run.host, target_name, experiments.size(), workload->backend);
    return run;
}

Result<RunReport> execute_run(PreparedRun& run, RunRecord& record, ProgressPrinter& printer,
                              const std::atomic<bool>& stop) {
    printer.header(run.header);
    if (run.repeats_capped)
        NCCLSWEEP_LOG(warning, "{}", run.repeats_line);
    else if (!run.repeats_line.empty())
        printer.notice(run.repeats_line);
    for (const auto& line : run.search) printer.notice("search: " + line);
    auto outcome = run_sweep(run.request, *run.target, *run.store, printer, run.options, stop);
    if (!outcome) {
        Error error = outcome.error();
        if (const std::int64_t id = record.recorded_sweep(); id != 0)
            error.message += fmt::format("\nsweep {} is recorded in {}; continue it with: {} --resume {}", id,
                                         record.where(), run.command_line, id);
        return error;
    }
    RunReport report;
    report.outcome = *outcome;
    report.database = record.where();
    report.metric = run.metric;
    report.searched = run.options.search.has_value();
    report.command_line = run.command_line;
    report.backend = run.request.sweep.backend;
    report.continue_command = run.continue_command;
    if (!run.continue_command.empty()) report.budget = run.spec.search.budget.to_string();
    // The summary sorts by the sweep's own metric definitions; NAME:higher or NAME:lower on
    // --metric wins.
    report.definitions = run.request.sweep.metrics;
    if (run.metric.direction_given)
        report.definitions.insert(report.definitions.begin(),
                                  MetricDefinition{run.metric.name, "", run.metric.direction});
    if (outcome->skipped_finished == 0) return report;
    // A resumed sweep's summary covers the whole sweep: what finished before enters the printer.
    auto recorded = run.store->finished_reports();
    if (!recorded) return report;
    std::set<int> seen;
    for (const auto& entry : printer.reports()) seen.insert(entry.first.id);
    for (const auto& finished : *recorded) {
        if (seen.count(finished.exp_id)) continue;
        auto planned = std::find_if(run.request.experiments.begin(), run.request.experiments.end(),
                                    [&](const Experiment& e) { return e.id == finished.exp_id; });
        if (planned != run.request.experiments.end()) printer.remember(*planned, finished);
    }
    return report;
}

Result<RunReport> run_sweep_command(const RunFlags& flags, RunHost& host, RunRecord& record,
                                    ProgressPrinter& printer, const std::atomic<bool>& stop) {
    auto run = prepare_run(flags, host, record);
    if (!run) return run.error();
    return execute_run(*run, record, printer, stop);
}

std::vector<std::string> closing_lines(const RunReport& report) {
    const SweepRunSummary& ran = report.outcome.summary;
    const std::string searched =
        // ok + failed (+ dropped after running) is what ran: the counts `results list` shows.
        report.searched
            ? fmt::format(
                  ", {} dropped), {} pruned; {} workload runs in {} round{} ({} collapsed, {} settled)",
                  ran.dropped_after_running, ran.pruned, ran.runs, ran.rounds, ran.rounds == 1 ? "" : "s",
                  ran.collapsed, ran.settled)
            : ")";
    const int before = report.outcome.skipped_finished;
    std::vector<std::string> lines = {
        "", fmt::format("sweep {}: {} ran ({} ok, {} failed{}{}; results in {}", report.outcome.sweep_id,
                        ran.ran, ran.ok, ran.failed, searched,
                        before ? fmt::format(", {} already finished", before) : "", report.database)};
    if (!ran.search_end.empty()) lines.push_back("search: " + ran.search_end);
    return lines;
}

ExitStatus conclude_run(const RunReport& report, SweepObserver& printer) {
    const SweepOutcome& outcome = report.outcome;
    switch (ending_of(outcome)) {
        case SweepEnding::interrupted:
            NCCLSWEEP_LOG(error, "interrupted; sweep {} is kept in {}; continue it with: {} --resume {}",
                          outcome.sweep_id, report.database, report.command_line, outcome.sweep_id);
            return ExitStatus::infrastructure;
        case SweepEnding::nothing_succeeded:
            NCCLSWEEP_LOG(
                error,
                "no experiment succeeded ({} failed): nothing to recommend; `ncclsweep results show {}` "
                "lists each failure and its diagnosis",
                outcome.summary.failed, outcome.sweep_id);
            return ExitStatus::negative;
        case SweepEnding::done:
            break;
    }
    if (outcome.summary.budget_spent)
        printer.notice(
            report.continue_command.empty()
                ? fmt::format(
                      "sweep {} stopped at its budget; continue it with: {} --resume {} (with a larger "
                      "--budget)",
                      outcome.sweep_id, report.command_line, outcome.sweep_id)
                : fmt::format(
                      "sweep {} stopped at its budget of {}; continue it with twice that: {} --resume {}",
                      outcome.sweep_id, report.budget, report.continue_command, outcome.sweep_id));
    return ExitStatus::done;
}

}  // namespace ncclsweep::inline sweep
