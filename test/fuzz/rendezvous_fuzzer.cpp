//===- rendezvous_fuzzer.cpp - The chief's rendezvous store protocol -----===//
//
// What the chief's store (runtime/distribute/Rendezvous.h) reads from any
// TCP peer: the byte stream split into frames (FrameReader, with the
// limit of a connection before HELLO when the second byte is odd), each
// parsed as a request (parseRequest). Neither may crash, hang or read out
// of bounds; no payload is longer than the limit; an accepted request
// re-encodes to the same payload.
//
//===----------------------------------------------------------------------===//

#include "runtime/distribute/Rendezvous.h"

#include <cstdlib>

using namespace estc::rt::distribute;

namespace {
std::string encode(const Request &r) {
  std::string out(1, static_cast<char>(r.op));
  switch (r.op) {
  case Op::Hello:
    putU32(out, r.rank);
    putU32(out, r.size);
    break;
  case Op::Set:
    putBytes(out, r.key);
    putBytes(out, r.value);
    break;
  case Op::Get:
    putBytes(out, r.key);
    break;
  case Op::Dead:
    putU32(out, r.silentMs);
    break;
  default:
    break;
  }
  return out;
}
} // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  // The stream, in two reads split at a point the first byte picks.
  FrameReader reader;
  uint32_t limit = size > 1 && (data[1] & 1) ? kMaxHello : kMaxFrame;
  reader.setLimit(limit);
  std::string error;
  size_t split = size ? data[0] % (size + 1) : 0;
  const char *bytes = reinterpret_cast<const char *>(data);
  bool ok = reader.append(bytes, split, &error) &&
            reader.append(bytes + split, size - split, &error);
  while (ok) {
    std::optional<std::string> payload = reader.next();
    if (!payload)
      break;
    if (payload->size() > limit)
      std::abort();
    if (std::optional<Request> r = parseRequest(*payload, &error))
      if (encode(*r) != *payload)
        std::abort();
  }
  // The whole input as one payload.
  std::string whole(bytes, size);
  if (std::optional<Request> r = parseRequest(whole, &error))
    if (encode(*r) != whole)
      std::abort();
  return 0;
}
