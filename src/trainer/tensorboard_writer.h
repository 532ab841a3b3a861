#pragma once
// --tensorboard-dir: rank 0's TensorBoard event file, one per process, appended across resumes.
//
// File: <dir>/events.out.tfevents.<secs>.<hostname>.<pid> (tensorboard's event_file_writer.py names
// them so), TFRecord-framed (tensorboard_record.h). <secs> is the start time, raised past the newest
// event file already in the folder, so names sort in the order the files were started: TensorBoard
// reads a folder's event files in name order.
// Records: file_version "brain.Event:2"; at start(S), SessionLog START at step S+1; then one Event
// per report with its scalars (Summary.Value simple_value). Each event reaches the file with one
// write(2) as it is made, so a killed process keeps every record it reported; sync() (after each
// epoch's records, and on close) also asks the disk to keep them.
//
// Resume rule (docs/KUBEFLOW.md, "TensorBoard"): a run that starts or resumes after global step S
// writes records for steps > S only. Records with a step > S in earlier files were written by an
// attempt whose progress after S was lost (killed after its last checkpoint); TensorBoard drops them:
// the legacy reader on the START at S+1 (every record with step >= S+1 read before it), the Rust data
// server per series when this run writes the same tag at a step <= theirs. A (tag, step <= S) that an
// earlier file holds is never written again. start() reads the earlier files to count what is
// superseded (strictly: CRCs checked; a torn last record, what a killed writer leaves, is a warning;
// a damaged file is a warning naming it, the run goes on).
//
// Failures: a folder that cannot be created or a file that cannot be opened is a ConfigError
// naming --tensorboard-dir (exit 2). A write that fails later (disk full, volume gone) is a warning
// and ends this run's TensorBoard records; training goes on.
//
//   EventFileWriter tb("/shared/tensorboard/job");        // opens the file, writes file_version
//   tb.start(resumed_step);                               // 0 for a fresh run
//   tb.scalars(step, {{"train/loss", 0.31f}});
#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "trainer/tensorboard_event.h"

namespace ddp::trainer::tensorboard {

/// What start() found in the folder's earlier event files.
struct EarlierRecords {
  int files = 0;
  int64_t superseded = 0;                   ///< records with a step > S (TensorBoard drops them)
  std::map<std::string, int64_t> kept_upto;  ///< per tag, the last step <= S already written
};

/// Reads every event file in `dir` except `skip_name`, in name order, and sorts their scalar
/// records around `resumed_step`. Torn tails and damaged files are logged as warnings.
EarlierRecords read_earlier_records(const std::string& dir, const std::string& skip_name, int64_t resumed_step);

class EventFileWriter {
 public:
  explicit EventFileWriter(const std::string& dir);
  ~EventFileWriter();
  EventFileWriter(const EventFileWriter&) = delete;
  EventFileWriter& operator=(const EventFileWriter&) = delete;

  /// The run starts fresh (0) or resumes after global step `resumed_step`: the SessionLog START and
  /// the look at the earlier files. Once, before the first scalars().
  void start(int64_t resumed_step);
  /// One Event with `values` at `step`; a (tag, step) an earlier file already holds for a step <= S
  /// is left out. Nothing after a failed write.
  void scalars(int64_t step, const std::vector<Scalar>& values);
  /// fdatasync: what was written survives a crash of the machine too.
  void sync();

  const std::string& path() const { return path_; }

 private:
  void write_event(const std::string& event);

  std::string path_;
  int fd_ = -1;
  bool started_ = false;
  int64_t resumed_step_ = 0;
  std::map<std::string, int64_t> kept_upto_;
};

}  // namespace ddp::trainer::tensorboard
