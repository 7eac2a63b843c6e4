#pragma once
// Shared helpers for the store tests: planned experiments and outcomes with known content.
#include <fmt/format.h>

#include <filesystem>
#include <optional>
#include <string>
#include <vector>

#include "results/store/store.hpp"
#include "tests/support/catch.hpp"

namespace ncclsweep::test {

/// Opens (creating) the store at `path`; the test fails at once when it cannot. `durability`
/// is the store's own default (full) unless a test asks for the faster `normal`.
inline results::Store open_store(const std::filesystem::path& path, results::StoreOptions options = {},
                                 std::optional<results::Durability> durability = std::nullopt) {
    if (durability) options.durability = *durability;
    Result<results::Store> store = results::Store::open(path.string(), options);
    INFO((store ? std::string() : store.error().message));
    REQUIRE(store.ok());
    return std::move(*store);
}

/// A planned experiment with distinct, recognisable fields.
inline Experiment make_experiment(int id) {
    Experiment e;
    e.id = id;
    e.canonical = fmt::format("NCCL_ALGO=Ring;tokens={}", id);
    e.key = fmt::format("k{:08x}", id * 2654435761u);
    e.params = {{"NCCL_ALGO", "Ring"}, {"tokens", std::to_string(id)}};
    e.env = {{"NCCL_DEBUG", "WARN"}, {"NCCL_ALGO", "Ring"}};
    e.workload = {{"tokens", std::to_string(id)}, {"preset", "llama-70b"}};
    e.argv = {"tpverify", "--json", "--tokens", std::to_string(id)};
    return e;
}

/// `count` experiments with ids 1..count.
inline std::vector<Experiment> make_experiments(int count) {
    std::vector<Experiment> experiments;
    for (int id = 1; id <= count; ++id) experiments.push_back(make_experiment(id));
    return experiments;
}

/// An ok outcome with repeats x metrics samples whose values encode (id, repeat, metric).
inline results::ExperimentOutcome make_outcome(int id, int repeats, int metrics = 2) {
    results::ExperimentOutcome o;
    o.status = results::ExperimentStatus::ok;
    o.effective_nccl = "AllReduce: Ring/LL channels 0..3";
    o.timings.init_s = 0.5;
    o.timings.total_s = 2.0 + id;
    o.exit_code = 0;
    for (int r = 0; r < repeats; ++r) {
        for (int m = 0; m < metrics; ++m) {
            o.samples.push_back({r, fmt::format("metric{}", m), id * 1000.0 + r * 10 + m});
        }
    }
    return o;
}

/// A minimal sweep record.
inline results::SweepRecord make_sweep(std::string name, std::string tag = {}) {
    results::SweepRecord r;
    r.name = std::move(name);
    r.tag = std::move(tag);
    r.spec_path = "spec.yaml";
    r.spec_text = "sweep: test\n";
    r.target = "local";
    r.tool_version = "test";
    r.repeats = 3;
    return r;
}

}  // namespace ncclsweep::test
