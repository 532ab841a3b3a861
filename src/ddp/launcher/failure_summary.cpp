#include "ddp/launcher/failure_summary.h"

#include <ddp/errors.h>
#include <ddp/logging.h>

#include <algorithm>
#include <optional>

#include "util/error_file.h"

namespace ddp::launcher {
namespace {

// What is known of one failure: its record when it wrote a readable one.
struct Failure {
  const WorkerExit* exit;
  std::optional<util::ErrorRecord> record;
  std::string file_note;  ///< "<N/A>", the path, or the path with why it could not be read
};

Failure look_up(const WorkerExit& e) {
  Failure f{&e, std::nullopt, "<N/A>"};
  if (e.error_file.empty()) return f;
  try {
    f.record = util::read_error_file(e.error_file);
    if (f.record) f.file_note = e.error_file;
  } catch (const std::exception& why) {
    // A worker's garbled record must not hide the failure itself (torch's agent raises here).
    f.file_note = e.error_file + " (unreadable: " + why.what() + ")";
  }
  return f;
}

// The message when there is no record, as torch words it for a signal; an exit code gets ours.
std::string message_without_record(const WorkerExit& e) {
  if (e.signal) return "Signal " + std::to_string(e.signal) + " (" + signal_name(e.signal) + ") received by PID " +
                       std::to_string(e.pid);
  return "exited with code " + std::to_string(e.code) + " (" +
         (is_retryable_exit_code(e.code) ? "retryable" : "permanent") +
         ") without a TORCHELASTIC_ERROR_FILE record (ddp::report_and_exit_code writes one)";
}

// torch's isoformat(sep="_") of the local time.
std::string local_time(std::time_t t) {
  std::tm tm{};
  localtime_r(&t, &tm);
  char buf[32];
  std::strftime(buf, sizeof buf, "%Y-%m-%d_%H:%M:%S", &tm);
  return buf;
}

std::string indent_lines(const std::string& text) {
  std::string out;
  for (char c : text) {
    out += c;
    if (c == '\n') out += "  ";
  }
  return out;
}

std::string format_one(size_t idx, const Failure& f, const std::string& host, std::time_t now) {
  const WorkerExit& e = *f.exit;
  std::string traceback = message_without_record(e);
  std::time_t when = now;
  if (f.record) {
    traceback = f.record->callstack.empty() ? f.record->message : f.record->callstack;
    when = static_cast<std::time_t>(f.record->timestamp);
  }
  return "[" + std::to_string(idx) + "]:\n" +                                               //
         "  time      : " + local_time(when) + "\n" +                                        //
         "  host      : " + host + "\n" +                                                    //
         "  rank      : " + std::to_string(e.rank) + " (local_rank: " + std::to_string(e.local_rank) + ")\n" +
         "  exitcode  : " + std::to_string(e.code) + " (pid: " + std::to_string(e.pid) + ")\n" +  //
         "  error_file: " + f.file_note + "\n" +                                              //
         "  traceback : " + indent_lines(traceback);
}

}  // namespace

std::string format_failure_report(const std::string& program, const FailureReport& report,
                                  const std::string& host, std::time_t now) {
  const std::string title = program + " FAILED";
  std::string root;
  std::vector<std::string> others;
  size_t width = title.size();
  for (size_t i = 0; i < report.failures.size(); ++i) {
    std::string text = format_one(i, look_up(report.failures[i]), host, now);
    size_t start = 0;
    while (start <= text.size()) {
      size_t end = text.find('\n', start);
      if (end == std::string::npos) end = text.size();
      width = std::max(width, end - start);
      start = end + 1;
    }
    if (i == report.root) root = text;
    else others.push_back(text);
  }
  width = std::min<size_t>(width, 60);
  const std::string border(width, '='), section(width, '-');
  std::string out = "\n" + border + "\n" + title + "\n" + section + "\nFailures:\n";
  if (others.empty()) out += "  <NO_OTHER_FAILURES>\n";
  for (const auto& o : others) out += o + "\n";
  out += section + "\nRoot Cause (first observed failure):\n" + root + "\n" + border;
  return out;
}

void record_root_cause(const std::string& own_error_file, const FailureReport& report, std::time_t now) {
  if (own_error_file.empty() || report.failures.empty()) return;
  const Failure f = look_up(report.failures[report.root]);
  util::ErrorRecord r;
  if (f.record) {
    r = *f.record;
    // torch overrides the code only in its own shape; the old shape is copied as it is.
    if (!r.old_shape) r.error_code = f.exit->code;
  } else {
    r.message = "worker rank " + std::to_string(f.exit->rank) + ": " + message_without_record(*f.exit);
    r.callstack = r.message;
    r.timestamp = static_cast<int64_t>(now);
    r.error_code = f.exit->code;
  }
  try {
    util::write_error_file(own_error_file, util::error_record_json(r));
  } catch (const std::exception& e) {
    DDP_LOG(WARN) << "TORCHELASTIC_ERROR_FILE: " << e.what();
  }
}

}  // namespace ddp::launcher
