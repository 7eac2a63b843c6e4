#include "results/store/run_database.hpp"

namespace ncclsweep::results {

Result<SweepStore*> RunDatabase::open() {
    if (!m_store) {
        auto store = Store::open(m_path);
        if (!store) return store.error();
        m_store.emplace(std::move(*store));
        m_writer.emplace(*m_store);
    }
    return static_cast<SweepStore*>(&*m_writer);
}

Result<std::int64_t> RunDatabase::resume_candidate(const std::string& ref, const std::string& name) {
    if (auto opened = open(); !opened) return opened.error();
    return m_store->resume_candidate(ref, name);
}

Result<std::optional<NoiseHistory>> RunDatabase::previous_samples(const std::string& name,
                                                                  const std::string& tag,
                                                                  const std::string& metric,
                                                                  std::int64_t except) {
    if (auto opened = open(); !opened) return opened.error();
    // The newest few candidates: the previous night, or the one before when that one measured
    // nothing (every experiment failed).
    constexpr int k_candidates = 10;
    auto sweeps = m_store->list_sweeps(tag);
    if (!sweeps) return sweeps.error();
    int looked = 0;
    for (const auto& info : *sweeps) {  // newest first
        if (info.id == except || (tag.empty() && info.record.name != name)) continue;
        if (++looked > k_candidates) break;
        auto experiments = m_store->load_experiments(info.id);
        if (!experiments) return experiments.error();
        NoiseHistory history;
        history.sweep_id = info.id;
        for (const auto& stored : *experiments) {
            if (stored.outcome.status != ExperimentStatus::ok) continue;
            std::vector<double> values;
            for (const auto& sample : stored.outcome.samples)
                if (sample.metric == metric) values.push_back(sample.value);
            if (values.size() >= 2) history.samples[stored.experiment.key] = std::move(values);
        }
        if (!history.samples.empty()) return std::optional<NoiseHistory>(std::move(history));
    }
    return std::optional<NoiseHistory>{};
}

Result<std::optional<int>> RunDatabase::recorded_repeats(std::int64_t id) {
    if (auto opened = open(); !opened) return opened.error();
    auto info = m_store->get_sweep(id);
    if (!info) return info.error();
    return std::optional<int>(info->record.repeats);
}

}  // namespace ncclsweep::results
