// Unicode Normalization Form C, checked (not applied) with utf8proc: v2
// canonical form (v2 spec §6.3 rule 5) needs names in NFC, and a writer
// that normalised them silently would store another name than the one it
// was given.
#pragma once

#include <string_view>

namespace zt {

// Whether valid UTF-8 text is in NFC. ASCII text always is (no table is
// consulted for it); text that is not valid UTF-8 is not.
bool is_nfc(std::string_view utf8);

}  // namespace zt
