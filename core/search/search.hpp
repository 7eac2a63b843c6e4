#pragma once
// What runs next (docs/search.md): the full product in plan order, or a search that prunes
// failing values, runs every point once, collapses the axes that show no effect, races the
// survivors (dropping points behind the leader, settling those within the threshold of it) and
// keeps to a budget. The sweep loop asks `next()`
// before each dispatch (run these repeats of a point, record a point as pruned or dropped,
// or stop) and reports every dispatch back with `record()`. The search runs nothing itself,
// so it is tested and benchmarked without a target.
#include <cstddef>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "core/experiment.hpp"
#include "core/spec/spec.hpp"
#include "core/stats/stats.hpp"

namespace ncclsweep::search {

/// How a search runs: the spec's `search:` with the run's repeats and metric filled in.
struct Settings {
    int repeats = 1;                     ///< samples per point without a race (the spec's `repeats`)
    int prune_after = 0;                 ///< failures of one value with one class that prune it (0 = off)
    std::optional<spec::RaceSpec> race;  ///< absent = every point gets `repeats` in one round
    spec::Budget budget;                 ///< empty = no limit
    std::string metric = "tok_s";        ///< what the race compares
    stats::Direction direction = stats::Direction::higher_is_better;
    bool interleave = false;  ///< order points for early information (any search setting)
    /// Settings for `search` (an absent section gives the full product in plan order).
    [[nodiscard]] static Settings from(const spec::SearchSpec& search, int repeats, const std::string& metric,
                                       stats::Direction direction);
    /// Samples a point gets at most.
    [[nodiscard]] int max_repeats() const;
    /// Samples every point gets in the first round.
    [[nodiscard]] int min_repeats() const;
};

/// One point as the search sees it: its id and axis values.
struct Point {
    int exp_id = 0;
    std::vector<Assignment> params;
    bool defaults = false;  ///< NCCL's defaults point (Experiment::defaults): what the race ends on
};

/// What the loop does next.
enum class Action { run, skip, stop };
/// Why a point is left out: `pruned` never ran (a value of it keeps failing), `dropped` ran
/// and is statistically behind the leader.
enum class Mark { pruned, dropped };

/// "pruned" or "dropped".
[[nodiscard]] std::string_view to_string(Mark mark);

/// One decision of the search.
struct Step {
    Action action = Action::stop;
    std::size_t point = 0;      ///< run, skip: index into the points
    int first_repeat = 0;       ///< run: the repeats [first_repeat, first_repeat + repeats)
    int repeats = 0;            ///< run
    Mark mark = Mark::pruned;   ///< skip
    std::string reason;         ///< skip: the evidence; stop: how the search ended
    bool budget_spent = false;  ///< stop: the budget ended it (a resume with a larger one continues)
};

/// What one dispatch of a point showed (or, for restore, everything a point showed so far).
struct Observation {
    bool ok = true;                  ///< every repeat ended ok
    std::string effective;           ///< NCCL's effective choice as recorded ("" = not seen)
    bool says_about_setting = true;  ///< false for infrastructure and timeouts: never prunes
    std::string failure_class;       ///< when not ok
    std::vector<double> values;      ///< samples of the race metric
    int runs = 0;                    ///< workload runs started
    double seconds = 0;              ///< time those runs took
};

/// Counters for progress lines and the summary.
struct Progress {
    int round = 1;
    int pruned = 0;
    int dropped = 0;     ///< dropped, the collapsed ones included
    int collapsed = 0;   ///< dropped because an axis of theirs showed no effect
    int settled = 0;     ///< ok points within the threshold of the leader: no more samples
    double noise = 0;    ///< the per-run relative noise the race estimated (0 = none yet)
    int runs = 0;        ///< workload runs spent (restored ones included)
    double seconds = 0;  ///< their time
};

/// The search over a sweep's points.
class Search {
public:
    /// `points` in plan order.
    Search(std::vector<Point> points, Settings settings);

    /// Resume: point `index` was recorded as pruned or dropped (with `reason`). Call before restore().
    void restore_mark(std::size_t index, Mark mark);
    /// Resume: everything point `index` showed before (all its samples and runs).
    void restore(std::size_t index, const Observation& so_far);

    /// The next decision. Once it returned stop, it keeps returning stop.
    [[nodiscard]] Step next();
    /// Reports what the run step for point `index` showed.
    void record(std::size_t index, const Observation& observation);

    /// Counters so far.
    [[nodiscard]] const Progress& progress() const { return m_progress; }
    /// Workload runs of the full product: points x max repeats.
    [[nodiscard]] long long worst_case_runs() const;
    /// Lines for people before the sweep starts: the settings, the worst case, what the budget covers.
    [[nodiscard]] std::vector<std::string> plan_lines() const;
    /// The order points are first run in (indices; plan order without interleave).
    [[nodiscard]] const std::vector<std::size_t>& order() const { return m_order; }

private:
    enum class State { pending, alive, failed, pruned, dropped };
    struct PointState {
        State state = State::pending;
        std::vector<double> values;
        int runs = 0;
        bool announced = false;  ///< its mark was handed out by next() (or restored)
        bool settled = false;    ///< alive, within the threshold of the leader: no more samples
        std::string effective;   ///< NCCL's effective choice (its TUNING part)
        std::string reason;
    };
    /// Failures of one value: class -> experiment ids.
    struct ValueRecord {
        std::map<std::string, std::set<int>> failures;
        bool succeeded = false;
    };

    [[nodiscard]] int target(int round) const;
    [[nodiscard]] std::optional<Step> pending_mark();
    [[nodiscard]] std::optional<Step> work_in_round();
    [[nodiscard]] std::optional<Step> over_budget(int repeats) const;
    void account(std::size_t index, const Observation& observation);
    void prune_values_of(std::size_t index, const std::string& failure_class);
    void eliminate();
    void collapse();
    void estimate_noise();
    void screen(std::size_t leader);
    [[nodiscard]] std::optional<std::size_t> leader() const;
    [[nodiscard]] bool racing(std::size_t index) const;
    void drop(std::size_t index, std::string reason);
    void order_round_for_budget();
    [[nodiscard]] std::optional<double> median_of(std::size_t index) const;

    std::vector<Point> m_points;
    Settings m_settings;
    std::vector<PointState> m_state;
    std::vector<std::size_t> m_order;        ///< first-round order
    std::vector<std::size_t> m_round_order;  ///< this round's order
    std::map<Assignment, ValueRecord> m_values;
    Progress m_progress;
    int m_eliminated_round = 0;
    bool m_collapse_done = false;
    std::vector<double> m_pair_noise;  ///< collapsed pairs' log differences / sqrt(2): N(0, noise^2) draws
    std::optional<Step> m_stopped;
};

/// Groups of parameter names that only ever change together over `points` (a zip: every value
/// of one maps to exactly one of the other and back), each name in one group, in first-seen order.
[[nodiscard]] std::vector<std::vector<std::string>> parameter_groups(const std::vector<Point>& points);

/// The TUNING part of a stored effective NCCL summary: what the choice comparison looks at
/// ("env:" and "tuner:" parts left out).
[[nodiscard]] std::string_view choice_part(std::string_view effective);

/// The order of `points` (indices) in which each axis's values alternate, so a value that
/// crashes shows itself early: each next point is the one whose values were seen longest ago
/// (never seen first), ties in plan order. Plan order beyond 4000 points.
[[nodiscard]] std::vector<std::size_t> interleaved_order(const std::vector<Point>& points);

}  // namespace ncclsweep::search
