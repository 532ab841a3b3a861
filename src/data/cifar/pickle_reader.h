#pragma once
// A strict reader for the subset of Python's pickle format that CIFAR-10's Python batches use.
//
// It understands what Python 2's cPickle wrote for the published files (protocol 2: dicts, lists,
// ints, BINSTRING/SHORT_BINSTRING strings, numpy arrays via numpy.core.multiarray._reconstruct +
// BUILD, numpy.dtype) and what Python 3 writes for the same dict at protocols 2-5 (BINUNICODE,
// BINBYTES, _codecs.encode for bytes at protocol 2, FRAME/MEMOIZE/STACK_GLOBAL, numpy's _frombuffer
// at protocol 5). Nothing is executed: the only callables accepted are those few numpy/_codecs
// names, interpreted here. Anything else is a ddp::DataError naming the file, offset and opcode.
//
//   auto root = ddp::data::cifar::pickle::load(bytes.data(), bytes.size(), path);
//   const Value* data = root->find("data");

#include <cstdint>
#include <memory>
#include <string>
#include <utility>
#include <vector>

namespace ddp::data::cifar::pickle {

struct Value;
using ValuePtr = std::shared_ptr<Value>;

enum class Kind {
  kNone,
  kBool,
  kInt,
  kFloat,
  kBytes,   ///< Python 2 str, Python 3 bytes/bytearray: raw bytes in `text`
  kString,  ///< unicode, UTF-8 in `text`
  kList,
  kTuple,
  kDict,
  kGlobal,  ///< a module attribute reference; "module.name" in `text`
  kDtype,   ///< numpy.dtype; descr ("u1", "i8", ...) in `text`, byte order in `byte_order`
  kArray,   ///< numpy.ndarray
};

const char* kind_name(Kind kind);

struct Value {
  explicit Value(Kind k) : kind(k) {}
  Kind kind;
  bool boolean = false;
  int64_t integer = 0;
  double real = 0;
  std::string text;                                 // bytes, string, global name, dtype descr
  std::vector<ValuePtr> items;                      // list, tuple
  std::vector<std::pair<ValuePtr, ValuePtr>> dict;  // dict, in insertion order
  // kDtype
  char byte_order = '|';  ///< '<', '>', '|' (not applicable) or '=' (native)
  // kArray
  std::vector<int64_t> shape;
  ValuePtr dtype;       ///< a kDtype
  bool fortran_order = false;
  ValuePtr raw;         ///< the kBytes/kString value holding the element bytes (shared, not copied)
  bool initialised = false;  ///< BUILD has set the state

  /// The array's element bytes (empty before BUILD).
  const std::string& array_bytes() const;
  /// Dict lookup by a str or bytes key with this text; nullptr when absent or not a dict.
  const Value* find(const std::string& key) const;
  /// Element size in bytes of a dtype descr like "u1"/"i8"; 0 when unknown.
  static int itemsize(const std::string& descr);
};

/// Parses one pickle. `source` names the data in error messages (usually the file path).
ValuePtr load(const uint8_t* bytes, size_t size, const std::string& source);

}  // namespace ddp::data::cifar::pickle
