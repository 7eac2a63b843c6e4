// JUnit XML: every experiment a test case, so CI systems show failures with their class and
// diagnosis. All text goes through xml_escape (control characters made visible, UTF-8 repaired).
#include <fmt/format.h>

#include "results/export/exports.hpp"
#include "results/query/what_if.hpp"

namespace ncclsweep::results::exports {
namespace {

std::string attr(std::string_view text) {
    return xml_escape(text, false);
}

std::string seconds(const std::optional<double>& value) {
    return value && std::isfinite(*value) && *value >= 0 ? fmt::format("{:.3f}", *value) : "0";
}

void write_properties(std::string& out, const SweepData& sweep, const StoredExperiment& stored) {
    std::string body;
    auto property = [&](std::string_view name, std::string_view value) {
        body += fmt::format("        <property name=\"{}\" value=\"{}\"/>\n", attr(name), attr(value));
    };
    property("key", stored.experiment.key);
    for (const auto& metric : metric_names(sweep)) {
        auto s = metric_stats(stored, metric);
        if (!s) continue;
        property(metric + ".median", format_number(s->median));
        property(metric + (s->interval_is_ci ? ".ci95_low" : ".min"), format_number(s->low));
        property(metric + (s->interval_is_ci ? ".ci95_high" : ".max"), format_number(s->high));
        property(metric + ".n", std::to_string(s->n));
    }
    if (!stored.outcome.effective_nccl.empty()) property("effective_nccl", stored.outcome.effective_nccl);
    if (!stored.outcome.collective_times.empty())
        property("collective_times", stored.outcome.collective_times);
    if (is_what_if(stored)) property("what_if", "needs a server change (the fused all-reduce)");
    out += "      <properties>\n" + body + "      </properties>\n";
}

}  // namespace

std::string to_junit(const SweepData& sweep) {
    int failures = 0, errors = 0, skipped = 0;
    double total_time = 0;
    for (const auto& stored : sweep.experiments) {
        switch (stored.outcome.status) {
            case ExperimentStatus::failed:
            case ExperimentStatus::timed_out:
                ++failures;
                break;
            case ExperimentStatus::infra_error:
                ++errors;
                break;
            case ExperimentStatus::ok:
                break;
            default:
                ++skipped;
        }
        if (stored.outcome.timings.total_s && std::isfinite(*stored.outcome.timings.total_s))
            total_time += *stored.outcome.timings.total_s;
    }
    const std::string name = attr(sweep.info.record.name);
    const int tests = static_cast<int>(sweep.experiments.size());
    std::string out = "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n";
    out += fmt::format(
        "<testsuites name=\"ncclsweep\" tests=\"{}\" failures=\"{}\" errors=\"{}\" skipped=\"{}\" "
        "time=\"{:.3f}\">\n",
        tests, failures, errors, skipped, total_time);
    out += fmt::format(
        "  <testsuite name=\"{}\" id=\"{}\" tests=\"{}\" failures=\"{}\" errors=\"{}\" skipped=\"{}\" "
        "time=\"{:.3f}\" timestamp=\"{}\">\n",
        name, sweep.info.id, tests, failures, errors, skipped, total_time, attr(sweep.info.created_at));
    out += "    <properties>\n";
    out += fmt::format("      <property name=\"sweep_id\" value=\"{}\"/>\n", sweep.info.id);
    out += fmt::format("      <property name=\"tag\" value=\"{}\"/>\n", attr(sweep.info.record.tag));
    out += fmt::format("      <property name=\"target\" value=\"{}\"/>\n", attr(sweep.info.record.target));
    out += fmt::format("      <property name=\"state\" value=\"{}\"/>\n", to_string(sweep.info.state));
    if (auto note = simulated_note(sweep.info.record.backend); !note.empty())
        out += fmt::format("      <property name=\"simulated\" value=\"{}\"/>\n", attr(note));
    out += "    </properties>\n";
    for (const auto& stored : sweep.experiments) {
        const auto& o = stored.outcome;
        std::string label = std::to_string(stored.experiment.id);
        if (!stored.experiment.params.empty()) label += " " + params_label(stored);
        out += fmt::format("    <testcase classname=\"{}\" name=\"{}\" time=\"{}\">\n", name, attr(label),
                           seconds(o.timings.total_s));
        write_properties(out, sweep, stored);
        const std::string line = one_line_diagnosis(o.diagnosis);
        switch (o.status) {
            case ExperimentStatus::ok:
                break;
            case ExperimentStatus::failed:
            case ExperimentStatus::timed_out: {
                std::string type =
                    o.failure_class.empty() ? std::string(to_string(o.status)) : o.failure_class;
                std::string message = line.empty() ? std::string(to_string(o.status)) : line;
                out += fmt::format("      <failure type=\"{}\" message=\"{}\">{}</failure>\n", attr(type),
                                   attr(message), xml_escape(o.diagnosis, true));
                break;
            }
            case ExperimentStatus::infra_error:
                out += fmt::format("      <error type=\"{}\" message=\"{}\">{}</error>\n",
                                   attr(o.failure_class.empty() ? "infra_error" : o.failure_class),
                                   attr(line.empty() ? "infrastructure error" : line),
                                   xml_escape(o.diagnosis, true));
                break;
            default:
                out += fmt::format(
                    "      <skipped message=\"{}\"/>\n",
                    attr(o.status == ExperimentStatus::skipped ? (line.empty() ? "skipped" : line)
                         : o.status == ExperimentStatus::pruned || o.status == ExperimentStatus::dropped
                             ? std::string(to_string(o.status)) + (line.empty() ? "" : ": " + line)
                             : "not run (" + std::string(to_string(o.status)) + ")"));
        }
        out += "    </testcase>\n";
    }
    out += "  </testsuite>\n</testsuites>\n";
    return out;
}

}  // namespace ncclsweep::results::exports
