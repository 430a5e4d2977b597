#include "common/utf8.h"

#include <cstdint>

namespace kturn {

std::optional<size_t> firstInvalidUtf8(std::string_view text) {
  // The smallest code point each sequence length may encode: anything below is overlong.
  static constexpr uint32_t kMin[] = {0, 0x80, 0x800, 0x10000};
  size_t i = 0;
  while (i < text.size()) {
    const auto lead = static_cast<unsigned char>(text[i]);
    size_t continuation;
    uint32_t cp;
    if (lead < 0x80) {
      continuation = 0, cp = lead;
    } else if ((lead & 0xE0) == 0xC0) {
      continuation = 1, cp = lead & 0x1F;
    } else if ((lead & 0xF0) == 0xE0) {
      continuation = 2, cp = lead & 0x0F;
    } else if ((lead & 0xF8) == 0xF0) {
      continuation = 3, cp = lead & 0x07;
    } else {
      return i;
    }
    if (text.size() - i <= continuation) return i;
    for (size_t k = 1; k <= continuation; ++k) {
      const auto next = static_cast<unsigned char>(text[i + k]);
      if ((next & 0xC0) != 0x80) return i;
      cp = cp << 6 | (next & 0x3F);
    }
    if (cp < kMin[continuation] || cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF)) return i;
    i += continuation + 1;
  }
  return std::nullopt;
}

}  // namespace kturn
