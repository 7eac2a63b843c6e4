// ncclsweep run: plan, preflight, run every experiment x repeat, record as it goes.
#include <unistd.h>

#include <fmt/format.h>

#include <algorithm>
#include <cctype>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <set>

#include "cli/commands.hpp"
#include "cli/interrupt.hpp"
#include "cli/spec_flags.hpp"
#include "cli/terminal.hpp"
#include "core/host.hpp"
#include "core/log.hpp"
#include "core/nccl/effective_nccl.hpp"
#include "core/plan/plan.hpp"
#include "core/plan/plan_fingerprint.hpp"
#include "core/plan/render.hpp"
#include "core/search/search.hpp"
#include "core/spec/spec_parser.hpp"
#include "core/sweep/engine_locator.hpp"
#include "core/sweep/progress.hpp"
#include "core/sweep/sweep_session.hpp"
#include "core/text.hpp"
#include "core/watch/rule_catalog.hpp"
#include "remote/preflight.hpp"
#include "remote/target_factory.hpp"
#include "remote/target_url.hpp"
#include "results/query/query.hpp"
#include "results/store/records.hpp"
#include "results/store/store.hpp"
#include "results/store/sweep_writer.hpp"

namespace ncclsweep::cli {
namespace {

struct RunOptions {
    SpecFlags spec;
    std::string target;
    std::string db;
    std::string tag;
    std::string resume;  ///< "" = not resuming; "auto" = newest unfinished sweep of this spec
    bool resume_given = false;
    bool force = false;
    bool accept_new_host_key = false;
    std::string known_hosts;
    std::string identity;
    std::string rules_file;
    bool json = false;
    std::string metric = "tok_s";
    bool metric_given = false;  ///< --metric was written (else: the spec's first declared metric)
    double kill_grace = 2.0;
    std::string budget;  ///< --budget: "" = the spec's search.budget
};

/// The facts of the run header: the spec, the target, what preflight found, the engine.
RunHeader run_header(const Spec& spec, const remote::HostPreflight& preflight, const std::string& target,
                     std::size_t experiments, const std::string& backend) {
    RunHeader h;
    h.version = NCCLSWEEP_VERSION;
    h.sweep = spec.name;
    h.experiments = static_cast<int>(experiments);
    h.repeats = spec.repeats;
    h.target = target;
    if (target == "local") h.host = host_name();
    if (preflight.gpus.empty()) {
        h.gpus = "none found";
    } else {
        h.gpus = fmt::format("{} x {}", preflight.gpus.size(), preflight.gpus.front().name);
        if (!preflight.driver.empty()) h.gpus += ", driver " + preflight.driver;
    }
    h.nccl = preflight.nccl_version.empty()
                 ? "not found on the host"
                 : preflight.nccl_version +
                       (preflight.nccl_source.empty() ? "" : " (" + preflight.nccl_source + ")");
    for (const auto& [name, value] : spec.workload.args)
        if (name == "tp") h.ranks = value.text + " (tp)";
    h.backend = backend;
    if (backend == "sim") h.backend += " (simulated GPUs and NCCL)";
    return h;
}

/// `word` as a shell word: as-is when it has only characters no shell treats specially.
std::string shell_word(const std::string& word) {
    const bool plain = !word.empty() && std::all_of(word.begin(), word.end(), [](char c) {
        return std::isalnum(static_cast<unsigned char>(c)) ||
               std::string_view("_./=,:@%+-").find(c) != std::string_view::npos;
    });
    return plain ? word : shell_quote(word);
}

/// The command line that starts this sweep again (for the resume hint and the fingerprint):
/// the spec and every flag that shapes the plan, shell-quoted.
std::string command_line(const RunOptions& options) {
    std::string out = "ncclsweep run " + shell_word(options.spec.spec_path);
    auto add = [&out](std::string_view flag, const std::string& value) {
        out += fmt::format(" {} {}", flag, shell_word(value));
    };
    for (const auto& axis : options.spec.axis) add("--axis", axis);
    for (const auto& set : options.spec.set) add("--set", set);
    if (options.spec.max_experiments != k_default_max_experiments)
        add("--max-experiments", std::to_string(options.spec.max_experiments));
    if (!options.spec.engine.empty()) add("--engine", options.spec.engine);
    if (!options.target.empty()) add("--target", options.target);
    if (!options.rules_file.empty()) add("--rules", options.rules_file);
    if (!options.db.empty()) add("--db", options.db);
    if (!options.budget.empty()) add("--budget", options.budget);
    return out;
}

/// A resumed sweep's summary covers the whole sweep: the experiments that finished before this
/// run enter the printer from the database.
void remember_finished(results::Store& store, std::int64_t sweep_id, ProgressPrinter& printer) {
    auto experiments = store.load_experiments(sweep_id);
    if (!experiments) return;
    std::set<int> seen;
    for (const auto& entry : printer.reports()) seen.insert(entry.first.id);
    for (const auto& stored : *experiments) {
        using S = results::ExperimentStatus;
        const S status = stored.outcome.status;
        if (seen.count(stored.experiment.id) || status == S::pending || status == S::running ||
            status == S::skipped)
            continue;
        ExperimentReport report;
        report.exp_id = stored.experiment.id;
        report.status = status == S::ok          ? RunStatus::ok
                        : status == S::failed    ? RunStatus::failed
                        : status == S::timed_out ? RunStatus::timed_out
                                                 : RunStatus::infra_error;
        report.failure_class = stored.outcome.failure_class;
        report.diagnosis = stored.outcome.diagnosis;
        report.effective_nccl = stored.outcome.effective_nccl;
        for (const auto& sample : stored.outcome.samples)
            report.samples.push_back(SampleValue{sample.repeat, sample.metric, sample.value});
        printer.remember(stored.experiment, report);
    }
}

/// "recommended: ..." under the summary: `results best` for the sweep just run (nothing when no
/// ok experiment has the metric, e.g. every experiment failed).
void print_recommendation(results::Store& store, std::int64_t sweep_id, const results::MetricChoice& choice) {
    auto table = results::load_sweep_table(store, std::to_string(sweep_id));
    if (!table) return;
    if (!results::require_metric(*table, choice.name)) return;
    auto best = results::best_experiment(*table, results::resolve_metric(choice, table->sweep.record));
    if (!best) return;
    std::fprintf(stdout, "\nrecommended (%s, %s is better): %s\n", choice.name.c_str(),
                 std::string(better_word(best->metric.direction)).c_str(),
                 results::recommendation_text(*best).c_str());
    if (best->tie()) std::fprintf(stdout, "  tie: %s\n", results::tie_text(*best).c_str());
}

/// The search the run uses (docs/search.md): the spec's `search:` with --budget, racing on
/// search.metric or --metric with the sweep's own definition of "better"; empty without one.
Result<std::optional<search::Settings>> search_settings(const Spec& spec, const RunOptions& options,
                                                        const std::vector<MetricDefinition>& metrics) {
    if (!spec.search.enabled()) return std::optional<search::Settings>{};
    auto choice =
        results::parse_metric_choice(spec.search.metric.empty() ? options.metric : spec.search.metric);
    if (!choice) return choice.error();
    const stats::Direction direction =
        choice->direction_given ? choice->direction : definition_of(choice->name, metrics).better;
    return std::optional<search::Settings>(
        search::Settings::from(spec.search, spec.repeats, choice->name, direction));
}

ExitStatus run_run(const RunOptions& given) {
    auto overrides = overrides_from(given.spec);
    if (!overrides) return report_error(overrides.error());
    auto spec = prepare_spec(given.spec.spec_path, *overrides);
    if (!spec) return report_error(spec.error());
    // Without --metric, the summary, the recommendation and a race rank by the spec's first
    // declared metric (a command workload's `metrics:`), else tok_s.
    RunOptions options = given;
    if (!options.metric_given && !spec->workload.metrics.empty())
        options.metric = spec->workload.metrics.front().first;
    if (!options.budget.empty()) {
        auto budget = parse_budget(options.budget, "--budget");
        if (!budget) return report_error(budget.error());
        spec->search.budget = *budget;
    }
    if (!options.target.empty()) {
        // A bad --target is the flag's fault, not the spec's: say so, not the spec's `target:` line.
        if (auto url = remote::parse_target_url(options.target); !url)
            return report_error(Error::bad_input(fmt::format("--target: {}", url.error().message)));
        spec->target.url = options.target;
    }
    PlanOptions plan_options = plan_options_from(options.spec);
    auto checked = check_plan(*spec, plan_options);
    if (!checked) return report_error(checked.error());
    SweepRequest request;
    for (const auto& group : checked->warnings) {
        std::string message =
            group.message + " (experiments " + group.experiments.to_text(k_warning_ranges) + ")";
        NCCLSWEEP_LOG(warning, "{}", message);
        request.plan_warnings.emplace_back(group.code, message);
    }
    auto planner = Planner::create(*spec, plan_options);
    if (!planner) return report_error(planner.error());
    for (;;) {
        Experiment experiment;
        auto more = planner->next(experiment);
        if (!more) return report_error(more.error());
        if (!*more) break;
        request.experiments.push_back(std::move(experiment));
    }
    auto catalog = catalog_for(*spec, options.rules_file);
    if (!catalog) return report_error(catalog.error());
    if (auto runnable = check_local_programs(*spec, plan_options.engine_path, request.experiments,
                                             std::getenv("PATH") ? std::getenv("PATH") : "");
        !runnable)
        return report_error(runnable.error());

    if (spec->target.url.rfind("slurm://", 0) == 0 && !spec->workload.client.empty())
        return report_error(
            Error::bad_input("workload.client is not supported on a Slurm target (a client must run next to "
                             "its server, in the same "
                             "allocation); wrap server and client in one workload.command script"));
    remote::TargetOverrides target_overrides;
    target_overrides.stop = &interrupt_flag();
    target_overrides.accept_new_host_key = options.accept_new_host_key;
    if (!options.known_hosts.empty()) target_overrides.known_hosts = options.known_hosts;
    if (!options.identity.empty()) target_overrides.identity_file = options.identity;
    auto target = remote::make_target(spec->target, target_overrides);
    if (!target) return report_error(target.error());

    auto preflight = remote::run_preflight(**target);
    if (!preflight) return report_error(preflight.error());
    // A batch scheduler's preflight runs on the login node, whose GPUs (if any) are not the ones used.
    const bool scheduled = (*target)->schedules_batches();
    if (!scheduled)
        if (auto idle = remote::check_gpus_idle(
                *preflight, options.force ? remote::BusyPolicy::force : remote::BusyPolicy::refuse);
            !idle)
            return report_error(idle.error());
    auto metrics = check_engine_spec(*spec, plan_options, **target);
    if (!metrics) return report_error(metrics.error());
    for (const auto& note : preflight->notes) NCCLSWEEP_LOG(info, "preflight: {}", note);
    for (const auto& warning : preflight->warnings) NCCLSWEEP_LOG(warning, "preflight: {}", warning);

    std::string db_path = database_path(options.db);
    auto store = results::Store::open(db_path);
    if (!store) return report_error(store.error());
    results::SweepWriter writer(*store);
    if (options.resume_given) {
        auto id = store->resume_candidate(options.resume, spec->name);
        if (!id) return report_error(id.error());
        request.resume_id = *id;
    }
    request.sweep =
        NewSweep{spec->name,        options.tag,           spec->path,
                 spec->text,        (*target)->describe(), preflight->to_json().dump(),
                 NCCLSWEEP_VERSION, spec->repeats,         fingerprint_of(*spec, *overrides, plan_options),
                 metrics->metrics,  metrics->backend};
    request.sweep.fingerprint.command_line = command_line(options);
    const std::string& resume_hint = request.sweep.fingerprint.command_line;

    SweepRunOptions run_options;
    run_options.sweep_name = spec->name;
    run_options.delivery = spec->target.env_delivery;
    run_options.repeats = spec->repeats;
    run_options.watcher = watcher_options_for(*spec);
    run_options.catalog = *catalog;
    run_options.workload = spec->workload;
    run_options.kill_grace = std::chrono::milliseconds(static_cast<long>(options.kill_grace * 1000));
    // Between experiments on one host, nothing of the last one may still hold a GPU; a pool
    // or a scheduler's nodes are not checked (docs/targets.md).
    if (!scheduled && (*target)->slots() == 1)
        run_options.before_experiment = remote::gpu_release_check(**target, *preflight);
    auto settings = search_settings(*spec, options, metrics->metrics);
    if (!settings) return report_error(settings.error());
    run_options.search = *settings;

    // NCCL's TUNING lines fill the "effective NCCL" column. Asking for them adds lines, never a
    // verdict: the watcher lets the lines the request alone makes NCCL print decide nothing. A
    // spec that sets NCCL_DEBUG or NCCL_DEBUG_SUBSYS anywhere gets no request.
    const bool spec_sets_debug =
        std::any_of(request.experiments.begin(), request.experiments.end(), [](const Experiment& e) {
            return std::any_of(e.env.begin(), e.env.end(), [](const Assignment& a) {
                return a.first == "NCCL_DEBUG" || a.first == "NCCL_DEBUG_SUBSYS";
            });
        });
    if (run_options.watcher.record_effective_nccl && !spec_sets_debug) {
        run_options.extra_env = nccl::tuning_request();
        run_options.watcher.nccl_debug_requested = true;
    }
    ProgressStyle style = options.json                        ? ProgressStyle::json
                          : log::level() <= log::Level::error ? ProgressStyle::quiet
                          : isatty(STDERR_FILENO)             ? ProgressStyle::live
                                                              : ProgressStyle::plain;
    ProgressPrinter printer(style, stderr, stdout, terminal_columns(STDERR_FILENO));
    printer.header(
        run_header(*spec, *preflight, (*target)->describe(), request.experiments.size(), metrics->backend));
    if (run_options.search) {
        // Say up front what the search will do and what its budget covers.
        std::vector<search::Point> points;
        for (const auto& experiment : request.experiments)
            points.push_back({experiment.id, experiment.params});
        const search::Search preview(std::move(points), *run_options.search);
        for (const auto& line : preview.plan_lines()) printer.notice("search: " + line);
    }
    const std::atomic<bool>& stop = install_interrupt_handler();
    auto outcome = run_sweep(request, **target, writer, printer, run_options, stop);
    if (!outcome) {
        ExitStatus status = report_error(outcome.error());
        if (writer.sweep_id() != 0)
            NCCLSWEEP_LOG(error, "sweep {} is recorded in {}; continue it with: {} --resume {}",
                          writer.sweep_id(), db_path, resume_hint, writer.sweep_id());
        return status;
    }
    if (outcome->skipped_finished > 0) remember_finished(*store, outcome->sweep_id, printer);
    if (!options.json) {
        // The summary sorts and recommends by the sweep's own metric definitions (NAME:higher or
        // NAME:lower on --metric wins), with the one "best" rule of `results best`.
        std::vector<MetricDefinition> definitions = request.sweep.metrics;
        auto choice = results::parse_metric_choice(options.metric);
        if (choice && choice->direction_given)
            definitions.insert(definitions.begin(), MetricDefinition{choice->name, "", choice->direction});
        const std::string metric_name = printer.summary_metric(choice ? choice->name : options.metric);
        if (choice && metric_name != choice->name)
            NCCLSWEEP_LOG(
                warning,
                "metric '{}' was never recorded (no run printed a match); the summary ranks by '{}'; "
                "check the metric's regex against the workload's output (`ncclsweep results log`)",
                choice->name, metric_name);
        if (auto note = results::simulated_note(metrics->backend); !note.empty())
            std::fprintf(stdout, "%s\n", note.c_str());
        printer.print_summary(stdout, metric_name, definitions, terminal_columns(STDOUT_FILENO));
        results::MetricChoice shown{metric_name};
        if (choice && choice->name == metric_name) shown = *choice;
        print_recommendation(*store, outcome->sweep_id, shown);
        const SweepRunSummary& ran = outcome->summary;
        // ok + failed (+ dropped after running) is what ran: the counts `results list` shows.
        const std::string searched =
            run_options.search
                ? fmt::format(
                      ", {} dropped), {} pruned; {} workload runs in {} round{} ({} collapsed, {} settled)",
                      ran.dropped_after_running, ran.pruned, ran.runs, ran.rounds, ran.rounds == 1 ? "" : "s",
                      ran.collapsed, ran.settled)
                : ")";
        std::fprintf(stdout, "\nsweep %lld: %d ran (%d ok, %d failed%s%s; results in %s\n",
                     static_cast<long long>(outcome->sweep_id), ran.ran, ran.ok, ran.failed, searched.c_str(),
                     outcome->skipped_finished
                         ? fmt::format(", {} already finished", outcome->skipped_finished).c_str()
                         : "",
                     db_path.c_str());
        if (!ran.search_end.empty()) std::fprintf(stdout, "search: %s\n", ran.search_end.c_str());
    }
    switch (ending_of(*outcome)) {
        case SweepEnding::interrupted:
            NCCLSWEEP_LOG(error, "interrupted; sweep {} is kept in {}; continue it with: {} --resume {}",
                          outcome->sweep_id, db_path, resume_hint, outcome->sweep_id);
            return ExitStatus::infrastructure;
        case SweepEnding::nothing_succeeded:
            NCCLSWEEP_LOG(
                error,
                "no experiment succeeded ({} failed): nothing to recommend; `ncclsweep results show {}` "
                "lists each failure and its diagnosis",
                outcome->summary.failed, outcome->sweep_id);
            return ExitStatus::negative;
        case SweepEnding::done:
            break;
    }
    if (outcome->summary.budget_spent) {
        // A command that works as printed: the same flags, twice the budget, --resume.
        spec::Budget larger = spec->search.budget;
        larger.runs *= 2;
        larger.seconds *= 2;
        RunOptions next = options;
        next.budget = larger.to_string();
        printer.notice(fmt::format(
            "sweep {} stopped at its budget of {}; continue it with twice that: {} --resume {}",
            outcome->sweep_id, spec->search.budget.to_string(), command_line(next), outcome->sweep_id));
    }
    return ExitStatus::done;
}

}  // namespace

Command setup_run(CLI::App& app) {
    auto options = std::make_shared<RunOptions>();
    CLI::App* sub = app.add_subcommand(
        "run",
        "Run a sweep: plan the spec, check the host, then run every experiment x repeat, watching each\n"
        "live and recording it in SQLite as soon as it ends.\n"
        "  ncclsweep run experiments/quickstart.yaml\n"
        "  ncclsweep run study.yaml --target ssh://me@gpu-host --tag nightly\n"
        "  ncclsweep run study.yaml --target slurm://gpu  # one Slurm job array, followed live from here\n"
        "  ncclsweep run study.yaml --resume            # continue an interrupted sweep\n"
        "  ncclsweep run study.yaml --budget 2h         # a search: prune, race, stop at 2 h "
        "(docs/search.md)\n"
        "With `search:` in the spec (prune: {after: 2}, race: {min_repeats: 2, max_repeats: 8}, budget),\n"
        "points whose values keep failing are recorded `pruned`, points statistically behind the\n"
        "leader `dropped` (each with its evidence), and the rest get repeats in rounds.\n"
        "Exit status: 0 done (at least one experiment ok), 1 every experiment failed (nothing to\n"
        "recommend), 2 bad spec, flags, engine parameters or a --resume whose flags differ (nothing\n"
        "is written), 3 host/ssh/database failure or interrupted (resumable with the printed command).\n"
        "Failed experiments are results, not errors.");
    add_spec_flags(*sub, options->spec);
    sub->add_option("--target", options->target,
                    "Where to run: local, ssh://user@host[:port] or slurm://PARTITION (overrides the spec; "
                    "target.hosts in the spec runs on several ssh hosts at once; docs/targets.md)");
    add_db_flag(*sub, options->db);
    sub->add_option("--tag", options->tag, "Tag the sweep (e.g. nightly) for `latest:TAG` references");
    sub->add_option("--resume", options->resume,
                    "Continue an interrupted sweep (id, latest, latest:TAG; default: newest unfinished sweep "
                    "of this spec)")
        ->expected(0, 1)
        ->default_str("auto");
    sub->add_flag("--force", options->force, "Run even if GPUs on the host are busy");
    sub->add_flag("--accept-new-host-key", options->accept_new_host_key,
                  "Trust and remember the host key of an ssh host seen for the first time");
    sub->add_option("--known-hosts", options->known_hosts, "known_hosts file (default ~/.ssh/known_hosts)");
    sub->add_option("--identity", options->identity,
                    "Private key file for ssh (default: ssh-agent, then ~/.ssh/id_*)");
    sub->add_option("--rules", options->rules_file, "Extra watcher rules (YAML); see docs/watcher.md");
    sub->add_flag("--json", options->json, "One JSON object per experiment on stdout; nothing decorative");
    sub->add_option("--metric", options->metric,
                    "Metric the summary sorts by (default: the spec's first declared metric, else tok_s)");
    sub->add_option("--kill-grace", options->kill_grace, "Seconds between SIGTERM and SIGKILL (default 2)");
    sub->add_option(
        "--budget", options->budget,
        "Spend at most this: a duration (2h, 90m, 600s) or workload runs ('60 runs'); the sweep\n"
        "stops with the best answer so far and can be resumed with a larger one (docs/search.md)");
    sub->callback([sub, options]() {
        options->resume_given = sub->count("--resume") > 0;
        options->metric_given = sub->count("--metric") > 0;
    });
    return Command{sub, [options]() { return run_run(*options); }};
}

}  // namespace ncclsweep::cli
