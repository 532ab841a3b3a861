// The pickle subset reader: a small stack machine over the opcodes listed in pickle_reader.h.
// Opcode meanings follow Python's Lib/pickletools.py documentation.
#include "data/cifar/pickle_reader.h"

#include <ddp/errors.h>

#include <cstring>
#include <deque>
#include <sstream>
#include <unordered_map>

#include "util/little_endian.h"

namespace ddp::data::cifar::pickle {
namespace {

// Opcodes (pickletools names), by what they do; the characters are protocol 0/1's, the bytes from
// 0x80 protocol 2's and later.
enum Op : uint8_t {
  // framing
  PROTO = 0x80, FRAME = 0x95, STOP = '.',
  // scalars
  NONE = 'N', NEWTRUE = 0x88, NEWFALSE = 0x89, BININT = 'J', BININT1 = 'K', BININT2 = 'M', LONG1 = 0x8a,
  BINFLOAT = 'G',
  // strings and bytes
  BINSTRING = 'T', SHORT_BINSTRING = 'U', BINUNICODE = 'X', SHORT_BINUNICODE = 0x8c, BINUNICODE8 = 0x8d,
  BINBYTES = 'B', SHORT_BINBYTES = 'C', BINBYTES8 = 0x8e, BYTEARRAY8 = 0x96,
  // containers
  MARK = '(', EMPTY_TUPLE = ')', TUPLE = 't', TUPLE1 = 0x85, TUPLE2 = 0x86, TUPLE3 = 0x87,
  EMPTY_LIST = ']', APPEND = 'a', APPENDS = 'e', EMPTY_DICT = '}', SETITEM = 's', SETITEMS = 'u',
  // objects
  GLOBAL = 'c', STACK_GLOBAL = 0x93, REDUCE = 'R', BUILD = 'b',
  // memo
  BINPUT = 'q', LONG_BINPUT = 'r', MEMOIZE = 0x94, BINGET = 'h', LONG_BINGET = 'j',
};

std::string hex_byte(uint8_t b) {
  static const char* digits = "0123456789abcdef";
  std::string s = "0x";
  s += digits[b >> 4];
  s += digits[b & 15];
  if (b >= 0x20 && b < 0x7f) s += std::string(" '") + static_cast<char>(b) + "'";
  return s;
}

class Reader {
 public:
  Reader(const uint8_t* bytes, size_t size, std::string source)
      : p_(bytes), size_(size), source_(std::move(source)), arena_(std::make_shared<std::deque<Value>>()) {}

  /// The root value, sharing ownership of the arena that holds the whole tree.
  ValuePtr run() {
    Value* root = parse();
    return ValuePtr(arena_, root);
  }

 private:
  Value* parse() {
    if (size_ == 0) fail("empty file, expected a pickle");
    for (;;) {
      op_offset_ = pos_;
      uint8_t op = u8();
      op_ = op;
      switch (op) {
        case PROTO: {
          int version = u8();
          if (op_offset_ != 0) fail("PROTO opcode not at the start");
          if (version < 2 || version > 5) fail("pickle protocol " + std::to_string(version) + " (expected 2 to 5)");
          break;
        }
        case FRAME: take(8); break;  // frames only group bytes; contents follow inline
        case STOP: {
          if (stack_.size() != 1 || !marks_.empty()) fail("STOP with " + std::to_string(stack_.size()) + " values on the stack");
          return pop();
        }
        case MARK: marks_.push_back(stack_.size()); break;
        case NONE: push(make(Kind::kNone)); break;
        case NEWTRUE:
        case NEWFALSE: {
          auto v = make(Kind::kBool);
          v->boolean = op == NEWTRUE;
          push(v);
          break;
        }
        case BININT: push_int(static_cast<int32_t>(le(4))); break;
        case BININT1: push_int(u8()); break;
        case BININT2: push_int(static_cast<int64_t>(le(2))); break;
        case LONG1: {
          int n = u8();
          if (n > 8) fail("LONG1 integer of " + std::to_string(n) + " bytes is too large");
          uint64_t raw = n ? le(n) : 0;
          int64_t value = static_cast<int64_t>(raw);
          if (n > 0 && n < 8 && (raw >> (8 * n - 1)) & 1) value -= static_cast<int64_t>(1) << (8 * n);  // sign
          push_int(value);
          break;
        }
        case BINFLOAT: {
          const uint8_t* b = take(8);
          uint64_t bits = 0;
          for (int i = 0; i < 8; ++i) bits = (bits << 8) | b[i];  // big-endian
          double d;
          std::memcpy(&d, &bits, 8);
          auto v = make(Kind::kFloat);
          v->real = d;
          push(v);
          break;
        }
        case SHORT_BINSTRING: push_text(Kind::kBytes, u8()); break;
        case BINSTRING: {
          int32_t n = static_cast<int32_t>(le(4));
          if (n < 0) fail("BINSTRING with negative length " + std::to_string(n));
          push_text(Kind::kBytes, static_cast<uint64_t>(n));
          break;
        }
        case SHORT_BINBYTES: push_text(Kind::kBytes, u8()); break;
        case BINBYTES: push_text(Kind::kBytes, le(4)); break;
        case BINBYTES8:
        case BYTEARRAY8: push_text(Kind::kBytes, le(8)); break;
        case SHORT_BINUNICODE: push_text(Kind::kString, u8()); break;
        case BINUNICODE: push_text(Kind::kString, le(4)); break;
        case BINUNICODE8: push_text(Kind::kString, le(8)); break;
        case EMPTY_LIST: push(make(Kind::kList)); break;
        case EMPTY_DICT: push(make(Kind::kDict)); break;
        case EMPTY_TUPLE: push(make(Kind::kTuple)); break;
        case TUPLE: {
          auto v = make(Kind::kTuple);
          v->items = pop_to_mark();
          push(v);
          break;
        }
        case TUPLE1:
        case TUPLE2:
        case TUPLE3: {
          size_t n = op - TUPLE1 + 1;
          need(n);
          auto v = make(Kind::kTuple);
          v->items.assign(stack_.end() - n, stack_.end());
          stack_.resize(stack_.size() - n);
          push(v);
          break;
        }
        case APPEND: {
          Value* item = pop();
          list_top()->items.push_back(item);
          break;
        }
        case APPENDS: {
          auto items = pop_to_mark();
          auto& list = list_top()->items;
          list.insert(list.end(), items.begin(), items.end());
          break;
        }
        case SETITEM: {
          Value* value = pop();
          Value* key = pop();
          dict_top()->dict.emplace_back(key, value);
          break;
        }
        case SETITEMS: {
          auto items = pop_to_mark();
          if (items.size() % 2) fail("SETITEMS with an odd number of values");
          auto* d = dict_top();
          for (size_t i = 0; i < items.size(); i += 2) d->dict.emplace_back(items[i], items[i + 1]);
          break;
        }
        case BINPUT: memo_put(u8()); break;
        case LONG_BINPUT: memo_put(le(4)); break;
        case MEMOIZE: memo_put(memo_.size()); break;
        case BINGET: memo_get(u8()); break;
        case LONG_BINGET: memo_get(le(4)); break;
        case GLOBAL: {
          std::string module = line();
          std::string name = line();
          push_global(module, name);
          break;
        }
        case STACK_GLOBAL: {
          auto name = pop();
          auto module = pop();
          if (module->kind != Kind::kString || name->kind != Kind::kString) fail("STACK_GLOBAL needs two strings");
          push_global(module->text, name->text);
          break;
        }
        case REDUCE: {
          auto args = pop();
          auto callable = pop();
          push(reduce(*callable, *args));
          break;
        }
        case BUILD: {
          auto state = pop();
          need(1);
          build(*stack_.back(), *state);
          break;
        }
        default:
          fail("unsupported pickle opcode " + hex_byte(op));
      }
    }
  }

  [[noreturn]] void fail(const std::string& what) const {
    std::ostringstream os;
    os << source_ << ": bad pickle at offset " << op_offset_;
    if (op_offset_ < size_) os << " (opcode " << hex_byte(op_) << ")";
    os << ": " << what;
    throw DataError(os.str());
  }

  const uint8_t* take(uint64_t n) {
    if (n > size_ - pos_) fail("truncated: needs " + std::to_string(n) + " more bytes, " + std::to_string(size_ - pos_) + " left");
    const uint8_t* at = p_ + pos_;
    pos_ += n;
    return at;
  }
  uint8_t u8() {
    if (pos_ >= size_) fail("truncated: ends without a STOP opcode");
    return p_[pos_++];
  }
  uint64_t le(int n) {
    return util::read_le(std::string_view(reinterpret_cast<const char*>(take(n)), static_cast<size_t>(n)), 0, n);
  }
  std::string line() {
    size_t start = pos_;
    while (pos_ < size_ && p_[pos_] != '\n') ++pos_;
    if (pos_ >= size_) fail("truncated: GLOBAL name without a newline");
    std::string s(reinterpret_cast<const char*>(p_ + start), pos_ - start);
    ++pos_;
    return s;
  }

  void push(Value* v) { stack_.push_back(v); }
  void push_int(int64_t i) {
    auto v = make(Kind::kInt);
    v->integer = i;
    push(v);
  }
  void push_text(Kind kind, uint64_t n) {
    const uint8_t* b = take(n);
    auto v = make(kind);
    v->text.assign(reinterpret_cast<const char*>(b), n);
    push(v);
  }
  void need(size_t n) {
    size_t floor = marks_.empty() ? 0 : marks_.back();
    if (stack_.size() < floor + n) fail("stack underflow");
  }
  Value* pop() {
    need(1);
    Value* v = stack_.back();
    stack_.pop_back();
    return v;
  }
  std::vector<Value*> pop_to_mark() {
    if (marks_.empty()) fail("no MARK on the stack");
    size_t mark = marks_.back();
    marks_.pop_back();
    std::vector<Value*> items(stack_.begin() + mark, stack_.end());
    stack_.resize(mark);
    return items;
  }
  Value* list_top() {
    need(1);
    if (stack_.back()->kind != Kind::kList) fail(std::string("append to a ") + kind_name(stack_.back()->kind) + ", not a list");
    return stack_.back();
  }
  Value* dict_top() {
    need(1);
    if (stack_.back()->kind != Kind::kDict) fail(std::string("set item on a ") + kind_name(stack_.back()->kind) + ", not a dict");
    return stack_.back();
  }
  void memo_put(uint64_t index) {
    need(1);
    if (memo_.size() >= kMaxValues && memo_.find(index) == memo_.end())
      fail("more than " + std::to_string(kMaxValues) + " memo entries");
    memo_[index] = stack_.back();
  }
  void memo_get(uint64_t index) {
    auto it = memo_.find(index);
    if (it == memo_.end()) fail("memo entry " + std::to_string(index) + " was never stored");
    push(it->second);
  }

  // The only module attributes we accept; each is interpreted by reduce(), never executed.
  void push_global(const std::string& module, const std::string& name) {
    std::string full = module + "." + name;
    static const char* allowed[] = {
        "numpy.core.multiarray._reconstruct", "numpy._core.multiarray._reconstruct",
        "numpy.core.numeric._frombuffer", "numpy._core.numeric._frombuffer",
        "numpy.ndarray", "numpy.dtype", "_codecs.encode", "__builtin__.bytes", "builtins.bytes",
        "__builtin__.bytearray", "builtins.bytearray"};
    for (const char* a : allowed) {
      if (full == a) {
        auto v = make(Kind::kGlobal);
        v->text = full;
        push(v);
        return;
      }
    }
    fail("pickle references " + full + ", which a CIFAR-10 batch never does (only numpy arrays and plain values are read)");
  }

  static bool is(const std::string& name, const char* suffix_after_numpy_module) {
    // Accept numpy.core.* and numpy._core.* (numpy 2 renamed the package).
    return name == std::string("numpy.core.") + suffix_after_numpy_module ||
           name == std::string("numpy._core.") + suffix_after_numpy_module;
  }

  const Value& arg(const Value& args, size_t i, Kind kind, const std::string& callable) {
    if (args.kind != Kind::kTuple || args.items.size() <= i)
      fail(callable + " called with too few arguments");
    const Value& v = *args.items[i];
    if (v.kind != kind) fail(callable + " argument " + std::to_string(i) + " is a " + kind_name(v.kind) + ", expected " + kind_name(kind));
    return v;
  }

  std::vector<int64_t> shape_of(const Value& t, const std::string& what) {
    if (t.kind != Kind::kTuple) fail(what + " shape is a " + std::string(kind_name(t.kind)) + ", expected a tuple");
    std::vector<int64_t> shape;
    for (auto& d : t.items) {
      if (d->kind != Kind::kInt || d->integer < 0) fail(what + " shape has a bad dimension");
      shape.push_back(d->integer);
    }
    return shape;
  }

  Value* reduce(const Value& callable, const Value& args) {
    if (callable.kind != Kind::kGlobal) fail(std::string("REDUCE on a ") + kind_name(callable.kind) + ", not a callable");
    if (args.kind != Kind::kTuple) fail("REDUCE arguments are not a tuple");
    const std::string& f = callable.text;
    if (is(f, "multiarray._reconstruct")) {
      // _reconstruct(ndarray, (0,), b'b') makes an empty array that BUILD fills in.
      const Value& cls = arg(args, 0, Kind::kGlobal, f);
      if (cls.text != "numpy.ndarray") fail(f + " of " + cls.text + ", expected numpy.ndarray");
      auto v = make(Kind::kArray);
      return v;
    }
    if (is(f, "numeric._frombuffer")) {
      // Protocol 5: _frombuffer(buffer, dtype, shape, order).
      const Value& buf = arg(args, 0, Kind::kBytes, f);
      const Value& dtype = arg(args, 1, Kind::kDtype, f);
      auto v = make(Kind::kArray);
      v->shape = shape_of(arg(args, 2, Kind::kTuple, f), f);
      if (args.items.size() < 4) fail(f + " called with too few arguments");
      const Value& order = *args.items[3];
      if (order.kind != Kind::kString && order.kind != Kind::kBytes) fail(f + " order is not a string");
      v->fortran_order = order.text == "F";
      v->dtype = args.items[1];
      v->raw = args.items[0];
      (void)buf;
      (void)dtype;
      v->initialised = true;
      return v;
    }
    if (f == "numpy.dtype") {
      if (args.items.empty()) fail("numpy.dtype called without arguments");
      const Value& descr = *args.items[0];
      if (descr.kind != Kind::kString && descr.kind != Kind::kBytes) fail("numpy.dtype of a " + std::string(kind_name(descr.kind)));
      auto v = make(Kind::kDtype);
      v->text = descr.text;
      return v;
    }
    if (f == "_codecs.encode") {
      // Python 3 at protocol 2 writes bytes b as _codecs.encode(b.decode('latin1'), 'latin1').
      const Value& text = arg(args, 0, Kind::kString, f);
      const Value& encoding = arg(args, 1, Kind::kString, f);
      if (encoding.text != "latin1" && encoding.text != "latin-1") fail("_codecs.encode with encoding " + encoding.text);
      auto v = make(Kind::kBytes);
      v->text = utf8_to_latin1(text.text);
      return v;
    }
    if (f == "__builtin__.bytes" || f == "builtins.bytes" || f == "__builtin__.bytearray" || f == "builtins.bytearray") {
      auto v = make(Kind::kBytes);
      if (!args.items.empty()) {
        const Value& a = *args.items[0];
        if (a.kind == Kind::kBytes) v->text = a.text;
        else if (a.kind == Kind::kString && args.items.size() == 2) v->text = utf8_to_latin1(a.text);
        else fail(f + " with unsupported arguments");
      }
      return v;
    }
    fail("REDUCE of " + f + " is not supported");
  }

  std::string utf8_to_latin1(const std::string& s) {
    std::string out;
    out.reserve(s.size());
    for (size_t i = 0; i < s.size(); ++i) {
      auto c = static_cast<uint8_t>(s[i]);
      if (c < 0x80) {
        out.push_back(static_cast<char>(c));
      } else if ((c & 0xE0) == 0xC0 && i + 1 < s.size()) {
        uint32_t cp = ((c & 0x1F) << 6) | (static_cast<uint8_t>(s[i + 1]) & 0x3F);
        if (cp > 0xFF) fail("latin1 text holds a character above U+00FF");
        out.push_back(static_cast<char>(cp));
        ++i;
      } else {
        fail("latin1 text holds a character above U+00FF");
      }
    }
    return out;
  }

  void build(Value& target, const Value& state) {
    if (target.kind == Kind::kDtype) {
      // (version, byteorder, subarray, names, fields, elsize, alignment, flags[, metadata])
      if (state.kind != Kind::kTuple || state.items.size() < 8) fail("numpy.dtype state is not an 8-tuple");
      const Value& order = *state.items[1];
      if (order.kind != Kind::kString && order.kind != Kind::kBytes) fail("numpy.dtype byte order is not a string");
      if (order.text.size() != 1) fail("numpy.dtype byte order '" + order.text + "'");
      target.byte_order = order.text[0];
      for (size_t i = 2; i <= 4; ++i)
        if (state.items[i]->kind != Kind::kNone) fail("structured numpy dtypes are not supported");
      return;
    }
    if (target.kind == Kind::kArray) {
      // (version, shape, dtype, is_fortran, data) or the older 4-tuple without version.
      if (state.kind != Kind::kTuple || (state.items.size() != 5 && state.items.size() != 4))
        fail("numpy.ndarray state is not a 4- or 5-tuple");
      size_t o = state.items.size() == 5 ? 1 : 0;
      target.shape = shape_of(*state.items[o], "numpy.ndarray");
      if (state.items[o + 1]->kind != Kind::kDtype) fail("numpy.ndarray state has no dtype");
      target.dtype = state.items[o + 1];
      const Value& fortran = *state.items[o + 2];
      if (fortran.kind != Kind::kBool && fortran.kind != Kind::kInt) fail("numpy.ndarray fortran flag is not a bool");
      target.fortran_order = fortran.kind == Kind::kBool ? fortran.boolean : fortran.integer != 0;
      Value* raw = state.items[o + 3];
      const Value& data = *raw;
      // A Python 2 str arrives as kBytes here (we never decode it); Python 3 with encoding='latin1'
      // would see text whose code points are the bytes, which is the same thing.
      if (data.kind != Kind::kBytes && data.kind != Kind::kString)
        fail("numpy.ndarray data is a " + std::string(kind_name(data.kind)) + " (object arrays are not supported)");
      target.raw = raw;
      target.initialised = true;
      return;
    }
    fail(std::string("BUILD on a ") + kind_name(target.kind));
  }

  // Every value is created here, in the arena, and counted against kMaxValues.
  Value* make(Kind kind) {
    if (arena_->size() >= kMaxValues)
      fail("more than " + std::to_string(kMaxValues) + " values (a CIFAR-10 batch has about 20,000)");
    return &arena_->emplace_back(kind);
  }

  const uint8_t* p_;
  size_t size_;
  std::string source_;
  size_t pos_ = 0;
  size_t op_offset_ = 0;
  uint8_t op_ = 0;
  // Owns every value; a deque never moves its elements, so the raw pointers below stay valid.
  std::shared_ptr<std::deque<Value>> arena_;
  std::vector<Value*> stack_;
  std::vector<size_t> marks_;
  std::unordered_map<uint64_t, Value*> memo_;
};

}  // namespace

const char* kind_name(Kind kind) {
  switch (kind) {
    case Kind::kNone: return "None";
    case Kind::kBool: return "bool";
    case Kind::kInt: return "int";
    case Kind::kFloat: return "float";
    case Kind::kBytes: return "bytes";
    case Kind::kString: return "str";
    case Kind::kList: return "list";
    case Kind::kTuple: return "tuple";
    case Kind::kDict: return "dict";
    case Kind::kGlobal: return "global";
    case Kind::kDtype: return "numpy.dtype";
    case Kind::kArray: return "numpy.ndarray";
  }
  return "?";
}

const Value* Value::find(const std::string& key) const {
  if (kind != Kind::kDict) return nullptr;
  for (auto& [k, v] : dict)
    if ((k->kind == Kind::kString || k->kind == Kind::kBytes) && k->text == key) return v;
  return nullptr;
}

const std::string& Value::array_bytes() const {
  static const std::string empty;
  return raw ? raw->text : empty;
}

int Value::itemsize(const std::string& descr) {
  if (descr == "u1" || descr == "i1" || descr == "b1") return 1;
  if (descr == "u2" || descr == "i2") return 2;
  if (descr == "u4" || descr == "i4" || descr == "f4") return 4;
  if (descr == "u8" || descr == "i8" || descr == "f8") return 8;
  return 0;
}

ValuePtr load(const uint8_t* bytes, size_t size, const std::string& source) {
  return Reader(bytes, size, source).run();
}

}  // namespace ddp::data::cifar::pickle
