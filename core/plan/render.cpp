// Quoting and the two environment renderings (sitecustomize.py, env file). Every value is
// data: Python gets an ASCII-only string literal, the shell a single-quoted word.
#include "core/plan/render.hpp"
#include "core/text.hpp"

#include <fmt/format.h>

#include <algorithm>

namespace ncclsweep::inline plan::render {

namespace {

/// Decodes one UTF-8 sequence at `pos`; returns the code point and advances, or nullopt for an
/// invalid/overlong/surrogate sequence (pos unchanged).
std::optional<char32_t> decode_utf8(const std::string& text, std::size_t& pos) {
    auto byte = [&](std::size_t i) { return static_cast<unsigned char>(text[i]); };
    unsigned char lead = byte(pos);
    std::size_t length = lead >= 0xf0 && lead <= 0xf4   ? 4
                         : lead >= 0xe0                 ? 3
                         : lead >= 0xc2 && lead <= 0xdf ? 2
                                                        : 0;
    if (lead >= 0xf5 || length == 0 || pos + length > text.size()) return std::nullopt;
    char32_t code = lead & (0x7f >> length);
    for (std::size_t i = 1; i < length; ++i) {
        if ((byte(pos + i) & 0xc0) != 0x80) return std::nullopt;
        code = (code << 6) | (byte(pos + i) & 0x3f);
    }
    const char32_t minimum = length == 2 ? 0x80 : length == 3 ? 0x800 : 0x10000;
    if (code < minimum || code > 0x10ffff || (code >= 0xd800 && code <= 0xdfff)) return std::nullopt;
    pos += length;
    return code;
}

/// Text for a comment line: printable ASCII kept, every other byte as \xNN, at most 200 bytes.
std::string comment_safe(const std::string& text) {
    std::string out;
    for (char c : text) {
        if (out.size() >= 200) {
            out += "...";
            break;
        }
        auto byte = static_cast<unsigned char>(c);
        if (byte >= 0x20 && byte < 0x7f)
            out += c;
        else
            out += fmt::format("\\x{:02x}", byte);
    }
    return out;
}

bool valid_name(const std::string& name) {
    auto alpha = [](char c) { return (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || c == '_'; };
    auto digit = [](char c) { return c >= '0' && c <= '9'; };
    if (name.empty() || !alpha(name[0])) return false;
    return std::all_of(name.begin(), name.end(), [&](char c) { return alpha(c) || digit(c); });
}

std::string header(const Provenance& provenance, const std::string& what) {
    return fmt::format(
        "# {} written by ncclsweep; edit the sweep spec, not this file.\n"
        "# sweep: {}\n# experiment: {}  key: {}\n",
        what, comment_safe(provenance.sweep), provenance.experiment_id, comment_safe(provenance.key));
}

}  // namespace

std::string python_quote(const std::string& value) {
    std::string out = "'";
    std::size_t pos = 0;
    while (pos < value.size()) {
        auto byte = static_cast<unsigned char>(value[pos]);
        if (byte < 0x80) {
            ++pos;
            switch (byte) {
                case '\\':
                    out += "\\\\";
                    break;
                case '\'':
                    out += "\\'";
                    break;
                case '\n':
                    out += "\\n";
                    break;
                case '\r':
                    out += "\\r";
                    break;
                case '\t':
                    out += "\\t";
                    break;
                default:
                    if (byte < 0x20 || byte == 0x7f)
                        out += fmt::format("\\x{:02x}", byte);
                    else
                        out += static_cast<char>(byte);
            }
            continue;
        }
        if (auto code = decode_utf8(value, pos)) {
            auto point = static_cast<std::uint32_t>(*code);
            if (point <= 0xff)
                out += fmt::format("\\x{:02x}", point);
            else if (point <= 0xffff)
                out += fmt::format("\\u{:04x}", point);
            else
                out += fmt::format("\\U{:08x}", point);
        } else {
            // Not UTF-8: os.environ decodes such a byte as the surrogate U+DC00+byte
            // (surrogateescape), and encodes it back to the same byte when setting it.
            out += fmt::format("\\udc{:02x}", byte);
            ++pos;
        }
    }
    out += "'";
    return out;
}

std::string sitecustomize(const std::vector<Assignment>& env, const Provenance& provenance) {
    std::string out = header(provenance, "sitecustomize.py");
    out +=
        "# Python imports this in every interpreter (and so in every spawned Python child) when its\n"
        "# directory is on PYTHONPATH. Variables are set with os.environ.setdefault, so a value set\n"
        "# explicitly in the environment still wins. Nothing here may raise: an exception would make\n"
        "# Python print \"Error in sitecustomize\" and go on without these settings.\n";
    out +=
        "try:\n"
        "    import os as _ncclsweep_os\n"
        "    for _ncclsweep_name, _ncclsweep_value in (\n";
    for (const auto& [name, value] : env)
        out += fmt::format("        ({}, {}),\n", python_quote(name), python_quote(value));
    out +=
        "    ):\n"
        "        try:\n"
        "            _ncclsweep_os.environ.setdefault(_ncclsweep_name, _ncclsweep_value)\n"
        "        except BaseException:\n"
        "            pass\n"
        "except BaseException:\n"
        "    pass\n"
        "try:\n"
        "    del _ncclsweep_os, _ncclsweep_name, _ncclsweep_value\n"
        "except BaseException:\n"
        "    pass\n";
    return out;
}

Result<std::string> env_file(const std::vector<Assignment>& env, const Provenance& provenance) {
    std::string out = header(provenance, "env file");
    out += "# Load with: set -a; . ./this-file; set +a\n";
    for (const auto& [name, value] : env) {
        if (!valid_name(name))
            return Error::bad_input(fmt::format(
                "experiment {}: \"{}\" is not a valid environment variable name; use letters, digits and _ "
                "(not starting with a digit)",
                provenance.experiment_id, comment_safe(name)));
        if (value.find('\0') != std::string::npos)
            return Error::bad_input(
                fmt::format("experiment {}: the value of {} contains a NUL byte, which no environment can "
                            "carry; remove it",
                            provenance.experiment_id, name));
        out += name + "=" + shell_quote(value) + "\n";
    }
    return out;
}

}  // namespace ncclsweep::inline plan::render
