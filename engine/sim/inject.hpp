#pragma once
// Fault injection for the sim backend (--inject KIND[@PHASE][:SECONDS]): prints what the real
// failure prints and behaves like it (a hang really hangs, a segfault really is one).
#include <optional>
#include <string>
#include <vector>

#include "engine/options.hpp"
#include "engine/report.hpp"

namespace tpverify {

/// The phases of a run, in order.
enum class Phase { init, warmup, capture, replay };
/// "init", "warmup", "capture", "replay".
const char* phase_name(Phase p);

/// Fires the injected faults when their phase begins.
class Injector {
public:
    /// `nccl_warn`: whether NCCL_DEBUG would print WARN lines; `rank` for those lines.
    Injector(std::vector<Injection> faults, double timeout_s, bool nccl_warn, int rank);
    /// Runs the faults of phase `p` (events of earlier phases are already out). Returns the
    /// exit status when the process must stop (after printing what the failure prints); may
    /// not return at all (segv) or only after a long time (hang). nullopt: carry on.
    [[nodiscard]] std::optional<int> at_phase(Phase p, Reporter& reporter) const;
    /// The phase a fault fires in: its @PHASE, else capture for capture-fail, else replay.
    [[nodiscard]] static Phase phase_of(const Injection& fault);

private:
    std::vector<Injection> m_faults;
    double m_timeout_s;
    bool m_nccl_warn;
    int m_rank;
};

/// Sleeps `seconds` of wall time (0: returns at once), in short slices so signals stay prompt.
void sleep_seconds(double seconds);

}  // namespace tpverify
