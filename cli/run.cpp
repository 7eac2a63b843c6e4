// ncclsweep run: plan, preflight, run every experiment x repeat, record as it goes. The policy
// is core/sweep/run_policy.hpp; this file parses the flags, calls it, and prints the summary.
#include <unistd.h>

#include <fmt/format.h>

#include <cstdio>

#include "cli/commands.hpp"
#include "cli/interrupt.hpp"
#include "cli/spec_flags.hpp"
#include "cli/terminal.hpp"
#include "core/log.hpp"
#include "core/sweep/progress.hpp"
#include "core/sweep/run_policy.hpp"
#include "remote/run_host.hpp"
#include "remote/target_url.hpp"
#include "results/query/query.hpp"
#include "results/query/what_if.hpp"
#include "results/store/run_database.hpp"

namespace ncclsweep::cli {
namespace {

struct RunOptions {
    SpecFlags spec;
    RunFlags run;
    bool accept_new_host_key = false;
    std::string known_hosts;
    std::string identity;
    bool json = false;
    double kill_grace = 2.0;
    std::string resume_text;  ///< --resume's value ("auto" when given without one)
};

/// "recommended: ..." under the summary: `results best` for the sweep just run (nothing when no
/// ok experiment has the metric, e.g. every experiment failed).
void print_recommendation(results::Store& store, std::int64_t sweep_id, const MetricChoice& choice) {
    auto table = results::load_sweep_table(store, std::to_string(sweep_id));
    if (!table || !results::require_metric(*table, choice.name)) return;
    auto best = results::best_experiment(*table, results::resolve_metric(choice, table->sweep.record));
    if (!best) return;
    std::fprintf(stdout, "\nrecommended (%s, %s is better): %s%s\n", choice.name.c_str(),
                 std::string(better_word(best->metric.direction)).c_str(),
                 results::recommendation_text(*best).c_str(),
                 results::recommendation_caveat(best->best).c_str());
    if (best->tie()) std::fprintf(stdout, "  tie: %s\n", results::tie_text(*best).c_str());
    if (auto what_if = results::what_if_line(*best)) std::fprintf(stdout, "\n%s\n", what_if->c_str());
}

/// The summary table, the recommendation and the closing lines on stdout.
void print_summary(const RunReport& report, const ProgressPrinter& printer, results::RunDatabase& database) {
    const std::string metric = printer.summary_metric(report.metric.name);
    if (metric != report.metric.name)
        NCCLSWEEP_LOG(warning,
                      "metric '{}' was never recorded (no run printed a match); the summary ranks by '{}'; "
                      "check the metric's regex against the workload's output (`ncclsweep results log`)",
                      report.metric.name, metric);
    if (auto note = results::simulated_note(report.backend); !note.empty())
        std::fprintf(stdout, "%s\n", note.c_str());
    printer.print_summary(stdout, metric, report.definitions, terminal_columns(STDOUT_FILENO));
    if (results::Store* store = database.store())
        print_recommendation(*store, report.outcome.sweep_id,
                             metric == report.metric.name ? report.metric : MetricChoice{metric});
    for (const auto& line : closing_lines(report)) std::fprintf(stdout, "%s\n", line.c_str());
}

ExitStatus run_run(RunOptions& options) {
    RunFlags& flags = options.run;
    flags.spec_path = options.spec.spec_path;
    flags.axis = options.spec.axis;
    flags.set = options.spec.set;
    flags.max_experiments = options.spec.max_experiments;
    flags.engine = options.spec.engine;
    flags.kill_grace = std::chrono::milliseconds(static_cast<long>(options.kill_grace * 1000));
    remote::TargetOverrides overrides;
    overrides.stop = &interrupt_flag();
    overrides.accept_new_host_key = options.accept_new_host_key;
    if (!options.known_hosts.empty()) overrides.known_hosts = options.known_hosts;
    if (!options.identity.empty()) overrides.identity_file = options.identity;
    remote::TargetHost host(overrides);
    results::RunDatabase database(database_path(flags.db));
    const ProgressStyle style = options.json                        ? ProgressStyle::json
                                : log::level() <= log::Level::error ? ProgressStyle::quiet
                                : isatty(STDERR_FILENO)             ? ProgressStyle::live
                                                                    : ProgressStyle::plain;
    ProgressPrinter printer(style, stderr, stdout, terminal_columns(STDERR_FILENO));
    auto report = run_sweep_command(flags, host, database, printer, install_interrupt_handler());
    if (!report) return report_error(report.error());
    if (!options.json) print_summary(*report, printer, database);
    return conclude_run(*report, printer);
}

/// A CLI11 check of --target's form: a bad URL is the flag's fault, not the spec's.
std::string check_target_url(const std::string& url) {
    auto parsed = remote::parse_target_url(url);
    return parsed ? std::string() : parsed.error().message;
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
    sub->add_option("--target", options->run.target,
                    "Where to run: local, ssh://user@host[:port] or slurm://PARTITION (overrides the spec; "
                    "target.hosts in the spec runs on several ssh hosts at once; docs/targets.md)")
        ->check(CLI::Validator(check_target_url, "URL"));
    add_db_flag(*sub, options->run.db);
    sub->add_option("--tag", options->run.tag, "Tag the sweep (e.g. nightly) for `latest:TAG` references");
    sub->add_option("--resume", options->resume_text,
                    "Continue an interrupted sweep (id, latest, latest:TAG; default: newest unfinished sweep "
                    "of this spec)")
        ->expected(0, 1)
        ->default_str("auto");
    sub->add_flag("--force", options->run.force, "Run even if GPUs on the host are busy");
    sub->add_flag("--accept-new-host-key", options->accept_new_host_key,
                  "Trust and remember the host key of an ssh host seen for the first time");
    sub->add_option("--known-hosts", options->known_hosts, "known_hosts file (default ~/.ssh/known_hosts)");
    sub->add_option("--identity", options->identity,
                    "Private key file for ssh (default: ssh-agent, then ~/.ssh/id_*)");
    sub->add_option("--rules", options->run.rules_file, "Extra watcher rules (YAML); see docs/watcher.md");
    sub->add_flag("--json", options->json, "One JSON object per experiment on stdout; nothing decorative");
    sub->add_option("--metric", options->run.metric,
                    "Metric the summary sorts by (default: the spec's first declared metric, else tok_s)");
    sub->add_option("--kill-grace", options->kill_grace, "Seconds between SIGTERM and SIGKILL (default 2)");
    sub->add_option(
        "--budget", options->run.budget,
        "Spend at most this: a duration (2h, 90m, 600s) or workload runs ('60 runs'); the sweep\n"
        "stops with the best answer so far and can be resumed with a larger one (docs/search.md)");
    sub->callback([sub, options]() {
        if (sub->count("--resume") > 0) options->run.resume = options->resume_text;
    });
    return Command{sub, [options]() { return run_run(*options); }};
}

}  // namespace ncclsweep::cli
