// Text hygiene for the writers: valid UTF-8, no characters XML forbids, entity escaping, numbers.
#include <fmt/format.h>

#include <cmath>

#include "results/export.hpp"

namespace ncclsweep::results::exports {
namespace {

/// Length of the valid UTF-8 sequence at text[i] and its code point; 0 when invalid.
std::size_t utf8_sequence(std::string_view text, std::size_t i, char32_t& code) {
    auto byte = [&](std::size_t k) { return static_cast<unsigned char>(text[k]); };
    unsigned char lead = byte(i);
    std::size_t length = lead < 0x80           ? 1
                         : (lead >> 5) == 0x6  ? 2
                         : (lead >> 4) == 0xE  ? 3
                         : (lead >> 3) == 0x1E ? 4
                                               : 0;
    if (length == 0 || i + length > text.size()) return 0;
    code = length == 1 ? lead : length == 2 ? (lead & 0x1F) : length == 3 ? (lead & 0x0F) : (lead & 0x07);
    for (std::size_t k = 1; k < length; ++k) {
        if ((byte(i + k) & 0xC0) != 0x80) return 0;
        code = (code << 6) | (byte(i + k) & 0x3F);
    }
    static constexpr char32_t k_min[] = {0, 0, 0x80, 0x800, 0x10000};
    if (code < k_min[length] || code > 0x10FFFF || (code >= 0xD800 && code <= 0xDFFF)) return 0;
    return length;
}

}  // namespace

std::string clean_text(std::string_view text, bool keep_newlines) {
    std::string out;
    out.reserve(text.size());
    for (std::size_t i = 0; i < text.size();) {
        char32_t code = 0;
        std::size_t length = utf8_sequence(text, i, code);
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

std::string xml_escape(std::string_view text, bool keep_newlines) {
    std::string cleaned = clean_text(text, keep_newlines);
    std::string out;
    out.reserve(cleaned.size() + cleaned.size() / 8);
    for (char c : cleaned) {
        switch (c) {
            case '&':
                out += "&amp;";
                break;
            case '<':
                out += "&lt;";
                break;
            case '>':
                out += "&gt;";
                break;
            case '"':
                out += "&quot;";
                break;
            case '\'':
                out += "&#39;";
                break;
            default:
                out += c;
        }
    }
    return out;
}

std::string format_number(double value) {
    if (!std::isfinite(value)) return {};
    return fmt::format("{}", value);
}

}  // namespace ncclsweep::results::exports
