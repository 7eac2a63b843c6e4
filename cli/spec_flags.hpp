#pragma once
// Flag groups shared by the subcommands: the spec and its overrides (plan, run), the database
// (run and every query command), the output file (export, report).
#include <CLI/CLI.hpp>

#include <cstdint>
#include <string>
#include <vector>

#include "core/plan/planner.hpp"
#include "core/result.hpp"
#include "results/store/store.hpp"

namespace ncclsweep::cli {

/// --axis / --set / --max-experiments / --engine.
struct SpecFlags {
    std::string spec_path;
    std::vector<std::string> axis;
    std::vector<std::string> set;
    std::uint64_t max_experiments = k_default_max_experiments;
    std::string engine;
};

/// Adds the SPEC positional and the override flags to `app`.
void add_spec_flags(CLI::App& app, SpecFlags& flags);
/// The overrides in the order given (all --axis, then all --set).
Result<std::vector<Override>> overrides_from(const SpecFlags& flags);
/// Planner options (engine path: --engine, else next to this binary, else PATH).
PlanOptions plan_options_from(const SpecFlags& flags);

/// Database path: --db, else $NCCLSWEEP_DB, else ./ncclsweep.db.
std::string database_path(const std::string& flag);
/// Adds `--db PATH` (see database_path) to `app`.
void add_db_flag(CLI::App& app, std::string& db);
/// Opens the database named by --db (see database_path) for a query command: read-only.
Result<results::Store> open_for_reading(const std::string& db_flag);
/// Writes a command's output where -o says: stdout for "" or "-" (an error when stdout cannot
/// take it, e.g. a full disk behind a redirect), else the file, atomically.
Result<void> write_output(const std::string& output_flag, std::string_view text);

}  // namespace ncclsweep::cli
