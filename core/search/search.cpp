// The search: rounds, pruning of failing values, elimination of points that are behind, budget.
#include "core/search/search.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>

namespace ncclsweep::search {
namespace {

std::string id_list(const std::set<int>& ids) {
    std::string out;
    for (int id : ids) out += (out.empty() ? "" : ", ") + std::to_string(id);
    return out;
}

}  // namespace

std::string_view to_string(Mark mark) {
    return mark == Mark::pruned ? "pruned" : "dropped";
}

Settings Settings::from(const spec::SearchSpec& search, int repeats, const std::string& metric,
                        stats::Direction direction) {
    Settings settings;
    settings.repeats = std::max(1, repeats);
    settings.prune_after = search.prune_after;
    settings.race = search.race;
    settings.budget = search.budget;
    settings.metric = search.metric.empty() ? metric : search.metric;
    settings.direction = direction;
    settings.interleave = search.enabled();
    return settings;
}

int Settings::max_repeats() const {
    spec::SearchSpec search;
    search.race = race;
    return search.max_repeats(repeats);
}

int Settings::min_repeats() const {
    return race ? std::min(race->min_repeats, max_repeats()) : repeats;
}

Search::Search(std::vector<Point> points, Settings settings)
    : m_points(std::move(points)), m_settings(std::move(settings)), m_state(m_points.size()) {
    if (m_settings.interleave) {
        m_order = interleaved_order(m_points);
    } else {
        for (std::size_t i = 0; i < m_points.size(); ++i) m_order.push_back(i);
    }
    m_round_order = m_order;
}

long long Search::worst_case_runs() const {
    return static_cast<long long>(m_points.size()) * m_settings.max_repeats();
}

int Search::target(int round) const {
    // Samples double each round (2, 4, 8, ...) up to the maximum: every round at least
    // doubles the evidence, so a race needs few rounds.
    long long samples = m_settings.min_repeats();
    for (int r = 1; r < round && samples < m_settings.max_repeats(); ++r) samples *= 2;
    return static_cast<int>(std::min<long long>(samples, m_settings.max_repeats()));
}

std::optional<double> Search::median_of(std::size_t index) const {
    const auto& values = m_state[index].values;
    if (values.empty()) return std::nullopt;
    return stats::median(values);
}

void Search::restore_mark(std::size_t index, Mark mark) {
    PointState& point = m_state.at(index);
    point.state = mark == Mark::pruned ? State::pruned : State::dropped;
    point.announced = true;
    ++(mark == Mark::pruned ? m_progress.pruned : m_progress.dropped);
}

void Search::restore(std::size_t index, const Observation& so_far) {
    PointState& point = m_state.at(index);
    if (point.state == State::pruned) return;
    const bool dropped = point.state == State::dropped;
    account(index, so_far);
    if (dropped) point.state = State::dropped;
}

void Search::record(std::size_t index, const Observation& observation) {
    account(index, observation);
}

void Search::account(std::size_t index, const Observation& observation) {
    PointState& point = m_state.at(index);
    if (!observation.effective.empty()) point.effective = std::string(choice_part(observation.effective));
    point.runs += observation.runs;
    point.values.insert(point.values.end(), observation.values.begin(), observation.values.end());
    m_progress.runs += observation.runs;
    m_progress.seconds += observation.seconds;
    if (observation.ok) {
        point.state = State::alive;
        for (const auto& value : m_points[index].params) m_values[value].succeeded = true;
        return;
    }
    point.state = State::failed;
    if (m_settings.prune_after <= 0 || !observation.says_about_setting) return;
    for (const auto& value : m_points[index].params)
        m_values[value].failures[observation.failure_class].insert(m_points[index].exp_id);
    prune_values_of(index, observation.failure_class);
}

void Search::prune_values_of(std::size_t index, const std::string& failure_class) {
    // A value is to blame when it failed `after` times with this class, never succeeded, and its
    // failures are not all explained by another value that never succeeded either (two values
    // that always failed together are ambiguous: more points must run first).
    for (const auto& value : m_points[index].params) {
        const ValueRecord& record = m_values[value];
        if (record.succeeded) continue;
        const auto found = record.failures.find(failure_class);
        if (found == record.failures.end() || static_cast<int>(found->second.size()) < m_settings.prune_after)
            continue;
        const std::set<int>& evidence = found->second;
        bool explained = false;
        for (const auto& [other, other_record] : m_values) {
            if (other == value || other_record.succeeded) continue;
            auto theirs = other_record.failures.find(failure_class);
            if (theirs == other_record.failures.end()) continue;
            if (std::includes(theirs->second.begin(), theirs->second.end(), evidence.begin(),
                              evidence.end())) {
                // `other` failed in every one of these experiments too: it explains them at
                // least as well (equal sets are ambiguous until the points differ).
                explained = true;
                break;
            }
        }
        if (explained) continue;
        const std::string reason =
            fmt::format("{}={} failed {} time{} with {} (experiment{} {}) and never succeeded", value.first,
                        value.second, evidence.size(), evidence.size() == 1 ? "" : "s", failure_class,
                        evidence.size() == 1 ? "" : "s", id_list(evidence));
        for (std::size_t i = 0; i < m_points.size(); ++i) {
            if (m_state[i].state != State::pending) continue;
            const auto& params = m_points[i].params;
            if (std::find(params.begin(), params.end(), value) == params.end()) continue;
            m_state[i].state = State::pruned;
            m_state[i].reason = reason;
            ++m_progress.pruned;
        }
    }
}

std::optional<Step> Search::pending_mark() {
    for (std::size_t i : m_order) {
        PointState& point = m_state[i];
        if (point.announced || (point.state != State::pruned && point.state != State::dropped)) continue;
        point.announced = true;
        Step step;
        step.action = Action::skip;
        step.point = i;
        step.mark = point.state == State::pruned ? Mark::pruned : Mark::dropped;
        step.reason = point.reason;
        return step;
    }
    return std::nullopt;
}

std::optional<Step> Search::over_budget(int repeats) const {
    const spec::Budget& budget = m_settings.budget;
    if (budget.empty()) return std::nullopt;
    bool over = false;
    if (budget.runs > 0) over = m_progress.runs + repeats > budget.runs;
    if (budget.seconds > 0 && m_progress.runs > 0) {
        const double per_run = m_progress.seconds / m_progress.runs;
        over = over || m_progress.seconds + per_run * repeats > budget.seconds;
    }
    if (budget.seconds > 0 && m_progress.seconds >= budget.seconds) over = true;
    if (!over) return std::nullopt;
    Step step;
    step.action = Action::stop;
    step.budget_spent = true;
    step.reason = fmt::format(
        "budget of {} spent ({} runs, {:.0f} s) in round {}; the best so far is the answer, "
        "a resume with a larger --budget continues",
        budget.to_string(), m_progress.runs, m_progress.seconds, m_progress.round);
    return step;
}

std::optional<Step> Search::work_in_round() {
    const int wanted = target(m_progress.round);
    for (std::size_t i : m_round_order) {
        const PointState& point = m_state[i];
        if (point.state != State::pending && point.state != State::alive) continue;
        if (point.runs >= wanted || point.settled) continue;
        Step step;
        step.action = Action::run;
        step.point = i;
        step.first_repeat = point.runs;
        step.repeats = wanted - point.runs;
        return step;
    }
    return std::nullopt;
}

std::optional<std::size_t> Search::leader() const {
    std::optional<std::size_t> best;
    for (std::size_t i : m_order) {
        if (m_state[i].state != State::alive || m_state[i].values.empty()) continue;
        if (!best) {
            best = i;
            continue;
        }
        const double mine = *median_of(i), theirs = *median_of(*best);
        if (m_settings.direction == stats::Direction::higher_is_better ? mine > theirs : mine < theirs)
            best = i;
    }
    return best;
}

bool Search::racing(std::size_t index) const {
    const PointState& point = m_state[index];
    return (point.state == State::alive || point.state == State::pending) && !point.settled;
}

void Search::drop(std::size_t index, std::string reason) {
    PointState& point = m_state[index];
    if (point.settled) --m_progress.settled;
    point.state = State::dropped;
    point.settled = false;
    point.reason = std::move(reason);
    ++m_progress.dropped;
}

void Search::eliminate() {
    if (!m_settings.race) return;
    // After the first round (one sample per point by default): axes that show no effect are
    // collapsed to their first value, which also estimates the noise (search_screen.cpp).
    if (!m_collapse_done) {
        m_collapse_done = true;
        collapse();
    }
    estimate_noise();
    auto best_point = leader();
    if (!best_point) return;
    // The test and threshold of `diff` (core/stats compare): a point is dropped only when the
    // U test says it is worse than the leader at alpha = 1 - confidence AND by more than the
    // minimum effect that counts.
    const stats::CompareOptions options{stats::level_from_confidence(m_settings.race->confidence),
                                        stats::k_default_threshold, m_settings.direction};
    const auto& best = m_state[*best_point].values;
    for (std::size_t i : m_order) {
        PointState& point = m_state[i];
        if (i == *best_point || point.state != State::alive || point.values.empty()) continue;
        auto verdict = stats::compare(best, point.values, options);
        if (!verdict || verdict->verdict != stats::Verdict::regression) continue;
        drop(i, fmt::format("behind experiment {} after round {}: median {:.6g} vs {:.6g} ({:+.1f}%), {}, "
                            "n={}+{}",
                            m_points[*best_point].exp_id, m_progress.round, verdict->candidate.median,
                            verdict->base.median, verdict->delta * 100, verdict->reason, best.size(),
                            point.values.size()));
    }
    // Where the samples are too few for the U test: the noise estimate screens out the points
    // clearly behind, and settles those within the threshold of the leader.
    screen(*best_point);
}

void Search::order_round_for_budget() {
    // When the budget cannot pay for the whole round, the leader and the points closest to it
    // get their samples first: that is where the answer is.
    m_round_order = m_order;
    if (m_settings.budget.runs <= 0 && m_settings.budget.seconds <= 0) return;
    std::stable_sort(m_round_order.begin(), m_round_order.end(), [&](std::size_t a, std::size_t b) {
        auto ma = median_of(a), mb = median_of(b);
        if (!ma || !mb) return ma.has_value() && !mb.has_value();
        return m_settings.direction == stats::Direction::higher_is_better ? *ma > *mb : *ma < *mb;
    });
}

Step Search::next() {
    if (m_stopped) return *m_stopped;
    for (;;) {
        if (auto mark = pending_mark()) return *mark;
        if (auto work = work_in_round()) {
            if (auto stop = over_budget(work->repeats)) {
                m_stopped = stop;
                return *stop;
            }
            return *work;
        }
        // The round is complete: drop the points that are behind, then decide whether another
        // round can still change the answer.
        if (m_eliminated_round < m_progress.round) {
            m_eliminated_round = m_progress.round;
            eliminate();
            if (auto mark = pending_mark()) return *mark;
        }
        int alive = 0, racing_points = 0;
        for (std::size_t i = 0; i < m_state.size(); ++i) {
            alive += m_state[i].state == State::alive || m_state[i].state == State::pending;
            racing_points += racing(i);
        }
        Step done;
        done.action = Action::stop;
        // NCCL's defaults point within the threshold of the leader (settled) answers the question
        // the race asks: no setting beats NCCL's defaults by more than the threshold, and no
        // point can win `results best`'s tie rule against it (nothing set, nothing changed).
        if (m_settings.race && m_collapse_done)
            for (std::size_t i : m_order)
                if (m_points[i].defaults && m_state[i].state == State::alive && m_state[i].settled) {
                    done.reason = fmt::format(
                        "decided after round {}: NCCL's defaults (experiment {}) is within the {}% threshold "
                        "of "
                        "the leader (experiment {}), so no setting can beat it by more than that; {} point{} "
                        "still raced, {} settled",
                        m_progress.round, m_points[i].exp_id,
                        stats::format_level(stats::k_default_threshold * 100),
                        leader() ? m_points[*leader()].exp_id : 0, racing_points,
                        racing_points == 1 ? "" : "s", m_progress.settled);
                    m_stopped = done;
                    return done;
                }
        if (m_settings.race && racing_points <= 1) {
            if (alive == racing_points)
                done.reason = alive == 1
                                  ? fmt::format(
                                        "one point is left after round {}: every other one was pruned, "
                                        "failed or dropped",
                                        m_progress.round)
                                  : "no point is left to race";
            else
                done.reason = fmt::format(
                    "decided after round {}: {} point{} within the {}% threshold of the leader (settled), "
                    "the others pruned, failed or dropped; `results best` picks among them by its tie rule",
                    m_progress.round, alive - racing_points, alive - racing_points == 1 ? " is" : "s are",
                    stats::format_level(stats::k_default_threshold * 100));
            m_stopped = done;
            return done;
        }
        if (target(m_progress.round) >= m_settings.max_repeats()) {
            done.reason = m_settings.race
                              ? fmt::format("{} points reached {} repeats without one being clearly best",
                                            alive, m_settings.max_repeats())
                              : "";
            m_stopped = done;
            return done;
        }
        ++m_progress.round;
        order_round_for_budget();
    }
}

}  // namespace ncclsweep::search
