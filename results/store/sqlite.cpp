#include "results/store/sqlite.hpp"

#include <fmt/format.h>
#include <sqlite3.h>
#include <sys/statvfs.h>
#include <unistd.h>

#include <cerrno>
#include <filesystem>
#include <map>
#include <utility>

namespace ncclsweep::results::sqlite {

namespace {

/// Why `path` cannot be written, as far as the file system says: a read-only mount, a file or
/// directory without write permission, a missing directory; "" when nothing is found wrong.
std::string why_not_writable(const std::string& path) {
    if (path.empty() || path == ":memory:") return {};
    std::error_code ec;
    std::filesystem::path dir = std::filesystem::path(path).parent_path();
    if (dir.empty()) dir = ".";
    if (!std::filesystem::is_directory(dir, ec))
        return fmt::format("its directory {} does not exist", dir.string());
    struct statvfs fs {};
    if (::statvfs(dir.c_str(), &fs) == 0 && (fs.f_flag & ST_RDONLY) != 0)
        return fmt::format("the file system holding {} is mounted read-only", dir.string());
    if (::access(path.c_str(), F_OK) == 0 && ::access(path.c_str(), W_OK) != 0)
        return errno == EROFS ? "it is on a read-only file system" : "the file is read-only for this user";
    // SQLite creates PATH-journal, PATH-wal and PATH-shm beside the file.
    if (::access(dir.c_str(), W_OK | X_OK) != 0)
        return fmt::format(
            "its directory {} is read-only for this user (SQLite needs to create its -wal and -shm files "
            "there)",
            dir.string());
    return {};
}

}  // namespace

struct Connection {
    sqlite3* db = nullptr;
    std::string path;
    std::chrono::milliseconds busy_timeout{0};
    std::map<std::string, Statement, std::less<>> cache;

    [[nodiscard]] Error error(int rc, std::string_view what) const {
        return describe_error(rc, db ? sqlite3_errmsg(db) : sqlite3_errstr(rc), what, path, busy_timeout);
    }
    ~Connection() {
        cache.clear();  // finalize cached statements before the handle goes
        if (db) sqlite3_close_v2(db);
    }
};

Error describe_error(int rc, std::string_view sqlite_message, std::string_view what, const std::string& path,
                     std::chrono::milliseconds busy_timeout) {
    const double busy_s = static_cast<double>(busy_timeout.count()) / 1000.0;
    switch (rc & 0xff) {
        case SQLITE_BUSY:
        case SQLITE_LOCKED:
            return Error::infrastructure(fmt::format(
                "database {} is locked by another process (busy for {:g} s) while {}: {}; wait for the "
                "other ncclsweep to finish, raise the busy timeout, or use another --db",
                path, busy_s, what, sqlite_message));
        case SQLITE_READONLY: {
            const std::string why = why_not_writable(path);
            return Error::infrastructure(
                fmt::format("database {} is read-only while {}: {}{}; nothing was written to it. Make it "
                            "writable (check the "
                            "file, its directory and its -wal/-shm files), or pass --db with a writable path",
                            path, what, sqlite_message, why.empty() ? "" : " (" + why + ")"));
        }
        case SQLITE_FULL:
            return Error::infrastructure(fmt::format(
                "disk full (SQLITE_FULL) while {} in {}: {}; free space on that file system: everything "
                "committed before is intact and the sweep can be resumed",
                what, path, sqlite_message));
        case SQLITE_NOTADB:
            return Error::infrastructure(fmt::format(
                "{} is not an SQLite database ({}) while {}; pass --db with another path or move that "
                "file away",
                path, sqlite_message, what));
        case SQLITE_CANTOPEN: {
            // SQLite says "unable to open database file" for a read-only mount too (it cannot
            // create the -wal/-shm files); say which it is.
            const std::string why = why_not_writable(path);
            if (!why.empty() && why.find("does not exist") == std::string::npos)
                return Error::infrastructure(
                    fmt::format("database {} is read-only while {}: {} ({}); nothing was written to it. Make "
                                "it writable, "
                                "or pass --db with a writable path",
                                path, what, why, sqlite_message));
            return Error::infrastructure(
                fmt::format("cannot open database {} while {}: {}{}; check that the directory exists and is "
                            "writable (SQLite also needs to create {}-wal and {}-shm next to it)",
                            path, what, sqlite_message, why.empty() ? "" : " (" + why + ")", path, path));
        }
        case SQLITE_CORRUPT:
            return Error::infrastructure(fmt::format(
                "database {} is corrupt ({}) while {}; keep a copy for inspection and use another --db", path,
                sqlite_message, what));
        case SQLITE_IOERR:
            return Error::infrastructure(
                fmt::format("I/O error on database {} while {}: {} (code {}); check the disk and file system",
                            path, what, sqlite_message, rc));
        case SQLITE_CONSTRAINT:
            return Error::internal(fmt::format(
                "internal error: a database constraint failed on {} while {}: {}; please report it", path,
                what, sqlite_message));
        case SQLITE_MISUSE:
        case SQLITE_RANGE:
            return Error::internal(
                fmt::format("internal error using database {} while {}: {}", path, what, sqlite_message));
        default:
            return Error::infrastructure(fmt::format("SQLite error on database {} while {}: {} (code {})",
                                                     path, what, sqlite_message, rc));
    }
}

// ---------------------------------------------------------------- Statement

Statement::Statement(sqlite3_stmt* stmt, Connection* connection) : m_stmt(stmt), m_connection(connection) {}

Statement::~Statement() {
    if (m_stmt) sqlite3_finalize(m_stmt);
}

Statement::Statement(Statement&& other) noexcept
    : m_stmt(std::exchange(other.m_stmt, nullptr)),
      m_connection(other.m_connection),
      m_bind_error(other.m_bind_error) {}

Statement& Statement::operator=(Statement&& other) noexcept {
    if (this != &other) {
        if (m_stmt) sqlite3_finalize(m_stmt);
        m_stmt = std::exchange(other.m_stmt, nullptr);
        m_connection = other.m_connection;
        m_bind_error = other.m_bind_error;
    }
    return *this;
}

void Statement::note_bind(int rc) {
    if (rc != SQLITE_OK && m_bind_error == 0) m_bind_error = rc;
}

Statement& Statement::bind(int index, std::int64_t value) {
    note_bind(sqlite3_bind_int64(m_stmt, index, value));
    return *this;
}

Statement& Statement::bind(int index, double value) {
    note_bind(sqlite3_bind_double(m_stmt, index, value));
    return *this;
}

Statement& Statement::bind(int index, std::string_view value) {
    note_bind(sqlite3_bind_text64(m_stmt, index, value.data(), value.size(), SQLITE_TRANSIENT, SQLITE_UTF8));
    return *this;
}

Statement& Statement::bind_null(int index) {
    note_bind(sqlite3_bind_null(m_stmt, index));
    return *this;
}

Statement& Statement::bind_text_or_null(int index, std::string_view value) {
    return value.empty() ? bind_null(index) : bind(index, value);
}

Statement& Statement::bind(int index, std::optional<double> value) {
    return value ? bind(index, *value) : bind_null(index);
}

Statement& Statement::bind(int index, std::optional<std::int64_t> value) {
    return value ? bind(index, *value) : bind_null(index);
}

Result<bool> Statement::step(std::string_view what) {
    if (m_bind_error != 0) {
        const int rc = std::exchange(m_bind_error, 0);
        reset();
        return m_connection->error(rc, what);
    }
    const int rc = sqlite3_step(m_stmt);
    if (rc == SQLITE_ROW) return true;
    if (rc == SQLITE_DONE) {
        reset();
        return false;
    }
    Error error = m_connection->error(rc, what);
    reset();
    return error;
}

Result<void> Statement::run(std::string_view what) {
    for (;;) {
        Result<bool> row = step(what);
        if (!row) return row.error();
        if (!*row) return success();
    }
}

void Statement::reset() {
    sqlite3_reset(m_stmt);
    sqlite3_clear_bindings(m_stmt);
    m_bind_error = 0;
}

std::int64_t Statement::column_int64(int column) const {
    return sqlite3_column_int64(m_stmt, column);
}

double Statement::column_double(int column) const {
    return sqlite3_column_double(m_stmt, column);
}

std::string Statement::column_text(int column) const {
    const auto* text = reinterpret_cast<const char*>(sqlite3_column_text(m_stmt, column));
    const int bytes = sqlite3_column_bytes(m_stmt, column);
    return text ? std::string(text, static_cast<std::size_t>(bytes)) : std::string();
}

bool Statement::column_is_null(int column) const {
    return sqlite3_column_type(m_stmt, column) == SQLITE_NULL;
}

std::optional<double> Statement::column_optional_double(int column) const {
    if (column_is_null(column)) return std::nullopt;
    return column_double(column);
}

std::optional<std::int64_t> Statement::column_optional_int64(int column) const {
    if (column_is_null(column)) return std::nullopt;
    return column_int64(column);
}

// ---------------------------------------------------------------- Database

Result<Database> Database::open(const std::string& path, OpenMode mode,
                                std::chrono::milliseconds busy_timeout) {
    int flags = SQLITE_OPEN_NOMUTEX;
    switch (mode) {
        case OpenMode::read_only:
            flags |= SQLITE_OPEN_READONLY;
            break;
        case OpenMode::read_write:
            flags |= SQLITE_OPEN_READWRITE;
            break;
        case OpenMode::create:
            flags |= SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE;
            break;
    }
    auto connection = std::make_unique<Connection>();
    connection->path = path;
    connection->busy_timeout = busy_timeout;
    const int rc = sqlite3_open_v2(path.c_str(), &connection->db, flags, nullptr);
    if (rc != SQLITE_OK) return connection->error(rc, "opening it");
    sqlite3_extended_result_codes(connection->db, 1);
    sqlite3_busy_timeout(connection->db, static_cast<int>(busy_timeout.count()));
    Database database;
    database.m_connection = std::move(connection);
    return database;
}

Database::~Database() = default;
Database::Database(Database&& other) noexcept = default;
Database& Database::operator=(Database&& other) noexcept = default;

sqlite3* Database::handle() const {
    return m_connection ? m_connection->db : nullptr;
}

const std::string& Database::path() const {
    static const std::string k_none;
    return m_connection ? m_connection->path : k_none;
}

std::int64_t Database::changes() const {
    return sqlite3_changes64(m_connection->db);
}

bool Database::autocommit() const {
    return sqlite3_get_autocommit(m_connection->db) != 0;
}

Error Database::error(int rc, std::string_view what) const {
    return m_connection->error(rc, what);
}

Result<void> Database::exec(const char* sql, std::string_view what) {
    char* message = nullptr;
    const int rc = sqlite3_exec(m_connection->db, sql, nullptr, nullptr, &message);
    if (rc == SQLITE_OK) return success();
    std::string text = message ? message : sqlite3_errstr(rc);
    sqlite3_free(message);
    return describe_error(rc, text, what, m_connection->path, m_connection->busy_timeout);
}

Result<Statement> Database::prepare(std::string_view sql, std::string_view what) {
    sqlite3_stmt* stmt = nullptr;
    const int rc = sqlite3_prepare_v3(m_connection->db, sql.data(), static_cast<int>(sql.size()),
                                      SQLITE_PREPARE_PERSISTENT, &stmt, nullptr);
    if (rc != SQLITE_OK) return m_connection->error(rc, what);
    return Statement(stmt, m_connection.get());
}

Result<Statement*> Database::cached(std::string_view sql, std::string_view what) {
    auto found = m_connection->cache.find(sql);
    if (found != m_connection->cache.end()) {
        found->second.reset();
        return &found->second;
    }
    Result<Statement> prepared = prepare(sql, what);
    if (!prepared) return prepared.error();
    auto [it, inserted] = m_connection->cache.emplace(std::string(sql), std::move(*prepared));
    (void)inserted;
    return &it->second;
}

Result<std::int64_t> Database::query_int(const char* sql, std::string_view what) {
    Result<Statement> stmt = prepare(sql, what);
    if (!stmt) return stmt.error();
    Result<bool> row = stmt->step(what);
    if (!row) return row.error();
    return *row ? stmt->column_int64(0) : 0;
}

// ---------------------------------------------------------------- Transaction

Result<Transaction> Transaction::begin(Database& db, std::string_view what, TransactionKind kind) {
    const char* sql = kind == TransactionKind::write ? "BEGIN IMMEDIATE" : "BEGIN";
    if (auto begun = db.exec(sql, what); !begun) return begun.error();
    return Transaction(&db);
}

Transaction::Transaction(Transaction&& other) noexcept : m_db(std::exchange(other.m_db, nullptr)) {}

Transaction::~Transaction() {
    // After some errors (SQLITE_FULL, SQLITE_IOERR) SQLite has already rolled back.
    if (m_db && !m_db->autocommit()) (void)m_db->exec("ROLLBACK", "rolling back");
}

Result<void> Transaction::commit(std::string_view what) {
    Database* db = std::exchange(m_db, nullptr);
    Result<void> committed = db->exec("COMMIT", what);
    if (!committed && !db->autocommit()) (void)db->exec("ROLLBACK", "rolling back");
    return committed;
}

}  // namespace ncclsweep::results::sqlite
