#include "trainer/json_record.h"

#include "trainer/metrics_file.h"
#include "util/json.h"

namespace ddp::trainer {

JsonRecord& JsonRecord::field(const std::string& key, const std::string& json_value) {
  if (!body_.empty()) body_ += ',';
  body_ += util::json_quote(key) + ':' + json_value;
  return *this;
}

JsonRecord& JsonRecord::integer(const std::string& key, int64_t value) { return field(key, std::to_string(value)); }

JsonRecord& JsonRecord::number(const std::string& key, double value) { return field(key, json_number(value)); }

JsonRecord& JsonRecord::number(const std::string& key, const std::optional<double>& value) {
  return field(key, value ? json_number(*value) : "null");
}

JsonRecord& JsonRecord::numbers(const std::string& key, const std::vector<double>& values) {
  std::string list;
  for (double v : values) list += (list.empty() ? "" : ",") + json_number(v);
  return field(key, "[" + list + "]");
}

JsonRecord& JsonRecord::numbers(const std::string& key, const std::vector<std::optional<double>>& values) {
  std::string list;
  for (size_t i = 0; i < values.size(); ++i) list += (i ? "," : "") + (values[i] ? json_number(*values[i]) : "null");
  return field(key, "[" + list + "]");
}

JsonRecord& JsonRecord::string(const std::string& key, const std::string& value) { return field(key, util::json_quote(value)); }

JsonRecord& JsonRecord::strings(const std::string& key, const std::vector<std::string>& values) {
  std::string list;
  for (size_t i = 0; i < values.size(); ++i) list += (i ? "," : "") + util::json_quote(values[i]);
  return field(key, "[" + list + "]");
}

JsonRecord& JsonRecord::append(const JsonRecord& other) {
  if (!other.body_.empty()) body_ += (body_.empty() ? "" : ",") + other.body_;
  return *this;
}

}  // namespace ddp::trainer
