//===- Printable.h - Text from untrusted input, fit for one error line ---===//
//
// An error line quotes what the input held (a tensor name in a checkpoint,
// a key of a REST request). Its control characters are escaped (\n, \r,
// \t, \x01), so the message stays one line whatever the input holds; every
// other byte is kept. Header-only: the checkpoint reader and the serving
// front end share it.
//
//===----------------------------------------------------------------------===//
#ifndef ESTC_LIB_SUPPORT_PRINTABLE_H
#define ESTC_LIB_SUPPORT_PRINTABLE_H

#include <string>
#include <string_view>

namespace estc {

/// `text` with its control characters (< 0x20, 0x7f) escaped; with
/// `non_ascii`, bytes >= 0x80 too (\xNN), for text that may not be UTF-8.
inline std::string escape_control_chars(std::string_view text,
                                        bool non_ascii = false) {
  static constexpr char kHex[] = "0123456789abcdef";
  std::string out;
  out.reserve(text.size());
  for (unsigned char c : text) {
    if (c == '\n') {
      out += "\\n";
    } else if (c == '\r') {
      out += "\\r";
    } else if (c == '\t') {
      out += "\\t";
    } else if (c < 0x20 || c == 0x7f || (non_ascii && c >= 0x80)) {
      out += "\\x";
      out += kHex[c >> 4];
      out += kHex[c & 15];
    } else {
      out += static_cast<char>(c);
    }
  }
  return out;
}

} // namespace estc

#endif // ESTC_LIB_SUPPORT_PRINTABLE_H
