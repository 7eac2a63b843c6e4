// `repeats:` — a whole number, or `auto` (docs/spec.md "Repeats").
#include <fmt/format.h>

#include <charconv>

#include "core/spec/spec_sections.hpp"

namespace ncclsweep::inline spec::yaml {
namespace {

constexpr long long k_most_repeats = 1000;

/// `repeats: {auto: {alpha, max, default}}`'s inner map.
Result<AutoRepeatsSpec> parse_auto_options(const YAML::Node& node, const Where& where, AutoRepeatsSpec out) {
    if (node.IsNull()) return out;
    if (auto ok = check_map(node, where, "repeats.auto", {"alpha", "max", "default"}); !ok) return ok.error();
    for (const auto& entry : node) {
        const std::string& key = entry.first.Scalar();
        const Where at = inner(where, entry.first);
        if (key == "alpha") {
            auto value = read_scalar(entry.second, at, "repeats.auto.alpha");
            if (!value) return value.error();
            double number = 0;
            const std::string& text = value->text;
            auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), number);
            if (ec != std::errc() || end != text.data() + text.size() || !(number > 0 && number < 0.5))
                return error_at(
                    value->mark,
                    fmt::format("repeats.auto.alpha must be a number in (0, 0.5) such as 0.01, the "
                                "`--alpha` the gate's diff runs with, not '{}'",
                                text));
            out.alpha = number;
            continue;
        }
        auto number = read_int(entry.second, at, "repeats.auto." + key, 2, k_most_repeats);
        if (!number) return number.error();
        (key == "max" ? out.max : out.fallback) = static_cast<int>(*number);
    }
    if (out.fallback > out.max)
        return error_at(out.mark, fmt::format("repeats.auto: default ({}) is above max ({}); the repeats "
                                              "without history cannot exceed the cap",
                                              out.fallback, out.max));
    return out;
}

}  // namespace

Result<void> parse_repeats(const YAML::Node& node, const Where& where, Spec& spec) {
    AutoRepeatsSpec automatic;
    automatic.mark = mark_of(node, where);
    if (node.IsMap()) {
        if (auto ok = check_map(node, where, "repeats", {"auto"}); !ok) return ok.error();
        if (node.size() == 0)
            return error_at(automatic.mark,
                            "repeats: {} is empty; write a number, `auto`, or {auto: {alpha: 0.01}}");
        auto parsed = parse_auto_options(node.begin()->second, inner(where, node.begin()->first), automatic);
        if (!parsed) return parsed.error();
        spec.repeats = parsed->fallback;
        spec.auto_repeats = *parsed;
        return success();
    }
    auto value = read_scalar(node, where, "repeats");
    if (!value) return value.error();
    if (value->text == "auto") {
        spec.repeats = automatic.fallback;
        spec.auto_repeats = automatic;
        return success();
    }
    long long number = 0;
    const std::string& text = value->text;
    auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), number);
    if (ec != std::errc() || end != text.data() + text.size() || number < 1 || number > k_most_repeats)
        return error_at(value->mark,
                        fmt::format("repeats must be a whole number from 1 to {} or `auto` (the repeats a "
                                    "nightly gate needs, from the previous sweep's noise), not '{}'",
                                    k_most_repeats, text));
    spec.repeats = static_cast<int>(number);
    spec.auto_repeats.reset();
    return success();
}

}  // namespace ncclsweep::inline spec::yaml
