// The race's first-round decisions (docs/search.md "Racing the survivors"): axes that show no
// effect are collapsed to their first value, the noise of one run is estimated from the points
// that differ only in such an axis (and from repeats), and, while the samples are too few for the
// U test, that noise screens out the points clearly behind the leader and settles the points
// within the threshold of it.
#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <map>

#include "core/search/search.hpp"

namespace ncclsweep::search {
namespace {

/// Pairs of points differing only in one group need this many before the group can collapse:
/// fewer cannot show "no consistent effect" (a sign test over 6 pairs can reach p = 0.03).
constexpr std::size_t k_min_pairs = 6;
/// Draws of the noise needed before it is trusted for screening.
constexpr std::size_t k_min_noise_draws = 10;

/// Two-sided sign test: the chance of a split at least as uneven as `positive` of `n` under
/// "no effect" (each sign has probability 1/2).
double sign_test_p(std::size_t positive, std::size_t n) {
    const std::size_t k = std::min(positive, n - positive);
    double tail = 0;
    double term = std::pow(0.5, static_cast<double>(n));  // C(n, 0) / 2^n
    for (std::size_t i = 0; i <= k; ++i) {
        tail += term;
        term = term * static_cast<double>(n - i) / static_cast<double>(i + 1);
    }
    return std::min(1.0, 2 * tail);
}

double median_of_values(std::vector<double> values) {
    return stats::median(values);
}

std::string joined(const std::vector<std::string>& names) {
    std::string out;
    for (const auto& n : names) out += (out.empty() ? "" : "+") + n;
    return out;
}

}  // namespace

std::string_view choice_part(std::string_view effective) {
    for (std::string_view marker : {"; env:", "; tuner:"}) {
        const auto at = effective.find(marker);
        if (at != std::string_view::npos) effective = effective.substr(0, at);
    }
    if (effective.rfind("env:", 0) == 0 || effective.rfind("tuner:", 0) == 0) return {};
    return effective;
}

std::vector<std::vector<std::string>> parameter_groups(const std::vector<Point>& points) {
    std::vector<std::string> names;
    for (const auto& point : points)
        for (const auto& [name, value] : point.params)
            if (std::find(names.begin(), names.end(), name) == names.end()) names.push_back(name);
    // a and b change together when, over the points that set both, each value of one goes with
    // exactly one value of the other (a bijection), and both take more than one value.
    auto together = [&](const std::string& a, const std::string& b) {
        std::map<std::string, std::string> forward, backward;
        for (const auto& point : points) {
            const std::string *va = nullptr, *vb = nullptr;
            for (const auto& [n, v] : point.params) {
                if (n == a) va = &v;
                if (n == b) vb = &v;
            }
            if (!va || !vb) continue;
            auto [f, fresh_f] = forward.emplace(*va, *vb);
            auto [r, fresh_r] = backward.emplace(*vb, *va);
            if ((!fresh_f && f->second != *vb) || (!fresh_r && r->second != *va)) return false;
        }
        return forward.size() > 1;
    };
    std::vector<std::vector<std::string>> groups;
    std::vector<bool> placed(names.size(), false);
    for (std::size_t i = 0; i < names.size(); ++i) {
        if (placed[i]) continue;
        std::vector<std::string> group{names[i]};
        for (std::size_t j = i + 1; j < names.size(); ++j)
            if (!placed[j] && together(names[i], names[j])) {
                group.push_back(names[j]);
                placed[j] = true;
            }
        groups.push_back(std::move(group));
    }
    return groups;
}

void Search::collapse() {
    // The log ratio of two medians, positive when `a` is the better one.
    const bool higher = m_settings.direction == stats::Direction::higher_is_better;
    auto gain = [&](std::size_t a, std::size_t b) {
        const double ratio = std::log(*median_of(a) / *median_of(b));
        return higher ? ratio : -ratio;
    };
    auto usable = [&](std::size_t i) {
        const PointState& p = m_state[i];
        return p.state == State::alive && !p.values.empty() && *median_of(i) > 0;
    };
    for (const auto& group : parameter_groups(m_points)) {
        auto in_group = [&](const std::string& name) {
            return std::find(group.begin(), group.end(), name) != group.end();
        };
        // Each point that sets the whole group: the rest of its parameters (its slice) and its
        // group values. The first value in plan order is the one the group collapses to.
        std::map<std::vector<Assignment>, std::vector<std::size_t>> slices;
        std::map<std::size_t, std::vector<std::string>> values_of;
        std::optional<std::vector<std::string>> first;
        for (std::size_t i = 0; i < m_points.size(); ++i) {
            std::vector<Assignment> rest;
            std::vector<std::string> values;
            for (const auto& a : m_points[i].params) {
                if (in_group(a.first))
                    values.push_back(a.second);
                else
                    rest.push_back(a);
            }
            if (values.size() != group.size()) continue;
            if (!first) first = values;
            values_of[i] = values;
            slices[rest].push_back(i);
        }
        if (!first) continue;
        // Pairs: a point with another value of the group against its slice's first-value point.
        std::vector<double> differences;
        bool changes_choice = false;
        std::vector<std::size_t> others;  // the points the group would leave out
        for (const auto& [rest, members] : slices) {
            std::optional<std::size_t> kept;
            for (std::size_t i : members)
                if (values_of[i] == *first) kept = i;
            for (std::size_t i : members) {
                if (values_of[i] == *first) continue;
                if (m_state[i].state == State::pending || m_state[i].state == State::alive)
                    others.push_back(i);
                if (!kept || !usable(i) || !usable(*kept)) continue;
                // Inert (docs/results.md): the same effective NCCL choice, as recorded. Without
                // TUNING lines nothing shows that the axis left NCCL alone: no collapse.
                if (m_state[i].effective.empty() || m_state[i].effective != m_state[*kept].effective)
                    changes_choice = true;
                differences.push_back(gain(i, *kept));
            }
        }
        if (changes_choice || differences.size() < k_min_pairs || others.empty()) continue;
        // No effect: no consistent sign (sign test at the race's alpha), a median difference
        // within the threshold, and no pair beyond the threshold plus 4 robust spreads (an
        // effect confined to a few slices would show there).
        const double alpha = stats::level_from_confidence(m_settings.race->confidence);
        // Sign test over the pairs that differ at all (a tie says nothing about the direction).
        const auto positive = static_cast<std::size_t>(
            std::count_if(differences.begin(), differences.end(), [](double d) { return d > 0; }));
        const auto nonzero = static_cast<std::size_t>(
            std::count_if(differences.begin(), differences.end(), [](double d) { return d != 0; }));
        const double p = nonzero == 0 ? 1.0 : sign_test_p(positive, nonzero);
        const double centre = median_of_values(differences);
        std::vector<double> deviations;
        for (double d : differences) deviations.push_back(std::fabs(d - centre));
        const double spread = 1.4826 * median_of_values(deviations);
        const double limit = std::log(1 + stats::k_default_threshold);
        const bool confined = std::all_of(differences.begin(), differences.end(),
                                          [&](double d) { return std::fabs(d) <= limit + 4 * spread; });
        if (!(p > alpha) || !(std::fabs(centre) <= limit) || !confined) continue;
        for (double d : differences) m_pair_noise.push_back((d - centre) / std::sqrt(2.0));
        std::string kept_text;
        for (std::size_t k = 0; k < group.size(); ++k)
            kept_text += (kept_text.empty() ? "" : " ") + group[k] + "=" + (*first)[k];
        const std::string reason = fmt::format(
            "collapsed after round {}: {} shows no effect ({} pairs of points differing only in it: the same "
            "effective NCCL choice where recorded, median {:+.1f}%, sign test p={:.2g} > alpha {}); the race "
            "keeps its points with {}",
            m_progress.round, joined(group), differences.size(), 100 * (std::exp(centre) - 1), p,
            stats::format_level(alpha), kept_text);
        for (std::size_t i : others) {
            if (m_state[i].state != State::pending && m_state[i].state != State::alive) continue;
            drop(i, reason);
            ++m_progress.collapsed;
        }
    }
}

void Search::estimate_noise() {
    // Every draw is one run's relative noise: the collapsed pairs' differences / sqrt(2), and each
    // point's repeats around their mean (log scale), scaled by sqrt(n / (n - 1)).
    std::vector<double> draws = m_pair_noise;
    for (const PointState& point : m_state) {
        if (point.state != State::alive || point.values.size() < 2) continue;
        double mean = 0;
        for (double v : point.values) mean += std::log(v);
        mean /= static_cast<double>(point.values.size());
        const double n = static_cast<double>(point.values.size());
        for (double v : point.values) draws.push_back((std::log(v) - mean) * std::sqrt(n / (n - 1)));
    }
    if (draws.size() < k_min_noise_draws) return;
    for (double& d : draws) d = std::fabs(d);
    m_progress.noise = 1.4826 * median_of_values(draws);
}

void Search::screen(std::size_t leader_index) {
    const double noise = m_progress.noise;
    if (!(noise > 0)) return;
    const bool higher = m_settings.direction == stats::Direction::higher_is_better;
    const double alpha = stats::level_from_confidence(m_settings.race->confidence);
    const double limit = std::log(1 + stats::k_default_threshold);
    const auto& best = m_state[leader_index].values;
    std::vector<std::size_t> compared;
    for (std::size_t i : m_order)
        if (i != leader_index && m_state[i].state == State::alive && !m_state[i].values.empty())
            compared.push_back(i);
    if (compared.empty()) return;
    // Bonferroni over the points compared: one false drop in a round has probability <= alpha.
    const double z_drop = stats::normal_quantile(1 - alpha / static_cast<double>(compared.size()));
    const double z_settle = stats::normal_quantile(1 - alpha);
    const double leader_median = *median_of(leader_index);
    for (std::size_t i : compared) {
        PointState& point = m_state[i];
        const double gap_log = std::log(leader_median / *median_of(i)) * (higher ? 1 : -1);  // > 0: behind
        const double se = noise * std::sqrt(1.0 / static_cast<double>(best.size()) +
                                            1.0 / static_cast<double>(point.values.size()));
        const bool too_few_for_u =
            stats::mann_whitney_u(best, point.values, alpha).too_few;  // the U test cannot decide yet
        if (too_few_for_u && gap_log > limit + z_drop * se) {
            drop(i,
                 fmt::format("behind experiment {} after round {}: median {:.6g} vs {:.6g} ({:+.1f}%), more "
                             "than the {}% threshold plus {:.2f} x the noise of {:.2g}% per run allows "
                             "(n={}+{}; alpha {} over {} points)",
                             m_points[leader_index].exp_id, m_progress.round, *median_of(i), leader_median,
                             100 * (*median_of(i) / leader_median - 1),
                             stats::format_level(stats::k_default_threshold * 100), z_drop, 100 * noise,
                             best.size(), point.values.size(), stats::format_level(alpha), compared.size()));
            continue;
        }
        // Within the threshold of the leader at confidence 1 - alpha (two one-sided bounds): it
        // ends in the leader's tie group whatever more samples say, so it gets no more.
        const bool settled = std::fabs(gap_log) + z_settle * se <= limit;
        if (settled != point.settled) m_progress.settled += settled ? 1 : -1;
        point.settled = settled;
        if (settled) point.reason.clear();
    }
    if (m_state[leader_index].settled) {
        m_state[leader_index].settled = false;
        --m_progress.settled;
    }
}

}  // namespace ncclsweep::search
