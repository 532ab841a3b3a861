#pragma once
// TORCHELASTIC_ERROR_FILE: the JSON file in which a worker says why it failed, so that its launcher
// can name the root cause of a failed job. The format is torch's: what
// torch.distributed.elastic.multiprocessing.errors.ErrorHandler.record_exception writes (the @record
// decorator) and ProcessFailure reads (torch 1.13 and 2.6 alike):
//
//   {"message": {"message": "<Type>: <what>",
//                "extraInfo": {"py_callstack": "<traceback>", "timestamp": "<unix seconds>"}}}
//
// A launcher that copies a worker's record into its own error file adds "errorCode" (the worker's
// exit code) beside "message" inside it. ProcessFailure also reads an older shape, {"message":
// "<text>", "timestamp": <unix seconds>}, and so does parse_error_file.
//
//   write_error_file(path, error_record("ddp::ConfigError: --lr is not a number", trace, time(nullptr)));
//   ErrorRecord r = parse_error_file(text, path);   // ConfigError when it is not such a record
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace ddp::util {

struct ErrorRecord {
  std::string message;    ///< "message.message", or the old shape's "message"
  std::string callstack;  ///< "message.extraInfo.py_callstack" (empty in the old shape)
  int64_t timestamp = 0;  ///< unix seconds
  std::optional<int> error_code;  ///< "message.errorCode", set by a launcher
  bool old_shape = false;         ///< {"message": "<text>", ...}: copied as it is, never rewritten
  std::string text;               ///< the file as read (what a launcher copies in the old shape)
};

/// The record as torch's ErrorHandler writes it (with "errorCode" when `error_code` is set).
std::string error_record_json(const ErrorRecord& record);

/// Parses an error file's text as torch's ProcessFailure reads it. ConfigError naming `source` when
/// it is not JSON, has no "message", or its timestamp is not a whole number.
ErrorRecord parse_error_file(std::string_view text, const std::string& source);

/// Reads and parses the file at `path`; nullopt when there is none. ConfigError as parse_error_file,
/// or when it is larger than a record can be (4 MiB) or cannot be read.
std::optional<ErrorRecord> read_error_file(const std::string& path);

/// Writes `json` to `path` atomically (a reader never sees half a record). DataError on failure.
void write_error_file(const std::string& path, const std::string& json);

}  // namespace ddp::util
