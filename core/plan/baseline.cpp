// NCCL's defaults point: the one rule that recognises it (core/plan/baseline.hpp).
#include "core/plan/baseline.hpp"

#include <algorithm>

namespace ncclsweep::inline plan {

bool is_nccl_variable(std::string_view name) {
    return name.size() > 5 && name.substr(0, 5) == "NCCL_";
}

std::vector<std::string> swept_nccl_variables(std::span<const Experiment* const> points) {
    std::vector<std::string> names;
    for (const Experiment* point : points)
        for (const auto& [name, value] : point->params)
            if (is_nccl_variable(name) && std::find(names.begin(), names.end(), name) == names.end())
                names.push_back(name);
    return names;
}

void mark_defaults_points(std::span<Experiment* const> points) {
    std::vector<const Experiment*> view(points.begin(), points.end());
    const bool sweeps_nccl = !swept_nccl_variables(view).empty();
    for (Experiment* point : points)
        point->defaults =
            sweeps_nccl && std::none_of(point->params.begin(), point->params.end(),
                                        [](const Assignment& a) { return is_nccl_variable(a.first); });
}

std::string point_text(const Experiment& experiment) {
    std::string out = experiment.defaults ? std::string(k_defaults_label) : std::string();
    for (const auto& [name, value] : experiment.params) out += (out.empty() ? "" : " ") + name + "=" + value;
    return out.empty() ? "no axes" : out;
}

}  // namespace ncclsweep::inline plan
