#include "remote/slurm_target.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <fmt/format.h>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <thread>

#include "core/host.hpp"
#include "core/log.hpp"
#include "core/text.hpp"
#include "remote/shell_words.hpp"
#include "remote/slurm_process.hpp"

namespace ncclsweep::remote {
namespace {

std::string join(const std::set<std::string>& words, char separator) {
    std::string out;
    for (const auto& w : words) out += (out.empty() ? "" : std::string(1, separator)) + w;
    return out;
}

/// `path` as literal text in an sbatch filename pattern: '%' starts a replacement (%j, %x, ...),
/// so each becomes "%%".
std::string slurm_pattern_path(const std::string& path) {
    std::string out;
    for (char c : path) out += c == '%' ? std::string("%%") : std::string(1, c);
    return out;
}

}  // namespace

bool task_file_exists(const std::string& path) {
    struct stat st {};
    return ::stat(path.c_str(), &st) == 0;
}

std::string job_of(const std::string& task) {
    return task.substr(0, task.find('_'));
}

namespace {

std::optional<std::chrono::milliseconds> pending_timeout_of(const SlurmSpec& spec) {
    if (!spec.pending_timeout_seconds) return std::nullopt;
    return std::chrono::milliseconds(static_cast<long>(*spec.pending_timeout_seconds * 1000));
}

}  // namespace

SlurmTarget::SlurmTarget(std::unique_ptr<Target> login, std::unique_ptr<SlurmCommands> commands,
                         SlurmOptions options)
    : m_login(std::move(login)),
      m_commands(std::move(commands)),
      m_options(std::move(options)),
      m_pending(m_options.partition, pending_timeout_of(m_options.spec)) {
    if (!m_options.filesystem_of) m_options.filesystem_of = filesystem_of;
    if (!m_options.this_host) m_options.this_host = short_host_name;
    if (!m_options.warn)
        m_options.warn = [](const std::string& message) { NCCLSWEEP_LOG(warning, "{}", message); };
}

SlurmTarget::~SlurmTarget() = default;

Result<std::string> SlurmTarget::prepare_workdir(const std::string& sweep_id) {
    auto dir = m_login->prepare_workdir(sweep_id);
    if (!dir) return dir.error();
    // sbatch reads --output / --error as filename patterns, in which a backslash turns every
    // replacement off (each task would then write to a file literally named %A_%a.out); '%' is
    // escaped at submit (slurm_pattern_path).
    if (dir->find('\\') != std::string::npos)
        return Error::bad_input(fmt::format(
            "slurm: the work directory {} holds a backslash, which sbatch's --output patterns cannot carry "
            "(it turns their %A_%a off); set target.workdir to a path without one",
            *dir));
    m_workdir = *dir;
    // The tasks write their output and status here; Slurm does not create directories.
    if (auto keep = m_login->put_file(
            m_workdir + "/slurm/README",
            "Output (.out, .err) and exit status (.status) of each Slurm task, by JOBID_TASK.\n");
        !keep)
        return keep.error();
    return m_workdir;
}

Result<void> SlurmTarget::put_file(const std::string& path, const std::string& content) {
    return m_login->put_file(path, content);
}

Result<void> SlurmTarget::lock_workdir(const std::string& holder) {
    return m_login->lock_workdir(holder);
}

Result<std::optional<std::string>> SlurmTarget::get_file(const std::string& path, std::size_t limit) {
    return m_login->get_file(path, limit);
}

Result<std::string> SlurmTarget::capture(const std::vector<std::string>& argv, std::chrono::seconds timeout) {
    return m_login->capture(argv, timeout);
}

int SlurmTarget::slots() const {
    return m_options.spec.array_limit ? *m_options.spec.array_limit : m_options.slots_without_limit;
}

SlurmCounters SlurmTarget::counters() const {
    std::lock_guard lock(m_mutex);
    return m_counters;
}

SlurmTaskFiles SlurmTarget::files_of(const std::string& task) const {
    const std::string base = m_workdir + "/slurm/" + task;
    return SlurmTaskFiles{base + ".out", base + ".err", base + ".status"};
}

bool SlurmTarget::stopping() const {
    return m_cancelled.load() || m_halted.load() || (m_options.stop && m_options.stop->load());
}

std::optional<Error> SlurmTarget::halt_reason() const {
    std::lock_guard lock(m_mutex);
    return m_halt;
}

void SlurmTarget::halt(Error why) {
    std::lock_guard lock(m_mutex);
    halt_locked(std::move(why));
}

void SlurmTarget::halt_locked(Error why) {
    if (!m_halt) m_halt = std::move(why);
    m_halted = true;
}

void SlurmTarget::refresh_task_directory() {
    const std::string probe = fmt::format("{}/slurm/.refresh-{}", m_workdir, ::getpid());
    const int fd = ::open(probe.c_str(), O_WRONLY | O_CREAT | O_CLOEXEC, 0644);
    if (fd >= 0) ::close(fd);
    ::unlink(probe.c_str());
}

Result<TargetFindings> SlurmTarget::check_before_sweep() {
    namespace fs = std::filesystem;
    WorkdirFacts facts;
    facts.partition = m_options.partition;
    facts.origin = m_options.workdir_root.empty()
                       ? "the default ./.ncclsweep/work; set target.workdir to choose"
                       : "target.workdir";
    std::error_code ec;
    const fs::path root =
        fs::absolute(m_options.workdir_root.empty() ? ".ncclsweep/work" : m_options.workdir_root, ec);
    if (!ec) fs::create_directories(root, ec);
    facts.root = root.lexically_normal().string();
    if (ec)
        return Error::infrastructure(
            fmt::format("slurm: cannot create the work directory root {} ({}): {}; create it, "
                        "or set target.workdir to a directory on a filesystem the nodes share",
                        facts.root, facts.origin, ec.message()));
    const std::string probe = fmt::format("{}/.ncclsweep-write-check-{}", facts.root, ::getpid());
    const int fd = ::open(probe.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    if (fd < 0)
        return Error::infrastructure(
            fmt::format("slurm: cannot write in the work directory root {} ({}): {}; fix its "
                        "permissions, or set target.workdir to a directory you can write on a "
                        "filesystem the nodes share",
                        facts.root, facts.origin, std::strerror(errno)));
    ::close(fd);
    ::unlink(probe.c_str());
    auto filesystem = m_options.filesystem_of(facts.root);
    if (!filesystem) return filesystem.error();
    facts.filesystem = *filesystem;
    // One node that is this very host (a workstation's Slurm, the test cluster) sees every
    // local filesystem of it.
    auto nodes =
        m_commands->run({"sinfo", "--noheader", "--partition=" + m_options.partition, "--format=%N"});
    const std::string host = m_options.this_host();
    facts.only_this_node = nodes && nodes->exit_code == 0 && !host.empty() && nodes->out == host + "\n";
    return judge_workdir(facts);
}

Result<std::string> SlurmTarget::task_script(const Command& command) const {
    auto body = command_script(command, m_workdir, ExecLast::no, "slurm");
    if (!body) return body.error();
    // The status is written next to the output once the command ended (atomically, so a
    // reader never sees half of it); a task killed by Slurm leaves none.
    const std::string status =
        shell_quote(m_workdir + "/slurm/") + "\"${SLURM_ARRAY_JOB_ID}_${SLURM_ARRAY_TASK_ID}.status\"";
    return fmt::format(
        "#!/bin/sh\n"
        "# Written by ncclsweep: one experiment as one task of a Slurm job array.\n"
        "{} </dev/null\n"
        "status=$?\n"
        "printf '%s\\n' \"$status\" > {}.tmp && mv -f {}.tmp {}\n"
        "exit \"$status\"\n",
        *body, status, status, status);
}

Result<std::vector<std::string>> SlurmTarget::submit_array(const std::vector<const Command*>& commands) {
    if (m_workdir.empty()) return Error::internal("slurm: submit before prepare_workdir");
    const std::string batch_dir = fmt::format("{}/slurm/batch-{}-{}", m_workdir, ::getpid(), ++m_batches);
    for (std::size_t i = 0; i < commands.size(); ++i) {
        auto script = task_script(*commands[i]);
        if (!script) return script.error();
        if (auto put = m_login->put_file(fmt::format("{}/task-{}.sh", batch_dir, i), *script); !put)
            return put.error();
    }
    const std::string array_script = fmt::format(
        "#!/bin/sh\n# Written by ncclsweep: task N of the array runs task-N.sh.\nexec /bin/sh "
        "{}/\"task-$SLURM_ARRAY_TASK_ID.sh\"\n",
        shell_quote(batch_dir));
    if (auto put = m_login->put_file(batch_dir + "/array.sh", array_script); !put) return put.error();

    const SlurmSpec& spec = m_options.spec;
    std::string array = fmt::format("--array=0-{}", commands.size() - 1);
    if (spec.array_limit) array += fmt::format("%{}", *spec.array_limit);
    const std::string output_dir = slurm_pattern_path(m_workdir) + "/slurm";
    std::vector<std::string> argv{"sbatch",
                                  "--parsable",
                                  "--partition=" + m_options.partition,
                                  array,
                                  "--time=" + spec.time,
                                  "--job-name=" + m_options.job_name,
                                  "--no-requeue",
                                  "--output=" + output_dir + "/%A_%a.out",
                                  "--error=" + output_dir + "/%A_%a.err"};
    if (!spec.gres.empty()) argv.push_back("--gres=" + spec.gres);
    if (!spec.account.empty()) argv.push_back("--account=" + spec.account);
    for (const auto& extra : spec.sbatch) argv.push_back(extra);
    argv.push_back(batch_dir + "/array.sh");
    ++m_counters.sbatch_calls;
    auto ran = m_commands->run(argv);
    if (!ran) return ran.error();
    if (ran->exit_code != 0)
        return Error::infrastructure(fmt::format(
            "slurm: sbatch refused the job array for partition {} (exit {}): {}; check the partition, "
            "target.slurm (time, gres, account, sbatch) and `sinfo -p {}`",
            m_options.partition, ran->exit_code, first_line(ran->err, 300), m_options.partition));
    auto job = parse_sbatch_job_id(ran->out);
    if (!job) return job.error();
    m_jobs.insert(*job);
    m_submitted_at[*job] = clock().now();
    std::vector<std::string> tasks;
    for (std::size_t i = 0; i < commands.size(); ++i) tasks.push_back(fmt::format("{}_{}", *job, i));
    return tasks;
}

Result<std::vector<std::string>> SlurmTarget::submit(const std::vector<BatchItem>& items) {
    std::lock_guard lock(m_mutex);
    std::vector<std::string> tasks(items.size());
    // A resume: tasks of the earlier run that finished (status file) or are still queued are
    // followed again; one squeue answers for all of them.
    bool any_previous = false;
    for (const auto& item : items)
        if (!item.previous_task.empty()) {
            m_jobs.insert(job_of(item.previous_task));
            any_previous = true;
        }
    if (any_previous) refresh_locked(true);
    std::vector<const Command*> fresh;
    std::vector<std::size_t> fresh_index;
    for (std::size_t i = 0; i < items.size(); ++i) {
        const std::string& previous = items[i].previous_task;
        if (!previous.empty() && (task_file_exists(files_of(previous).status) || m_queue.count(previous))) {
            tasks[i] = previous;
            continue;
        }
        fresh.push_back(&items[i].command);
        fresh_index.push_back(i);
    }
    if (!fresh.empty()) {
        auto submitted = submit_array(fresh);
        if (!submitted) return submitted.error();
        for (std::size_t j = 0; j < fresh.size(); ++j) tasks[fresh_index[j]] = (*submitted)[j];
    }
    for (std::size_t i = 0; i < items.size(); ++i) m_task_of_key[items[i].key] = tasks[i];
    return tasks;
}

Result<std::unique_ptr<Process>> SlurmTarget::start(const Command& command) {
    std::string task;
    {
        std::lock_guard lock(m_mutex);
        if (m_halt) return *m_halt;
        auto found = command.batch_key.empty() ? m_task_of_key.end() : m_task_of_key.find(command.batch_key);
        if (found != m_task_of_key.end() && !m_consumed.count(command.batch_key)) {
            task = found->second;
            m_consumed.insert(command.batch_key);
        } else {
            // Not submitted, or its task already ran (this is a retry): a task of its own.
            auto submitted = submit_array({&command});
            if (!submitted) return submitted.error();
            task = submitted->front();
        }
    }
    // The experiment starts when its task runs: wait while it is pending (its output file
    // appears when Slurm starts it).
    const SlurmTaskFiles files = files_of(task);
    for (;;) {
        if (task_file_exists(files.out) || task_file_exists(files.status)) break;
        TaskObservation seen = observe(task);
        if (!seen.live || (seen.state != "PENDING" && !seen.state.empty())) break;
        if (stopping()) {
            if (auto halted = halt_reason()) return *halted;
            return Error::infrastructure(
                fmt::format("slurm: interrupted while task {} waited in the queue", task));
        }
        clock().sleep_for(std::chrono::milliseconds(100));
    }
    return std::unique_ptr<Process>(std::make_unique<SlurmTaskProcess>(*this, task));
}

void SlurmTarget::refresh_locked(bool force) {
    const auto now = clock().now();
    const auto interval = std::chrono::milliseconds(static_cast<long>(m_options.spec.poll_seconds * 1000));
    if (!force && now - m_last_refresh < interval) return;
    m_last_refresh = now;
    if (m_jobs.empty()) {
        m_queue.clear();
        return;
    }
    ++m_counters.squeue_calls;
    auto ran = m_commands->run(
        {"squeue", "--noheader", "--array", "--jobs=" + join(m_jobs, ','), "--format=%i|%T|%r"});
    if (!ran) return;  // keep the last answer; the next round asks again
    if (ran->exit_code != 0) {
        // Every listed job left Slurm's memory ("Invalid job id specified"): none is queued.
        if (ran->err.find("Invalid job id") == std::string::npos) return;
        m_queue.clear();
    } else {
        m_queue = parse_squeue(ran->out);
    }
    // Tasks no node starts: said once per new reason, and given up on after pending_timeout.
    PendingNews news = m_pending.update(m_queue, now);
    for (const auto& warning : news.warnings) m_options.warn(warning);
    if (news.expired && !m_halt) {
        std::vector<std::string> argv{"scancel"};
        argv.insert(argv.end(), news.stuck.begin(), news.stuck.end());
        ++m_counters.scancel_calls;
        (void)m_commands->run(argv);
        halt_locked(Error::infrastructure(*news.expired));
    }
    // Jobs with no task left in the queue need no more squeue.
    std::set<std::string> live;
    for (const auto& [task, entry] : m_queue) live.insert(job_of(task));
    for (auto it = m_jobs.begin(); it != m_jobs.end();) {
        const bool young = now - m_submitted_at[*it] < 2 * interval;
        it = (live.count(*it) || young) ? std::next(it) : m_jobs.erase(it);
    }
}

void SlurmTarget::ask_final_locked(const std::string& job) {
    const auto now = clock().now();
    const auto interval = std::chrono::milliseconds(static_cast<long>(m_options.spec.poll_seconds * 1000));
    auto asked = m_final_asked.find(job);
    if (asked != m_final_asked.end() && now - asked->second < interval) return;
    m_final_asked[job] = now;
    ++m_counters.final_state_calls;
    if (m_have_sacct) {
        auto ran = m_commands->run({"sacct", "--noheader", "--parsable2", "--allocations", "--jobs=" + job,
                                    "--format=JobID,State,ExitCode,NodeList"});
        if (ran && ran->exit_code == 0 && ran->err.find("disabled") == std::string::npos) {
            auto finals = parse_sacct(ran->out);
            bool found = false;
            for (auto& [task, final] : finals)
                if (!is_live_state(final.state)) {
                    m_finals[task] = final;
                    found = true;
                }
            if (found) return;
        } else if (ran) {
            m_have_sacct = false;  // "Slurm accounting storage is disabled": scontrol from now on
        }
    }
    auto ran = m_commands->run({"scontrol", "--oneliner", "show", "job", job});
    if (!ran || ran->exit_code != 0) return;
    for (auto& [task, final] : parse_scontrol_jobs(ran->out))
        if (!is_live_state(final.state)) m_finals[task] = final;
}

TaskObservation SlurmTarget::observe(const std::string& task) {
    std::lock_guard lock(m_mutex);
    const std::string job = job_of(task);
    if (!m_jobs.count(job) && !m_finals.count(task)) m_jobs.insert(job);  // a task of an earlier run
    refresh_locked(false);
    TaskObservation seen;
    if (auto queued = m_queue.find(task); queued != m_queue.end()) {
        seen.state = queued->second.state;
        return seen;
    }
    // Submitted after the last squeue: not listed yet, not gone.
    if (auto submitted = m_submitted_at.find(job);
        submitted != m_submitted_at.end() && submitted->second >= m_last_refresh)
        return seen;
    seen.live = false;
    if (!m_finals.count(task)) ask_final_locked(job);
    if (auto final = m_finals.find(task); final != m_finals.end()) seen.final = final->second;
    return seen;
}

void SlurmTarget::cancel(const std::string& task) {
    std::lock_guard lock(m_mutex);
    ++m_counters.scancel_calls;
    (void)m_commands->run({"scancel", task});
    m_last_refresh = {};  // the next observe asks squeue again
}

void SlurmTarget::cancel_all() {
    m_cancelled = true;
    std::lock_guard lock(m_mutex);
    std::set<std::string> jobs = m_jobs;
    for (const auto& [key, task] : m_task_of_key) jobs.insert(job_of(task));
    if (jobs.empty()) return;
    std::vector<std::string> argv{"scancel"};
    argv.insert(argv.end(), jobs.begin(), jobs.end());
    ++m_counters.scancel_calls;
    (void)m_commands->run(argv);
}

}  // namespace ncclsweep::remote
