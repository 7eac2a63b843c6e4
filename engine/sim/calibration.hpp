#pragma once
// Measured collective times for the sim (--calibration FILE): per NCCL setting, collective and
// rank count, a table of message size -> time. Plain text that tpverify parses itself:
//
//   # comment
//   tpverify-calibration 1
//   setting NCCL_PROTO=LL            <- "setting" alone is NCCL's defaults
//   table all_reduce 8               <- collective (all_reduce | all_gather) and ranks
//   57344 201.6                      <- bytes per rank and time in µs, increasing bytes
//   topology topo.txt                <- optional: the machine the tables were measured on, its
//   |         GPU0    GPU1 ...          `nvidia-smi topo -m` output on the lines that follow,
//   | GPU0     X      PIX  ...          each behind "| " (`ncclsweep calibrate --topology-file`)
//
// The sim prices a collective from a table when NCCL's effective choice for it (algorithm,
// protocol, channels, transport; engine/sim/pricing.hpp) is the choice NCCL makes for the table's
// setting at that size on the table's machine: a table is keyed by what NCCL did, not by how
// its setting is spelled.
//
// `ncclsweep calibrate DIR` writes this format from nccl-tests logs, `tpverify --backend cuda
// --measure-collectives` from its own measurements (docs/engine.md). Files concatenate: a
// repeated header line is accepted, so `cat a.txt b.txt` of two settings is one calibration.
#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "engine/topo_matrix.hpp"

namespace tpverify {
struct PassPlan;
}

namespace tpverify::sim {

/// One measured table.
struct CalibrationTable {
    std::string setting;     ///< setting key (see setting_key), "" = NCCL's defaults
    std::string collective;  ///< "all_reduce" or "all_gather"
    int nranks = 0;
    std::vector<std::pair<std::uint64_t, double>> points;  ///< (bytes, µs), bytes increasing
};

/// A parsed calibration file.
class Calibration {
public:
    /// Parses the text; on error returns false with "NAME:LINE: what is wrong; what to do".
    static bool parse(const std::string& text, const std::string& name, Calibration& out, std::string& error);
    /// Reads and parses a file.
    static bool load(const std::string& path, Calibration& out, std::string& error);

    /// The table for a setting, collective and rank count, or nullptr.
    [[nodiscard]] const CalibrationTable* find(const std::string& setting, const std::string& collective,
                                               int nranks) const;
    /// Whether any table has this setting.
    [[nodiscard]] bool has_setting(const std::string& setting) const;
    [[nodiscard]] const std::vector<CalibrationTable>& tables() const { return m_tables; }
    /// The machine the tables were measured on (its `topology` block); nullopt when not recorded.
    [[nodiscard]] const std::optional<TopoMatrix>& topology() const { return m_topology; }

private:
    std::vector<CalibrationTable> m_tables;
    std::optional<TopoMatrix> m_topology;
};

/// Time at `bytes` from a table: exact at a measured size, linear in log(bytes) and log(time)
/// between two, nullopt outside the measured range (the model prices it then).
std::optional<double> interpolate(const CalibrationTable& table, std::uint64_t bytes);

/// A getenv over these variables (nullptr for any other name), for parse_nccl_env.
std::function<const char*(const char*)> setting_getenv(std::vector<std::pair<std::string, std::string>> vars);
/// The NCCL_* variables of a setting key ("NAME=VALUE NAME=VALUE"), in order.
std::vector<std::pair<std::string, std::string>> setting_variables(const std::string& key);
/// The setting key of a list of NCCL_* variables: "NAME=VALUE" sorted by name and joined by a
/// space, "" for none. Variables that do not change a collective's time (NCCL_DEBUG*,
/// NCCL_COMM_ID, NCCL_RUNTIME_CONNECT, and NCCL_VERSION, which container images set and NCCL
/// never reads) are left out; NCCL_P2P_LEVEL is written as the path
/// name NCCL reads it as (3 -> PHB).
std::string setting_key(std::vector<std::pair<std::string, std::string>> vars);
/// The NCCL_* variables of this process's environment.
std::vector<std::pair<std::string, std::string>> nccl_environment();
/// For messages: "NCCL's defaults" for "", else the key.
std::string setting_label(const std::string& key);

/// One size of a --measure-collectives table: time per collective, out-of-place (what the
/// pass runs and the table holds, as nccl-tests' out-of-place column) and in-place (a comment).
struct MeasuredSize {
    std::uint64_t bytes = 0;  ///< per rank (all-gather: one rank's input)
    double out_of_place_us = 0;
    double in_place_us = 0;
};
/// What --measure-collectives measured under one NCCL setting.
struct Measurement {
    std::vector<std::string> notes;  ///< comment lines (machine, versions, method, command)
    std::string setting;             ///< setting key of the process's NCCL_* environment
    int nranks = 1;
    /// ("all_reduce" | "all_gather", sizes in increasing order)
    std::vector<std::pair<std::string, std::vector<MeasuredSize>>> tables;
};
/// The calibration text of a measurement (parses with Calibration::parse).
std::string measurement_text(const Measurement& m);
/// The sizes --measure-collectives times: every collective size of these passes (bytes per
/// rank) and 1 KiB, 2 KiB, ... 1 MiB, sorted, without duplicates.
std::vector<std::uint64_t> measurement_sizes(const std::vector<const PassPlan*>& passes);

/// The text of a calibration built into tpverify ("" when there is none of that name):
/// "incident-pcie" (experiments/incident-pcie.calibration).
std::string builtin_calibration(const std::string& name);
/// --calibration's value: "builtin:NAME" or a file path.
bool load_calibration(const std::string& spec, Calibration& out, std::string& error);

}  // namespace tpverify::sim
