// Text hygiene for the writers: valid UTF-8, no characters XML forbids, entity escaping, numbers.
#include <fmt/format.h>

#include <cmath>

#include "core/text.hpp"
#include "results/export/exports.hpp"

namespace ncclsweep::results::exports {
namespace {}  // namespace

std::string clean_text(std::string_view text, bool keep_newlines) {
    std::string out;
    out.reserve(text.size());
    for (std::size_t i = 0; i < text.size();) {
        char32_t code = 0;
        std::size_t length = utf8_sequence(text, i, &code);
        if (length == 0) {
            out += "\xEF\xBF\xBD";  // U+FFFD
            ++i;
            continue;
        }
        bool control =
            code < 0x20 || code == 0x7F || (code >= 0x80 && code < 0xA0) || code == 0xFFFE || code == 0xFFFF;
        if (control && !(keep_newlines && (code == '\n' || code == '\t'))) {
            out += fmt::format("\\x{:02x}", static_cast<unsigned>(code));
        } else {
            out.append(text.substr(i, length));
        }
        i += length;
    }
    return out;
}

bool append_entity(std::string& out, char c, Quotes quotes) {
    switch (c) {
        case '&':
            out += "&amp;";
            return true;
        case '<':
            out += "&lt;";
            return true;
        case '>':
            out += "&gt;";
            return true;
        case '"':
            if (quotes == Quotes::keep) return false;
            out += "&quot;";
            return true;
        case '\'':
            if (quotes == Quotes::keep) return false;
            out += "&#39;";
            return true;
        default:
            return false;
    }
}

std::string xml_escape(std::string_view text, bool keep_newlines) {
    std::string cleaned = clean_text(text, keep_newlines);
    std::string out;
    out.reserve(cleaned.size() + cleaned.size() / 8);
    for (char c : cleaned)
        if (!append_entity(out, c, Quotes::escape)) out += c;
    return out;
}

std::string format_number(double value) {
    if (!std::isfinite(value)) return {};
    return fmt::format("{}", value);
}

}  // namespace ncclsweep::results::exports
