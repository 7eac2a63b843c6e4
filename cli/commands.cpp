#include "cli/commands.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cctype>
#include <string_view>

#include "core/log.hpp"
#include "core/text.hpp"

namespace ncclsweep::cli {

void setup_global_options(CLI::App& app, GlobalOptions& globals) {
    app.add_flag("-v,--verbose", globals.verbose, "More detail on stderr (repeat for debug)");
    app.add_flag("-q,--quiet", globals.quiet, "Only errors on stderr");
}

void apply_global_options(const GlobalOptions& globals) {
    if (globals.quiet)
        log::set_level(log::Level::error);
    else if (globals.verbose >= 2)
        log::set_level(log::Level::debug);
    else if (globals.verbose == 1)
        log::set_level(log::Level::info);
    else
        log::set_level(log::Level::warning);
}

void register_commands(CLI::App& app, const GlobalOptions&, CommandList& out) {
    out.push_back(setup_plan(app));
    out.push_back(setup_run(app));
    out.push_back(setup_watch(app));
    out.push_back(setup_results(app));
    out.push_back(setup_diff(app));
    out.push_back(setup_export(app));
    out.push_back(setup_report(app));
    out.push_back(setup_calibrate(app));
}

ExitStatus report_error(const Error& error) {
    log::write(log::Level::error, error.message);
    return exit_status_for(error);
}

namespace {

std::vector<std::string> subcommand_names(const CLI::App& app) {
    std::vector<std::string> names;
    for (const CLI::App* sub : app.get_subcommands([](const CLI::App*) { return true; }))
        names.push_back(sub->get_name());
    return names;
}

/// Every long and short flag of `app` and of its parent (global flags), with their dashes.
std::vector<std::string> flag_names(const CLI::App& app) {
    std::vector<std::string> names;
    for (const CLI::App* a = &app; a; a = a->get_parent())
        for (const CLI::Option* option : a->get_options()) {
            for (const auto& name : option->get_lnames()) names.push_back("--" + name);
            for (const auto& name : option->get_snames()) names.push_back("-" + name);
        }
    return names;
}

/// The words CLI11 lists after "...not expected: " (its order is reversed; ours is argv's).
std::vector<std::string> unexpected_words(std::string_view message, int argc, char** argv) {
    std::vector<std::string> words;
    const auto colon = message.find("expected: ");
    if (colon == std::string_view::npos) return words;
    std::string_view rest = message.substr(colon + 10);
    for (int i = 1; i < argc; ++i) {
        std::string_view arg = argv[i];
        std::string_view name = arg.substr(0, arg.find('='));
        if (!name.empty() && rest.find(name) != std::string_view::npos) words.emplace_back(name);
    }
    return words;
}

/// CLI11's message as a sentence of ours: lower-case start, no trailing period.
std::string sentence(std::string text) {
    if (!text.empty() && std::isupper(static_cast<unsigned char>(text[0])) &&
        !(text.size() > 1 && std::isupper(static_cast<unsigned char>(text[1]))))
        text[0] = static_cast<char>(std::tolower(static_cast<unsigned char>(text[0])));
    while (!text.empty() && (text.back() == '.' || text.back() == '\n')) text.pop_back();
    return text;
}

/// The first word of argv that is not a global flag: what the user meant as the command.
std::string first_command_word(int argc, char** argv) {
    for (int i = 1; i < argc; ++i) {
        std::string_view arg = argv[i];
        if (arg.empty() || arg[0] == '-') continue;
        return std::string(arg);
    }
    return {};
}

}  // namespace

CLI::Validator one_of(std::vector<std::string> values) {
    return CLI::Validator(
        [values](std::string& value) -> std::string {
            if (std::find(values.begin(), values.end(), value) != values.end()) return {};
            auto best = closest_match(value, values);
            return fmt::format("'{}' is not one of {}{}", first_line(value, 80), fmt::join(values, ", "),
                               best ? fmt::format("; did you mean '{}'?", *best) : std::string());
        },
        fmt::format("{{{}}}", fmt::join(values, ",")));
}

int report_parse_error(CLI::App& app, const CLI::ParseError& error, int argc, char** argv) {
    if (error.get_exit_code() == 0) return app.exit(error);  // --help, --version
    const int bad_input = static_cast<int>(ExitStatus::bad_input);
    const std::vector<std::string> commands = subcommand_names(app);
    const CLI::App* sub = nullptr;
    for (const CLI::App* parsed : app.get_subcommands()) sub = parsed;
    const std::string usage = sub ? fmt::format("`ncclsweep {} --help` shows its flags", sub->get_name())
                                  : std::string("`ncclsweep --help` lists the commands");
    if (!sub) {
        const std::string word = first_command_word(argc, argv);
        if (word.empty()) {
            log::write(log::Level::error,
                       fmt::format("a command is required: {} ({})", fmt::join(commands, ", "), usage));
            return bad_input;
        }
        auto best = closest_match(word, commands);
        log::write(log::Level::error,
                   fmt::format("unknown command '{}'{} ({})", first_line(word, 80),
                               best ? fmt::format(", did you mean '{}'?", *best) : std::string(), usage));
        return bad_input;
    }
    if (dynamic_cast<const CLI::ExtrasError*>(&error)) {
        const std::vector<std::string> flags = flag_names(*sub);
        for (const auto& word : unexpected_words(error.what(), argc, argv)) {
            if (word.size() < 2 || word[0] != '-') continue;
            auto best = closest_match(word, flags);
            log::write(log::Level::error,
                       fmt::format("unknown flag '{}' for `ncclsweep {}`{} ({})", first_line(word, 80),
                                   sub->get_name(),
                                   best ? fmt::format(", did you mean '{}'?", *best) : std::string(), usage));
            return bad_input;
        }
    }
    log::write(log::Level::error, fmt::format("{} ({})", sentence(error.what()), usage));
    return bad_input;
}

}  // namespace ncclsweep::cli
