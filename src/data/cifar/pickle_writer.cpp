// Protocol-2 pickle output in the shape Python 2's cPickle produced (one BINPUT per memoised object,
// APPENDS/SETITEMS in batches of 1000), so the reader is tested against what real files contain.
#include "data/cifar/pickle_writer.h"

#include <stdexcept>

#include "util/little_endian.h"

namespace ddp::data::cifar {
namespace {

constexpr size_t kBatch = 1000;  // cPickle's BATCHSIZE

class Writer {
 public:
  Writer() { out_ += "\x80\x02"; }
  std::string finish() {
    out_ += '.';
    return std::move(out_);
  }

  void raw(char c) { out_ += c; }
  void put() {  // BINPUT / LONG_BINPUT of the object just written
    uint32_t index = ++memo_;
    if (index < 256) {
      out_ += 'q';
      out_ += static_cast<char>(index);
    } else {
      out_ += 'r';
      le(index, 4);
    }
  }
  void le(uint64_t v, int n) { util::append_le(out_, v, n); }
  void integer(int64_t v) {
    if (v >= 0 && v < 256) {
      out_ += 'K';
      out_ += static_cast<char>(v);
    } else if (v >= 0 && v < 65536) {
      out_ += 'M';
      le(static_cast<uint64_t>(v), 2);
    } else if (v >= INT32_MIN && v <= INT32_MAX) {
      out_ += 'J';
      le(static_cast<uint32_t>(static_cast<int32_t>(v)), 4);
    } else {
      throw std::invalid_argument("pickle writer: integer out of 32-bit range");
    }
  }
  void str(const char* data, size_t n) {  // a Python 2 str
    if (n < 256) {
      out_ += 'U';
      out_ += static_cast<char>(n);
    } else {
      if (n > static_cast<size_t>(INT32_MAX)) throw std::invalid_argument("pickle writer: string too long");
      out_ += 'T';
      le(n, 4);
    }
    out_.append(data, n);
    put();
  }
  void str(const std::string& s) { str(s.data(), s.size()); }
  void global(const char* module, const char* name) {
    out_ += 'c';
    out_ += module;
    out_ += '\n';
    out_ += name;
    out_ += '\n';
    put();
  }
  void int_list(const std::vector<uint8_t>& values) {
    out_ += ']';
    put();
    for (size_t i = 0; i < values.size(); i += kBatch) {
      size_t end = std::min(values.size(), i + kBatch);
      if (end - i == 1) {
        integer(values[i]);
        out_ += 'a';
        continue;
      }
      out_ += '(';
      for (size_t j = i; j < end; ++j) integer(values[j]);
      out_ += 'e';
    }
  }
  void str_list(const std::vector<std::string>& values) {
    out_ += ']';
    put();
    for (size_t i = 0; i < values.size(); i += kBatch) {
      size_t end = std::min(values.size(), i + kBatch);
      out_ += '(';
      for (size_t j = i; j < end; ++j) str(values[j]);
      out_ += 'e';
    }
  }
  // numpy.ndarray of uint8 with the given shape: _reconstruct(ndarray, (0,), 'b') then BUILD with
  // (1, shape, dtype('u1'), False, data).
  void uint8_array(const uint8_t* data, int64_t rows, int64_t cols) {
    global("numpy.core.multiarray", "_reconstruct");
    global("numpy", "ndarray");
    integer(0);
    out_ += '\x85';  // TUPLE1
    put();
    str("b", 1);
    out_ += '\x87';  // TUPLE3
    put();
    out_ += 'R';
    put();
    out_ += '(';
    integer(1);
    integer(rows);
    integer(cols);
    out_ += '\x86';  // TUPLE2
    put();
    // dtype('u1', 0, 1) with state (3, '|', None, None, None, -1, -1, 0)
    global("numpy", "dtype");
    str("u1", 2);
    integer(0);
    integer(1);
    out_ += '\x87';
    put();
    out_ += 'R';
    put();
    out_ += '(';
    integer(3);
    str("|", 1);
    out_ += "NNN";
    integer(-1);
    integer(-1);
    integer(0);
    out_ += 't';
    put();
    out_ += 'b';
    out_ += '\x89';  // NEWFALSE: C order
    str(reinterpret_cast<const char*>(data), static_cast<size_t>(rows * cols));
    out_ += 't';
    put();
    out_ += 'b';
  }

 private:
  std::string out_;
  uint32_t memo_ = 0;
};

}  // namespace

std::string cifar_batch_pickle(const std::string& batch_label, const uint8_t* pixels, int64_t n,
                               const std::vector<uint8_t>& labels, const std::vector<std::string>& filenames) {
  if (static_cast<int64_t>(labels.size()) != n || static_cast<int64_t>(filenames.size()) != n)
    throw std::invalid_argument("cifar_batch_pickle: labels/filenames do not match the image count");
  Writer w;
  w.raw('}');
  w.put();
  w.raw('(');
  w.str("data");
  w.uint8_array(pixels, n, 3072);
  w.str("labels");
  w.int_list(labels);
  w.str("batch_label");
  w.str(batch_label);
  w.str("filenames");
  w.str_list(filenames);
  w.raw('u');
  return w.finish();
}

std::string cifar_meta_pickle(int64_t num_cases_per_batch, const std::vector<std::string>& label_names) {
  Writer w;
  w.raw('}');
  w.put();
  w.raw('(');
  w.str("num_cases_per_batch");
  w.integer(num_cases_per_batch);
  w.str("label_names");
  w.str_list(label_names);
  w.str("num_vis");
  w.integer(3072);
  w.raw('u');
  return w.finish();
}

}  // namespace ddp::data::cifar
