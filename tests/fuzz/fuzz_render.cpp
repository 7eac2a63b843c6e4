// Fuzz target: bytes -> name/value pairs -> every rendering (shell_quote, python_quote,
// env_file, sitecustomize, command_argv). Input: records separated by 0x1e, each "name 0x1f
// value"; the first record is the command template (argv elements separated by 0x1f; a
// leading '$' makes it a string command for /bin/sh -c).
// Invariants, each checked by parsing the output back with a small independent parser:
//   shell_quote(w) is one POSIX word whose value is exactly w;
//   python_quote(v) is printable ASCII and decodes (with surrogateescape) to exactly v;
//   env_file(env) fails exactly for an invalid name or a NUL, else parses back to env;
//   sitecustomize(env) is printable ASCII apart from newlines;
//   command_argv never yields an argv element with a NUL, and a string command is
//   {"/bin/sh", "-c", script} with every value single-quoted (checked for NUL-free values).
#include <algorithm>
#include <cctype>
#include <cstdint>
#include <optional>
#include <string>

#include "core/plan/render.hpp"
#include "core/text.hpp"
#include "tests/fuzz/fuzz_support.hpp"

using namespace ncclsweep;

namespace {

/// Reads one POSIX shell word made of '...' parts, \c escapes and plain characters that need no
/// quoting, starting at `pos`; stops at an unquoted newline or the end. nullopt when the word
/// is malformed (unterminated quote) or uses anything the shell would interpret.
std::optional<std::string> parse_shell_word(const std::string& text, std::size_t& pos) {
    std::string value;
    while (pos < text.size() && text[pos] != '\n') {
        const char c = text[pos];
        if (c == '\'') {
            const std::size_t close = text.find('\'', pos + 1);
            if (close == std::string::npos) return std::nullopt;
            value.append(text, pos + 1, close - pos - 1);
            pos = close + 1;
        } else if (c == '\\') {
            if (pos + 1 >= text.size() || text[pos + 1] == '\n') return std::nullopt;
            value += text[pos + 1];
            pos += 2;
        } else if (std::isalnum(static_cast<unsigned char>(c)) ||
                   std::string_view("_@%+=:,./-").find(c) != std::string_view::npos) {
            value += c;
            ++pos;
        } else {
            return std::nullopt;  // unquoted $ ` ; | & space ( ) ... would be interpreted
        }
    }
    return value;
}

void append_utf8(std::string& out, std::uint32_t code) {
    if (code >= 0xdc80 && code <= 0xdcff) {  // surrogateescape: one undecodable byte
        out += static_cast<char>(code - 0xdc00);
    } else if (code < 0x80) {
        out += static_cast<char>(code);
    } else if (code < 0x800) {
        out += static_cast<char>(0xc0 | (code >> 6));
        out += static_cast<char>(0x80 | (code & 0x3f));
    } else if (code < 0x10000) {
        out += static_cast<char>(0xe0 | (code >> 12));
        out += static_cast<char>(0x80 | ((code >> 6) & 0x3f));
        out += static_cast<char>(0x80 | (code & 0x3f));
    } else {
        out += static_cast<char>(0xf0 | (code >> 18));
        out += static_cast<char>(0x80 | ((code >> 12) & 0x3f));
        out += static_cast<char>(0x80 | ((code >> 6) & 0x3f));
        out += static_cast<char>(0x80 | (code & 0x3f));
    }
}

/// Decodes a Python single-quoted str literal as Python would, then encodes it the way
/// os.environ does (UTF-8, surrogateescape). nullopt for anything Python would reject.
std::optional<std::string> parse_python_literal(const std::string& literal) {
    if (literal.size() < 2 || literal.front() != '\'' || literal.back() != '\'') return std::nullopt;
    std::string out;
    for (std::size_t i = 1; i + 1 < literal.size(); ++i) {
        const char c = literal[i];
        if (c == '\'' || c == '\n' || c == '\r') return std::nullopt;
        if (c != '\\') {
            out += c;
            continue;
        }
        if (++i + 1 >= literal.size()) return std::nullopt;
        const char e = literal[i];
        std::size_t digits = e == 'x' ? 2 : e == 'u' ? 4 : e == 'U' ? 8 : 0;
        if (digits == 0) {
            const std::string_view simple = "\\\\''\"\"n\nr\rt\t";
            const std::size_t at = simple.find(e);
            if (at == std::string_view::npos || at % 2) return std::nullopt;
            out += simple[at + 1];
            continue;
        }
        if (i + digits >= literal.size()) return std::nullopt;
        const std::string hex = literal.substr(i + 1, digits);
        if (!std::all_of(hex.begin(), hex.end(),
                         [](char h) { return std::isxdigit(static_cast<unsigned char>(h)); }))
            return std::nullopt;
        const auto code = static_cast<std::uint32_t>(std::stoul(hex, nullptr, 16));
        if (code > 0x10ffff || (code >= 0xd800 && code <= 0xdfff && !(code >= 0xdc80 && code <= 0xdcff)))
            return std::nullopt;  // a lone surrogate other than surrogateescape cannot be encoded
        append_utf8(out, code);
        i += digits;
    }
    return out;
}

bool printable_ascii(const std::string& text, bool allow_newline) {
    return std::all_of(text.begin(), text.end(), [&](char c) {
        const auto b = static_cast<unsigned char>(c);
        return (b >= 0x20 && b < 0x7f) || (allow_newline && c == '\n');
    });
}

bool valid_name(const std::string& name) {
    if (name.empty() || std::isdigit(static_cast<unsigned char>(name[0]))) return false;
    return std::all_of(name.begin(), name.end(), [](char c) {
        return (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '_';
    });
}

void check_quoting(const std::string& value) {
    const std::string quoted = ncclsweep::shell_quote(value);
    std::size_t pos = 0;
    auto parsed = parse_shell_word(quoted, pos);
    FUZZ_CHECK(parsed && pos == quoted.size() && *parsed == value,
               "shell_quote does not round-trip: " + quoted);
    const std::string python = render::python_quote(value);
    FUZZ_CHECK(printable_ascii(python, false), "python_quote output is not printable ASCII: " + python);
    auto decoded = parse_python_literal(python);
    FUZZ_CHECK(decoded && *decoded == value, "python_quote does not round-trip: " + python);
}

/// Parses an env file back: comment lines, then NAME=word lines (a quoted word may span lines).
void check_env_file(const std::string& file, const std::vector<Assignment>& env) {
    std::size_t pos = 0, index = 0;
    while (pos < file.size()) {
        if (file[pos] == '#') {
            pos = file.find('\n', pos);
            FUZZ_CHECK(pos != std::string::npos, "comment without newline");
            ++pos;
            continue;
        }
        const std::size_t equals = file.find('=', pos);
        FUZZ_CHECK(equals != std::string::npos && index < env.size(), "unexpected env file line");
        FUZZ_CHECK(file.compare(pos, equals - pos, env[index].first) == 0,
                   "name changed: " + env[index].first);
        pos = equals + 1;
        auto value = parse_shell_word(file, pos);  // quoted newlines stay inside the word
        FUZZ_CHECK(value.has_value(), "env file value is not one safe word");
        FUZZ_CHECK(pos < file.size() && file[pos] == '\n', "env line does not end");
        ++pos;
        FUZZ_CHECK(*value == env[index].second, "value changed for " + env[index].first);
        ++index;
    }
    FUZZ_CHECK(index == env.size(), "env file lost entries");
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    if (size > 256 * 1024) return 0;
    auto records = fuzz::split(fuzz::as_text(data, size), '\x1e');
    const std::string command_template = records.front();
    std::vector<Assignment> env;
    for (std::size_t i = 1; i < records.size(); ++i) {
        auto parts = fuzz::split(records[i], '\x1f');
        std::string value;
        for (std::size_t p = 1; p < parts.size(); ++p) value += (p > 1 ? "\x1f" : "") + parts[p];
        env.emplace_back(parts[0], value);
    }

    bool expect_ok = true;
    for (const auto& [name, value] : env) {
        check_quoting(name);
        check_quoting(value);
        if (!valid_name(name) || value.find('\0') != std::string::npos) expect_ok = false;
    }
    const render::Provenance provenance{command_template.substr(0, 300), static_cast<int>(size),
                                        records.back()};
    const std::string site = render::sitecustomize(env, provenance);
    FUZZ_CHECK(printable_ascii(site, true), "sitecustomize.py is not printable ASCII");
    auto file = render::env_file(env, provenance);
    FUZZ_CHECK(file.ok() == expect_ok,
               file.ok() ? "env_file accepted an invalid entry" : file.error().message);
    if (file) check_env_file(*file, env);

    WorkloadSpec workload;
    workload.command_is_shell = !command_template.empty() && command_template[0] == '$';
    for (const auto& element :
         fuzz::split(workload.command_is_shell ? command_template.substr(1) : command_template, '\x1f'))
        workload.command.push_back(SpecValue{element, {}});
    if (workload.command_is_shell) workload.command.resize(1);
    std::vector<Assignment> params;
    for (const auto& [name, value] : env) params.emplace_back(name, value);
    auto argv = render::command_argv(workload, params, "tpverify");
    if (argv) {
        FUZZ_CHECK(!argv->empty(), "empty argv");
        for (const auto& word : *argv)
            FUZZ_CHECK(word.find('\0') == std::string::npos, "NUL in argv: " + word);
        if (workload.command_is_shell) FUZZ_CHECK(argv->size() == 3 && (*argv)[0] == "/bin/sh", "shell form");
    } else {
        FUZZ_CHECK(!argv.error().message.empty(), "error without text");
    }
    return 0;
}
