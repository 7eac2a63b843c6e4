// How often a search (core/search: prune + race) keeps and finds the true best point, against
// the full product, over seeded races with known answers; and what it spends.
//
//   bench_search [races=200] [noise=0.02] [margin=0.03]
//
// Each race is issue 15's sweep: NCCL_ALGO Ring/Tree x NCCL_PROTO LL/LL128/Simple x
// NCCL_MIN_NCHANNELS 1/2/4/8, 8 repeats; every Tree run fails (graph_capture). The 12 Ring
// points get true medians: one (chosen by the seed) is the best, the others uniformly
// 3%..25% behind it by default (at least `margin` behind). Every sample is the true median
// times (1 + N(0, noise)). The search is prune {after: 2} + race {2, 8, 0.95}; the full
// product gives every Ring point 8 samples. "found" = the point with the best sample median
// among those left ok is the true best; "kept" = the true best was never dropped.
#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <random>
#include <string>
#include <vector>

#include "core/search/search.hpp"

using namespace ncclsweep;

namespace {

struct Race {
    std::vector<search::Point> points;
    std::vector<double> truth;  ///< true median per point (0 = the point fails)
    std::size_t best = 0;
};

Race make_race(std::mt19937_64& rng, double margin) {
    Race race;
    int id = 1;
    for (std::string algo : {"Ring", "Tree"})
        for (std::string proto : {"LL", "LL128", "Simple"})
            for (std::string channels : {"1", "2", "4", "8"}) {
                race.points.push_back(
                    {id++, {{"NCCL_ALGO", algo}, {"NCCL_PROTO", proto}, {"NCCL_MIN_NCHANNELS", channels}}});
                race.truth.push_back(algo == "Tree" ? 0.0 : 1.0);
            }
    race.best = std::uniform_int_distribution<std::size_t>(0, 11)(rng);
    std::uniform_real_distribution<double> behind(margin, 0.25);
    for (std::size_t i = 0; i < 12; ++i) race.truth[i] = i == race.best ? 100.0 : 100.0 * (1 - behind(rng));
    return race;
}

search::Observation sample(const Race& race, std::size_t index, int repeats, double noise,
                           std::mt19937_64& rng) {
    search::Observation o;
    if (race.truth[index] == 0) {
        o.ok = false;
        o.runs = 1;
        o.failure_class = "graph_capture";
        return o;
    }
    std::normal_distribution<double> jitter(0, noise);
    o.runs = repeats;
    for (int r = 0; r < repeats; ++r) o.values.push_back(race.truth[index] * (1 + jitter(rng)));
    return o;
}

double median_of(std::vector<double> v) {
    std::sort(v.begin(), v.end());
    const std::size_t n = v.size();
    return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

}  // namespace

int main(int argc, char** argv) {
    const int races = argc > 1 ? std::atoi(argv[1]) : 200;
    const double noise = argc > 2 ? std::atof(argv[2]) : 0.02;
    const double margin = argc > 3 ? std::atof(argv[3]) : 0.03;
    spec::SearchSpec spec;
    spec.prune_after = 2;
    spec.race = spec::RaceSpec{2, 8, 0.95};
    const search::Settings settings =
        search::Settings::from(spec, 8, "tok_s", stats::Direction::higher_is_better);

    int kept = 0, found = 0, full_found = 0;
    long long runs = 0, full_runs = 0;
    for (int seed = 1; seed <= races; ++seed) {
        std::mt19937_64 rng(static_cast<std::uint64_t>(seed));
        const Race race = make_race(rng, margin);

        // The search.
        search::Search s(race.points, settings);
        std::vector<std::vector<double>> values(race.points.size());
        std::vector<bool> out(race.points.size(), false);
        for (;;) {
            const search::Step step = s.next();
            if (step.action == search::Action::stop) break;
            if (step.action == search::Action::skip) {
                out[step.point] = true;
                continue;
            }
            search::Observation o = sample(race, step.point, step.repeats, noise, rng);
            if (!o.ok) out[step.point] = true;
            values[step.point].insert(values[step.point].end(), o.values.begin(), o.values.end());
            s.record(step.point, o);
        }
        runs += s.progress().runs;
        kept += !out[race.best];
        std::size_t pick = race.points.size();
        for (std::size_t i = 0; i < race.points.size(); ++i)
            if (!out[i] && !values[i].empty() &&
                (pick == race.points.size() || median_of(values[i]) > median_of(values[pick])))
                pick = i;
        found += pick == race.best;

        // The full product: every point, 8 repeats (a failing one stops at its first).
        std::size_t full_pick = race.points.size();
        double full_best = 0;
        for (std::size_t i = 0; i < race.points.size(); ++i) {
            search::Observation o = sample(race, i, 8, noise, rng);
            full_runs += o.runs;
            if (!o.ok) continue;
            const double m = median_of(o.values);
            if (full_pick == race.points.size() || m > full_best) {
                full_pick = i;
                full_best = m;
            }
        }
        full_found += full_pick == race.best;
    }
    std::printf(
        "races %d, noise %.3f, others %.0f%%..25%% behind the best; search = prune {after: 2} + race {2, 8, "
        "0.95}\n",
        races, noise, margin * 100);
    std::printf("%-14s %12s %12s %14s\n", "", "kept best", "found best", "runs per race");
    std::printf("%-14s %11.1f%% %11.1f%% %14.1f\n", "search", 100.0 * kept / races, 100.0 * found / races,
                static_cast<double>(runs) / races);
    std::printf("%-14s %12s %11.1f%% %14.1f\n", "full product", "-", 100.0 * full_found / races,
                static_cast<double>(full_runs) / races);
    return 0;
}
