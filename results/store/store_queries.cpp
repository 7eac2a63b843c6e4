// Store: reading back (sweep references, lists, experiments with samples).
#include <fmt/format.h>

#include <algorithm>
#include <charconv>

#include "results/store/json_columns.hpp"
#include "results/store/store.hpp"

namespace ncclsweep::results {
namespace {

constexpr const char* k_sweep_columns =
    "SELECT id, name, tag, spec_path, spec_text, spec_hash, target, host_preflight, tool_version, repeats, "
    "created_at, started_at, ended_at, state, end_reason, resumes, runner_pid, runner_host, "
    "plan_fingerprint, metrics, backend, uuid, inherited_env, runner_process "
    "FROM sweeps ";

SweepInfo read_sweep(const sqlite::Statement& s) {
    SweepInfo info;
    info.id = s.column_int64(0);
    info.record.name = s.column_text(1);
    info.record.tag = s.column_text(2);
    info.record.spec_path = s.column_text(3);
    info.record.spec_text = s.column_text(4);
    info.record.spec_hash = s.column_text(5);
    info.record.target = s.column_text(6);
    info.record.host_preflight = s.column_text(7);
    info.record.tool_version = s.column_text(8);
    info.record.repeats = static_cast<int>(s.column_int64(9));
    info.created_at = s.column_text(10);
    info.started_at = s.column_text(11);
    info.ended_at = s.column_text(12);
    info.state = parse_sweep_state(s.column_text(13)).value_or(SweepState::failed);
    info.end_reason = s.column_text(14);
    info.resumes = static_cast<int>(s.column_int64(15));
    info.runner_pid = s.column_optional_int64(16);
    info.runner_host = s.column_text(17);
    info.record.plan_fingerprint = s.column_text(18);
    // Definitions that cannot be read fall back to the default rule, like a sweep from before v3.
    if (auto metrics = metrics_from_json(s.column_text(19))) info.record.metrics = std::move(*metrics);
    info.record.backend = s.column_text(20);
    info.record.uuid = s.column_text(21);
    info.record.inherited_known = !s.column_is_null(22);
    info.record.inherited_env = detail::assignments_from_json(s.column_text(22));
    info.runner_process = s.column_text(23);
    info.runner_alive = probe_runner(info);
    return info;
}

std::optional<std::int64_t> parse_positive(std::string_view text) {
    std::int64_t value = 0;
    if (text.empty() || !std::all_of(text.begin(), text.end(), [](char c) { return c >= '0' && c <= '9'; })) {
        return std::nullopt;
    }
    const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
    if (ec != std::errc() || end != text.data() + text.size()) return std::nullopt;
    return value;
}

/// A parsed "latest[:TAG][~N]".
struct LatestRef {
    std::string tag;
    std::int64_t back = 0;
};

std::optional<LatestRef> parse_latest(std::string_view ref) {
    constexpr std::string_view k_latest = "latest";
    if (ref.substr(0, k_latest.size()) != k_latest) return std::nullopt;
    std::string_view rest = ref.substr(k_latest.size());
    LatestRef parsed;
    if (const auto tilde = rest.rfind('~'); tilde != std::string_view::npos) {
        const auto back = parse_positive(rest.substr(tilde + 1));
        if (back) {
            parsed.back = *back;
            rest = rest.substr(0, tilde);
        }
    }
    if (rest.empty()) return parsed;
    if (rest.front() != ':' || rest.size() == 1) return std::nullopt;
    parsed.tag = std::string(rest.substr(1));
    return parsed;
}

}  // namespace

Result<std::int64_t> Store::resolve_sweep_ref(std::string_view ref) {
    const std::string what = fmt::format("looking up sweep '{}'", ref);
    if (const auto id = parse_positive(ref)) {
        Result<sqlite::Statement*> s = m_db.cached("SELECT id FROM sweeps WHERE id = ?1", what);
        if (!s) return s.error();
        Result<bool> row = (*s)->bind(1, *id).step(what);
        if (!row) return row.error();
        (*s)->reset();
        if (*row) return *id;
        return Error::bad_input(
            fmt::format("no sweep {} in {}; `ncclsweep results list` shows the sweeps there", *id, path()));
    }
    const auto latest = parse_latest(ref);
    if (!latest) {
        return Error::bad_input(fmt::format(
            "'{}' is not a sweep reference; use an id (17), latest, latest~N, latest:TAG or latest:TAG~N",
            ref));
    }
    const bool tagged = !latest->tag.empty();
    Result<sqlite::Statement*> s = m_db.cached(
        "SELECT id FROM sweeps WHERE ?1 IS NULL OR tag = ?1 ORDER BY id DESC LIMIT 1 OFFSET ?2", what);
    if (!s) return s.error();
    (*s)->bind_text_or_null(1, latest->tag).bind(2, latest->back);
    Result<bool> row = (*s)->step(what);
    if (!row) return row.error();
    if (*row) {
        const std::int64_t id = (*s)->column_int64(0);
        (*s)->reset();
        return id;
    }
    Result<sqlite::Statement*> count =
        m_db.cached("SELECT count(*) FROM sweeps WHERE ?1 IS NULL OR tag = ?1", what);
    if (!count) return count.error();
    Result<bool> counted = (*count)->bind_text_or_null(1, latest->tag).step(what);
    if (!counted) return counted.error();
    const std::int64_t matching = *counted ? (*count)->column_int64(0) : 0;
    (*count)->reset();
    if (matching == 0) {
        return Error::bad_input(
            tagged ? fmt::format("no sweep tagged '{}' in {}; `ncclsweep results list` shows "
                                 "the tags there",
                                 latest->tag, path())
                   : fmt::format("no sweeps in {} yet; run one with `ncclsweep run SPEC`", path()));
    }
    return Error::bad_input(fmt::format("'{}' needs {} sweeps{} but {} has only {}", ref, latest->back + 1,
                                        tagged ? fmt::format(" tagged '{}'", latest->tag) : std::string(),
                                        path(), matching));
}

Result<std::vector<SweepInfo>> Store::list_sweeps(std::string_view tag, int limit) {
    const std::string what = "listing sweeps";
    Result<sqlite::Transaction> tx = sqlite::Transaction::begin(m_db, what, sqlite::TransactionKind::read);
    if (!tx) return tx.error();
    const std::string sql =
        std::string(k_sweep_columns) + "WHERE ?1 IS NULL OR tag = ?1 ORDER BY id DESC LIMIT ?2";
    Result<sqlite::Statement*> s = m_db.cached(sql, what);
    if (!s) return s.error();
    (*s)->bind_text_or_null(1, tag).bind(2, std::int64_t{limit > 0 ? limit : -1});
    std::vector<SweepInfo> sweeps;
    for (;;) {
        Result<bool> row = (*s)->step(what);
        if (!row) return row.error();
        if (!*row) break;
        sweeps.push_back(read_sweep(**s));
    }
    if (sweeps.empty()) return sweeps;
    Result<sqlite::Statement*> counts = m_db.cached(
        "SELECT sweep_id, status, count(*) FROM experiments WHERE sweep_id BETWEEN ?1 AND ?2 "
        "GROUP BY sweep_id, status",
        what);
    if (!counts) return counts.error();
    (*counts)->bind(1, sweeps.back().id).bind(2, sweeps.front().id);
    for (;;) {
        Result<bool> row = (*counts)->step(what);
        if (!row) return row.error();
        if (!*row) break;
        const std::int64_t id = (*counts)->column_int64(0);
        const auto it = std::lower_bound(sweeps.begin(), sweeps.end(), id,
                                         [](const SweepInfo& info, std::int64_t v) { return info.id > v; });
        const auto status = parse_experiment_status((*counts)->column_text(1));
        if (it != sweeps.end() && it->id == id && status) {
            it->counts.at(*status) = static_cast<int>((*counts)->column_int64(2));
        }
    }
    return sweeps;
}

Result<SweepInfo> Store::get_sweep(std::int64_t sweep) {
    const std::string what = fmt::format("reading sweep {}", sweep);
    Result<sqlite::Transaction> tx = sqlite::Transaction::begin(m_db, what, sqlite::TransactionKind::read);
    if (!tx) return tx.error();
    Result<sqlite::Statement*> s = m_db.cached(std::string(k_sweep_columns) + "WHERE id = ?1", what);
    if (!s) return s.error();
    Result<bool> row = (*s)->bind(1, sweep).step(what);
    if (!row) return row.error();
    if (!*row) return Error::bad_input(fmt::format("no sweep {} in {}", sweep, path()));
    SweepInfo info = read_sweep(**s);
    (*s)->reset();
    Result<sqlite::Statement*> counts =
        m_db.cached("SELECT status, count(*) FROM experiments WHERE sweep_id = ?1 GROUP BY status", what);
    if (!counts) return counts.error();
    (*counts)->bind(1, sweep);
    for (;;) {
        Result<bool> next = (*counts)->step(what);
        if (!next) return next.error();
        if (!*next) break;
        if (const auto status = parse_experiment_status((*counts)->column_text(0))) {
            info.counts.at(*status) = static_cast<int>((*counts)->column_int64(1));
        }
    }
    return info;
}

Result<std::vector<Event>> Store::load_sweep_events(std::int64_t sweep) {
    const std::string what = fmt::format("reading events of sweep {}", sweep);
    Result<sqlite::Statement*> s = m_db.cached(
        "SELECT at, level, code, message FROM events WHERE sweep_id = ?1 AND exp_id IS NULL ORDER BY id",
        what);
    if (!s) return s.error();
    (*s)->bind(1, sweep);
    std::vector<Event> events;
    for (;;) {
        Result<bool> row = (*s)->step(what);
        if (!row) return row.error();
        if (!*row) break;
        events.push_back(Event{parse_event_level((*s)->column_text(1)).value_or(EventLevel::warning),
                               (*s)->column_text(2), (*s)->column_text(3), (*s)->column_text(0)});
    }
    return events;
}

Result<std::string> Store::integrity_check() {
    const std::string what = "checking its integrity";
    Result<sqlite::Statement> s = m_db.prepare("PRAGMA integrity_check", what);
    if (!s) return s.error();
    std::string findings;
    for (;;) {
        Result<bool> row = s->step(what);
        if (!row) return row.error();
        if (!*row) break;
        if (!findings.empty()) findings += '\n';
        findings += s->column_text(0);
    }
    return findings;
}

Result<std::int64_t> Store::resume_candidate(std::string_view ref, std::string_view name) {
    if (!ref.empty() && ref != "auto") return resolve_sweep_ref(ref);
    auto sweeps = list_sweeps();
    if (!sweeps) return sweeps.error();
    for (const auto& info : *sweeps)  // newest first
        if (info.record.name == name && info.state != SweepState::done) return info.id;
    return Error::bad_input(
        fmt::format("--resume: no unfinished sweep named '{}' in the database; "
                    "`ncclsweep results list` shows the sweeps",
                    name));
}

}  // namespace ncclsweep::results
