#pragma once
// A tiny RAII layer over sqlite3 / sqlite3_stmt. Values reach SQL only through bound
// parameters: there is no API here that formats a value into SQL text.
#include <chrono>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>

#include "core/result.hpp"

struct sqlite3;
struct sqlite3_stmt;

namespace ncclsweep::results::sqlite {

struct Connection;  // the handle, path and busy timeout; stable while a Database moves

/// How a connection is opened.
enum class OpenMode {
    read_only,   ///< SQLITE_OPEN_READONLY: the file must exist; writes fail with "read-only"
    read_write,  ///< the file must exist
    create,      ///< read-write, created when missing
};

/// Builds the people-facing Error for SQLite result code `rc` (extended codes accepted):
/// what failed (`what`, e.g. "recording experiment 7 of sweep 3"), in which file, and what to do.
[[nodiscard]] Error describe_error(int rc, std::string_view sqlite_message, std::string_view what,
                                   const std::string& path, std::chrono::milliseconds busy_timeout);

/// A prepared statement. Parameters are 1-based; columns 0-based. Move-only.
class Statement {
public:
    Statement() = default;
    Statement(sqlite3_stmt* stmt, Connection* connection);
    ~Statement();
    Statement(Statement&& other) noexcept;
    Statement& operator=(Statement&& other) noexcept;
    Statement(const Statement&) = delete;
    Statement& operator=(const Statement&) = delete;

    /// Binds an integer to parameter `index`.
    Statement& bind(int index, std::int64_t value);
    /// Binds a real to parameter `index`.
    Statement& bind(int index, double value);
    /// Binds text (copied; may hold any bytes, including NUL) to parameter `index`.
    Statement& bind(int index, std::string_view value);
    /// Binds SQL NULL to parameter `index`.
    Statement& bind_null(int index);
    /// Binds text, or NULL when the string is empty.
    Statement& bind_text_or_null(int index, std::string_view value);
    /// Binds a real, or NULL when absent.
    Statement& bind(int index, std::optional<double> value);
    /// Binds an integer, or NULL when absent.
    Statement& bind(int index, std::optional<std::int64_t> value);

    /// Advances: true when a row is available, false when done. Errors (including a failed
    /// bind) are described with `what`. The statement is reset on error and on done.
    [[nodiscard]] Result<bool> step(std::string_view what);
    /// Steps to completion (for INSERT/UPDATE/DELETE), then resets and clears bindings.
    [[nodiscard]] Result<void> run(std::string_view what);
    /// Resets the statement and clears its bindings so it can be reused.
    void reset();

    /// Column value as an integer (0 for NULL).
    [[nodiscard]] std::int64_t column_int64(int column) const;
    /// Column value as a real (0 for NULL).
    [[nodiscard]] double column_double(int column) const;
    /// Column value as text, exact bytes ("" for NULL).
    [[nodiscard]] std::string column_text(int column) const;
    /// True when the column is NULL.
    [[nodiscard]] bool column_is_null(int column) const;
    /// Column as a real, absent when NULL.
    [[nodiscard]] std::optional<double> column_optional_double(int column) const;
    /// Column as an integer, absent when NULL.
    [[nodiscard]] std::optional<std::int64_t> column_optional_int64(int column) const;

private:
    void note_bind(int rc);
    sqlite3_stmt* m_stmt = nullptr;
    Connection* m_connection = nullptr;
    int m_bind_error = 0;
};

/// One connection. Move-only; closes on destruction.
class Database {
public:
    /// Opens `path` in `mode` with the given busy timeout. Errors say which file and why.
    [[nodiscard]] static Result<Database> open(const std::string& path, OpenMode mode,
                                               std::chrono::milliseconds busy_timeout);
    Database() = default;
    ~Database();
    Database(Database&& other) noexcept;
    Database& operator=(Database&& other) noexcept;
    Database(const Database&) = delete;
    Database& operator=(const Database&) = delete;

    /// Runs fixed SQL text (one or more statements, no values). Never pass user data here.
    [[nodiscard]] Result<void> exec(const char* sql, std::string_view what);
    /// Prepares one statement.
    [[nodiscard]] Result<Statement> prepare(std::string_view sql, std::string_view what);
    /// A statement prepared once per connection and reused (reset before it is returned).
    [[nodiscard]] Result<Statement*> cached(std::string_view sql, std::string_view what);
    /// Reads an integer pragma value, e.g. query_int("PRAGMA user_version").
    [[nodiscard]] Result<std::int64_t> query_int(const char* sql, std::string_view what);

    /// The error for `rc` on this connection (uses its last message, path and timeout).
    [[nodiscard]] Error error(int rc, std::string_view what) const;
    /// Raw handle (for rare direct use in tests).
    [[nodiscard]] sqlite3* handle() const;
    /// The file this connection is on.
    [[nodiscard]] const std::string& path() const;
    /// Rows changed by the last INSERT/UPDATE/DELETE.
    [[nodiscard]] std::int64_t changes() const;
    /// True when no transaction is open.
    [[nodiscard]] bool autocommit() const;

private:
    std::unique_ptr<Connection> m_connection;
};

/// What a transaction will do.
enum class TransactionKind {
    write,  ///< BEGIN IMMEDIATE: the write lock is taken up front (waiting is the busy timeout)
    read,   ///< BEGIN: a consistent snapshot for several SELECTs
};

/// A transaction, rolled back when destroyed without commit().
class Transaction {
public:
    /// Begins; the error says "locked" when another writer holds the database too long.
    [[nodiscard]] static Result<Transaction> begin(Database& db, std::string_view what,
                                                   TransactionKind kind = TransactionKind::write);
    Transaction(Transaction&& other) noexcept;
    Transaction& operator=(Transaction&&) = delete;
    Transaction(const Transaction&) = delete;
    ~Transaction();
    /// Commits; on failure the transaction is rolled back.
    [[nodiscard]] Result<void> commit(std::string_view what);

private:
    explicit Transaction(Database* db) : m_db(db) {}
    Database* m_db = nullptr;
};

}  // namespace ncclsweep::results::sqlite
