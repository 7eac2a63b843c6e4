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

std::string delivery_marker_file(int repeat) {
    return fmt::format("delivered-{}", repeat);
}

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

namespace {

// The parts of every generated sitecustomize.py after its settings. Each step is guarded so that
// nothing of ours raises (Python would print "Error in sitecustomize" and go on without the
// rest); only the shadowed file's own error is shown, as its traceback.
constexpr const char* k_apply = R"py(

def _ncclsweep_apply():
    import os
    missing = []
    for name, value in _ncclsweep_settings():
        try:
            os.environ[name] = value
        except BaseException:
            pass
        try:
            if os.environ.get(name) != value:
                missing.append(name)
        except BaseException:
            missing.append(name)
    return missing
)py";

constexpr const char* k_record = R"py(

def _ncclsweep_word(text):
    return ''.join(c if c.isalnum() or c in '_-./' else '?' for c in str(text)) or '-'


def _ncclsweep_record(kind, fields, rest):
    # One line per interpreter in the file next to this one: the evidence `ncclsweep run` reads.
    import os
    here = os.path.dirname(os.path.realpath(__file__))
    job = os.environ.get('SLURM_ARRAY_JOB_ID')
    index = os.environ.get('SLURM_ARRAY_TASK_ID')
    task = job + '_' + index if job and index else '-'
    line = 'ncclsweep-%s pgid=%d pid=%d task=%s repeat=%s %s %s\n' % (
        kind, os.getpgid(0), os.getpid(), _ncclsweep_word(task),
        _ncclsweep_word(os.environ.get('NCCLSWEEP_REPEAT', '-')), fields,
        ' '.join(str(rest).split()))
    flags = os.O_WRONLY | os.O_APPEND | os.O_CREAT
    flags |= getattr(os, 'O_NOFOLLOW', 0) | getattr(os, 'O_CLOEXEC', 0)
    name = 'delivered-' + _ncclsweep_word(os.environ.get('NCCLSWEEP_REPEAT', '-'))
    fd = os.open(os.path.join(here, name), flags, 0o644)
    try:
        os.write(fd, line.encode('utf-8', 'backslashreplace'))
    finally:
        os.close(fd)
)py";

constexpr const char* k_chain = R"py(

def _ncclsweep_shadowed():
    # The sitecustomize Python would have imported without this one: the next on sys.path.
    import os, sys, importlib.machinery
    mine = os.path.realpath(__file__)
    here = os.path.dirname(mine)

    def folder(entry):
        try:
            return os.path.realpath(entry or os.curdir)
        except Exception:
            return None
    path = list(sys.path)
    for index, entry in enumerate(path):
        if folder(entry) == here:
            rest = [e for e in path[index + 1:] if folder(e) != here]
            spec = importlib.machinery.PathFinder.find_spec('sitecustomize', rest)
            if spec is None or spec.loader is None:
                return None
            if spec.origin and folder(spec.origin) == mine:
                return None
            return spec
    return None


def _ncclsweep_chain(record):
    try:
        spec = _ncclsweep_shadowed()
    except Exception:
        spec = None
    if spec is None:
        return
    import importlib.util
    try:
        spec.loader.exec_module(importlib.util.module_from_spec(spec))
    except Exception as error:
        import sys, traceback
        sys.stderr.write(
            'ncclsweep: the sitecustomize.py this one shadows, %s, raised %s: %s (the sweep\'s '
            'settings are set; that file\'s own work is not done):\n'
            % (spec.origin, type(error).__name__, ' '.join(str(error).split())))
        traceback.print_exc()
        sys.stderr.flush()
        if record:
            try:
                _ncclsweep_record('chained', 'origin=' + _ncclsweep_word(spec.origin),
                                  '%s raised %s: %s' % (spec.origin, type(error).__name__, error))
            except BaseException:
                pass
)py";

}  // namespace

std::string sitecustomize(const std::vector<Assignment>& env, const Provenance& provenance,
                          Evidence evidence) {
    const bool record = evidence == Evidence::marker_file;
    std::string out = header(provenance, "sitecustomize.py");
    out +=
        "# Python imports this in every interpreter (and so in every spawned Python child) when its\n"
        "# directory is on PYTHONPATH. It sets the variables below over any value the process\n"
        "# inherited (the setting recorded is the setting that ran)";
    out += record ? ", appends one line per interpreter\n"
                    "# to the file 'delivered-REPEAT' next to it (the evidence ncclsweep reads),\n"
                    "# then runs the sitecustomize it shadows: the next one on sys.path, such as the\n"
                    "# distribution's.\n"
                  : ", then runs the sitecustomize it\n"
                    "# shadows: the next one on sys.path, such as the distribution's.\n";
    out +=
        "# Nothing of its own may raise: Python would print \"Error in sitecustomize\" and go on\n"
        "# without the rest.\n\n\n"
        "def _ncclsweep_settings():\n"
        "    return (\n";
    for (const auto& [name, value] : env)
        out += fmt::format("        ({}, {}),\n", python_quote(name), python_quote(value));
    out += "    )\n";
    out += k_apply;
    if (record) out += k_record;
    out += k_chain;
    out +=
        "\n\ntry:\n    _ncclsweep_missing = _ncclsweep_apply()\nexcept BaseException:\n    "
        "_ncclsweep_missing = None\n";
    if (record)
        out +=
            "try:\n"
            "    _ncclsweep_record('delivered', 'missing=' + (','.join(_ncclsweep_missing) or '-'\n"
            "                      if _ncclsweep_missing is not None else '?'),\n"
            "                      'python=' + __import__('sys').executable)\n"
            "except BaseException:\n"
            "    pass\n";
    out += fmt::format(
        "if __name__ == 'sitecustomize':\n"
        "    _ncclsweep_chain({})\n",
        record ? "True" : "False");
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
