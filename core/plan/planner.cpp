// The lazy odometer over a spec's axes (see core/plan/planner.hpp and docs/spec.md "Expansion").
#include "core/plan/planner.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <limits>
#include <set>

#include "core/plan/baseline.hpp"
#include "core/plan/key.hpp"
#include "core/plan/render.hpp"

namespace ncclsweep::inline plan {
namespace {

std::uint64_t saturating_multiply(std::uint64_t a, std::uint64_t b) {
    if (a != 0 && b > std::numeric_limits<std::uint64_t>::max() / a)
        return std::numeric_limits<std::uint64_t>::max();
    return a * b;
}

void set_or_append(std::vector<Assignment>& list, const std::string& name, const std::string& value) {
    for (auto& entry : list)
        if (entry.first == name) {
            entry.second = value;
            return;
        }
    list.emplace_back(name, value);
}

bool is_env_name(const std::string& name) {
    Axis probe;
    probe.name = name;
    return probe.is_env();
}

}  // namespace

Planner::Planner(const Spec& spec, const PlanOptions& options) : m_spec(&spec), m_options(options) {}

Result<Planner> Planner::create(const Spec& spec, const PlanOptions& options) {
    Planner planner(spec, options);
    planner.compile();
    std::uint64_t total = planner.m_product_size;
    if (total <= std::numeric_limits<std::uint64_t>::max() - planner.m_includes.size())
        total += planner.m_includes.size();
    if (total <= std::numeric_limits<std::uint64_t>::max() - planner.m_defaults_size)
        total += planner.m_defaults_size;
    else
        total = std::numeric_limits<std::uint64_t>::max();
    if (total > options.max_experiments) {
        std::vector<std::string> factors;
        for (const auto& digit : planner.m_digits) {
            std::vector<std::string> names;
            for (std::size_t axis : digit.axes) names.push_back(spec.axes[axis].name);
            factors.push_back(fmt::format("{} {}", fmt::join(names, "+"), digit.radix));
        }
        std::string count = total == std::numeric_limits<std::uint64_t>::max()
                                ? "more than 18446744073709551615"
                                : std::to_string(total);
        return Error::bad_input(fmt::format(
            "{}: the sweep expands to {} points before exclude ({}{}), more than the limit of {}; narrow the "
            "axes, "
            "or pass --max-experiments {} if you mean it",
            spec.path, count, fmt::join(factors, " x "),
            fmt::format(
                "{}{}",
                planner.m_includes.empty() ? "" : fmt::format(" + {} include", planner.m_includes.size()),
                planner.m_defaults_size == 0 ? "" : fmt::format(" + {} defaults", planner.m_defaults_size)),
            options.max_experiments, count));
    }
    return planner;
}

void Planner::compile() {
    const auto& axes = m_spec->axes;
    auto axis_index = [&](const std::string& name) -> std::optional<std::size_t> {
        for (std::size_t i = 0; i < axes.size(); ++i)
            if (axes[i].name == name) return i;
        return std::nullopt;
    };
    std::vector<int> group_of(axes.size(), -1);
    for (std::size_t g = 0; g < m_spec->zip.size(); ++g)
        for (const auto& name : m_spec->zip[g])
            if (auto index = axis_index(name)) group_of[*index] = static_cast<int>(g);
    std::vector<bool> group_done(m_spec->zip.size(), false);
    for (std::size_t i = 0; i < axes.size(); ++i) {
        Digit digit;
        digit.radix = axes[i].values.size();
        if (group_of[i] < 0) {
            digit.axes.push_back(i);
        } else {
            auto g = static_cast<std::size_t>(group_of[i]);
            if (group_done[g]) continue;
            group_done[g] = true;
            for (const auto& name : m_spec->zip[g])
                if (auto index = axis_index(name)) digit.axes.push_back(*index);
        }
        m_product_size = saturating_multiply(m_product_size, digit.radix);
        m_digits.push_back(std::move(digit));
    }
    m_value_index.assign(axes.size(), 0);

    for (const auto& rule : m_spec->exclude) {
        CompiledExclude compiled;
        for (const auto& [name, values] : rule.match) {
            auto index = axis_index(name);
            if (!index) continue;  // validate_spec rejects these
            std::vector<bool> allowed(axes[*index].values.size(), false);
            for (std::size_t v = 0; v < allowed.size(); ++v)
                for (const auto& value : values)
                    if (axes[*index].values[v].text == value.text) allowed[v] = true;
            compiled.allowed.emplace_back(*index, std::move(allowed));
        }
        m_excludes.push_back(std::move(compiled));
    }

    std::set<std::string> seen;
    for (const auto& point : m_spec->include) {
        std::vector<Assignment> params;
        for (const auto& axis : axes)
            for (const auto& [name, value] : point.values)
                if (name == axis.name) params.emplace_back(name, value.text);
        for (const auto& [name, value] : point.values)
            if (!axis_index(name)) params.emplace_back(name, value.text);
        if (in_product(params) || !seen.insert(canonical_text(params)).second) continue;
        m_includes.push_back(std::move(params));
    }
    m_include_texts = std::move(seen);
    m_product_done = m_product_size == 0;

    // NCCL's defaults point (core/plan/baseline.hpp): none of the swept NCCL variables set, one
    // per combination of the digits that hold other axes; exclude rules over those axes alone
    // apply to it, a rule naming an NCCL axis never matches it.
    m_nccl_axis.assign(axes.size(), false);
    bool any_nccl = false;
    for (std::size_t i = 0; i < axes.size(); ++i)
        for (std::size_t i = 0; i < axes.size(); ++i) {
            m_nccl_axis[i] = is_nccl_variable(axes[i].name);
            any_nccl = any_nccl || m_nccl_axis[i];
        }
    m_sweeps_nccl = any_nccl;
    for (const auto& point : m_includes)
        for (const auto& [name, value] : point) m_sweeps_nccl = m_sweeps_nccl || is_nccl_variable(name);
    if (m_spec->baseline == Baseline::defaults && any_nccl) {
        m_defaults_size = 1;
        for (std::size_t d = 0; d < m_digits.size(); ++d)
            if (std::any_of(m_digits[d].axes.begin(), m_digits[d].axes.end(),
                            [&](std::size_t axis) { return !m_nccl_axis[axis]; })) {
                m_defaults_digits.push_back(d);
                m_defaults_size = saturating_multiply(m_defaults_size, m_digits[d].radix);
            }
        for (const auto& rule : m_excludes)
            if (std::none_of(rule.allowed.begin(), rule.allowed.end(),
                             [&](const auto& entry) { return m_nccl_axis[entry.first]; }))
                m_defaults_excludes.push_back(rule);
    }
    m_default_index.assign(axes.size(), 0);
    m_defaults_done = m_defaults_size == 0;
}

bool Planner::defaults_excluded() const {
    for (const auto& rule : m_defaults_excludes) {
        bool all = !rule.allowed.empty();
        for (const auto& [axis, allowed] : rule.allowed)
            if (!allowed[m_default_index[axis]]) {
                all = false;
                break;
            }
        if (all) return true;
    }
    return false;
}

void Planner::advance_defaults() {
    for (std::size_t k = m_defaults_digits.size(); k-- > 0;) {
        const Digit& digit = m_digits[m_defaults_digits[k]];
        std::size_t next = m_default_index[digit.axes[0]] + 1;
        if (next == digit.radix) next = 0;
        for (std::size_t axis : digit.axes) m_default_index[axis] = next;
        if (next != 0) return;
    }
    m_defaults_done = true;
}

bool Planner::excluded(const std::vector<std::size_t>& value_index) const {
    for (const auto& rule : m_excludes) {
        bool all = true;
        for (const auto& [axis, allowed] : rule.allowed)
            if (!allowed[value_index[axis]]) {
                all = false;
                break;
            }
        if (all && !rule.allowed.empty()) return true;
    }
    return false;
}

bool Planner::in_product(const std::vector<Assignment>& point) const {
    const auto& axes = m_spec->axes;
    if (point.size() != axes.size()) return false;
    std::vector<std::size_t> index(axes.size());
    for (std::size_t a = 0; a < axes.size(); ++a) {
        if (point[a].first != axes[a].name) return false;  // include params list axes first, in axis order
        auto it = std::find_if(axes[a].values.begin(), axes[a].values.end(),
                               [&](const SpecValue& v) { return v.text == point[a].second; });
        if (it == axes[a].values.end()) return false;
        index[a] = static_cast<std::size_t>(it - axes[a].values.begin());
    }
    for (const auto& digit : m_digits)
        for (std::size_t axis : digit.axes)
            if (index[axis] != index[digit.axes[0]]) return false;  // not a zipped combination
    // An excluded product point named again by include is added back: do not count it as present.
    return !excluded(index);
}

void Planner::advance() {
    for (std::size_t d = m_digits.size(); d-- > 0;) {
        const Digit& digit = m_digits[d];
        std::size_t next = m_value_index[digit.axes[0]] + 1;
        if (next == digit.radix) next = 0;
        for (std::size_t axis : digit.axes) m_value_index[axis] = next;
        if (next != 0) return;
    }
    m_product_done = true;
}

void Planner::rewind() {
    std::fill(m_value_index.begin(), m_value_index.end(), 0);
    m_product_done = m_product_size == 0;
    m_next_include = 0;
    std::fill(m_default_index.begin(), m_default_index.end(), 0);
    m_defaults_done = m_defaults_size == 0;
    m_next_id = 1;
}

Result<bool> Planner::next(Experiment& out) {
    while (!m_product_done) {
        bool skip = excluded(m_value_index);
        if (!skip) {
            m_params.clear();
            for (std::size_t a = 0; a < m_spec->axes.size(); ++a)
                m_params.emplace_back(m_spec->axes[a].name, m_spec->axes[a].values[m_value_index[a]].text);
        }
        advance();
        if (!skip) return build(m_params, out);
    }
    if (m_next_include < m_includes.size()) return build(m_includes[m_next_include++], out);
    while (!m_defaults_done) {
        bool skip = defaults_excluded();
        if (!skip) {
            m_params.clear();
            for (std::size_t a = 0; a < m_spec->axes.size(); ++a)
                if (!m_nccl_axis[a])
                    m_params.emplace_back(m_spec->axes[a].name,
                                          m_spec->axes[a].values[m_default_index[a]].text);
            // An include point that already is this defaults point is not added again.
            skip = m_include_texts.count(canonical_text(m_params)) > 0;
        }
        advance_defaults();
        if (!skip) return build(m_params, out);
    }
    return false;
}

Result<bool> Planner::build(const std::vector<Assignment>& params, Experiment& out) {
    out.id = m_next_id++;
    // The one rule of core/plan/baseline.hpp (an include point that sets no NCCL variable is one too).
    out.defaults = m_sweeps_nccl && std::none_of(params.begin(), params.end(), [](const Assignment& a) {
                       return is_nccl_variable(a.first);
                   });
    out.params = params;
    out.env.clear();
    for (const auto& [name, value] : m_spec->env) out.env.emplace_back(name, value.text);
    out.workload.clear();
    for (const auto& [name, value] : m_spec->workload.args) out.workload.emplace_back(name, value.text);
    m_workload_params.clear();
    for (const auto& [name, value] : params) {
        if (is_env_name(name)) {
            set_or_append(out.env, name, value);
        } else {
            set_or_append(out.workload, name, value);
            m_workload_params.emplace_back(name, value);
        }
    }
    auto argv = render::command_argv(m_spec->workload, m_workload_params, m_options.engine_path);
    if (!argv)
        return Error::bad_input(fmt::format("{} (while planning experiment {} of {}: {})",
                                            argv.error().message, out.id, m_spec->path,
                                            canonical_text(params)));
    out.argv = std::move(*argv);
    if (!m_spec->workload.client.empty()) {
        // The client is started later by the sweep; its placeholders are checked now, like the command's.
        WorkloadSpec client = m_spec->workload;
        client.engine.clear();
        client.command = m_spec->workload.client;
        client.command_is_shell = m_spec->workload.client_is_shell;
        if (auto client_argv = render::command_argv(client, m_workload_params, ""); !client_argv)
            return Error::bad_input(fmt::format("client: {} (while planning experiment {} of {}: {})",
                                                client_argv.error().message, out.id, m_spec->path,
                                                canonical_text(params)));
    }
    out.shell = m_spec->workload.engine.empty() && m_spec->workload.command_is_shell;
    out.canonical = canonical_text(params);
    out.key = key_of_canonical(out.canonical);
    return true;
}

}  // namespace ncclsweep::inline plan
