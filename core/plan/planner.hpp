#pragma once
// Expansion of a validated spec into experiments (docs/spec.md "Expansion"): a lazy odometer
// over the axes (first axis slowest, zip groups as one digit), exclude, then include points,
// then NCCL's defaults points (core/plan/baseline.hpp; a second odometer over the digits that
// hold other axes). Nothing is materialised: 1,000,000 points take bounded memory.
#include <cstdint>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include "core/experiment.hpp"
#include "core/result.hpp"
#include "core/spec/spec.hpp"

namespace ncclsweep::inline plan {

/// Plans larger than this are refused unless PlanOptions::max_experiments allows them.
inline constexpr std::uint64_t k_default_max_experiments = 100000;

/// How to plan.
struct PlanOptions {
    std::uint64_t max_experiments = k_default_max_experiments;  ///< refuse bigger sweeps
    std::string engine_path = "tpverify";                       ///< argv[0] for `engine: tpverify`
};

/// Iterates the experiments of a spec in order. The spec must have passed validate_spec and
/// must outlive the planner.
class Planner {
public:
    /// Prepares the odometer; fails (bad_input) when the product before exclude plus the
    /// include points exceeds options.max_experiments.
    [[nodiscard]] static Result<Planner> create(const Spec& spec, const PlanOptions& options);

    /// Fills `out` with the next experiment; false at the end. Fails (bad_input) when the
    /// command cannot be rendered for this point.
    [[nodiscard]] Result<bool> next(Experiment& out);

    /// Starts again from experiment 1.
    void rewind();

    /// Points of the cartesian product before exclude (saturates at UINT64_MAX).
    [[nodiscard]] std::uint64_t product_size() const { return m_product_size; }
    /// Include points that survive deduplication.
    [[nodiscard]] std::size_t include_count() const { return m_includes.size(); }
    /// Combinations of the other axes that get a defaults point, before exclude and
    /// deduplication (0 with `baseline: none` or without NCCL axes).
    [[nodiscard]] std::uint64_t defaults_size() const { return m_defaults_size; }
    /// The spec being planned.
    [[nodiscard]] const Spec& spec() const { return *m_spec; }

private:
    struct Digit {
        std::vector<std::size_t> axes;  ///< axis indices that advance together (zip group or one axis)
        std::size_t radix = 1;
    };
    struct CompiledExclude {
        std::vector<std::pair<std::size_t, std::vector<bool>>>
            allowed;  ///< axis index -> value index matches
    };

    Planner(const Spec& spec, const PlanOptions& options);
    void compile();
    [[nodiscard]] bool excluded(const std::vector<std::size_t>& value_index) const;
    [[nodiscard]] bool in_product(const std::vector<Assignment>& point) const;
    void advance();
    void advance_defaults();
    [[nodiscard]] bool defaults_excluded() const;
    [[nodiscard]] Result<bool> build(const std::vector<Assignment>& params, Experiment& out);

    const Spec* m_spec;
    PlanOptions m_options;
    std::vector<Digit> m_digits;             ///< slowest first
    std::vector<std::size_t> m_value_index;  ///< current value index per axis
    std::vector<CompiledExclude> m_excludes;
    std::vector<std::vector<Assignment>> m_includes;  ///< deduplicated include points
    std::uint64_t m_product_size = 1;
    bool m_product_done = false;
    std::size_t m_next_include = 0;
    std::vector<std::size_t> m_defaults_digits;  ///< digits holding an axis that is not an NCCL variable
    std::vector<bool> m_nccl_axis;               ///< per axis: an NCCL variable (left unset by defaults)
    std::vector<std::size_t> m_default_index;    ///< value index per axis for the defaults odometer
    std::vector<CompiledExclude> m_defaults_excludes;  ///< exclude rules that name only other axes
    std::set<std::string> m_include_texts;             ///< canonical texts of the include points
    std::uint64_t m_defaults_size = 0;
    bool m_defaults_done = true;
    bool m_sweeps_nccl = false;  ///< some point sets an NCCL variable (then a point setting none is defaults)
    int m_next_id = 1;
    std::vector<Assignment> m_params;           ///< scratch
    std::vector<Assignment> m_workload_params;  ///< scratch: lower_case params of the point
};

/// Kind of command-line override.
enum class OverrideKind { axis, set };

/// `--axis NAME=v1,v2` (replace or add an axis) or `--set NAME=v` (fix one value).
struct Override {
    OverrideKind kind = OverrideKind::axis;
    std::string name;
    std::vector<std::string> values;
};

/// Parses the text of an override flag. For --axis, values are split at ',' (write "\," for a
/// comma inside a value, "\\" for a backslash); --set takes the rest of the text as one value.
[[nodiscard]] Result<Override> parse_override(OverrideKind kind, std::string_view text);

/// Applies overrides in order (docs/spec.md "Command-line overrides"). --axis replaces an axis's
/// values or appends a new axis (removing the name from env:/args:); --set NAME=v makes an
/// existing axis single-valued, else sets a fixed env value (UPPER_CASE) or engine arg
/// (lower_case; a single-value axis for command workloads). Marks read "--axis"/"--set"; run
/// validate_spec afterwards.
[[nodiscard]] Result<void> apply_overrides(Spec& spec, const std::vector<Override>& overrides);

}  // namespace ncclsweep::inline plan
