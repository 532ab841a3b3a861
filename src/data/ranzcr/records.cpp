#include "data/ranzcr/records.h"

#include <ddp/errors.h>

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>
#include <unordered_map>

#include "util/files.h"
#include "util/files.h"
#include "util/numbers.h"

namespace ddp::data::ranzcr {
namespace fs = std::filesystem;

const std::array<std::string, kNumLabels>& label_columns() {
  static const std::array<std::string, kNumLabels> columns = {
      "ETT - Abnormal",  "ETT - Borderline", "ETT - Normal",
      "NGT - Abnormal",  "NGT - Borderline", "NGT - Incompletely Imaged",
      "NGT - Normal",    "CVC - Abnormal",   "CVC - Borderline",
      "CVC - Normal",    "Swan Ganz Catheter Present"};
  return columns;
}

namespace {

const char* kUidColumn = "StudyInstanceUID";
const char* kPatientColumn = "PatientID";

std::string trim(const std::string& s) {
  size_t b = 0, e = s.size();
  while (b < e && (s[b] == ' ' || s[b] == '\t' || s[b] == '\r')) ++b;
  while (e > b && (s[e - 1] == ' ' || s[e - 1] == '\t' || s[e - 1] == '\r')) --e;
  return s.substr(b, e - b);
}

// A value from the file as an error message shows it: escaped (a binary file must not write raw
// bytes into the logs) and at most 80 characters.
std::string shown(const std::string& s) { return util::printable(s, 80); }

std::string where(const std::string& path, size_t line) {
  return "'" + path + "' line " + std::to_string(line);
}

// An image's file name is <uid>.jpg: refuse anything that would leave the image folder.
bool is_safe_uid(const std::string& uid) {
  return !uid.empty() && uid != "." && uid != ".." && uid.find('/') == std::string::npos &&
         uid.find('\\') == std::string::npos && uid.find('\0') == std::string::npos;
}

}  // namespace

std::vector<std::string> split_csv_line(const std::string& line, bool* unterminated_quote) {
  std::vector<std::string> fields;
  std::string field;
  bool quoted = false;
  for (size_t i = 0; i < line.size(); ++i) {
    char c = line[i];
    if (quoted) {
      if (c == '"' && i + 1 < line.size() && line[i + 1] == '"') {
        field += '"';
        ++i;
      } else if (c == '"') {
        quoted = false;
      } else {
        field += c;
      }
    } else if (c == '"') {
      quoted = true;
    } else if (c == ',') {
      fields.push_back(std::move(field));
      field.clear();
    } else {
      field += c;
    }
  }
  fields.push_back(std::move(field));
  if (unterminated_quote) *unterminated_quote = quoted;
  return fields;
}

std::vector<Record> read_train_csv(const std::string& path) {
  std::ifstream in(path);
  if (!in) throw ddp::DataError("cannot open label file '" + path + "'");
  if (!ddp::util::is_regular_file(path)) throw ddp::DataError("label file '" + path + "' is not a regular file");
  return parse_train_csv(in, path);
}

std::vector<Record> parse_train_csv(std::istream& in, const std::string& path) {
  std::string line;
  if (!std::getline(in, line)) throw ddp::DataError("label file '" + path + "' is empty (no header)");
  if (line.rfind("\xEF\xBB\xBF", 0) == 0) line.erase(0, 3);  // UTF-8 BOM

  // Header: find every expected column by name.
  bool open_quote = false;
  const std::vector<std::string> header = split_csv_line(line, &open_quote);
  if (open_quote) throw ddp::DataError("label file '" + path + "' line 1: a quoted field is not closed (header)");
  std::map<std::string, size_t> by_name;
  for (size_t i = 0; i < header.size(); ++i) {
    const std::string name = trim(header[i]);
    bool known = name == kUidColumn || name == kPatientColumn;
    for (const auto& c : label_columns()) known = known || name == c;
    if (!known) {
      throw ddp::DataError("label file '" + path + "': unknown column '" + shown(name) + "' (column " +
                           std::to_string(i + 1) + " of the header)");
    }
    if (!by_name.emplace(name, i).second) {
      throw ddp::DataError("label file '" + path + "': column '" + name + "' appears twice in the header");
    }
  }
  auto column_index = [&](const std::string& name) {
    auto it = by_name.find(name);
    if (it == by_name.end()) {
      throw ddp::DataError("label file '" + path + "': missing column '" + name + "' in the header");
    }
    return it->second;
  };
  const size_t uid_col = column_index(kUidColumn);
  const size_t patient_col = column_index(kPatientColumn);
  std::array<size_t, kNumLabels> label_col{};
  for (int c = 0; c < kNumLabels; ++c) label_col[c] = column_index(label_columns()[c]);

  std::vector<Record> records;
  std::unordered_map<std::string, size_t> line_of_uid;
  size_t line_no = 1;
  while (std::getline(in, line)) {
    ++line_no;
    if (trim(line).empty()) continue;
    const std::vector<std::string> fields = split_csv_line(line, &open_quote);
    if (open_quote) {
      throw ddp::DataError("label file " + where(path, line_no) + ": a quoted field is not closed (fields may not span lines)");
    }
    if (fields.size() != header.size()) {
      throw ddp::DataError("label file " + where(path, line_no) + ": " + std::to_string(fields.size()) +
                           " fields, the header has " + std::to_string(header.size()));
    }
    Record r;
    r.uid = trim(fields[uid_col]);
    if (!is_safe_uid(r.uid)) {
      throw ddp::DataError("label file " + where(path, line_no) + ": bad StudyInstanceUID '" + shown(r.uid) + "'");
    }
    r.patient_id = trim(fields[patient_col]);
    if (r.patient_id.empty()) {
      throw ddp::DataError("label file " + where(path, line_no) + ": empty PatientID for '" + shown(r.uid) + "'");
    }
    for (int c = 0; c < kNumLabels; ++c) {
      const std::string value = trim(fields[label_col[c]]);
      if (value == "0") {
        r.labels[c] = 0.f;
      } else if (value == "1") {
        r.labels[c] = 1.f;
      } else {
        throw ddp::DataError("label file " + where(path, line_no) + ": column '" + label_columns()[c] +
                             "' has value '" + shown(value) + "' (expected 0 or 1)");
      }
    }
    r.file_name = r.uid + ".jpg";
    auto [it, fresh] = line_of_uid.emplace(r.uid, line_no);
    if (!fresh) {
      throw ddp::DataError("label file " + where(path, line_no) + ": duplicate StudyInstanceUID '" + shown(r.uid) +
                           "' (first on line " + std::to_string(it->second) + ")");
    }
    records.push_back(std::move(r));
  }
  if (in.bad()) throw ddp::DataError("error reading label file '" + path + "'");
  if (records.empty()) throw ddp::DataError("label file '" + path + "' has a header but no rows");
  return records;
}

std::vector<Record> list_test_images(const std::string& dir) {
  std::error_code ec;
  if (!fs::is_directory(dir, ec)) throw ddp::DataError("test image folder '" + dir + "' does not exist");
  std::vector<Record> records;
  for (const auto& entry : fs::directory_iterator(dir, ec)) {
    if (!entry.is_regular_file()) continue;
    std::string ext = entry.path().extension().string();
    std::transform(ext.begin(), ext.end(), ext.begin(), [](unsigned char c) { return std::tolower(c); });
    if (ext != ".jpg" && ext != ".jpeg" && ext != ".png") continue;
    Record r;
    r.uid = entry.path().stem().string();
    r.file_name = entry.path().filename().string();
    r.labels.fill(0.f);
    records.push_back(std::move(r));
  }
  if (ec) throw ddp::DataError("cannot list test image folder '" + dir + "': " + ec.message());
  if (records.empty()) throw ddp::DataError("test image folder '" + dir + "' holds no .jpg/.jpeg/.png image");
  std::sort(records.begin(), records.end(), [](const Record& a, const Record& b) { return a.uid < b.uid; });
  return records;
}

void write_submission(const std::string& path, const std::vector<std::string>& uids,
                      const std::vector<float>& probabilities) {
  if (probabilities.size() != uids.size() * kNumLabels) {
    throw ddp::DataError("submission: " + std::to_string(uids.size()) + " uids but " +
                         std::to_string(probabilities.size()) + " probabilities");
  }
  std::string csv = kUidColumn;
  for (const auto& c : label_columns()) csv += ',' + c;
  csv += '\n';
  csv.reserve((uids.size() + 1) * 256);  // a row is about 170 bytes
  char buf[32];
  for (size_t i = 0; i < uids.size(); ++i) {
    csv += uids[i];
    for (int c = 0; c < kNumLabels; ++c) {
      std::snprintf(buf, sizeof buf, ",%.6f", probabilities[i * kNumLabels + c]);
      csv += buf;
    }
    csv += '\n';
  }
  util::write_file_atomically(path, {csv});
}

}  // namespace ddp::data::ranzcr
