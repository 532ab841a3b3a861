#include "trainer/tensorboard_event.h"

#include <ddp/errors.h>

#include <cstring>

#include "util/little_endian.h"

namespace ddp::trainer::tensorboard {
namespace {

// Protobuf wire types.
constexpr int kVarint = 0, kFixed64 = 1, kLengthDelimited = 2, kFixed32 = 5;

void put_varint(std::string& out, uint64_t v) {
  while (v >= 0x80) {
    out.push_back(static_cast<char>((v & 0x7F) | 0x80));
    v >>= 7;
  }
  out.push_back(static_cast<char>(v));
}

void put_key(std::string& out, int field, int wire_type) { put_varint(out, static_cast<uint64_t>(field) << 3 | wire_type); }

void put_double(std::string& out, int field, double v) {
  put_key(out, field, kFixed64);
  uint64_t bits;
  std::memcpy(&bits, &v, 8);
  util::append_le(out, bits, 8);
}

void put_float(std::string& out, int field, float v) {
  put_key(out, field, kFixed32);
  uint32_t bits;
  std::memcpy(&bits, &v, 4);
  util::append_le(out, bits, 4);
}

void put_bytes(std::string& out, int field, std::string_view bytes) {
  put_key(out, field, kLengthDelimited);
  put_varint(out, bytes.size());
  out.append(bytes);
}

// wall_time and step, the fields every event of ours starts with.
std::string event_head(double wall_time, int64_t step) {
  std::string e;
  put_double(e, 1, wall_time);
  if (step != 0) {  // proto3: a zero scalar is not written
    put_key(e, 2, kVarint);
    put_varint(e, static_cast<uint64_t>(step));
  }
  return e;
}

// Reads protobuf fields from one message's bytes; every read checks that the bytes are there.
class WireReader {
 public:
  WireReader(std::string_view bytes, const char* message) : bytes_(bytes), message_(message) {}

  bool done() const { return at_ >= bytes_.size(); }

  uint64_t varint() {
    uint64_t v = 0;
    for (int shift = 0; shift < 64; shift += 7) {
      if (at_ >= bytes_.size()) fail("a varint runs past the end");
      const auto b = static_cast<unsigned char>(bytes_[at_++]);
      if (shift == 63 && b > 1) fail("a varint overflows 64 bits");
      v |= static_cast<uint64_t>(b & 0x7F) << shift;
      if (!(b & 0x80)) return v;
    }
    fail("a varint longer than 10 bytes");
  }

  /// The next field's key: (number, wire type).
  std::pair<uint64_t, int> key() {
    const uint64_t k = varint();
    const uint64_t field = k >> 3;
    const int wire = static_cast<int>(k & 7);
    if (field == 0 || field > 536870911) fail("field number " + std::to_string(field));
    return {field, wire};
  }

  uint64_t fixed(int n) {
    if (bytes_.size() - at_ < static_cast<size_t>(n)) fail("a fixed-size field runs past the end");
    const uint64_t v = util::read_le(bytes_, at_, n);
    at_ += static_cast<size_t>(n);
    return v;
  }

  std::string_view length_delimited() {
    const uint64_t n = varint();
    if (n > bytes_.size() - at_) fail("a length-delimited field of " + std::to_string(n) + " bytes runs past the end");
    std::string_view v = bytes_.substr(at_, n);
    at_ += n;
    return v;
  }

  /// Skips a field this parser does not use; groups (wire types 3, 4: deprecated, never in events) are errors.
  void skip(int wire) {
    switch (wire) {
      case kVarint: varint(); break;
      case kFixed64: fixed(8); break;
      case kLengthDelimited: length_delimited(); break;
      case kFixed32: fixed(4); break;
      default: fail("wire type " + std::to_string(wire));
    }
  }

  /// A known field arrived with another wire type than its declaration's.
  void expect(uint64_t field, int wire, int want) {
    if (wire != want)
      fail("field " + std::to_string(field) + " has wire type " + std::to_string(wire) + ", expected " + std::to_string(want));
  }

  [[noreturn]] void fail(const std::string& what) const {
    throw ddp::DataError(std::string("malformed ") + message_ + ": " + what + " (at byte " + std::to_string(at_) + ")");
  }

 private:
  std::string_view bytes_;
  const char* message_;
  size_t at_ = 0;
};

void parse_value(std::string_view bytes, Event* e) {
  WireReader r(bytes, "Summary.Value");
  std::string tag;
  std::optional<float> simple;
  while (!r.done()) {
    const auto [field, wire] = r.key();
    if (field == 1) {
      r.expect(field, wire, kLengthDelimited);
      tag = std::string(r.length_delimited());
    } else if (field == 2) {
      r.expect(field, wire, kFixed32);
      const auto bits = static_cast<uint32_t>(r.fixed(4));
      float v;
      std::memcpy(&v, &bits, 4);
      simple = v;
    } else {
      r.skip(wire);  // metadata, tensor, image, ...
    }
  }
  if (simple) e->scalars.push_back({tag, *simple});
}

void parse_summary(std::string_view bytes, Event* e) {
  WireReader r(bytes, "Summary");
  while (!r.done()) {
    const auto [field, wire] = r.key();
    if (field == 1) {
      r.expect(field, wire, kLengthDelimited);
      parse_value(r.length_delimited(), e);
    } else {
      r.skip(wire);
    }
  }
}

int64_t parse_session_status(std::string_view bytes) {
  WireReader r(bytes, "SessionLog");
  int64_t status = 0;
  while (!r.done()) {
    const auto [field, wire] = r.key();
    if (field == 1) {
      r.expect(field, wire, kVarint);
      status = static_cast<int64_t>(r.varint());
    } else {
      r.skip(wire);
    }
  }
  return status;
}

}  // namespace

std::string encode_file_version(double wall_time) {
  std::string e = event_head(wall_time, 0);
  put_bytes(e, 3, kFileVersion);
  return e;
}

std::string encode_session_start(double wall_time, int64_t step) {
  std::string log;
  put_key(log, 1, kVarint);
  put_varint(log, kSessionStart);
  std::string e = event_head(wall_time, step);
  put_bytes(e, 7, log);
  return e;
}

std::string encode_scalars(double wall_time, int64_t step, const std::vector<Scalar>& scalars) {
  std::string summary;
  for (const auto& s : scalars) {
    std::string value;
    put_bytes(value, 1, s.tag);
    put_float(value, 2, s.value);
    put_bytes(summary, 1, value);
  }
  std::string e = event_head(wall_time, step);
  put_bytes(e, 5, summary);
  return e;
}

Event parse_event(std::string_view bytes) {
  WireReader r(bytes, "Event");
  Event e;
  while (!r.done()) {
    const auto [field, wire] = r.key();
    switch (field) {
      case 1: {
        r.expect(field, wire, kFixed64);
        const uint64_t bits = r.fixed(8);
        std::memcpy(&e.wall_time, &bits, 8);
        break;
      }
      case 2:
        r.expect(field, wire, kVarint);
        e.step = static_cast<int64_t>(r.varint());
        if (e.step < 0) r.fail("negative step " + std::to_string(e.step));
        break;
      case 3:
        r.expect(field, wire, kLengthDelimited);
        e.file_version = std::string(r.length_delimited());
        break;
      case 5:
        r.expect(field, wire, kLengthDelimited);
        e.has_summary = true;
        parse_summary(r.length_delimited(), &e);
        break;
      case 7:
        r.expect(field, wire, kLengthDelimited);
        e.session_status = parse_session_status(r.length_delimited());
        break;
      default:
        r.skip(wire);  // graph_def, source_metadata, fields added later
    }
  }
  return e;
}

}  // namespace ddp::trainer::tensorboard
