#pragma once
// What a simulated collective costs, and on what that price rests (docs/engine.md, "Pricing"):
//
//   calibrated  the calibration measured NCCL's effective choice for this call (collective,
//               ranks, algorithm, protocol, channels, transport) at this size on this machine;
//   relative    it did not, but it measured the reference at this size (NCCL's default choice,
//               else another measured choice): price = model(choice) / model(reference) x
//               measured(reference), so the model only says how much slower or faster; the
//               fused kernel priced from a published one-shot measurement is relative too (a
//               measurement, of another machine);
//   modelled    nothing measured applies: NCCL's own estimate (or the fused kernel's estimate).
//
// A pass is as good as its weakest call, and so is the experiment (`collective_times`).
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "engine/sim/calibration.hpp"
#include "engine/sim/sim_model.hpp"

namespace tpverify::sim {

/// On what a price rests, best first.
enum class PriceSource { calibrated, relative, modelled };
/// "calibrated", "relative", "modelled".
const char* price_source_name(PriceSource source);

/// A calibration's tables, each read as what NCCL does under its setting on the machine it was
/// measured on: at any size, the table stands for the choice NCCL makes for its setting there,
/// and its measured curve (interpolated between sizes) is that choice's time.
class CalibrationIndex {
public:
    /// `run_setting`: the run's setting key; a table of that very setting wins over another table
    /// that stands for the same choice. The calibration does not apply (applies() false, why_not()
    /// says why) when it records a topology other than the run's.
    CalibrationIndex(const Calibration& calibration, const TopologyModel& run_topo,
                     const std::string& run_setting, int nranks);
    [[nodiscard]] bool applies() const { return m_applies; }
    [[nodiscard]] const std::string& why_not() const { return m_why; }
    /// The measured time of `choice` for `f` at `bytes`: from a table (over the run's rank count)
    /// whose setting makes NCCL choose the same at `bytes`, interpolated; nullopt when none does.
    [[nodiscard]] std::optional<double> measured(Func f, const Choice& choice, std::uint64_t bytes) const;
    /// The first table of `f` that covers `bytes`: the choice its setting makes there, and its time.
    [[nodiscard]] std::optional<std::pair<Choice, double>> any_measured(Func f, std::uint64_t bytes) const;

private:
    struct Table {
        Func func = Func::all_reduce;
        const CalibrationTable* table = nullptr;
        std::unique_ptr<Comm> comm;  ///< NCCL under the table's setting on this machine
    };
    std::vector<Table> m_tables;  ///< over the run's rank count; the run's own setting first
    bool m_applies = true;
    std::string m_why;
};

/// One priced call.
struct Price {
    double us = 0;
    PriceSource source = PriceSource::modelled;
};

/// Prices the collectives of one pass and counts what rests on what.
class Pricer {
public:
    /// `run`: NCCL under the run's setting; `defaults`: NCCL with no NCCL_* variable on the same
    /// machine (the reference's choice); `index`: nullptr without a calibration.
    Pricer(const Comm& run, const Comm& defaults, const CalibrationIndex* index);
    /// An NCCL collective whose effective choice is `choice`.
    Price collective(Func f, std::uint64_t bytes, const Choice& choice);
    /// The fused one-shot all-reduce (no NCCL call): `us` from one_shot_price.
    Price fused(double us, bool measured, const std::string& source);
    /// The weakest source of the calls priced so far (calibrated when none).
    [[nodiscard]] PriceSource source() const { return m_worst; }
    /// What was not calibrated and why, "; "-separated, each reason once.
    [[nodiscard]] const std::string& notes() const { return m_notes; }
    int calibrated = 0, relative = 0, modelled = 0;
    double fused_us_sum = 0;  ///< the fused calls' all-reduce time
    int fused_calls = 0;

private:
    void note(const std::string& what);
    Price counted(double us, PriceSource source);
    const Comm& m_run;
    const Comm& m_defaults;
    const CalibrationIndex* m_index;
    PriceSource m_worst = PriceSource::calibrated;
    std::string m_notes;
};

}  // namespace tpverify::sim
