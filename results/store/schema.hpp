#pragma once
// The store's schema: a list of forward migrations; PRAGMA user_version is the number of
// steps applied. docs/results-schema.md describes the tables.
#include <cstdint>

#include "core/result.hpp"
#include "results/store/sqlite.hpp"

namespace ncclsweep::results {

/// The schema version this build writes and reads (number of migration steps).
[[nodiscard]] int current_schema_version();

/// PRAGMA application_id of an ncclsweep database ("NCSW").
inline constexpr std::int64_t k_application_id = 0x4E435357;

/// Checks the file's version and identity and applies the missing migrations, each in one
/// transaction. Fails when the file belongs to another application, or was written by a
/// newer ncclsweep (its version is higher than current_schema_version()).
[[nodiscard]] Result<void> migrate(sqlite::Database& db);

/// The version stored in the file (0 for a new, empty file), after checking that the file
/// is an ncclsweep database this build can read without changes. `needs_migration` is set
/// when the file is older than current_schema_version().
[[nodiscard]] Result<int> check_schema(sqlite::Database& db, bool& needs_migration);

}  // namespace ncclsweep::results
