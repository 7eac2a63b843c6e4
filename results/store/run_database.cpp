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

}  // namespace ncclsweep::results
