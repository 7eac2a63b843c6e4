// The order that shows a crashing value early, and what a search says before it starts.
#include <fmt/format.h>

#include <algorithm>
#include <limits>

#include "core/search/search.hpp"

namespace ncclsweep::search {
namespace {

constexpr std::size_t k_interleave_limit = 4000;  ///< greedy order is O(n^2 x axes)

std::string per_run(double seconds) {
    if (seconds >= 3600) return fmt::format("{:.1f} h", seconds / 3600);
    if (seconds >= 60) return fmt::format("{:.1f} min", seconds / 60);
    return fmt::format("{:.1f} s", seconds);
}

}  // namespace

std::vector<std::size_t> interleaved_order(const std::vector<Point>& points) {
    std::vector<std::size_t> order;
    order.reserve(points.size());
    if (points.size() > k_interleave_limit) {
        for (std::size_t i = 0; i < points.size(); ++i) order.push_back(i);
        return order;
    }
    // Each next point maximises the summed age of its values (steps since each was last run;
    // a value never run counts as older than any), so every value of every axis comes up early.
    const long long never = static_cast<long long>(points.size()) + 1;
    std::map<Assignment, long long> last_seen;
    std::vector<bool> taken(points.size(), false);
    for (std::size_t step = 0; step < points.size(); ++step) {
        long long best_score = -1;
        std::size_t best = 0;
        for (std::size_t i = 0; i < points.size(); ++i) {
            if (taken[i]) continue;
            long long score = 0;
            for (const auto& value : points[i].params) {
                auto seen = last_seen.find(value);
                score += seen == last_seen.end() ? never : static_cast<long long>(step) - seen->second;
            }
            if (score > best_score) {
                best_score = score;
                best = i;
            }
        }
        taken[best] = true;
        order.push_back(best);
        for (const auto& value : points[best].params) last_seen[value] = static_cast<long long>(step);
    }
    return order;
}

std::vector<std::string> Search::plan_lines() const {
    std::vector<std::string> lines;
    const long long points = static_cast<long long>(m_points.size());
    const long long first_round = points * m_settings.min_repeats();
    const long long worst = worst_case_runs();
    if (m_settings.prune_after > 0)
        lines.push_back(
            fmt::format("prune: a value that failed {} time{} with one failure class and never succeeded "
                        "is not run again (its points are recorded `pruned`)",
                        m_settings.prune_after, m_settings.prune_after == 1 ? "" : "s"));
    if (m_settings.race) {
        std::string rounds;
        for (int round = 1;; ++round) {
            rounds += (rounds.empty() ? "" : ", ") + std::to_string(target(round));
            if (target(round) >= m_settings.max_repeats()) break;
        }
        lines.push_back(fmt::format(
            "race on {} ({} is better): samples per point by round {}; after the first round an axis that "
            "shows no effect is collapsed to its first value; after each round a point worse than the leader "
            "by the U test at alpha {} and by more than {}% (or, with too few samples for the test, by more "
            "than the threshold plus the measured noise allows) is recorded `dropped`, a point within {}% of "
            "the leader gets no more samples",
            m_settings.metric,
            m_settings.direction == stats::Direction::higher_is_better ? "higher" : "lower", rounds,
            stats::format_level(stats::level_from_confidence(m_settings.race->confidence)),
            stats::format_level(stats::k_default_threshold * 100),
            stats::format_level(stats::k_default_threshold * 100)));
    }
    lines.push_back(fmt::format("worst case: {} runs ({} points x {} repeats); the first round needs {}",
                                worst, points, m_settings.max_repeats(), first_round));
    const spec::Budget& budget = m_settings.budget;
    if (budget.runs > 0) {
        if (budget.runs >= worst)
            lines.push_back(fmt::format("budget {}: covers the worst case", budget.to_string()));
        else if (budget.runs >= first_round)
            lines.push_back(fmt::format("budget {}: covers the first round and {} more runs for the leaders",
                                        budget.to_string(), budget.runs - first_round));
        else
            lines.push_back(
                fmt::format("budget {}: covers {} of the first round's {} runs; the rest stays pending "
                            "(a resume with a larger --budget runs it)",
                            budget.to_string(), budget.runs, first_round));
    } else if (budget.seconds > 0) {
        lines.push_back(fmt::format(
            "budget {}: the first round fits if a run takes at most {}, the worst case if at "
            "most {}; the sweep stops with the best answer so far when the next run would not fit",
            budget.to_string(), per_run(budget.seconds / std::max(1LL, first_round)),
            per_run(budget.seconds / std::max(1LL, worst))));
    }
    return lines;
}

}  // namespace ncclsweep::search
