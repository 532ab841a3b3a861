#include "data/cifar/cifar_files.h"

#include <ddp/errors.h>

#include <cstdint>
#include <cstring>

#include "data/cifar/pickle_reader.h"

namespace ddp::data::cifar {

CifarRecords parse_cifar_binary(const std::vector<uint8_t>& bytes, const std::string& path) {
  if (bytes.empty()) throw DataError(path + ": empty file, expected 3073-byte CIFAR-10 records");
  if (bytes.size() % kCifarRecordBytes != 0)
    throw DataError(path + ": " + std::to_string(bytes.size()) + " bytes is not a whole number of " +
                    std::to_string(kCifarRecordBytes) + "-byte records (truncated or not a CIFAR-10 binary batch; " +
                    std::to_string(bytes.size() / kCifarRecordBytes) + " whole records + " +
                    std::to_string(bytes.size() % kCifarRecordBytes) + " bytes)");
  CifarRecords r;
  r.count = static_cast<int64_t>(bytes.size() / kCifarRecordBytes);
  r.pixels.resize(bytes.size() / kCifarRecordBytes * kCifarImageBytes);  // <= bytes.size(): cannot wrap
  r.labels.resize(static_cast<size_t>(r.count));
  for (int64_t i = 0; i < r.count; ++i) {
    const uint8_t* rec = bytes.data() + i * kCifarRecordBytes;
    if (rec[0] >= kCifarClasses)
      throw DataError(path + ": record " + std::to_string(i) + " has label " + std::to_string(rec[0]) +
                      " (CIFAR-10 labels are 0-9)");
    r.labels[i] = rec[0];
    std::memcpy(r.pixels.data() + i * kCifarImageBytes, rec + 1, kCifarImageBytes);
  }
  return r;
}

namespace {

using pickle::Kind;
using pickle::Value;

std::string shape_string(const std::vector<int64_t>& shape) {
  std::string s = "(";
  for (size_t i = 0; i < shape.size(); ++i) s += (i ? ", " : "") + std::to_string(shape[i]);
  return s + (shape.size() == 1 ? ",)" : ")");
}

// count * size in bytes, or a DataError when it does not fit: shapes come from the file, so the
// product is checked by itself rather than trusting a later comparison to catch a wrapped value.
size_t checked_bytes(int64_t count, int64_t size, const std::string& path, const std::string& what) {
  uint64_t bytes = 0;
  if (count < 0 || size < 0 || __builtin_mul_overflow(static_cast<uint64_t>(count), static_cast<uint64_t>(size), &bytes) ||
      bytes > static_cast<uint64_t>(PTRDIFF_MAX))
    throw DataError(path + ": " + what + " of " + std::to_string(count) + " x " + std::to_string(size) +
                    " bytes is too large (not a CIFAR-10 batch)");
  return static_cast<size_t>(bytes);
}

std::string dtype_string(const Value& array) {
  if (!array.dtype) return "?";
  return std::string(1, array.dtype->byte_order) + array.dtype->text;
}

// Labels as a list of ints, or an integer ndarray (a user's re-saved file may hold one).
std::vector<int64_t> read_labels(const Value& labels, const std::string& path) {
  std::vector<int64_t> out;
  if (labels.kind == Kind::kList) {
    out.reserve(labels.items.size());
    for (size_t i = 0; i < labels.items.size(); ++i) {
      const Value& v = *labels.items[i];
      if (v.kind != Kind::kInt)
        throw DataError(path + ": labels[" + std::to_string(i) + "] is a " + pickle::kind_name(v.kind) + ", expected an int");
      out.push_back(v.integer);
    }
    return out;
  }
  if (labels.kind == Kind::kArray) {
    const std::string descr = labels.dtype ? labels.dtype->text : "";
    int size = Value::itemsize(descr);
    bool integral = !descr.empty() && (descr[0] == 'u' || descr[0] == 'i');
    if (!integral || size == 0 || labels.dtype->byte_order == '>')
      throw DataError(path + ": labels array has dtype " + dtype_string(labels) + ", expected little-endian integers");
    if (labels.shape.size() != 1)
      throw DataError(path + ": labels array has shape " + shape_string(labels.shape) + ", expected (n,)");
    const size_t needed = checked_bytes(labels.shape[0], size, path, "labels array " + shape_string(labels.shape));
    if (labels.array_bytes().size() != needed)
      throw DataError(path + ": labels array holds " + std::to_string(labels.array_bytes().size()) + " bytes, shape " +
                      shape_string(labels.shape) + " needs " + std::to_string(needed));
    out.reserve(static_cast<size_t>(labels.shape[0]));
    for (int64_t i = 0; i < labels.shape[0]; ++i) {
      uint64_t raw = 0;
      std::memcpy(&raw, labels.array_bytes().data() + i * size, size);  // little-endian host
      int64_t v = static_cast<int64_t>(raw);
      if (descr[0] == 'i' && size < 8 && (raw >> (8 * size - 1)) & 1) v -= static_cast<int64_t>(1) << (8 * size);
      out.push_back(v);
    }
    return out;
  }
  throw DataError(path + ": 'labels' is a " + std::string(pickle::kind_name(labels.kind)) + ", expected a list of ints");
}

}  // namespace

CifarRecords parse_cifar_pickle(const std::vector<uint8_t>& bytes, const std::string& path) {
  pickle::ValuePtr root = pickle::load(bytes.data(), bytes.size(), path);
  if (root->kind != Kind::kDict)
    throw DataError(path + ": the pickle holds a " + std::string(pickle::kind_name(root->kind)) + ", expected a dict");

  const Value* data = root->find("data");
  if (!data) throw DataError(path + ": missing key 'data'");
  if (data->kind != Kind::kArray || !data->initialised)
    throw DataError(path + ": 'data' is a " + std::string(pickle::kind_name(data->kind)) + ", expected a numpy array");
  if (!data->dtype || data->dtype->text != "u1")
    throw DataError(path + ": 'data' has dtype " + dtype_string(*data) + ", expected uint8 (u1)");
  if (data->shape.size() != 2 || data->shape[1] != kCifarImageBytes || data->shape[0] < 1)
    throw DataError(path + ": 'data' has shape " + shape_string(data->shape) + ", expected (n, 3072)");
  if (data->fortran_order) throw DataError(path + ": 'data' is Fortran-ordered, expected C order");
  const int64_t n = data->shape[0];
  const size_t needed = checked_bytes(n, kCifarImageBytes, path, "'data' shape " + shape_string(data->shape));
  if (data->array_bytes().size() != needed)
    throw DataError(path + ": 'data' holds " + std::to_string(data->array_bytes().size()) + " bytes, shape " +
                    shape_string(data->shape) + " needs " + std::to_string(needed));

  const Value* labels = root->find("labels");
  if (!labels) {
    if (root->find("fine_labels"))
      throw DataError(path + ": missing key 'labels' (it has 'fine_labels': a CIFAR-100 file?)");
    throw DataError(path + ": missing key 'labels'");
  }
  std::vector<int64_t> label_values = read_labels(*labels, path);
  if (static_cast<int64_t>(label_values.size()) != n)
    throw DataError(path + ": " + std::to_string(label_values.size()) + " labels for " + std::to_string(n) + " images");

  CifarRecords r;
  r.count = n;
  r.labels.resize(n);
  for (int64_t i = 0; i < n; ++i) {
    if (label_values[i] < 0 || label_values[i] >= kCifarClasses)
      throw DataError(path + ": labels[" + std::to_string(i) + "] is " + std::to_string(label_values[i]) +
                      " (CIFAR-10 labels are 0-9)");
    r.labels[i] = static_cast<uint8_t>(label_values[i]);
  }
  r.pixels.assign(data->array_bytes().begin(), data->array_bytes().end());
  return r;
}

}  // namespace ddp::data::cifar
