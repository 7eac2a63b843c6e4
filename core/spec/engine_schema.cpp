#include "core/spec/engine_schema.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstdlib>
#include <nlohmann/json.hpp>

#include "core/spec/spec_yaml.hpp"

namespace ncclsweep::inline spec {
namespace {

using yaml::did_you_mean;

std::string joined(const std::vector<std::string>& values) {
    std::string out;
    for (const auto& v : values) out += (out.empty() ? "" : ", ") + v;
    return out;
}

std::string range_text(double v) {
    return fmt::format("{}", v);
}

/// "" when `value` fits `p`, else what is wrong.
std::string value_problem(const EngineParameter& p, const std::string& value) {
    if (p.type == "enum" || p.type == "bool") {
        if (std::find(p.values.begin(), p.values.end(), value) != p.values.end()) return {};
        return fmt::format("'{}' is not one of {}{}", value, joined(p.values), did_you_mean(value, p.values));
    }
    if (p.type == "int" || p.type == "number") {
        errno = 0;
        char* end = nullptr;
        const double v = std::strtod(value.c_str(), &end);
        const bool whole = !value.empty() && end && *end == '\0' && errno == 0 && std::isfinite(v);
        const bool integral = whole && v == std::floor(v) && value.find_first_of(".eE") == std::string::npos;
        if (!whole || (p.type == "int" && !integral))
            return fmt::format("'{}' is not {}", value, p.type == "int" ? "an integer" : "a number");
        if (v < p.min || v > p.max)
            return fmt::format("{} is outside {}..{}", value, range_text(p.min), range_text(p.max));
        return {};
    }
    if (p.type != "text") return fmt::format("the engine describes an unknown type '{}'", p.type);
    return {};
}

Result<void> check_one(const EngineSchema& schema, const std::string& name, const SpecValue& value,
                       const SourceMark& name_mark) {
    const std::string flag = flag_name(name);
    auto it = std::find_if(schema.parameters.begin(), schema.parameters.end(),
                           [&](const EngineParameter& p) { return p.name == flag; });
    if (it == schema.parameters.end()) {
        std::vector<std::string> names;
        for (const auto& p : schema.parameters) names.push_back(p.name);
        return Error::bad_input(
            fmt::format("{}: tpverify has no parameter '{}'{} (`tpverify --describe --json` lists them)",
                        name_mark.to_string(), name, did_you_mean(flag, names)));
    }
    if (auto problem = value_problem(*it, value.text); !problem.empty())
        return Error::bad_input(
            fmt::format("{}: {}: {} (tpverify --{}); change the value in the spec or the flag",
                        value.mark.to_string(), name, problem, it->name));
    return success();
}

}  // namespace

std::string flag_name(std::string_view name) {
    std::string out(name);
    std::replace(out.begin(), out.end(), '_', '-');
    return out;
}

Result<EngineSchema> parse_engine_schema(std::string_view json, std::string_view source) {
    auto fail = [&](std::string_view what) {
        return Error::bad_input(fmt::format(
            "{} --describe --json: {}; use a tpverify of this ncclsweep build (--engine)", source, what));
    };
    auto j = nlohmann::json::parse(json, nullptr, false);
    if (j.is_discarded() || !j.is_object()) return fail("the output is not JSON");
    if (!j.contains("parameters") || !j["parameters"].is_array()) return fail("no `parameters` list");
    EngineSchema schema;
    for (const auto& p : j["parameters"]) {
        if (!p.is_object() || !p.contains("name") || !p["name"].is_string() || !p.contains("type") ||
            !p["type"].is_string())
            return fail("a parameter without name or type");
        EngineParameter parameter;
        parameter.name = p["name"].get<std::string>();
        parameter.type = p["type"].get<std::string>();
        if (p.contains("values") && p["values"].is_array())
            for (const auto& v : p["values"])
                if (v.is_string()) parameter.values.push_back(v.get<std::string>());
        if (p.contains("min") && p["min"].is_number()) parameter.min = p["min"].get<double>();
        if (p.contains("max") && p["max"].is_number()) parameter.max = p["max"].get<double>();
        schema.parameters.push_back(std::move(parameter));
    }
    if (j.contains("auto_backend") && j["auto_backend"].is_string())
        schema.auto_backend = j["auto_backend"].get<std::string>();
    if (j.contains("metrics") && j["metrics"].is_array()) {
        auto metrics = metrics_from_json(j["metrics"].dump());
        if (!metrics) return fail(metrics.error().message);
        schema.metrics = std::move(*metrics);
    }
    return schema;
}

std::string sweep_backend(const Spec& spec, const EngineSchema* schema) {
    if (spec.workload.engine.empty()) return {};
    for (const auto& [name, value] : spec.workload.args)
        if (name == "backend" && value.text != "auto") return value.text;
    return schema ? schema->auto_backend : std::string();
}

Result<EngineSchema> read_engine_schema(Target& target, const std::string& engine_path) {
    auto out = target.capture({engine_path, "--describe", "--json"}, std::chrono::seconds(30));
    if (!out)
        return Error::infrastructure(fmt::format("cannot read the parameters of {} on {}: {}", engine_path,
                                                 target.describe(), out.error().message));
    return parse_engine_schema(*out, engine_path);
}

Result<void> check_engine_parameters(const Spec& spec, const EngineSchema& schema) {
    for (const auto& [name, value] : spec.workload.args)
        if (auto ok = check_one(schema, name, value, value.mark); !ok) return ok;
    for (const auto& axis : spec.axes) {
        if (axis.is_env()) continue;
        for (const auto& value : axis.values)
            if (auto ok = check_one(schema, axis.name, value, axis.mark); !ok) return ok;
    }
    for (const auto& point : spec.include)
        for (const auto& [name, value] : point.values)
            if (!name.empty() && !std::isupper(static_cast<unsigned char>(name[0])))
                if (auto ok = check_one(schema, name, value, point.mark); !ok) return ok;
    return success();
}

}  // namespace ncclsweep::inline spec
