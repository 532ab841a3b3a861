#pragma once
// The few tensorboard.Event messages a trainer writes and reads back, encoded by hand (no protobuf
// library): field numbers from tensorboard/compat/proto/event.proto and summary.proto (a copy lives
// in tests/tensorboard/proto/, where the test parses our files with the real messages).
//   Event        1 wall_time (double)  2 step (int64)  3 file_version (string)  5 summary  7 session_log
//   Summary      1 value (repeated Value)
//   Value        1 tag (string)  2 simple_value (float) - the scalar form TensorBoard's scalars plugin reads
//   SessionLog   1 status (enum; START = 1)
// No LibTorch here: the fuzz target `tfevents` builds the parser alone.
//
//   std::string e = encode_scalars(now, 120, {{"train/loss", 0.53f}});
//   Event parsed = parse_event(e);      // DataError on malformed bytes
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace ddp::trainer::tensorboard {

/// What the first record of every event file holds (TensorBoard reads SessionLog START only from version 2 on).
constexpr const char* kFileVersion = "brain.Event:2";
/// SessionLog.SessionStatus START.
constexpr int kSessionStart = 1;

struct Scalar {
  std::string tag;
  float value = 0;
};

/// What parse_event() keeps of an Event; fields it does not use (graphs, images, histograms,
/// unknown fields) are skipped after their wire format is checked.
struct Event {
  double wall_time = 0;
  int64_t step = 0;
  std::optional<std::string> file_version;
  std::optional<int64_t> session_status;  ///< SessionLog.status when the event is a SessionLog
  bool has_summary = false;
  std::vector<Scalar> scalars;  ///< the Summary's values that carry a simple_value, in order
};

std::string encode_file_version(double wall_time);
/// SessionLog{status: START} at `step`: TensorBoard drops every record of earlier files with a step >= `step`.
std::string encode_session_start(double wall_time, int64_t step);
/// One Summary holding `scalars` (simple_value) at `step`.
std::string encode_scalars(double wall_time, int64_t step, const std::vector<Scalar>& scalars);

/// Parses one record's data as an Event. Truncated varints or fields, a wrong wire type for a known
/// field, a group, a field number 0 or a negative step is a DataError.
Event parse_event(std::string_view bytes);

}  // namespace ddp::trainer::tensorboard
