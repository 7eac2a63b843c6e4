#include "core/plan/plan_printer.hpp"
#include "core/text.hpp"

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <optional>

#include "core/plan/auto_repeats.hpp"
#include "core/plan/baseline.hpp"

namespace ncclsweep::inline plan {
namespace {

constexpr const char* k_unset = "(unset)";
/// What the defaults point shows for a swept NCCL variable it leaves to NCCL.
constexpr const char* k_default_cell = "(default)";
/// Suffix of a cell whose value is fixed by `env:` or `workload.args`, not by the point.
constexpr const char* k_fixed_suffix = " (fixed)";

using Json = nlohmann::ordered_json;

std::string dump(const Json& json) {
    return json.dump(-1, ' ', false, Json::error_handler_t::replace);
}

class TablePrinter final : public PlanPrinter {
public:
    explicit TablePrinter(std::ostream& out) : m_out(out) {}

    void begin(const Spec& spec, const PlanSummary& summary) override {
        m_id_width = std::max<std::size_t>(2, std::to_string(summary.count).size());
        for (const auto& axis : spec.axes) add_column(axis.name, axis.values);
        for (const auto& point : spec.include)
            for (const auto& [name, value] : point.values) add_column(name, {value});
        // A column can show "(unset)": include-only names (product points lack them) and axes
        // that some include point leaves out.
        for (std::size_t c = 0; c < m_columns.size(); ++c) {
            bool may_be_unset = c >= spec.axes.size();
            for (const auto& point : spec.include)
                may_be_unset =
                    may_be_unset || std::none_of(point.values.begin(), point.values.end(),
                                                 [&](const auto& v) { return v.first == m_columns[c].name; });
            if (may_be_unset) m_columns[c].width = std::max(m_columns[c].width, display_width(k_unset));
            // A name fixed in env: or args: runs with that value where a point does not set it.
            if (const SpecValue* fixed = fixed_value(spec, m_columns[c].name)) {
                m_columns[c].fixed = fixed->text;
                m_columns[c].width =
                    std::max(m_columns[c].width, display_width(display_cell(fixed->text) + k_fixed_suffix));
            }
            if (is_nccl_variable(m_columns[c].name))
                m_columns[c].width = std::max(m_columns[c].width, display_width(k_default_cell));
        }
        std::uint64_t runs = summary.count * static_cast<std::uint64_t>(spec.repeats);
        const std::string repeats =
            spec.auto_repeats ? std::string("auto repeats")
                              : fmt::format("{} repeat{} = {} run{}", spec.repeats,
                                            spec.repeats == 1 ? "" : "s", runs, runs == 1 ? "" : "s");
        m_out << fmt::format("sweep {}: {} experiment{} x {}; target {}; workload {}\n",
                             display_cell(spec.name), summary.count, summary.count == 1 ? "" : "s", repeats,
                             display_cell(spec.target.url),
                             spec.workload.engine.empty() ? "command" : spec.workload.engine);
        if (spec.auto_repeats)
            m_out << auto_repeats_plan_line(*spec.auto_repeats, static_cast<std::size_t>(summary.count))
                  << '\n';
        // What every point runs with: the fixed environment and engine arguments, with their values.
        std::string fixed;
        for (const auto& [name, value] : spec.env) fixed += " " + name + "=" + display_cell(value.text);
        for (const auto& [name, value] : spec.workload.args)
            fixed += " " + name + "=" + display_cell(value.text);
        if (!fixed.empty()) m_out << "fixed:" << fixed << '\n';
        if (summary.defaults.count() > 0)
            m_out << fmt::format(
                "defaults: experiment{} {} set{} none of the swept NCCL variables: NCCL's defaults, what "
                "every "
                "recommendation is measured against (`baseline: none` leaves {} out)\n",
                summary.defaults.count() == 1 ? "" : "s", summary.defaults.to_text(k_warning_ranges),
                summary.defaults.count() == 1 ? "s" : "", summary.defaults.count() == 1 ? "it" : "them");
        if (spec.search.enabled()) {
            // A search runs a subset: its rules, and the product it bounds (docs/search.md).
            const std::uint64_t worst =
                summary.count * static_cast<std::uint64_t>(spec.search.max_repeats(spec.repeats));
            m_out << fmt::format("search: {}; worst case {} run{} ({} x {} repeats), usually far fewer\n",
                                 spec.search.describe(spec.repeats), worst, worst == 1 ? "" : "s",
                                 summary.count, spec.search.max_repeats(spec.repeats));
        }
        std::string header = fmt::format("{:>{}}", "id", m_id_width);
        for (const auto& column : m_columns) header += "  " + pad(display_cell(column.name), column.width);
        header += "  warnings";
        m_out << header << '\n';
    }

    void experiment(const Experiment& experiment, int warnings) override {
        std::string row = fmt::format("{:>{}}", experiment.id, m_id_width);
        for (const auto& column : m_columns) {
            std::string cell = column.fixed ? display_cell(*column.fixed) + k_fixed_suffix
                               : experiment.defaults && is_nccl_variable(column.name) ? k_default_cell
                                                                                      : k_unset;
            for (const auto& [name, value] : experiment.params)
                if (name == column.name) cell = display_cell(value);
            row += "  " + pad(cell, column.width);
        }
        row += warnings > 0 ? fmt::format("  {}", warnings) : "";
        while (!row.empty() && row.back() == ' ') row.pop_back();
        m_out << row << '\n';
    }

    void end(const PlanSummary& summary) override {
        if (summary.warnings.empty()) {
            m_out << "\nno NCCL warnings\n";
            return;
        }
        m_out << fmt::format("\nwarnings ({}):\n", summary.warnings.size());
        for (const auto& group : summary.warnings)
            m_out << fmt::format(
                "  [{}] {}\n      experiments {} ({} of {})\n", group.code, display_cell(group.message, 400),
                group.experiments.to_text(k_warning_ranges), group.experiments.count(), summary.count);
    }

private:
    struct Column {
        std::string name;
        std::size_t width = 0;
        std::optional<std::string> fixed;  ///< the env:/args: value where a point does not set it
    };

    static const SpecValue* fixed_value(const Spec& spec, const std::string& name) {
        for (const auto& [key, value] : spec.env)
            if (key == name) return &value;
        for (const auto& [key, value] : spec.workload.args)
            if (key == name) return &value;
        return nullptr;
    }

    void add_column(const std::string& name, const std::vector<SpecValue>& values) {
        auto it =
            std::find_if(m_columns.begin(), m_columns.end(), [&](const Column& c) { return c.name == name; });
        if (it == m_columns.end()) {
            m_columns.push_back(Column{name, display_width(display_cell(name)), std::nullopt});
            it = std::prev(m_columns.end());
        }
        for (const auto& value : values)
            it->width = std::max(it->width, display_width(display_cell(value.text)));
    }

    static std::string pad(const std::string& cell, std::size_t width) {
        std::size_t shown = display_width(cell);
        return shown >= width ? cell : cell + std::string(width - shown, ' ');
    }

    std::ostream& m_out;
    std::vector<Column> m_columns;
    std::size_t m_id_width = 2;
};

class JsonPrinter final : public PlanPrinter {
public:
    explicit JsonPrinter(std::ostream& out) : m_out(out) {}

    void begin(const Spec& spec, const PlanSummary& summary) override {
        Json axes = Json::array();
        for (const auto& axis : spec.axes) axes.push_back(axis.name);
        m_out << "{\"sweep\":" << dump(spec.name) << ",\"target\":" << dump(spec.target.url)
              << ",\"repeats\":" << spec.repeats << ",\"count\":" << summary.count
              << ",\"axes\":" << dump(axes);
        if (spec.auto_repeats)
            m_out << ",\"repeats_auto\":"
                  << dump({{"alpha", spec.auto_repeats->alpha},
                           {"max", spec.auto_repeats->max},
                           {"default", spec.auto_repeats->fallback},
                           {"decided", "at run time, from the previous sweep's noise"}});
        if (spec.search.enabled()) {
            const int max_repeats = spec.search.max_repeats(spec.repeats);
            Json search = {
                {"description", spec.search.describe(spec.repeats)},
                {"prune_after", spec.search.prune_after},
                {"max_repeats", max_repeats},
                {"budget", spec.search.budget.empty() ? Json() : Json(spec.search.budget.to_string())},
                {"worst_case_runs", summary.count * static_cast<std::uint64_t>(max_repeats)}};
            if (spec.search.race)
                search["race"] = {{"min_repeats", spec.search.race->min_repeats},
                                  {"max_repeats", max_repeats},
                                  {"confidence", spec.search.race->confidence}};
            m_out << ",\"search\":" << dump(search);
        }
        m_out << ",\"experiments\":[";
    }

    void experiment(const Experiment& experiment, int warnings) override {
        // Written by hand rather than through a json object: this runs a million times for big plans.
        std::string& b = m_buffer;
        b.assign(m_first ? "\n{\"id\":" : ",\n{\"id\":");
        b.append(std::to_string(experiment.id)).append(",\"key\":");
        append_json_string(b, experiment.key);
        b.append(",\"canonical\":");
        append_json_string(b, experiment.canonical);
        if (experiment.defaults) b.append(",\"defaults\":true");
        append_object(b, "params", experiment.params);
        append_object(b, "env", experiment.env);
        append_object(b, "workload", experiment.workload);
        b.append(",\"argv\":[");
        for (std::size_t i = 0; i < experiment.argv.size(); ++i) {
            if (i > 0) b.push_back(',');
            append_json_string(b, experiment.argv[i]);
        }
        b.append("],\"shell\":").append(experiment.shell ? "true" : "false");
        b.append(",\"warnings\":").append(std::to_string(warnings)).append("}");
        m_out << b;
        m_first = false;
    }

    void end(const PlanSummary& summary) override {
        m_out << "\n],\"warnings\":[";
        bool first_group = true;
        for (const auto& group : summary.warnings) {
            m_out << (first_group ? "\n" : ",\n") << "{\"code\":" << dump(group.code)
                  << ",\"message\":" << dump(group.message)
                  << ",\"ranges\":" << dump(group.experiments.to_string()) << ",\"experiments\":[";
            first_group = false;
            bool first_id = true;
            for (const auto& [low, high] : group.experiments.ranges())
                for (int id = low; id <= high; ++id) {
                    m_out << (first_id ? "" : ",") << id;
                    first_id = false;
                }
            m_out << "]}";
        }
        m_out << "\n]}\n";
    }

private:
    static void append_object(std::string& b, const char* name, const std::vector<Assignment>& list) {
        b.append(",\"").append(name).append("\":{");
        for (std::size_t i = 0; i < list.size(); ++i) {
            if (i > 0) b.push_back(',');
            append_json_string(b, list[i].first);
            b.push_back(':');
            append_json_string(b, list[i].second);
        }
        b.push_back('}');
    }

    std::ostream& m_out;
    bool m_first = true;
    std::string m_buffer;
};

}  // namespace

void append_json_string(std::string& out, std::string_view text) {
    out.push_back('"');
    for (std::size_t i = 0; i < text.size();) {
        auto c = static_cast<unsigned char>(text[i]);
        if (c >= 0x80) {
            std::size_t length = utf8_sequence(text, i);
            if (length == 0) {
                out.append("\\ufffd");  // not UTF-8 (cannot come from a spec; maybe a path): replaced
                ++i;
            } else {
                out.append(text.substr(i, length));
                i += length;
            }
            continue;
        }
        switch (c) {
            case '"':
                out.append("\\\"");
                break;
            case '\\':
                out.append("\\\\");
                break;
            case '\n':
                out.append("\\n");
                break;
            case '\t':
                out.append("\\t");
                break;
            case '\r':
                out.append("\\r");
                break;
            default:
                if (c < 0x20)
                    out.append(fmt::format("\\u{:04x}", c));
                else
                    out.push_back(static_cast<char>(c));
        }
        ++i;
    }
    out.push_back('"');
}

std::unique_ptr<PlanPrinter> make_plan_printer(PlanFormat format, std::ostream& out) {
    if (format == PlanFormat::json) return std::make_unique<JsonPrinter>(out);
    return std::make_unique<TablePrinter>(out);
}

Result<void> print_plan(const Spec& spec, const PlanOptions& options, const PlanSummary& summary,
                        PlanPrinter& printer) {
    auto planner = Planner::create(spec, options);
    if (!planner) return planner.error();
    printer.begin(spec, summary);
    Experiment experiment;
    while (true) {
        auto more = planner->next(experiment);
        if (!more) return more.error();
        if (!*more) break;
        printer.experiment(experiment, summary.warnings.empty() ? 0 : summary.warnings_for(experiment.id));
    }
    printer.end(summary);
    return success();
}

std::size_t display_width(const std::string& text) {
    return static_cast<std::size_t>(std::count_if(
        text.begin(), text.end(), [](char c) { return (static_cast<unsigned char>(c) & 0xC0) != 0x80; }));
}

std::string display_cell(const std::string& value, std::size_t max_chars) {
    std::string out;
    std::size_t chars = 0;
    for (std::size_t i = 0; i < value.size(); ++i) {
        auto c = static_cast<unsigned char>(value[i]);
        bool starts_char = (c & 0xC0) != 0x80;
        if (starts_char && chars == max_chars) {
            out += "…";
            break;
        }
        if (c == '\n')
            out += "\\n";
        else if (c == '\t')
            out += "\\t";
        else if (c == '\r')
            out += "\\r";
        else if (c < 0x20 || c == 0x7F)
            out += fmt::format("\\x{:02x}", c);
        else
            out.push_back(static_cast<char>(c));
        if (starts_char) ++chars;
    }
    return out;
}

}  // namespace ncclsweep::inline plan
