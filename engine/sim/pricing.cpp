// Pricing collectives from a calibration keyed by NCCL's effective choice (engine/sim/pricing.hpp).
#include "engine/sim/pricing.hpp"

#include <algorithm>

namespace tpverify::sim {
namespace {

Func func_named(const std::string& collective) {
    return collective == "all_gather" ? Func::all_gather : Func::all_reduce;
}

std::string choice_text(Func f, const Choice& c, std::uint64_t bytes) {
    return std::string(func_name(f)) + " " + std::to_string(bytes) + " B as " + algo_upper(c.algo) + "/" +
           proto_name(c.proto) + " on " + std::to_string(c.channels) + " channel(s) over " +
           transport_name(c.transport);
}

}  // namespace

const char* price_source_name(PriceSource source) {
    switch (source) {
        case PriceSource::calibrated:
            return "calibrated";
        case PriceSource::relative:
            return "relative";
        case PriceSource::modelled:
            return "modelled";
    }
    return "?";
}

CalibrationIndex::CalibrationIndex(const Calibration& calibration, const TopologyModel& run_topo,
                                   const std::string& run_setting, int nranks) {
    if (const auto& measured_on = calibration.topology()) {
        TopoMatrix run;
        run.link = run_topo.pairs;
        if (run.link.empty())  // a built-in machine: every pair of GPUs is the same path apart
            m_why = "the calibration was measured on " + measured_on->source +
                    " (its topology block) and this run "
                    "simulates the built-in " +
                    run_topo.name + "; give that machine's topology with --topology-file";
        else if (!run.same_paths(*measured_on, nranks))
            m_why = "the calibration was measured on " + measured_on->source + ", whose GPUs 0.." +
                    std::to_string(nranks - 1) + " are connected differently from " + run_topo.file;
        if (!m_why.empty()) {
            m_applies = false;
            return;
        }
    }
    // Each table's setting as NCCL would run it here (the tables were measured on this machine).
    for (const CalibrationTable& table : calibration.tables()) {
        if (table.nranks != nranks) continue;  // measured over another rank count: says nothing here
        NcclEnv env;
        std::string warn;
        parse_nccl_env(setting_getenv(setting_variables(table.setting)), env, warn);  // checked when parsed
        m_tables.push_back(
            {func_named(table.collective), &table, std::make_unique<Comm>(run_topo, env, nranks)});
    }
    // A table of the run's own setting is looked at first.
    std::stable_partition(m_tables.begin(), m_tables.end(),
                          [&](const Table& t) { return t.table->setting == run_setting; });
}

std::optional<double> CalibrationIndex::measured(Func f, const Choice& choice, std::uint64_t bytes) const {
    for (const Table& t : m_tables) {
        if (t.func != f || !t.comm->choose(f, bytes).same_effective(choice)) continue;
        if (auto us = interpolate(*t.table, bytes)) return us;
    }
    return std::nullopt;
}

std::optional<std::pair<Choice, double>> CalibrationIndex::any_measured(Func f, std::uint64_t bytes) const {
    for (const Table& t : m_tables) {
        if (t.func != f) continue;
        const Choice here = t.comm->choose(f, bytes);
        if (!here.ok) continue;
        if (auto us = interpolate(*t.table, bytes)) return std::make_pair(here, *us);
    }
    return std::nullopt;
}

Pricer::Pricer(const Comm& run, const Comm& defaults, const CalibrationIndex* index)
    : m_run(run), m_defaults(defaults), m_index(index && index->applies() ? index : nullptr) {
    if (m_index == nullptr) m_worst = PriceSource::modelled;
    if (index && !index->applies()) note(index->why_not());
}

Price Pricer::collective(Func f, std::uint64_t bytes, const Choice& choice) {
    if (m_index == nullptr) return counted(choice.time_us, PriceSource::modelled);
    if (auto us = m_index->measured(f, choice, bytes)) return counted(*us, PriceSource::calibrated);
    // The reference: NCCL's default choice at this size when it was measured, else any measured one.
    std::optional<std::pair<Choice, double>> reference;
    const Choice defaults = m_defaults.choose(f, bytes);
    if (defaults.ok)
        if (auto us = m_index->measured(f, defaults, bytes)) reference = std::make_pair(defaults, *us);
    if (!reference) reference = m_index->any_measured(f, bytes);
    if (!reference || !(reference->first.time_us > 0)) {
        note("nothing measured for " + std::string(func_name(f)) + " at " + std::to_string(bytes) +
             " B over " + std::to_string(m_run.nranks()) + " ranks: NCCL's estimate");
        return counted(choice.time_us, PriceSource::modelled);
    }
    note(choice_text(f, choice, bytes) + " was not measured: priced relative to the measured " +
         choice_text(f, reference->first, bytes));
    return counted(choice.time_us / reference->first.time_us * reference->second, PriceSource::relative);
}

Price Pricer::fused(double us, bool measured, const std::string& source) {
    fused_us_sum += us;
    ++fused_calls;
    note(std::string("the fused one-shot all-reduce (no NCCL call): ") + (measured ? "measured on " : "") +
         source);
    return counted(us, measured ? PriceSource::relative : PriceSource::modelled);
}

Price Pricer::counted(double us, PriceSource source) {
    (source == PriceSource::calibrated ? calibrated
     : source == PriceSource::relative ? relative
                                       : modelled) += 1;
    m_worst = std::max(m_worst, source);
    return {us, source};
}

void Pricer::note(const std::string& what) {
    if (what.empty() || m_notes.find(what) != std::string::npos) return;
    m_notes += (m_notes.empty() ? "" : "; ") + what;
}

}  // namespace tpverify::sim
