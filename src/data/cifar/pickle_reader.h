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
// Hostile input cannot exhaust the stack: the reader is a loop over opcodes, nothing walks the
// value tree recursively, and every value of one pickle lives in one arena that is freed by a flat
// loop (a list nested a million deep, or a list appended to itself through the memo, is just
// memory). Memory is bounded too: at most kMaxValues values and memo entries per pickle.
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
/// The root of a loaded pickle; it keeps the arena of all its values alive.
using ValuePtr = std::shared_ptr<Value>;

/// Most values (and memo entries) one pickle may create: a CIFAR-10 batch of 10,000 images has
/// about 20,000 (a label and a file name per image), a re-saved 60,000-image file ~120,000. A value
/// costs ~200 bytes, so this caps a hostile file's tree at ~200 MB.
constexpr size_t kMaxValues = size_t{1} << 20;

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
  // Children point into the arena that owns every value of the pickle (never owning pointers, so
  // freeing a deep or cyclic tree does not recurse).
  std::vector<Value*> items;                    // list, tuple
  std::vector<std::pair<Value*, Value*>> dict;  // dict, in insertion order
  // kDtype
  char byte_order = '|';  ///< '<', '>', '|' (not applicable) or '=' (native)
  // kArray
  std::vector<int64_t> shape;
  Value* dtype = nullptr;  ///< a kDtype
  bool fortran_order = false;
  Value* raw = nullptr;    ///< the kBytes/kString value holding the element bytes (shared, not copied)
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
