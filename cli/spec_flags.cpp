#include "cli/spec_flags.hpp"

#include <cstdio>
#include <cstdlib>

#include "core/plan/planner.hpp"
#include "core/sweep/engine_locator.hpp"
#include "results/export/exports.hpp"

namespace ncclsweep::cli {

void add_spec_flags(CLI::App& app, SpecFlags& flags) {
    app.add_option("spec", flags.spec_path, "Sweep spec (YAML); see docs/spec.md")->required();
    app.add_option("--axis", flags.axis,
                   "Replace or add an axis: NAME=v1,v2 (e.g. --axis NCCL_PROTO=LL,Simple); repeatable")
        ->take_all();
    app.add_option("--set", flags.set, "Fix one value: NAME=v (e.g. --set tokens=8); repeatable")->take_all();
    app.add_option("--max-experiments", flags.max_experiments,
                   "Refuse plans larger than this (default 100000)");
    app.add_option("--engine", flags.engine,
                   "tpverify to run for `engine: tpverify` (default: next to ncclsweep, then PATH)");
}

Result<std::vector<Override>> overrides_from(const SpecFlags& flags) {
    std::vector<Override> out;
    for (const auto& text : flags.axis) {
        auto parsed = parse_override(OverrideKind::axis, text);
        if (!parsed) return parsed.error();
        out.push_back(std::move(*parsed));
    }
    for (const auto& text : flags.set) {
        auto parsed = parse_override(OverrideKind::set, text);
        if (!parsed) return parsed.error();
        out.push_back(std::move(*parsed));
    }
    return out;
}

PlanOptions plan_options_from(const SpecFlags& flags) {
    PlanOptions options;
    options.max_experiments = flags.max_experiments;
    options.engine_path = flags.engine.empty() ? locate_engine(current_executable()) : flags.engine;
    return options;
}

std::string database_path(const std::string& flag) {
    if (!flag.empty()) return flag;
    const char* env = std::getenv("NCCLSWEEP_DB");
    if (env && *env) return env;
    return "./ncclsweep.db";
}

void add_db_flag(CLI::App& app, std::string& db) {
    app.add_option("--db", db, "SQLite database (default $NCCLSWEEP_DB or ./ncclsweep.db)");
}

Result<results::Store> open_for_reading(const std::string& db_flag) {
    results::StoreOptions options;
    options.access = results::Access::read_only;
    return results::Store::open(database_path(db_flag), options);
}

Result<void> write_output(const std::string& output_flag, std::string_view text) {
    if (output_flag.empty() || output_flag == "-") {
        std::fwrite(text.data(), 1, text.size(), stdout);
        if (std::fflush(stdout) != 0 || std::ferror(stdout) != 0)
            return Error::infrastructure("cannot write the output to stdout");
        return success();
    }
    return results::exports::write_file_atomically(output_flag, text);
}

}  // namespace ncclsweep::cli
