#pragma once
// RANZCR CLiP tables: train.csv in, submission.csv out.
//
//   auto records = ddp::data::ranzcr::read_train_csv("data/train.csv");   // DataError on bad rows
//   records[0].uid, records[0].labels[ddp::data::ranzcr::kNumLabels - 1], records[0].patient_id
//   ddp::data::ranzcr::write_submission("submission.csv", uids, probabilities);

#include <array>
#include <iosfwd>
#include <string>
#include <vector>

namespace ddp::data::ranzcr {

constexpr int kNumLabels = 11;

/// The 11 label columns, in Kaggle's (and the submission's) order.
const std::array<std::string, kNumLabels>& label_columns();

struct Record {
  std::string uid;                       ///< StudyInstanceUID
  std::array<float, kNumLabels> labels;  ///< 0 or 1 per column of label_columns()
  std::string patient_id;
  std::string file_name;                 ///< image file inside the image folder: <uid>.jpg unless listed otherwise
};

/// Reads train.csv. Columns are found by name (any order; spaces around names and values are
/// ignored, a UTF-8 BOM and CRLF line ends too). DataError naming the file, the line and the column
/// or value for: a missing or unknown column, a row with another number of fields, a label that is
/// not 0 or 1, an empty or path-like StudyInstanceUID, an empty PatientID, a duplicate
/// StudyInstanceUID (both lines named), a quoted field left open (fields may not span lines), or
/// no rows at all. Values quoted in messages show bytes outside printable ASCII as \xNN.
std::vector<Record> read_train_csv(const std::string& path);

/// The parser behind read_train_csv, over any stream; `path` names it in errors.
std::vector<Record> parse_train_csv(std::istream& in, const std::string& path);

/// Test images of a folder: every <uid>.jpg (also .jpeg/.png), sorted by uid, labels 0.
/// DataError when the folder is missing or holds no image.
std::vector<Record> list_test_images(const std::string& dir);

/// Kaggle's submission: header StudyInstanceUID + the 11 columns, one row per uid with
/// probabilities[i * 11 + c]. Written to a temporary file and renamed into place.
void write_submission(const std::string& path, const std::vector<std::string>& uids,
                      const std::vector<float>& probabilities);

/// Splits one CSV line into fields (RFC 4180 quotes understood), without trimming.
/// `unterminated_quote` (when given) is set when the line ends inside a quoted field.
std::vector<std::string> split_csv_line(const std::string& line, bool* unterminated_quote = nullptr);

}  // namespace ddp::data::ranzcr
